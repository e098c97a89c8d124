"""The simulated KIP-848 consumer against a fake broker: the real ``ConsumerGroupManager`` as the
group coordinator, and ``PartitionLog``s as the partitions it fetches."""

from __future__ import annotations

import itertools

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.group_checks import ExclusiveOwnershipMonitor
from invariants.sink import ViolationSink
from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
)
from model.core.log import PartitionLog, SpanKind
from model.core.metadata import MetadataImage, TopicPartition
from model.core.produce_fetch import (
    FetchRequest,
    FetchResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
)
from model.sim.client import ClientConfig
from model.sim.consumer import Consumer, ConsumerSettings
from model.sim.network import Message, Network
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, ClusterMetadata, Envelope, PartitionInfo
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

GROUP = "g"
TOPIC = "t"


def cluster_metadata(partitions: int) -> ClusterMetadata:
    parts = {(TOPIC, p): PartitionInfo(TOPIC, p, 1, 1, (1,), (1,)) for p in range(partitions)}
    parts[(CONSUMER_OFFSETS_TOPIC, 0)] = PartitionInfo(CONSUMER_OFFSETS_TOPIC, 0, 1, 1, (1,), (1,))
    return ClusterMetadata(1, parts, {TOPIC: "tid"}, (1,))


class FakeBroker:
    def __init__(self, partitions: int = 4, records: int = 100, seed: int = 5,
                 session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 5_000) -> None:
        self.scheduler = Scheduler()
        self.streams = RandomStreams(seed)
        self.trace = Trace()
        self.network = Network(self.scheduler, nx.Graph(), self.streams, self.trace,
                               default_latency=Distribution.uniform(1, 3))
        self.metadata = cluster_metadata(partitions)
        ids = itertools.count(1)
        self.manager = ConsumerGroupManager(
            BrokerConfig(consumer_session_timeout_ms=session_timeout_ms, consumer_min_session_timeout_ms=1_000,
                         consumer_heartbeat_interval_ms=heartbeat_interval_ms,
                         consumer_min_heartbeat_interval_ms=min(heartbeat_interval_ms, 5_000)),
            MetadataImage().with_topic(TOPIC, partitions, "tid"),
            lambda: f"m{next(ids)}",
        )
        self.logs = {p: PartitionLog() for p in range(partitions)}
        self.times: dict[int, list[int]] = {p: [] for p in range(partitions)}
        for p in range(partitions):
            if records:
                self.append(p, records)
        self.timer: Timer | None = None
        self.received: list[tuple[int, str, object]] = []  # (time, kind, body)
        self.consumers: list[Consumer] = []
        self.stale_commits = 0  # answer this many OffsetCommits with STALE_MEMBER_EPOCH
        self.network.register("b1", self.handle)

    def append(self, p: int, count: int, producer_id: int | None = None, transactional: bool = False) -> None:
        self.logs[p].append(count, producer_id=producer_id, transactional=transactional)
        self.times[p].extend([self.scheduler.now_ms] * count)
        self.logs[p].advance_high_watermark()

    def end_transaction(self, p: int, producer_id: int, commit: bool) -> None:
        self.logs[p].end_transaction(producer_id, commit=commit)
        self.times[p].append(-1)
        self.logs[p].advance_high_watermark()

    def handle(self, message: Message) -> None:
        env: Envelope = message.payload
        body = env.body
        now = self.scheduler.now_ms
        self.received.append((now, message.kind, body))
        if isinstance(body, ConsumerGroupHeartbeatRequest):
            response: object = self.manager.heartbeat(body, now).response
        elif isinstance(body, OffsetCommitRequest) and self.stale_commits:
            self.stale_commits -= 1
            response = OffsetCommitResponse(tuple(
                OffsetCommitResponsePartition(p.topic, p.partition_index, Errors.STALE_MEMBER_EPOCH)
                for p in body.partitions))
        elif isinstance(body, OffsetCommitRequest):
            response = self.manager.commit_offsets(body, now).response
        elif isinstance(body, OffsetFetchRequest):
            response = OffsetFetchResponse(tuple(
                OffsetFetchResponsePartition(t, p, self.committed(p) if self.committed(p) is not None else -1)
                for t, p in body.partitions))
        elif isinstance(body, FetchRequest):
            response = self.fetch(body)
        else:
            raise AssertionError(body)
        self.arm()
        self.network.send("b1", message.src, message.kind + "Response", Envelope(env.correlation_id, response))

    def committed(self, p: int) -> int | None:
        return self.manager.committed_offset(GROUP, TopicPartition(TOPIC, p))

    def arm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        deadline = self.manager.next_deadline_ms()
        if deadline is not None:
            self.timer = self.scheduler.timer_at(max(deadline, self.scheduler.now_ms), self.expire)

    def expire(self) -> None:
        self.timer = None
        self.manager.expire(self.scheduler.now_ms)
        self.arm()

    def fetch(self, req: FetchRequest) -> FetchResponse:
        log = self.logs[req.partition]
        offsets = dict(high_watermark=log.high_watermark, last_stable_offset=log.last_stable_offset,
                       log_start_offset=log.log_start_offset)
        if not log.log_start_offset <= req.fetch_offset <= log.high_watermark:
            return FetchResponse(req.topic, req.partition, Errors.OFFSET_OUT_OF_RANGE, **offsets)
        spans = log.read(req.fetch_offset, req.fetch_offset + req.max_records, read_committed=req.read_committed)
        ranges = tuple((s.first, s.last) for s in spans if s.kind == SpanKind.RECORD)
        times = tuple(self.times[req.partition][o] for first, last in ranges for o in range(first, last + 1))
        next_offset = spans[-1].last + 1 if spans else req.fetch_offset
        return FetchResponse(req.topic, req.partition, records=ranges, next_fetch_offset=next_offset,
                             produce_times=times, **offsets)

    def consumer(self, name: str, settings_: ConsumerSettings | None = None,
                 config: ClientConfig | None = None) -> Consumer:
        c = Consumer(name, GROUP, [TOPIC], self.scheduler, self.network, lambda: self.metadata, self.streams,
                     settings=settings_, config=config or ClientConfig(), trace=self.trace)
        c.start()
        self.consumers.append(c)
        return c

    def run(self, until: int) -> None:
        self.scheduler.run(until=until)

    def kinds(self, kind: str) -> list[tuple[int, object]]:
        return [(t, b) for t, k, b in self.received if k == kind]


def test_one_consumer_reads_everything_and_commits() -> None:
    broker = FakeBroker(partitions=3, records=120)
    c = broker.consumer("c1", ConsumerSettings(max_poll_records=50))
    broker.run(20_000)
    assert c.owned == {TopicPartition(TOPIC, p) for p in range(3)}
    assert c.metrics.records_delivered == 360
    assert [c.position(TopicPartition(TOPIC, p)) for p in range(3)] == [120, 120, 120]
    assert [broker.committed(p) for p in range(3)] == [120, 120, 120]  # auto-commit
    assert len(c.metrics.end_to_end_latencies_ms) == 360
    assert all(isinstance(b, FetchRequest) and b.max_records == 50 for _, b in broker.kinds("Fetch"))


def test_commit_before_revoke_and_no_record_read_twice() -> None:
    broker = FakeBroker(partitions=4, records=400)
    slow = ConsumerSettings(processing=Distribution.constant(5), max_poll_records=20)
    c1 = broker.consumer("c1", slow)
    broker.run(3_000)
    c2 = broker.consumer("c2", slow)
    broker.run(60_000)
    assert c1.owned and c2.owned and c1.owned.isdisjoint(c2.owned)
    # Every record processed exactly once: the new owner resumed where the old one committed.
    assert c1.metrics.records_delivered + c2.metrics.records_delivered == 1_600
    assert c1.metrics.rebalances >= 2
    # CG-2: for every partition c1 gave up, its OffsetCommit reached the coordinator
    # before the heartbeat that no longer listed it.
    member = c1.member.member_id
    heartbeats = [(t, b) for t, b in broker.kinds("ConsumerGroupHeartbeat")
                  if isinstance(b, ConsumerGroupHeartbeatRequest) and b.member_id == member]
    for tp in sorted(c2.owned):
        ack_time = min(t for t, b in heartbeats
                       if b.topic_partitions is not None and tp not in b.topic_partitions and t > 3_000)
        commits = [t for t, b in broker.kinds("OffsetCommit")
                   if isinstance(b, OffsetCommitRequest) and b.member_id == member
                   and any(p.topic_partition == tp for p in b.partitions)]
        assert commits and min(commits) < ack_time


def test_read_committed_skips_aborted_records_and_markers() -> None:
    broker = FakeBroker(partitions=1, records=10)
    broker.append(0, 5, producer_id=7, transactional=True)
    broker.end_transaction(0, 7, commit=False)  # offsets 10-14 aborted, 15 a marker
    broker.append(0, 5, producer_id=7, transactional=True)
    broker.end_transaction(0, 7, commit=True)  # 16-20 committed, 21 a marker
    broker.append(0, 3)
    c = broker.consumer("c1", ConsumerSettings(read_committed=True, max_poll_records=4))
    broker.run(10_000)
    assert c.metrics.records_delivered == 10 + 5 + 3
    assert c.position(TopicPartition(TOPIC, 0)) == 25
    uncommitted = FakeBroker(partitions=1, records=10)
    uncommitted.append(0, 5, producer_id=7, transactional=True)
    uncommitted.end_transaction(0, 7, commit=False)
    c2 = uncommitted.consumer("c2", ConsumerSettings(read_committed=False))
    uncommitted.run(10_000)
    assert c2.metrics.records_delivered == 15  # aborted records included, the marker not


def test_close_commits_then_leaves() -> None:
    broker = FakeBroker(partitions=2, records=1_000)
    c = broker.consumer("c1", ConsumerSettings(processing=Distribution.constant(2), max_poll_records=10))
    broker.run(2_000)
    c.close()
    broker.run(5_000)
    assert c.closed and not c.alive
    last_commit = max(t for t, _ in broker.kinds("OffsetCommit"))
    leave_time, leave = broker.kinds("ConsumerGroupHeartbeat")[-1]
    assert isinstance(leave, ConsumerGroupHeartbeatRequest) and leave.member_epoch == -1
    assert last_commit < leave_time
    group = broker.manager.group(GROUP)
    assert group is not None and not group.members
    processed = c.metrics.records_delivered
    assert sum(broker.committed(p) or 0 for p in range(2)) == processed


def test_static_member_rejoins_with_its_assignment() -> None:
    broker = FakeBroker(partitions=4, records=50)
    static = ConsumerSettings(instance_id="i1")
    c1 = broker.consumer("c1", static)
    c2 = broker.consumer("c2", ConsumerSettings(instance_id="i2"))
    broker.run(20_000)
    before = c1.owned
    assert before and c2.owned
    c1.close(temporary=True)
    broker.run(21_000)
    leave = [b for _, b in broker.kinds("ConsumerGroupHeartbeat")
             if isinstance(b, ConsumerGroupHeartbeatRequest) and b.instance_id == "i1"][-1]
    assert leave.member_epoch == -2
    c1.start()
    broker.run(40_000)
    assert c1.owned == before
    assert c1.metrics.records_delivered + c2.metrics.records_delivered == 200


def test_paused_past_session_timeout_is_fenced_and_rejoins() -> None:
    broker = FakeBroker(partitions=2, records=50, session_timeout_ms=10_000)
    c = broker.consumer("c1")
    broker.run(6_000)
    assert c.owned
    c.pause(30_000)
    broker.run(36_500)
    broker.run(60_000)
    assert c.metrics.fenced == 1
    assert c.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
    assert [broker.committed(p) for p in range(2)] == [50, 50]


def test_lost_offset_fetch_answers_fall_back_to_auto_offset_reset() -> None:
    broker = FakeBroker(partitions=1, records=30)
    broker.network.unregister("b1")
    broker.network.register("b1", lambda m: broker.handle(m) if m.kind != "OffsetFetch" else None)
    # Two attempts fit in the API timeout: 0 → 30 s, 30.1 s → 60.1 s; the next would start at 60.3 s.
    c = broker.consumer("c1", ConsumerSettings(auto_offset_reset="latest"), ClientConfig(default_api_timeout_ms=60_200))
    broker.run(200_000)
    assert c.metrics.requests_timed_out == 2
    assert c.position(TopicPartition(TOPIC, 0)) == 30 and c.metrics.records_delivered == 0


@settings(max_examples=15, deadline=None)
@given(consumers=st.integers(1, 4), partitions=st.integers(1, 6), records=st.integers(0, 80),
       seed=st.integers(0, 1_000), stagger=st.integers(0, 4_000))
def test_every_record_processed_once_without_faults(consumers: int, partitions: int, records: int, seed: int,
                                                     stagger: int) -> None:
    broker = FakeBroker(partitions=partitions, records=records, seed=seed)
    for i in range(consumers):
        # Slow enough that rebalances happen while partitions still have records to read.
        broker.consumer(f"c{i + 1}", ConsumerSettings(processing=Distribution.uniform(10, 60), max_poll_records=7))
        broker.run(broker.scheduler.now_ms + 1 + stagger)
    broker.run(broker.scheduler.now_ms + 200_000)
    owned = [c.owned for c in broker.consumers]
    assert frozenset().union(*owned) == {TopicPartition(TOPIC, p) for p in range(partitions)}
    assert sum(len(o) for o in owned) == partitions  # E-5: disjoint
    assert sum(c.metrics.records_delivered for c in broker.consumers) == partitions * records
    assert all((broker.committed(p) or 0) == records for p in range(partitions))


def test_same_seed_same_trace() -> None:
    def once() -> str:
        broker = FakeBroker(partitions=3, records=60, seed=9)
        broker.consumer("c1", ConsumerSettings(processing=Distribution.exponential(4)))
        broker.run(1_000)
        broker.consumer("c2", ConsumerSettings(processing=Distribution.exponential(4)))
        broker.run(30_000)
        return broker.trace.trace_hash

    assert once() == once()


def test_stale_member_epoch_commit_heartbeats_at_once_and_commits_later() -> None:
    broker = FakeBroker(partitions=1, records=30)
    broker.stale_commits = 1
    c = broker.consumer("c1", ConsumerSettings(auto_commit_interval_ms=3_000))
    broker.run(3_100)
    assert c.metrics.commit_errors == 1
    commit_time = max(t for t, _ in broker.kinds("OffsetCommit"))
    beats = [t for t, _ in broker.kinds("ConsumerGroupHeartbeat") if t > commit_time]
    assert beats and beats[0] - commit_time < 100  # not the 5 s interval
    broker.run(10_000)
    assert broker.committed(0) == 30 and c.metrics.offsets_committed == 1


def test_slow_processing_ends_with_its_fault_not_with_the_batch() -> None:
    # swarm_wide seeds 223060601181880369, 7253512121070530027, 5760959757858439633, 8154010480964993709,
    # 692621596779196987: a batch begun under slow_processing (about 3 s extra a record, 19 records) kept
    # its 57 s after the fault ended; a revocation waited for it with the heartbeats stopped, so the
    # member was still not stable 45 s after the faults (E-5 member-convergence).
    broker = FakeBroker(partitions=2, records=20)
    slow = ConsumerSettings(processing=Distribution.constant(2), max_poll_records=20)
    c1 = broker.consumer("c1", slow)
    c1.slow_processing(3_000)
    broker.run(1_000)
    assert c1.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)} and c1._processing is not None
    c2 = broker.consumer("c2", slow)  # c1 must give up a partition (at its next heartbeat)
    broker.run(2_000)
    c1.slow_processing(0)  # the record under way keeps its 3 s; the other 19 take 2 ms each
    broker.run(15_000)
    assert c1.metrics.records_delivered + c2.metrics.records_delivered == 40
    assert c1.owned | c2.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
    assert len(c1.owned) == len(c2.owned) == 1
    assert [broker.committed(p) for p in range(2)] == [20, 20]


def _c2_joins_while_c1_processes_t1(broker: FakeBroker, slow: ConsumerSettings) -> tuple[Consumer, Consumer]:
    """c1 reads both partitions; at 11 s, while it processes t-1's batch (until about 20 s), c2 joins."""
    c1 = broker.consumer("c1", slow)
    broker.run(11_000)
    return c1, broker.consumer("c2", slow)


def test_a_member_heartbeats_while_its_revocation_waits_and_is_not_fenced() -> None:
    # A revocation waits for the batch under way (20 records, 500 ms each: 10 s) and then its commit; the
    # session timeout is 3 s. The Java consumer heartbeats while it reconciles; so must ours, or the
    # coordinator removes it (swarm_wide seeds 16, 33, 198…: members fenced behind a slow revocation).
    broker = FakeBroker(partitions=2, records=20, session_timeout_ms=3_000, heartbeat_interval_ms=500)
    slow = ConsumerSettings(processing=Distribution.constant(500), max_poll_records=20)
    c1, c2 = _c2_joins_while_c1_processes_t1(broker, slow)
    assert c1._processing is not None and c1._processing.part.tp == TopicPartition(TOPIC, 1)
    broker.run(13_000)
    assert c1.member.revoking == {TopicPartition(TOPIC, 1)}  # told to give it up, still processing it
    assert c1.owned == {TopicPartition(TOPIC, 0)} and c2.owned == frozenset()  # not handed over yet (CG-2)
    broker.run(18_000)
    beats = [t for t, body in broker.kinds("ConsumerGroupHeartbeat")
             if 13_000 <= t <= 18_000 and getattr(body, "member_id", "") == c1.member.member_id]
    assert len(beats) >= 8  # every interval while the revocation waits
    broker.run(40_000)
    assert c1.metrics.fenced == 0 and c2.metrics.fenced == 0
    assert c1.member.revoking == frozenset() and c2.owned == {TopicPartition(TOPIC, 1)}
    assert broker.committed(1) == 20 and c2.metrics.records_delivered == 0  # committed before the handover


def _c1_revoking_t1(**settings: int) -> tuple[FakeBroker, Consumer, Consumer]:
    """At 16.5 s c1 has been told to give t-1 up to c2 and waits for its batch (until about 20 s)."""
    broker = FakeBroker(partitions=2, records=20)
    slow = ConsumerSettings(processing=Distribution.constant(500), max_poll_records=20, **settings)  # type: ignore[arg-type]
    c1, c2 = _c2_joins_while_c1_processes_t1(broker, slow)
    broker.run(16_500)
    assert c1._revoking is not None
    return broker, c1, c2


def _revocation_commits(broker: FakeBroker, c1: Consumer, after_ms: int) -> list[tuple[int, int]]:
    """(time, member epoch) of c1's OffsetCommits of t-1 after ``after_ms``."""
    return [(t, body.generation_id_or_member_epoch) for t, body in broker.kinds("OffsetCommit")
            if t > after_ms and isinstance(body, OffsetCommitRequest) and body.member_id == c1.member.member_id
            and [p.partition_index for p in body.partitions] == [1]]


def test_a_revocation_commit_answered_stale_member_epoch_is_retried_before_the_handover() -> None:
    # The Java consumer retries the commit before a revocation on STALE_MEMBER_EPOCH while it has an
    # epoch (autoCommitSyncBeforeRevocationWithRetries), with back-off, until the rebalance timeout.
    # Twice stale here: the third attempt commits t-1 at 20, and only then does c2 get it (CG-2).
    broker, c1, c2 = _c1_revoking_t1()
    broker.stale_commits = 2
    broker.run(40_000)
    commits = _revocation_commits(broker, c1, 16_500)
    assert len(commits) == 3 and c1.metrics.commit_errors == 2
    assert commits[1][0] - commits[0][0] >= 100 and commits[2][0] - commits[1][0] >= 200  # retry.backoff.ms, doubling
    assert [epoch for _, epoch in commits] == [2, 2, 2] and c1.member.member_epoch == 3  # bumped after the handover
    assert broker.committed(1) == 20 and c2.owned == {TopicPartition(TOPIC, 1)}
    assert c2.metrics.records_delivered == 0  # c2 resumed at 20: nothing read twice


def test_a_revocation_commit_stale_past_the_rebalance_timeout_lets_the_revocation_go_ahead() -> None:
    # Every commit stale: the retries stop at the rebalance timeout (15 s) counted from when c1 was told
    # to give t-1 up, and the revocation goes ahead uncommitted, so c2 reads t-1 again from the start
    # (at-least-once).
    broker, c1, c2 = _c1_revoking_t1(rebalance_timeout_ms=15_000, auto_commit_interval_ms=60_000)
    told_ms = c1._revoke_started_ms
    broker.stale_commits = 1_000
    broker.run(60_000)
    commits = _revocation_commits(broker, c1, 16_500)
    assert len(commits) >= 5 and commits[-1][0] < told_ms + 15_000 < commits[-1][0] + 2_000
    assert c2.owned == {TopicPartition(TOPIC, 1)} and c2.metrics.records_delivered == 20


def test_partitions_lost_while_being_revoked_are_not_committed_after_the_rejoin() -> None:
    # c1 is told to give up t-1 while it processes it (10 s), and is fenced by its 2 s rebalance timeout
    # before it is done. The Java consumer drops lost partitions uncommitted (onPartitionsLost); a commit
    # of t-1 after c1 rejoined would carry its new epoch, be accepted, and commit a partition c2 owns.
    broker = FakeBroker(partitions=2, records=20, session_timeout_ms=3_000, heartbeat_interval_ms=500)
    slow = ConsumerSettings(processing=Distribution.constant(500), max_poll_records=20, rebalance_timeout_ms=2_000)
    c1, c2 = _c2_joins_while_c1_processes_t1(broker, slow)
    broker.run(40_000)
    assert c1.metrics.fenced >= 1 and c2.owned == {TopicPartition(TOPIC, 1)}
    late = [(t, body.generation_id_or_member_epoch) for t, body in broker.kinds("OffsetCommit")
            if t > 11_500 and body.member_id == c1.member.member_id
            and any(p.partition_index == 1 for p in body.partitions)]
    assert late == []  # after the revocation began, c1 never committed t-1 (auto-commit covers what it owns)


def test_close_during_a_revocation_leaves_once_the_revocation_is_done() -> None:
    broker, c1, c2 = _c1_revoking_t1()
    c1.close()
    broker.run(30_000)
    assert c1.closed and not c1.alive
    leaves = [b for _, b in broker.kinds("ConsumerGroupHeartbeat")
              if getattr(b, "member_id", "") == c1.member.member_id and b.member_epoch == -1]
    assert len(leaves) == 1
    assert c2.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}


def test_a_closing_member_heartbeats_until_it_leaves_and_takes_no_new_assignment() -> None:
    # close() at 16.5 s waits for the batch of t-1 under way (until about 20 s), then commits and leaves;
    # the session timeout is 3 s. The Java consumer heartbeats in PREPARE_LEAVING and ignores new
    # assignments; so does ours: it leaves (epoch -1) rather than being timed out.
    broker = FakeBroker(partitions=2, records=20, session_timeout_ms=3_000, heartbeat_interval_ms=500)
    slow = ConsumerSettings(processing=Distribution.constant(500), max_poll_records=20)
    c1, c2 = _c2_joins_while_c1_processes_t1(broker, slow)
    broker.run(16_500)
    c1.close()
    broker.run(40_000)
    mine = [(t, b) for t, b in broker.kinds("ConsumerGroupHeartbeat")
            if getattr(b, "member_id", "") == c1.member.member_id]
    assert len([t for t, b in mine if 17_000 <= t <= 19_500 and b.member_epoch > 0]) >= 4
    assert [b.member_epoch for _, b in mine][-1] == -1 and c1.closed
    assert c1.metrics.fenced == 0 and c2.metrics.fenced == 0
    assert c2.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
    assert [broker.committed(p) for p in range(2)] == [20, 20]


def test_a_member_fenced_while_closing_loses_its_partitions_and_still_closes() -> None:
    # close() at 11 s: c1 ignores the revocation c2's join asks for (it is leaving), its 2 s rebalance
    # timeout fences it, and t-0 and t-1 go to c2. c1 must drop them then (CG-4), not hold them
    # until its close is done: exclusive-ownership (CG-3) would see them owned twice.
    sink = ViolationSink(0)
    monitor = ExclusiveOwnershipMonitor(sink)
    broker = FakeBroker(partitions=2, records=20, session_timeout_ms=3_000, heartbeat_interval_ms=500)
    slow = ConsumerSettings(processing=Distribution.constant(500), max_poll_records=20, rebalance_timeout_ms=2_000)
    c1 = broker.consumer("c1", slow)
    c1.observer = monitor
    broker.run(11_000)
    c2 = broker.consumer("c2", slow)
    c2.observer = monitor
    broker.run(11_005)
    c1.close()
    broker.run(40_000)
    assert c1.metrics.fenced == 1 and c1.closed and c1.owned == frozenset()
    assert c2.owned == {TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)}
    assert sink.violations == [], [v.describe() for v in sink.violations]
    leaves = [b for _, b in broker.kinds("ConsumerGroupHeartbeat")
              if getattr(b, "member_id", "") == c1.member.member_id and b.member_epoch < 0]
    assert leaves == []  # fenced: out of the group already, nothing to leave
