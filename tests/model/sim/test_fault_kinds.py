"""One small scenario per fault kind (scenarios/library.py): the fault fired and its effect shows.

Each scenario injects only its own kind into a 3-broker cluster with a 2-partition topic and
two share consumers; every run must also end quiescent with no violation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from invariants.monitors import Monitor, ViolationSink
from model.core.group.share_group import ShareGroup
from model.core.share_partition import AcquiredRecords
from model.core.share_state import RecordState, SharePartitionKey
from model.sim.cluster import Cluster
from model.sim.controller import topic_id_for
from model.sim.faults import FAULT_KINDS
from model.sim.poison import is_poison
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, SHARE_STATE_TOPIC
from model.sim.runner import RunResult, run_cluster
from model.sim.trace import TraceEvent
from scenarios import library
from scenarios.spec import FaultsSpec

SEED = 1
KEY0 = SharePartitionKey("g", topic_id_for("events"), 0)


class _Acquisitions(Monitor):
    """Every acquisition: (time, key, member, first, last, delivery count)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(SEED))
        self.seen: list[tuple[int, SharePartitionKey, str, int, int, int]] = []

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        for a in acquired:
            self.seen.append((now_ms, key, member_id, a.first_offset, a.last_offset, a.delivery_count))


def _run(name: str, *, probe: Callable[[Cluster], None] | None = None, every_ms: int = 100,
         acquisitions: _Acquisitions | None = None) -> tuple[RunResult, Cluster]:
    """Run a library scenario with tracing; ``probe`` is called every ``every_ms`` of simulated time."""

    def before_run(cluster: Cluster) -> None:
        if probe is not None:
            def tick() -> None:
                probe(cluster)
                cluster.scheduler.timer(every_ms, tick)
            cluster.scheduler.timer(0, tick)

    extra = [acquisitions] if acquisitions is not None else []
    result, cluster = run_cluster(library.get(name), SEED, trace=True, extra_monitors=extra, before_run=before_run)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.metrics["quiescent_at_ms"] is not None
    assert result.metrics["records_unresolved"] == 0
    return result, cluster


def _events(result: RunResult, kind: str, **fields: Any) -> list[TraceEvent]:
    assert result.trace is not None
    return [e for e in result.trace.events
            if e.kind == kind and all(e.fields.get(k) == v for k, v in fields.items())]


def _share_group(cluster: Cluster, group_id: str = "g") -> ShareGroup | None:
    """The group as its current coordinator holds it (None while no coordinator has it loaded)."""
    metadata = cluster.controller.metadata
    partition = metadata.group_coordinator_partition(group_id)
    info = metadata.leader_of(CONSUMER_OFFSETS_TOPIC, partition)
    if info is None or info.leader < 0:
        return None
    host = cluster.brokers[info.leader].group_coordinators.get(partition)
    return None if host is None else host.shard.share.group(group_id)


def _group_history(samples: list[tuple[int, int, tuple[str, ...]]]) -> Callable[[Cluster], None]:
    def probe(cluster: Cluster) -> None:
        group = _share_group(cluster)
        if group is not None:
            samples.append((cluster.scheduler.now_ms, group.group_epoch, tuple(sorted(group.members))))
    return probe


def test_every_fault_kind_has_a_scenario() -> None:
    for kind in FAULT_KINDS:
        scenario = library.get(kind)
        assert scenario.fault_kinds == (kind,)


def test_leadership_move_is_followed_by_a_state_read_with_a_higher_leader_epoch() -> None:
    result, cluster = _run("leadership_move")
    assert result.faults_fired == {"leadership_move": 1}
    starts = [(t, broker, epoch) for t, key, broker, epoch in cluster.tracker.leader_starts if key == KEY0]
    assert starts[0][2] == 1
    later = [s for s in starts if s[0] >= 1_000]
    assert later and later[0][2] == 2 and later[0][1] != starts[0][1]  # another broker, the next epoch
    # SP-10 / SC-5: the new leader's ReadShareGroupState raised the stored leader epoch.
    state_partition = cluster.controller.metadata.share_coordinator_partition(KEY0)
    leader = cluster.controller.metadata.leader_of(SHARE_STATE_TOPIC, state_partition)
    assert leader is not None
    stored = cluster.brokers[leader.leader].share_coordinators[state_partition].shard.state(KEY0)
    assert stored is not None and stored.leader_epoch == 2
    reads = [e for e in _events(result, "deliver", msg_kind="ReadShareGroupState") if e.time_ms >= later[0][0]]
    assert reads


def test_share_coordinator_failover_moves_the_state_to_another_broker_that_replays_it() -> None:
    result, cluster = _run("share_coordinator_failover")
    assert result.faults_fired == {"share_coordinator_failover": 1}
    state_partition = cluster.controller.metadata.share_coordinator_partition(KEY0)
    loads = [e for e in _events(result, "coordinator.load", topic=SHARE_STATE_TOPIC, partition=state_partition)]
    assert len(loads) >= 2 and loads[-1].time_ms >= 1_000 and loads[-1].node != loads[0].node
    assert loads[-1].fields["records"] > 0  # it replayed the state written before the move (SC-6)
    writes = [e for e in _events(result, "coordinator.write", key=str(KEY0)) if e.time_ms > loads[-1].time_ms]
    assert writes and {e.node for e in writes} == {loads[-1].node}
    assert result.metrics["records_accepted"] == result.metrics["records_produced"] == 400


def test_group_coordinator_failover_keeps_the_members_and_their_group_epoch() -> None:
    samples: list[tuple[int, int, tuple[str, ...]]] = []
    result, cluster = _run("group_coordinator_failover", probe=_group_history(samples))
    assert result.faults_fired == {"group_coordinator_failover": 1}
    partition = cluster.controller.metadata.group_coordinator_partition("g")
    loads = _events(result, "coordinator.load", topic=CONSUMER_OFFSETS_TOPIC, partition=partition)
    assert loads[-1].time_ms >= 1_000 and loads[-1].node != loads[0].node
    before = [s for s in samples if s[0] < 1_000][-1]
    after = samples[-1]
    assert len(after[2]) == 2 and after[2] == before[2]  # GC-6: the members survive the failover
    # Kafka trunk's onLoaded leaves the group epoch alone (the KIP's new coordinator bumps it:
    # tests/model/sim/test_share_group_protocol.py runs both).
    assert after[1] == before[1]


def test_broker_crash_moves_its_leaders_and_the_broker_comes_back() -> None:
    result, _cluster = _run("broker_crash")
    assert result.faults_fired == {"broker_crash": 1}
    assert _events(result, "broker.crash", broker=1)[0].time_ms == 1_000
    assert _events(result, "broker.restart", broker=1)[0].time_ms == 3_000
    moved = [e for e in _events(result, "leader.elect") if e.time_ms == 1_000]
    assert moved and all(e.fields["leader"] != 1 for e in moved)
    assert result.metrics["failovers"] >= len(moved)
    assert result.metrics["records_accepted"] >= 400 - result.metrics["offsets_archived_or_skipped"]


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_broker_crash_does_not_duplicate_a_batch_whose_answer_it_lost(seed: int) -> None:
    # Seed 1 used to resolve 401 records for 400 produced: the batch committed just before the crash
    # lost its answer, and the producer's retry (same producer id and base sequence) was appended again.
    result, cluster = run_cluster(library.get("broker_crash"), seed)
    assert result.violations == []
    logged = sum(cluster.controller.data("events", p).log.log_end_offset for p in range(2))
    assert logged == result.metrics["records_produced"] == 400
    assert result.metrics["records_accepted_by_leader"] + result.metrics["offsets_archived_or_skipped"] == 400


def test_consumer_pause_longer_than_the_session_timeout_removes_the_member_and_bumps_the_group_epoch() -> None:
    samples: list[tuple[int, int, tuple[str, ...]]] = []
    result, _cluster = _run("consumer_pause", probe=_group_history(samples))
    assert result.faults_fired == {"consumer_pause": 1}
    paused_member = [s for s in samples if s[0] < 1_000][-1]
    assert len(paused_member[2]) == 2
    during = [s for s in samples if 1_000 <= s[0] < 6_000]
    removed = [s for s in during if len(s[2]) == 1]
    assert removed, "the paused member was never removed"  # session timeout 3 000 ms < pause 5 000 ms
    assert removed[0][1] > paused_member[1]  # GC-2: the group epoch went up
    assert removed[0][0] - 1_000 >= 3_000 - 600  # not before its session could have timed out
    fenced = _events(result, "consumer.fenced")
    assert fenced and fenced[0].node == "c1" and fenced[0].time_ms >= 6_000
    assert len(samples[-1][2]) == 2  # it rejoined as a new member


def test_network_partition_cuts_a_consumer_off_until_it_is_removed() -> None:
    samples: list[tuple[int, int, tuple[str, ...]]] = []
    result, _ = _run("network_partition", probe=_group_history(samples))
    assert result.faults_fired == {"network_partition": 1}
    drops = [e for e in _events(result, "drop", reason="partition") if e.fields["src"] == "c1"]
    assert drops and all(1_000 <= e.time_ms < 5_000 for e in drops)
    assert any(len(s[2]) == 1 for s in samples if 1_000 <= s[0] < 5_000)


def test_message_loss_drops_fetch_responses_and_their_records_are_redelivered() -> None:
    result, _ = _run("message_loss")
    assert result.faults_fired == {"message_loss": 1}
    lost = _events(result, "drop", reason="loss")
    assert lost and {e.fields["msg_kind"] for e in lost} == {"ShareFetchResponse"}
    assert all(500 <= e.time_ms < 3_500 for e in lost)
    assert result.metrics["redeliveries"] > 0
    # A consumer whose answer was lost times out (request.timeout.ms, 30 s) and closes the connection,
    # as Kafka's NetworkClient does; the leader hears of it one latency later and ends the share
    # session opened on it (SP-15); the consumer opens a new one on a new connection.
    timeouts = _events(result, "client.timeout", msg_kind="ShareFetch")
    assert {e.node for e in timeouts} == {e.node for e in lost}
    for timeout in timeouts:
        leader = f"b{timeout.fields['broker']}"
        ended = [e for e in _events(result, "share.sessions_disconnected", client=timeout.node) if e.node == leader]
        assert [e.time_ms - timeout.time_ms <= 3 for e in ended if e.time_ms >= timeout.time_ms][:1] == [True]
        reopened = [e for e in _events(result, "deliver", msg_kind="ShareFetch", src=timeout.node)
                    if e.node == leader and e.time_ms > timeout.time_ms]
        assert reopened
    ended = _events(result, "share.sessions_disconnected")
    assert result.metrics["share_sessions_disconnected"] == sum(e.fields["sessions"] for e in ended) >= len(timeouts)


def test_message_delay_slows_the_fetch_loop_down() -> None:
    delayed, _ = _run("message_delay")
    assert delayed.faults_fired == {"message_delay": 1}
    calm_scenario = replace(library.get("message_delay"), faults=FaultsSpec())
    calm, _ = run_cluster(calm_scenario, SEED, trace=True)

    def fetches(result: RunResult) -> int:
        return sum(1 for e in _events(result, "deliver", msg_kind="ShareFetch") if 500 <= e.time_ms < 3_500)

    assert fetches(delayed) < fetches(calm) // 2


def test_consumer_crash_leaves_the_group_and_its_records_go_to_the_other_consumer() -> None:
    samples: list[tuple[int, int, tuple[str, ...]]] = []
    held: list[tuple[int, int]] = []  # (time, records ACQUIRED by c1's member)
    history = _group_history(samples)

    def probe(cluster: Cluster) -> None:
        history(cluster)
        member = cluster.share_consumers["c1"].member.member_id
        held.append((cluster.scheduler.now_ms, sum(
            b.last_offset - b.first_offset + 1
            for broker in cluster.brokers.values() for slot in broker.share_leader.slots.values()
            for b in slot.sp.batches() if b.owner == member and b.state == RecordState.ACQUIRED)))

    acquisitions = _Acquisitions()
    result, cluster = _run("consumer_crash", probe=probe, every_ms=10, acquisitions=acquisitions)
    assert result.faults_fired == {"consumer_crash": 1}
    assert _events(result, "client.crash")[0].node == "c1"
    assert len(samples[-1][2]) == 1 and samples[-1][1] > [s for s in samples if s[0] < 1_000][-1][1]
    survivor = cluster.share_consumers["c2"].member.member_id
    crashed = {m for t, _, m, *_ in acquisitions.seen if t < 1_000} - {survivor}
    assert crashed  # c1 held records when it crashed ...
    after = [(m, count) for t, _, m, _, _, count in acquisitions.seen if t > 1_000 + 50]
    assert after and {m for m, _ in after} == {survivor}  # ... and from then on only c2 gets any
    assert any(count >= 2 for _, count in after)  # including c1's, redelivered (SP-4 / SP-15)
    # c1's last accepts may have been confirmed by the leader with their answer lost in the crash.
    assert result.metrics["records_accepted_by_leader"] + result.metrics["offsets_archived_or_skipped"] == 400
    assert result.metrics["records_accepted"] <= result.metrics["records_accepted_by_leader"]
    # Its process died and its host reset the connections: each leader it had a share session on
    # ended the session one latency later and released c1's records then, not when their locks
    # (2 s) would have run out (SP-15; Kafka's connection-disconnect listener).
    ended = _events(result, "share.sessions_disconnected", client="c1")
    assert ended and all(1_000 < e.time_ms <= 1_000 + 3 for e in ended)
    assert max(n for t, n in held if t < 1_000) > 0
    # ... and they stay in transition until that release's state write is accepted (SP-9), a few latencies on.
    assert [n for t, n in held if t >= 1_020] == [0] * len([t for t, _ in held if t >= 1_020])


def test_slow_processing_records_time_out_and_are_redelivered_with_a_higher_count() -> None:
    acquisitions = _Acquisitions()
    result, _cluster = _run("slow_processing", acquisitions=acquisitions)
    assert result.faults_fired == {"slow_processing": 1}
    assert _events(result, "consumer.slow", extra_ms=100)[0].node == "c1"
    first_owner: dict[tuple[SharePartitionKey, int], tuple[int, str]] = {}
    redelivered = 0
    for t, key, member, first, last, count in acquisitions.seen:
        for offset in range(first, last + 1):
            if count == 1:
                first_owner[(key, offset)] = (t, member)
            elif (key, offset) in first_owner:
                t0, _ = first_owner[(key, offset)]
                assert count >= 2 and t - t0 >= 2_000  # only once the 2 000 ms lock expired (SP-4)
                redelivered += 1
    assert redelivered > 0 and result.metrics["redeliveries"] > 0


def test_poison_records_end_archived_after_exactly_the_delivery_limit_without_failover() -> None:
    acquisitions = _Acquisitions()
    result, cluster = _run("poison", acquisitions=acquisitions)
    assert result.faults_fired == {} and result.metrics["failovers"] == 0
    limit = cluster.broker_config.delivery_count_limit
    deliveries: dict[tuple[int, int], int] = {}
    for _, key, _, first, last, count in acquisitions.seen:
        for offset in range(first, last + 1):
            deliveries[(key.partition, offset)] = max(deliveries.get((key.partition, offset), 0), count)
    poison = sorted(o for o in deliveries if is_poison(SEED, "events", o[0], o[1], 0.1))
    assert poison
    for p, offset in poison:
        assert deliveries[(p, offset)] == limit  # delivered exactly limit times
        key = SharePartitionKey("g", topic_id_for("events"), p)
        assert cluster.tracker.latest[key].spso > offset  # and then terminal: not accepted, so ARCHIVED
    healthy = [o for o, n in deliveries.items() if o not in set(poison)]
    assert all(deliveries[o] == 1 for o in healthy)
    assert result.metrics["records_accepted"] == 200 - len(poison)
    assert result.metrics["offsets_archived_or_skipped"] == len(poison)


def test_admin_alter_offsets_is_refused_while_the_group_has_members() -> None:
    result, cluster = _run("admin_alter_offsets")
    assert result.faults_fired == {"admin_alter_offsets": 1}
    assert [(r.operation, r.error.name) for r in cluster.admin.results] == [("alter_offsets", "NON_EMPTY_GROUP")]


def test_admin_delete_group_is_refused_while_the_group_has_members() -> None:
    result, cluster = _run("admin_delete_group")
    assert result.faults_fired == {"admin_delete_group": 1}
    assert [(r.operation, r.error.name) for r in cluster.admin.results] == [("delete_group", "NON_EMPTY_GROUP")]


def test_admin_add_partitions_adds_a_partition_the_group_then_consumes() -> None:
    result, cluster = _run("admin_add_partitions")
    assert result.faults_fired == {"admin_add_partitions": 1}
    assert cluster.controller.partition_count("events") == 3
    new_key = SharePartitionKey("g", topic_id_for("events"), 2)
    assert any(key == new_key and t >= 1_000 for t, key, _, _ in cluster.tracker.leader_starts)


@pytest.mark.parametrize("name", ["small", "happy"])
def test_a_fault_free_run_delivers_and_accepts_every_record_exactly_once(name: str) -> None:
    acquisitions = _Acquisitions()
    result, _ = _run(name, acquisitions=acquisitions)
    produced = result.metrics["records_produced"]
    assert produced == sum(p.records for p in library.get(name).producers)
    assert result.metrics["records_delivered"] == produced
    assert result.metrics["records_accepted"] == produced
    assert result.metrics["redeliveries"] == 0 and result.metrics["offsets_archived_or_skipped"] == 0
    assert all(count == 1 for *_, count in acquisitions.seen)
    assert sum(last - first + 1 for _, _, _, first, last, _ in acquisitions.seen) == produced


def test_hostile_state_request_is_refused_and_the_replay_moves_nothing_back() -> None:
    result, cluster = _run("hostile_state_request")
    assert result.faults_fired == {"hostile_state_request": 1}
    assert cluster.hostile is not None
    answers = {r.request: r.error.name for r in cluster.hostile.results}
    assert answers == {"replayed_write": "NONE", "write_negative_leader_epoch": "INVALID_REQUEST",
                       "write_negative_state_epoch": "INVALID_REQUEST", "read_negative_leader_epoch": "INVALID_REQUEST"}
    # It replayed a write the leader of events-0 had sent (captured on the wire), from the admin node.
    replays = _events(result, "hostile.send", request="replayed_write")
    assert len(replays) == 1 and replays[0].node == "admin" and replays[0].fields["key"] == str(KEY0)
    delivered = _events(result, "deliver", msg_kind="WriteShareGroupState", src="admin")
    assert len(delivered) == 3  # the replay and the two writes with epoch -1
