"""Share-state writes that fail for good (fault kind ``state_partition_under_min_isr``, issue 25).

The followers of a ``__share_group_state`` partition drop out of its ISR for longer than the
persister's retries: the share coordinator's appends fail NOT_ENOUGH_REPLICAS, answered
COORDINATOR_NOT_AVAILABLE (trunk's CoordinatorOperationExceptionHelper), the persister gives up
and the share-partition leader runs its rollback paths (SharePartition: an acknowledgement's
records go back to ACQUIRED, or to AVAILABLE / ARCHIVED when their lock expired meanwhile; a
lock-timeout write is sent again).
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest

from model.core.errors import Errors
from model.core.share_partition import SharePartition, WriteReason
from model.sim.controller import Controller
from model.sim.faults import FaultEvent, FaultPlanError, swarm_plan
from model.sim.network import Network
from model.sim.protocol import SHARE_STATE_TOPIC, broker_node
from model.sim.rng import Distribution, RandomStreams
from model.sim.runner import run
from model.sim.timers import Scheduler
from scenarios import library

KIND = "state_partition_under_min_isr"


def _failed_writes(result: Any) -> set[str]:
    assert result.trace is not None
    return {str(e.fields.get("reason")) for e in result.trace.events if e.kind == "share.write_failed"}


def _controller() -> Controller:
    scheduler = Scheduler()
    streams = RandomStreams(7)
    graph = nx.Graph()
    graph.add_nodes_from(broker_node(b) for b in (1, 2, 3))
    controller = Controller(scheduler, Network(scheduler, graph, streams), streams, broker_ids=[1, 2, 3],
                            latency=Distribution.constant(1), replication_factor=3, min_insync_replicas=2)
    controller.create_topic(SHARE_STATE_TOPIC, 1)
    return controller


def test_a_shrunk_isr_refuses_appends_until_it_expands_and_a_restart_does_not_end_it() -> None:
    controller = _controller()
    log = controller.log(SHARE_STATE_TOPIC, 0)
    assert log.writable() == Errors.NONE
    assert controller.shrink_isr(SHARE_STATE_TOPIC, 0)
    assert not controller.shrink_isr(SHARE_STATE_TOPIC, 0)  # already shrunk: nothing to apply
    assert log.writable() == Errors.NOT_ENOUGH_REPLICAS
    assert log.append(["r"], lambda *_: None) == Errors.NOT_ENOUGH_REPLICAS
    follower = next(b for b in (1, 2, 3) if b != log.leader)
    controller.crash_broker(follower)
    controller.restart_broker(follower)
    controller.scheduler.run(until=60_000)  # past its catch-up
    assert log.writable() == Errors.NOT_ENOUGH_REPLICAS
    controller.expand_isr(SHARE_STATE_TOPIC, 0)
    assert log.writable() == Errors.NONE and len(log.isr) == 3


def test_a_leader_crash_while_shrunk_leaves_the_partition_offline_until_it_returns_or_the_isr_expands() -> None:
    controller = _controller()
    log = controller.log(SHARE_STATE_TOPIC, 0)
    leader = log.leader
    controller.shrink_isr(SHARE_STATE_TOPIC, 0)
    controller.crash_broker(leader)
    assert log.leader == -1  # unclean leader election is off: only the ISR's last member may lead
    controller.expand_isr(SHARE_STATE_TOPIC, 0)
    assert log.leader not in (-1, leader) and log.writable() == Errors.NONE


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_library_scenario_fails_acknowledgement_and_lock_timeout_writes_for_good_and_runs_clean(seed: int) -> None:
    result = run(library.get(KIND), seed, trace=True)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {KIND: 2}
    assert {"acknowledge", "lock-timeout"} <= _failed_writes(result)
    assert result.metrics["ack_errors"] > 0  # the clients heard of the failed acknowledgements


def test_a_failed_acknowledgement_rolls_back_records_whose_lock_expired_at_the_delivery_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rollback path after an expired lock at the delivery limit (SP-9, SP-4, SP-5) is reached."""
    seen = {"acks_failed": 0, "expired": 0, "expired_at_limit": 0}
    original = SharePartition._write_failed

    def counting(self: SharePartition, write_id: int, info: Any, now_ms: int) -> None:
        if info.reason is WriteReason.ACKNOWLEDGE:
            seen["acks_failed"] += 1
            for r in self._ranges_of(write_id, info):
                if r.lock_deadline_ms <= now_ms:
                    seen["expired"] += 1
                    seen["expired_at_limit"] += r.delivery_count >= self.delivery_count_limit
        original(self, write_id, info, now_ms)

    monkeypatch.setattr(SharePartition, "_write_failed", counting)
    for seed in range(4):
        assert run(library.get(KIND), seed).ok
    assert seen["acks_failed"] > 0 and seen["expired"] > 0, seen
    assert run(library.get("state_writes_fail_at_limit"), 1).ok
    assert seen["expired_at_limit"] > 0, seen


@pytest.mark.parametrize(("swarm", "seed"), [("swarm_failovers", 4), ("swarm_failovers", 22), ("swarm_locks", 4)])
def test_the_swarms_draw_the_fault_and_a_write_fails_for_good(swarm: str, seed: int) -> None:
    # Pinned seeds: re-search them (tests/model/sim/test_state_writes_fail.py docstring) if the swarm's draws change.
    result = run(library.get(swarm), seed, trace=True)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired.get(KIND, 0) >= 1
    assert _failed_writes(result) & {"acknowledge", "lock-timeout"}


def test_the_mutant_that_keeps_a_failed_acknowledgement_is_caught_in_the_swarm() -> None:
    result = run(library.get("swarm_failovers"), 19, mutant="failed-ack-write-kept")
    assert "spso-monotonic" in {v.invariant for v in result.violations}
    assert run(library.get("swarm_failovers"), 19).ok


def test_the_swarm_generator_draws_a_partition_of_the_group_and_a_duration_around_the_retries() -> None:
    targets = library.get("swarm_failovers").fault_targets()
    events = [e for seed in range(40) for e in swarm_plan(seed, 60_000, [KIND], targets).events]
    assert events
    for event in events:
        assert event.target == "g" and event.param("topic") == "events" and event.param("partition") in (0, 1)
        assert 2_000 <= event.duration_ms <= 20_000


@pytest.mark.parametrize(("params", "message"), [
    ({"partition": -1}, "params.partition = -1: must be an integer >= 0 (or absent: partition 0)"),
    ({"topic": ""}, "params.topic = '': must be a topic name (or absent: the group's first topic)"),
    ({"to": "b1"}, "params.to = 'b1': not a parameter of state_partition_under_min_isr (allowed: topic, partition)"),
])
def test_bad_params_are_named_with_what_is_allowed(params: dict[str, Any], message: str) -> None:
    with pytest.raises(FaultPlanError) as info:
        FaultEvent(0, KIND, "g", duration_ms=1_000, params=tuple(params.items()))
    assert any(message in p for p in info.value.problems), info.value.problems


def test_the_fault_needs_a_duration() -> None:
    with pytest.raises(FaultPlanError, match="duration_ms = 0: must be an integer >= 1"):
        FaultEvent(0, KIND, "g")
