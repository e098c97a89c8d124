"""The simulated producer against a fake partition leader that appends to a ``PartitionLog``."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.errors import Errors
from model.core.log import PartitionLog
from model.core.produce_fetch import EndTxnMarkerRequest, EndTxnMarkerResponse, ProduceRequest, ProduceResponse
from model.sim.client import ClientConfig
from model.sim.network import Message, MessageFilter, Network
from model.sim.producer import Producer, ProducerSettings, key_partition
from model.sim.protocol import ClusterMetadata, Envelope, PartitionInfo
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler
from model.sim.trace import Trace

TOPIC = "t"


def metadata_for(leaders: dict[int, int], version: int = 1) -> ClusterMetadata:
    parts = {(TOPIC, p): PartitionInfo(TOPIC, p, b, version, (1, 2), (1, 2)) for p, b in leaders.items()}
    return ClusterMetadata(version, parts, {TOPIC: "tid"}, (1, 2))


class FakeLeaders:
    """Brokers 1 and 2 over one shared log per partition (replication is not the point here)."""

    def __init__(self, partitions: int = 3, seed: int = 1) -> None:
        self.scheduler = Scheduler()
        self.streams = RandomStreams(seed)
        self.trace = Trace()
        self.network = Network(self.scheduler, nx.Graph(), self.streams, self.trace,
                               default_latency=Distribution.uniform(1, 4))
        self.logs = {p: PartitionLog() for p in range(partitions)}
        self.times: dict[int, list[int]] = {p: [] for p in range(partitions)}
        self.sequences: dict[tuple[int, int, int], int] = {}  # (producer, partition, base seq) -> base offset
        self.markers: list[tuple[int, int, bool]] = []
        self.not_leader: dict[int, set[int]] = {1: set(), 2: set()}
        self.metadata = metadata_for({p: 1 for p in range(partitions)})
        for b in (1, 2):
            self.network.register(f"b{b}", lambda m, b=b: self.handle(b, m))

    def handle(self, broker: int, message: Message) -> None:
        env: Envelope = message.payload
        body = env.body
        if message.kind == "Produce":
            response: object = self.produce(broker, body)
        else:
            response = self.marker(broker, body)
        self.network.send(message.dst, message.src, message.kind + "Response", Envelope(env.correlation_id, response))

    def produce(self, broker: int, req: ProduceRequest) -> ProduceResponse:
        if req.partition in self.not_leader[broker]:
            return ProduceResponse(req.topic, req.partition, Errors.NOT_LEADER_OR_FOLLOWER)
        assert req.producer_id is not None
        seen = self.sequences.get((req.producer_id, req.partition, req.base_sequence))
        if seen is not None:
            return ProduceResponse(req.topic, req.partition, base_offset=seen)
        log = self.logs[req.partition]
        first, _ = log.append(req.records, producer_id=req.producer_id, transactional=req.transactional)
        log.advance_high_watermark()
        self.times[req.partition].extend([req.produce_time_ms] * req.records)
        self.sequences[(req.producer_id, req.partition, req.base_sequence)] = first
        return ProduceResponse(req.topic, req.partition, base_offset=first, leader_epoch=1)

    def marker(self, broker: int, req: EndTxnMarkerRequest) -> EndTxnMarkerResponse:
        if req.partition in self.not_leader[broker]:
            return EndTxnMarkerResponse(req.topic, req.partition, Errors.NOT_LEADER_OR_FOLLOWER)
        offset = self.logs[req.partition].end_transaction(req.producer_id, commit=req.commit)
        self.logs[req.partition].advance_high_watermark()
        self.times[req.partition].append(-1)
        self.markers.append((req.partition, offset, req.commit))
        return EndTxnMarkerResponse(req.topic, req.partition, marker_offset=offset)

    def producer(self, settings_: ProducerSettings, name: str = "p1", **config: int) -> Producer:
        p = Producer(name, 1, self.scheduler, self.network, lambda: self.metadata, self.streams,
                     settings=settings_, config=ClientConfig(**config), trace=self.trace)
        p.start()
        return p

    def records_in_logs(self) -> int:
        """Data records (markers excluded), aborted ones included."""
        return sum(log.log_end_offset for log in self.logs.values()) - len(self.markers)

    def aborted_records(self) -> int:
        return sum(1 for p, log in self.logs.items() for o in range(log.log_end_offset) if log.is_aborted(o))


def test_rate_round_robin_and_produce_times() -> None:
    leaders = FakeLeaders()
    p = leaders.producer(ProducerSettings(TOPIC, records=1_000, rate_per_s=1_000, start_ms=100))
    leaders.scheduler.run(until=600)
    assert 400 <= p.metrics.records_produced < 600  # ~500 in the first 500 ms after the start
    leaders.scheduler.run(until=5_000)
    assert p.finished
    assert p.metrics.records_produced == 1_000 == leaders.records_in_logs()
    ends = sorted(log.log_end_offset for log in leaders.logs.values())
    assert ends[-1] - ends[0] <= 1  # round robin
    for times in leaders.times.values():
        assert times == sorted(times) and times[0] >= 100


def test_keys_hash_stably_to_partitions() -> None:
    leaders = FakeLeaders(partitions=3)
    p = leaders.producer(ProducerSettings(TOPIC, records=200, keys=1))
    leaders.scheduler.run(until=5_000)
    assert p.finished
    only = key_partition(0, 3)
    assert leaders.logs[only].log_end_offset == 200
    assert key_partition(0, 3) == key_partition(0, 3)  # stable, not hash()
    assert {key_partition(k, 3) for k in range(50)} == {0, 1, 2}


def test_transactions_commit_or_abort_with_markers() -> None:
    leaders = FakeLeaders(partitions=2)
    p = leaders.producer(ProducerSettings(TOPIC, records=205, records_per_transaction=10, abort_rate=0.5))
    leaders.scheduler.run(until=10_000)
    m = p.metrics
    assert p.finished
    assert m.transactions_committed + m.transactions_aborted == 21  # 20 full, one of 5
    assert m.transactions_committed > 0 and m.transactions_aborted > 0
    assert m.records_produced + m.records_aborted == 205 == leaders.records_in_logs()
    assert leaders.aborted_records() == m.records_aborted
    assert all(not log.open_transactions() for log in leaders.logs.values())
    commits = sum(1 for _, _, commit in leaders.markers if commit)
    assert commits >= m.transactions_committed  # one marker per partition touched


def test_not_leader_refreshes_and_resends_to_the_new_leader() -> None:
    leaders = FakeLeaders(partitions=2)
    leaders.not_leader[1].add(0)
    p = leaders.producer(ProducerSettings(TOPIC, records=100), metadata_refresh_ms=300)
    leaders.scheduler.run(until=100)
    leaders.metadata = metadata_for({0: 2, 1: 1}, version=2)
    leaders.scheduler.run(until=5_000)
    assert p.finished and p.metrics.records_produced == 100
    assert p.metrics.retries > 0
    assert leaders.logs[0].log_end_offset == 50


def test_lost_responses_do_not_duplicate_records() -> None:
    leaders = FakeLeaders(partitions=3)
    handle = leaders.network.add_loss(0.4, MessageFilter(kinds=("ProduceResponse",)))
    p = leaders.producer(ProducerSettings(TOPIC, records=300, rate_per_s=500), request_timeout_ms=500)
    leaders.scheduler.run(until=3_000)
    leaders.network.remove_loss(handle)
    leaders.scheduler.run(until=20_000)
    assert p.metrics.requests_timed_out > 0
    assert p.finished and p.metrics.records_produced == 300 == leaders.records_in_logs()


@settings(max_examples=30, deadline=None)
@given(
    records=st.integers(0, 300),
    rate=st.integers(1, 5_000),
    keys=st.integers(0, 20),
    partitions=st.integers(1, 5),
    per_txn=st.integers(0, 12),
    seed=st.integers(0, 1_000),
)
def test_every_record_lands_once(records: int, rate: int, keys: int, partitions: int, per_txn: int,
                                 seed: int) -> None:
    leaders = FakeLeaders(partitions=partitions, seed=seed)
    p = leaders.producer(ProducerSettings(TOPIC, records=records, rate_per_s=rate, keys=keys,
                                          records_per_transaction=per_txn, abort_rate=0.3))
    leaders.scheduler.run(until=records * 1_000 // rate + 5_000)
    assert p.finished
    m = p.metrics
    assert m.records_produced + m.records_aborted == records == leaders.records_in_logs()
    assert leaders.aborted_records() == m.records_aborted
    assert m.produce_errors == 0
