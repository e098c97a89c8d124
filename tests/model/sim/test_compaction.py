"""The log cleaner of compacted topics (model/sim/log_cleaner.py) and what its gaps do to a run (SP-14):
the latest record of each key stays, offsets keep their numbers, share-partition leaders archive the gaps
and move the SPSO past them, every offset still ends accepted or archived (E-1), and a topic that is not
compacted loses nothing."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.monitors import Monitor, ViolationSink
from model.core.config import ConfigError, load_broker_config
from model.core.errors import Errors
from model.core.log import LogSpan, SpanKind
from model.core.produce_fetch import ProduceRequest, ProduceResponse
from model.core.share_state import AcknowledgeType, RecordState, SharePartitionKey, WriteShareGroupStateRequest
from model.sim.cluster import Cluster
from model.sim.controller import topic_id_for
from model.sim.faults import FaultEvent
from model.sim.log_cleaner import PartitionCleaner, dirty_bound
from model.sim.network import Message
from model.sim.protocol import Envelope
from model.sim.replication import NO_KEY, DataLog, ProduceBatch, TxnMarker
from model.sim.runner import run, run_cluster
from scenarios import library
from scenarios.spec import FaultsSpec, Scenario

SEED = 1


def _log(*batches: tuple[int, ...], time_ms: int = 0) -> DataLog:
    data = DataLog()
    for keys in batches:
        data.apply([ProduceBatch(len(keys), None, False, time_ms, keys=keys)])
    return data


def _gaps(data: DataLog) -> list[int]:
    return [o for o in range(data.log.high_watermark) if data.log.is_compacted(o)]


# -- the cleaner's rule on small logs ----------------------------------------------------------------


def test_the_cleaner_keeps_the_latest_record_of_each_key_and_leaves_gaps() -> None:
    data = _log((0, 1, 0), (2, 1, 0))
    cleaner = PartitionCleaner()
    assert cleaner.clean(data, now_ms=10) == [0, 1, 2]
    assert _gaps(data) == [0, 1, 2]
    # Offsets keep their numbers: the gap is reported as such, the survivors where they were.
    assert data.log.read(0, 6, read_committed=False) == [LogSpan(0, 2, SpanKind.GAP), LogSpan(3, 5, SpanKind.RECORD)]
    # Incremental: the next pass reads only what came since, and supersedes the kept record of key 2.
    data.apply([ProduceBatch(1, None, False, 20, keys=(2,))])
    assert cleaner.clean(data, now_ms=30) == [3]
    assert cleaner.clean(data, now_ms=40) == []
    assert _gaps(data) == [0, 1, 2, 3]


def test_unkeyed_records_markers_and_aborted_records_are_never_removed_nor_a_keys_latest() -> None:
    data = DataLog()
    data.apply([ProduceBatch(1, None, False, 0, keys=(5,))])  # 0: key 5
    data.apply([ProduceBatch(2, None, False, 0)])  # 1, 2: unkeyed
    data.apply([ProduceBatch(1, 7, True, 0, keys=(5,))])  # 3: key 5, in a transaction ...
    data.apply([TxnMarker(7, commit=False)])  # 4: ... that aborts
    assert PartitionCleaner().clean(data, now_ms=10) == []  # key 5's latest is still offset 0
    assert _gaps(data) == []


def test_a_log_written_without_keys_is_never_cleaned() -> None:
    data = DataLog()
    data.apply([ProduceBatch(4, None, False, 0)])
    assert data.keys is None
    assert PartitionCleaner().clean(data, now_ms=10) == []


def test_the_dirty_bound_stops_at_an_open_transaction_and_at_the_min_compaction_lag() -> None:
    data = _log((1, 1), time_ms=0)
    data.apply([ProduceBatch(2, None, False, 100, keys=(1, 1))])  # 2, 3 produced at 100 ms
    assert dirty_bound(data, 0, now_ms=150, min_compaction_lag_ms=100) == 2  # 2, 3 are too young
    cleaner = PartitionCleaner()
    assert cleaner.clean(data, now_ms=150, min_compaction_lag_ms=100) == [0]
    assert cleaner.clean(data, now_ms=200, min_compaction_lag_ms=100) == [1, 2]
    data.apply([ProduceBatch(1, 9, True, 200, keys=(1,))])  # 4: an open transaction
    data.apply([ProduceBatch(1, None, False, 200, keys=(1,))])  # 5
    assert data.log.last_stable_offset == 4
    assert cleaner.clean(data, now_ms=500) == []  # nothing past the LSO is cleaned
    data.apply([TxnMarker(9, commit=True)])
    assert cleaner.clean(data, now_ms=500) == [3, 4]
    assert _gaps(data) == [0, 1, 2, 3, 4]


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=6), min_size=1, max_size=12),
    passes=st.lists(st.booleans(), min_size=12, max_size=12),
)
def test_any_pass_schedule_keeps_exactly_the_latest_record_of_each_key(batches: list[list[int]],
                                                                       passes: list[bool]) -> None:
    data = DataLog()
    cleaner = PartitionCleaner()
    removed: list[int] = []
    for keys, clean_now in zip(batches, passes, strict=False):
        data.apply([ProduceBatch(len(keys), None, False, 0, keys=tuple(keys))])
        if clean_now:
            removed += cleaner.clean(data, now_ms=1)
    removed += cleaner.clean(data, now_ms=1)
    keys = [k for batch in batches for k in batch]
    latest = {k: o for o, k in enumerate(keys)}
    assert sorted(removed) == _gaps(data) == [o for o, k in enumerate(keys) if latest[k] != o]
    assert len(removed) == len(set(removed))


def test_the_cleaner_settings_are_checked_by_name_value_and_range() -> None:
    with pytest.raises(ConfigError, match=r"log.cleaner.backoff.ms = 0: must be an integer in \[1, \+inf\]"):
        load_broker_config({"log.cleaner.backoff.ms": 0})
    with pytest.raises(ConfigError, match=r"log.cleaner.min.compaction.lag.ms = -1"):
        load_broker_config({"log.cleaner.min.compaction.lag.ms": -1})


# -- runs ---------------------------------------------------------------------------------------------


class _Leaders(Monitor):
    """What the share-partition leaders did, per key: the offsets they delivered, and those a write the
    share coordinator accepted made terminal (an ARCHIVED batch, or below its start offset)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(SEED))
        self.delivered: dict[SharePartitionKey, set[int]] = {}
        self.archived: dict[SharePartitionKey, set[int]] = {}
        self.start_offset: dict[SharePartitionKey, int] = {}

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list, leader_epoch: int,
                   now_ms: int) -> None:
        for a in acquired:
            first, last = a.first_offset, a.last_offset
            self.delivered.setdefault(key, set()).update(range(first, last + 1))

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self.start_offset[request.key] = max(self.start_offset.get(request.key, 0), request.start_offset)
        for batch in request.state_batches:
            if batch.delivery_state == RecordState.ARCHIVED:
                self.archived.setdefault(request.key, set()).update(range(batch.first_offset, batch.last_offset + 1))


def _twin(scenario: Scenario, *, compacted: bool) -> Scenario:
    return replace(scenario, topics=tuple(replace(t, compacted=compacted) for t in scenario.topics))


def test_the_compacted_scenario_removes_records_and_its_leaders_archive_the_gaps() -> None:
    scenario = library.get("compacted_topic")
    leaders = _Leaders()
    result, cluster = run_cluster(scenario, SEED, extra_monitors=[leaders])
    assert result.violations == [], [v.describe() for v in result.violations]
    m = result.metrics
    assert m["records_compacted"] > 0
    assert m["records_unresolved"] == 0 and result.metrics["quiescent_at_ms"] is not None  # E-1
    # Record accounting: every produced offset ends accepted or archived; only gaps are archived here
    # (every consumer accepts), and a compacted record already delivered is still accepted.
    assert m["records_accepted_by_leader"] + m["offsets_archived_or_skipped"] == m["records_produced"]
    assert 0 < m["offsets_archived_or_skipped"] <= m["records_compacted"]
    for topic in scenario.topics:
        for p in range(topic.partitions):
            data = cluster.controller.data(topic.name, p)
            key = SharePartitionKey("g", topic_id_for(topic.name), p)
            gaps = set(_gaps(data))
            never_delivered = gaps - leaders.delivered.get(key, set())
            assert never_delivered, f"{topic.name}-{p}: no gap reached the share-partition leader"
            # SP-14: archived, durably (the SPSO moved past them by a write the coordinator accepted).
            archived = leaders.archived.get(key, set())
            assert all(o in archived or o < leaders.start_offset[key] for o in never_delivered)
            assert cluster.tracker.latest[key].spso == data.log.high_watermark > max(gaps)
            # The cleaner's rule on the run's own log: each key's latest record is there.
            keys = data.keys
            assert keys is not None
            latest = {keys[o]: o for o in range(data.log.high_watermark)}
            assert not any(data.log.is_compacted(o) for o in latest.values())
            assert len(gaps) == data.log.high_watermark - len(latest)


def test_the_same_topic_not_compacted_never_loses_a_record() -> None:
    result = run(_twin(library.get("compacted_topic"), compacted=False), SEED)
    assert result.ok, [v.describe() for v in result.violations]
    m = result.metrics
    assert m["records_compacted"] == 0 and m["offsets_archived_or_skipped"] == 0
    assert m["records_accepted_by_leader"] == m["records_produced"] == 2_000


def test_gaps_survive_a_leader_failover() -> None:
    scenario = library.get("compacted_topic")
    crash = FaultEvent(at_ms=1_000, kind="broker_crash", target="b1", duration_ms=1_500)
    faulted = replace(scenario, faults=FaultsSpec(plan=(crash,)))
    result, cluster = run_cluster(faulted, SEED)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"broker_crash": 1} and result.metrics["partition_failovers"] >= 1
    m = result.metrics
    assert m["records_compacted"] > 0 and m["records_unresolved"] == 0
    assert m["records_accepted_by_leader"] + m["offsets_archived_or_skipped"] == m["records_produced"]
    gaps = sum(len(_gaps(cluster.controller.data("events", p))) for p in range(2))
    assert gaps == m["records_compacted"]  # nothing removed was lost again, nothing came back


def test_a_kip848_consumer_fetches_past_the_gaps() -> None:
    scenario = library.get("compacted_topic")
    groups = tuple(replace(g, kind="consumer") for g in scenario.groups)
    result = run(replace(scenario, groups=groups), SEED)
    assert result.ok, [v.describe() for v in result.violations]
    m = result.metrics
    assert m["records_compacted"] > 0
    # Fetch returns only records: what was compacted before it was read is never delivered.
    assert 30 <= m["records_delivered"] < m["records_produced"]


def test_same_seed_same_trace_hash_and_the_cleaner_is_in_the_trace() -> None:
    scenario = library.get("compacted_topic")
    first = run(scenario, SEED, trace=True)
    again = run(scenario, SEED)
    assert first.trace_hash == again.trace_hash and first.metrics == again.metrics
    assert first.trace is not None
    assert any(e.kind == "log.clean" for e in first.trace.events)
    slower = replace(scenario, cluster=replace(scenario.cluster, config={
        **scenario.cluster.config, "log.cleaner.backoff.ms": 700}))
    assert run(slower, SEED).trace_hash != first.trace_hash


def test_the_cleaner_runs_only_on_a_partition_with_a_live_leader() -> None:
    def built(crash_all: bool) -> Cluster:
        cluster = Cluster(library.get("compacted_topic"), SEED)
        cluster.controller.data("events", 0).apply([ProduceBatch(3, None, False, 0, keys=(4, 4, 4))])
        if crash_all:
            for broker_id in cluster.broker_ids:
                cluster.controller.crash_broker(broker_id)
        cluster.log_cleaner.clean_all()
        return cluster

    assert built(crash_all=False).log_cleaner.records_compacted == 2
    leaderless = built(crash_all=True)
    assert leaderless.controller.partitions[("events", 0)].leader not in leaderless.controller.alive
    assert leaderless.log_cleaner.records_compacted == 0


def test_a_produce_carries_one_key_per_record_or_is_invalid() -> None:
    cluster = Cluster(library.get("compacted_topic"), SEED)
    broker = cluster.brokers[cluster.controller.partitions[("events", 0)].leader]
    answers: list[ProduceResponse] = []
    broker.reply = lambda message, body: answers.append(body)  # type: ignore[method-assign]
    for correlation_id, keys in enumerate(((7,), (7, 8), ())):
        request = ProduceRequest("events", 0, 2, keys=keys)
        broker.handle(Message(correlation_id, "p1", broker.node, "Produce", Envelope(correlation_id, request), 0))
    cluster.scheduler.run(until=100)
    assert [a.error_code for a in answers] == [Errors.INVALID_REQUEST, Errors.NONE, Errors.NONE]
    assert list(cluster.controller.data("events", 0).keys or ()) == [7, 8, NO_KEY, NO_KEY]


# -- GAP acknowledgements of compacted offsets (protocol "kafka", issue 24) ----------------------------


class _Acks(Monitor):
    """The offsets leaders acquired, and those a leader took an acknowledgement of GAP for, per key."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(SEED))
        self.acquired: dict[SharePartitionKey, int] = {}
        self.gap: dict[SharePartitionKey, set[int]] = {}

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list, leader_epoch: int,
                   now_ms: int) -> None:
        self.acquired[key] = self.acquired.get(key, 0) + sum(a.last_offset - a.first_offset + 1 for a in acquired)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple, leader_epoch: int,
                       now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        for batch in batches:
            types = batch.acknowledge_types
            for i, offset in enumerate(range(batch.first_offset, batch.last_offset + 1)):
                if (types[0] if len(types) == 1 else types[i]) == int(AcknowledgeType.GAP):
                    self.gap.setdefault(key, set()).add(offset)


def _gap_acknowledged(cluster: Cluster) -> int:
    return sum(c.metrics.records_gap_acknowledged for c in cluster.consumers.values())


def test_kafka_compacted_offsets_in_fetched_batches_are_acknowledged_gap_by_the_client() -> None:
    """Trunk: the leader acquires whole fetched batches, offsets the cleaner removed inside them too; the
    client finds no record there and acknowledges them with GAP (ShareCompletedFetch), never giving them
    to the application; the leader archives them (SP-3)."""
    acks = _Acks()
    result, cluster = run_cluster(library.get("compacted_topic"), SEED, extra_monitors=[acks])
    assert result.violations == [], [v.describe() for v in result.violations]
    m = result.metrics
    assert m["records_unresolved"] == 0 and m["quiescent_at_ms"] is not None  # E-1
    gap_acked = sum(len(offsets) for offsets in acks.gap.values())
    assert gap_acked > 0 and _gap_acknowledged(cluster) == gap_acked
    for key, offsets in acks.gap.items():
        log = cluster.controller.data("events", key.partition).log
        assert all(log.is_compacted(o) for o in offsets)  # GAP only where the log has no record
    # Acquired offsets are either records delivered to the application or GAP-acknowledged, never both.
    assert sum(acks.acquired.values()) == m["records_delivered"] + gap_acked
    assert m["records_accepted"] == m["records_delivered"]  # every consumer accepts: its records only


def test_kip_leaders_archive_compacted_offsets_and_no_client_acknowledges_gap() -> None:
    scenario = library.get("compacted_topic")
    kip = replace(scenario, cluster=replace(scenario.cluster, config={**scenario.cluster.config,
                                                                      "sharesim.protocol": "kip"}))
    acks = _Acks()
    result, cluster = run_cluster(kip, SEED, extra_monitors=[acks])
    assert result.ok, [v.describe() for v in result.violations]
    assert acks.gap == {} and _gap_acknowledged(cluster) == 0
    assert result.metrics["records_unresolved"] == 0
    assert result.metrics["offsets_archived_or_skipped"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_gap_ack_for_records_mutant_is_caught(seed: int) -> None:
    result = run(library.get("compacted_topic"), seed, mutant="gap-ack-for-records")
    assert "gap-only-without-record" in {v.invariant for v in result.violations}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_compacted_swarm_runs_clean_and_acknowledges_gaps(seed: int) -> None:
    result, cluster = run_cluster(library.get("swarm_compacted"), seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.metrics["records_unresolved"] == 0 and result.metrics["records_compacted"] > 0
    assert _gap_acknowledged(cluster) > 0
