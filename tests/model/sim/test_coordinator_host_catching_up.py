"""A coordinator that has loaded its log but not yet seen its tail committed (Kafka's coordinator runtime:
CoordinatorLoaderImpl reads to the log end, lastCommittedOffset is the high-water mark, and every
answer waits in the DeferredEventQueue until the high-water mark passes the state it was computed
from). Unit cases on the fake cluster of test_broker.py, then the library scenario and the swarm."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.core.errors import Errors
from model.core.share_state import (
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    RecordState,
    StateBatch,
)
from model.sim.cluster import Cluster as SimCluster
from model.sim.protocol import SHARE_STATE_TOPIC
from model.sim.runner import run, run_cluster
from scenarios import library
from tests.model.sim.test_broker import LATENCY, Client, Cluster, initialized, write


def _inherited(load_ms: int) -> tuple[Cluster, Client, int, int]:
    """A write replicated to the followers but not yet committed (nor answered) when the share-state
    partition's leadership moves; every coordinator loads in ``load_ms`` plus 20 us per record."""
    c, client, key = initialized()
    for broker in c.brokers.values():
        broker.config = replace(broker.config, coordinator_load_base_ms=load_ms)
    old = c.share_coordinator()
    written = client.send(old, "WriteShareGroupState", write(key, 0, 0, 4))
    c.run(2 * LATENCY + 2)  # appended at 5 ms; the followers have it at 10; it would commit at 15
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    assert log.pending_count == 1
    assert c.ctl.move_leadership(SHARE_STATE_TOPIC, 0)
    return c, client, old, written


def test_the_new_coordinator_loads_the_inherited_tail_and_the_old_one_refuses_its_write() -> None:
    c, client, _, written = _inherited(load_ms=10)
    key = c.key()
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    assert log.inherited_appends == 1 and log.pending_count == 1  # above the new leader's high-water mark
    host = c.brokers[c.share_coordinator()].share_coordinators[0]
    assert host.loading and host.catching_up() and host.loaded_end == log.end_offset
    state = host.shard.state(key)
    assert state is not None and state.state_batches == (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1),)
    # Kafka unloads the old coordinator and fails its deferred events with NOT_COORDINATOR: the write's
    # client never learns that the write is durable after all.
    assert client.wait(written).error_code == Errors.NOT_COORDINATOR
    assert c.observer.of("write") == []
    c.run(100)
    assert log.pending_count == 0 and not host.catching_up()
    assert log.committed[-1].key == key  # type: ignore[attr-defined]
    # Durable now: the observers that follow the durable state count it (the invariants stay honest).
    assert [e[1] for e in c.observer.of("write")] == [write(key, 0, 0, 4)]


def test_a_read_while_the_loaded_tail_is_uncommitted_is_answered_once_it_commits() -> None:
    c, client, _, _ = _inherited(load_ms=0)
    key = c.key()
    new = c.share_coordinator()
    host = c.brokers[new].share_coordinators[0]
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    c.run(1)  # loaded: no time for the records either (20 us each)
    assert not host.loading and host.catching_up()
    committed_at = c.sched.now_ms - 1 + 2 * LATENCY  # the move + a round trip
    read = client.send(new, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0))
    answer = client.wait(read)
    assert isinstance(answer, ReadShareGroupStateResponse) and answer.error_code == Errors.NONE
    assert answer.state_batches == (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1),)
    assert client.answers[read][0] >= committed_at + LATENCY  # not before the tail committed
    assert host.requests_catching_up == 1 and log.pending_count == 0
    assert [e.kind for e in c.trace.events].count("coordinator.catching_up") == 1


def test_a_tail_truncated_by_the_next_leader_fails_the_requests_waiting_on_it() -> None:
    c, client, key = initialized()
    for broker in c.brokers.values():
        broker.config = replace(broker.config, coordinator_load_base_ms=0)
    first = c.share_coordinator()
    second, third = sorted(set(c.brokers) - {first})
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    cut = c.net.partition([f"b{first}"], [f"b{third}"], one_way=True)  # the write never reaches the third
    client.send(first, "WriteShareGroupState", write(key, 0, 0, 4))
    c.run(2 * LATENCY + 2)
    assert c.ctl.move_leadership(SHARE_STATE_TOPIC, 0, to=second)
    c.net.heal(cut)
    c.run(1)
    assert log.pending_count == 1  # inherited by the second; the third fetches it a one-way trip later
    read = client.send(second, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0))
    c.run(LATENCY - 2)  # the read waits behind the tail; the third has not fetched it yet
    assert c.ctl.move_leadership(SHARE_STATE_TOPIC, 0, to=third)
    assert log.pending_count == 0 and log.end_offset == log.committed_count  # truncated
    assert client.wait(read).error_code == Errors.NOT_COORDINATOR
    c.run(100)
    state = c.brokers[third].share_coordinators[0].shard.state(key)
    assert state is not None and state.state_batches == ()  # the write is gone for good


# -- the library scenario and the swarm ----------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_coordinator_read_truncated_runs_clean(seed: int) -> None:
    result = run(library.get("coordinator_read_truncated"), seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired["share_coordinator_failover"] >= 300


def test_the_mutant_is_caught_by_zombie_write_fenced() -> None:
    """read-uncommitted-coordinator-state: a read answered from the last written state at once; its
    leader-epoch record is truncated by the next failover, and the old leader's late write is accepted."""
    caught = [seed for seed in range(6)
              if [v.invariant for v in run(library.get("coordinator_read_truncated"), seed,
                                            mutant="read-uncommitted-coordinator-state").violations]
              == ["zombie-write-fenced"]]
    assert len(caught) >= 2, caught


def test_swarm_failovers_draws_the_load_time_and_reaches_the_windows() -> None:
    """Requests arrive while the coordinator's state is above its committed offset (any seed), and a new
    coordinator inherits an uncommitted tail (seed 29: a share-state append had reached the replica that
    became the leader; 3 of seeds 0..79 do, 29, 34 and 47)."""
    scenario = library.get("swarm_failovers")
    drawn = {SimCluster(scenario, seed).swarm_config["sharesim.coordinator.load.base.ms"] for seed in range(12)}
    assert {1, 10} <= drawn
    result, cluster = run_cluster(scenario, 29)
    assert result.ok, [v.describe() for v in result.violations]
    assert cluster.tracker.events.get("coordinator.uncommitted_window", 0) > 0
    assert sum(state.log.inherited_appends for state in cluster.controller.partitions.values()) > 0
