"""A small cluster driven by hand: a Scheduler, a Network, a Controller, 3 Brokers and fake
clients that send envelopes. Produce/Fetch, the share coordinator (SC-6, SC-7), the group
coordinator (GC-6, GC-7), crashes and stale metadata."""

from __future__ import annotations

import itertools
from typing import Any

import networkx as nx

from model.core.errors import Errors
from model.core.group.consumer_messages import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
)
from model.core.group.share_messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from model.core.metadata import TopicPartition
from model.core.produce_fetch import (
    EndTxnMarkerRequest,
    EndTxnMarkerResponse,
    FetchRequest,
    FetchResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ProduceRequest,
    ProduceResponse,
)
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_state import (
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from model.sim.broker import Broker
from model.sim.controller import Controller, broker_node
from model.sim.network import Message, MessageFilter, Network
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, SHARE_STATE_TOPIC, Envelope, Observer
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler
from model.sim.trace import Trace

LATENCY = 5  # one-way, every link: a replication round trip is 10 ms


class Recorder(Observer):
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_acquire(self, key: Any, member_id: str, acquired: Any, leader_epoch: int, now_ms: int) -> None:
        self.events.append(("acquire", key, member_id, tuple(acquired), leader_epoch, now_ms))

    def on_ack_confirmed(self, key: Any, member_id: str, batches: Any, leader_epoch: int, state_epoch: int,
                         now_ms: int) -> None:
        self.events.append(("ack", key, member_id, tuple(batches), now_ms))

    def on_write_accepted(self, request: Any, now_ms: int) -> None:
        self.events.append(("write", request, now_ms))

    def on_leader_start(self, key: Any, broker: int, leader_epoch: int, now_ms: int) -> None:
        self.events.append(("leader", key, broker, leader_epoch, now_ms))

    def of(self, kind: str) -> list[tuple[Any, ...]]:
        return [e for e in self.events if e[0] == kind]


class Client:
    """A fake client: sends envelopes, keeps the answers by correlation id."""

    def __init__(self, cluster: Cluster, node: str) -> None:
        self.cluster = cluster
        self.node = node
        self.answers: dict[int, tuple[int, Any]] = {}  # correlation id -> (time, body)
        self._ids = itertools.count(1)
        cluster.net.register(node, self._on_message)

    def _on_message(self, message: Message) -> None:
        self.answers[message.payload.correlation_id] = (self.cluster.sched.now_ms, message.payload.body)

    def send(self, broker: int, kind: str, body: object) -> int:
        cid = next(self._ids)
        self.cluster.net.send(self.node, broker_node(broker), kind, Envelope(cid, body))
        return cid

    def ask(self, broker: int, kind: str, body: object, within_ms: int = 2_000) -> Any:
        cid = self.send(broker, kind, body)
        return self.wait(cid, within_ms)

    def wait(self, cid: int, within_ms: int = 2_000) -> Any:
        sched = self.cluster.sched
        deadline = sched.now_ms + within_ms
        while cid not in self.answers and sched.peek() <= deadline:
            sched.step()
        assert cid in self.answers, f"no answer to request {cid} within {within_ms} ms"
        return self.answers[cid][1]


class Cluster:
    def __init__(self, brokers: int = 3, data_partitions: int = 1, seed: int = 1) -> None:
        self.sched = Scheduler()
        self.streams = RandomStreams(seed)
        self.trace = Trace(keep=True)
        graph = nx.Graph()
        graph.add_nodes_from([broker_node(b) for b in range(1, brokers + 1)])
        latency = Distribution.constant(LATENCY)
        self.net = Network(self.sched, graph, self.streams, self.trace, default_latency=latency)
        self.observer = Recorder()
        self.ctl = Controller(self.sched, self.net, self.streams, broker_ids=range(1, brokers + 1),
                              latency=latency, trace=self.trace, observer=self.observer)
        self.brokers = {
            b: Broker(b, self.sched, self.net, self.ctl, trace=self.trace, observer=self.observer)
            for b in range(1, brokers + 1)
        }
        self.ctl.create_topic(SHARE_STATE_TOPIC, 1, publish=False)
        self.ctl.create_topic(CONSUMER_OFFSETS_TOPIC, 1, publish=False)
        self.ctl.create_topic("T", data_partitions)
        self.topic_id = self.ctl.topic_ids["T"]

    def client(self, node: str = "c1") -> Client:
        return Client(self, node)

    def run(self, ms: int) -> None:
        self.sched.run(until=self.sched.now_ms + ms)

    def leader(self, topic: str, partition: int = 0) -> int:
        return self.ctl.partitions[(topic, partition)].leader

    def key(self, partition: int = 0, group: str = "g") -> SharePartitionKey:
        return SharePartitionKey(group, self.topic_id, partition)

    def share_coordinator(self) -> int:
        return self.leader(SHARE_STATE_TOPIC)


def loaded(c: Cluster) -> None:
    """Run past the coordinators' load delay."""
    c.run(100)


def initialize(c: Cluster, client: Client, key: SharePartitionKey, start_offset: int = 0) -> None:
    resp = client.ask(c.share_coordinator(), "InitializeShareGroupState",
                      InitializeShareGroupStateRequest(key, 1, start_offset))
    assert isinstance(resp, InitializeShareGroupStateResponse) and resp.error_code == Errors.NONE


def initialized() -> tuple[Cluster, Client, SharePartitionKey]:
    """A loaded cluster, a client, and the state of share-partition ``c.key()`` initialized."""
    c = Cluster()
    loaded(c)
    client = c.client()
    key = c.key()
    initialize(c, client, key)
    return c, client, key


def write(key: SharePartitionKey, leader_epoch: int, first: int, last: int) -> WriteShareGroupStateRequest:
    """Offsets ``first..last`` acknowledged (delivery count 1), start offset unchanged."""
    batch = StateBatch(first, last, RecordState.ACKNOWLEDGED, 1)
    return WriteShareGroupStateRequest(key, 1, leader_epoch, -1, (batch,))


# --- data partitions -------------------------------------------------------------------------------


def test_produce_is_answered_at_commit_and_fetch_reads_to_the_high_watermark() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    sent = c.sched.now_ms
    resp = client.ask(leader, "Produce", ProduceRequest("T", 0, 3, produce_time_ms=sent))
    assert isinstance(resp, ProduceResponse) and resp.error_code == Errors.NONE and resp.base_offset == 0
    answered_at = max(t for t, _ in client.answers.values())
    assert answered_at == sent + LATENCY + 2 * LATENCY + LATENCY  # request, replication round trip, answer
    assert c.ctl.data("T", 0).log.high_watermark == 3
    fetched = client.ask(leader, "Fetch", FetchRequest("T", 0, 0))
    assert isinstance(fetched, FetchResponse) and fetched.error_code == Errors.NONE
    assert fetched.records == ((0, 2),) and fetched.next_fetch_offset == 3
    assert fetched.produce_times == (sent, sent, sent)


def test_fetch_with_nothing_new_waits_for_data() -> None:
    c = Cluster()
    loaded(c)
    consumer, producer = c.client("c1"), c.client("p1")
    leader = c.leader("T")
    cid = consumer.send(leader, "Fetch", FetchRequest("T", 0, 0))
    c.run(50)
    assert cid not in consumer.answers  # parked: no records yet
    producer.ask(leader, "Produce", ProduceRequest("T", 0, 2))
    fetched = consumer.wait(cid)
    assert isinstance(fetched, FetchResponse) and fetched.records == ((0, 1),)
    # With nothing at all, the wait ends after fetch_max_wait_ms with no records.
    start = c.sched.now_ms
    empty = consumer.ask(leader, "Fetch", FetchRequest("T", 0, 2))
    assert isinstance(empty, FetchResponse) and empty.records == ()
    assert c.sched.now_ms - start >= c.brokers[leader].settings.fetch_max_wait_ms


def test_transaction_markers_and_read_committed() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    client.ask(leader, "Produce", ProduceRequest("T", 0, 2, producer_id=7, transactional=True))
    client.ask(leader, "Produce", ProduceRequest("T", 0, 1))
    committed = client.ask(leader, "Fetch", FetchRequest("T", 0, 0, read_committed=True))
    assert isinstance(committed, FetchResponse)
    assert committed.last_stable_offset == 0 and committed.records == ()
    marker = client.ask(leader, "EndTxnMarker", EndTxnMarkerRequest("T", 0, 7, commit=False))
    assert isinstance(marker, EndTxnMarkerResponse) and marker.error_code == Errors.NONE and marker.marker_offset == 3
    after = client.ask(leader, "Fetch", FetchRequest("T", 0, 0, read_committed=True))
    assert isinstance(after, FetchResponse) and after.records == ((2, 2),)  # aborted 0-1 and the marker skipped
    again = client.ask(leader, "EndTxnMarker", EndTxnMarkerRequest("T", 0, 7, commit=True))
    assert isinstance(again, EndTxnMarkerResponse) and again.error_code == Errors.INVALID_REQUEST


def test_stale_metadata_gets_not_leader_or_follower() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    old = c.leader("T")
    old_epoch = c.ctl.partitions[("T", 0)].leader_epoch
    assert c.ctl.move_leadership("T", 0)
    new = c.leader("T")
    assert new != old and c.ctl.partitions[("T", 0)].leader_epoch == old_epoch + 1
    produced = client.ask(old, "Produce", ProduceRequest("T", 0, 1))
    assert isinstance(produced, ProduceResponse) and produced.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    fetched = client.ask(old, "Fetch", FetchRequest("T", 0, 0))
    assert isinstance(fetched, FetchResponse) and fetched.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    fenced = client.ask(new, "Fetch", FetchRequest("T", 0, 0, leader_epoch=old_epoch))
    assert isinstance(fenced, FetchResponse) and fenced.error_code == Errors.FENCED_LEADER_EPOCH
    ok = client.ask(new, "Produce", ProduceRequest("T", 0, 1))
    assert isinstance(ok, ProduceResponse) and ok.error_code == Errors.NONE and ok.leader_epoch == old_epoch + 1


def test_produce_fails_without_enough_in_sync_replicas() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    others = [b for b in c.brokers if b != leader]
    c.ctl.crash_broker(others[0])
    c.ctl.crash_broker(others[1])
    resp = client.ask(leader, "Produce", ProduceRequest("T", 0, 1))
    assert isinstance(resp, ProduceResponse) and resp.error_code == Errors.NOT_ENOUGH_REPLICAS


def test_a_crash_loses_the_uncommitted_produce() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    client.ask(leader, "Produce", ProduceRequest("T", 0, 2))
    cid = client.send(leader, "Produce", ProduceRequest("T", 0, 5))
    c.run(LATENCY + 1)  # arrived, replicating
    assert c.ctl.log("T", 0).pending_count == 1
    c.ctl.crash_broker(leader)
    c.run(100)
    assert cid not in client.answers  # never answered: the producer times out and retries
    assert c.ctl.data("T", 0).log.high_watermark == 2


def test_an_idempotent_retry_is_answered_with_the_first_base_offset_not_appended_again() -> None:
    # The broker_crash scenario resolved 401 records for 400 produced: a batch committed, its
    # answer was lost with the crashed leader, and the producer's retry was appended a second time.
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    first = client.ask(leader, "Produce", ProduceRequest("T", 0, 3, producer_id=7, base_sequence=0))
    second = client.ask(leader, "Produce", ProduceRequest("T", 0, 2, producer_id=7, base_sequence=3))
    assert (first.base_offset, second.base_offset) == (0, 3)
    retry = client.ask(leader, "Produce", ProduceRequest("T", 0, 3, producer_id=7, base_sequence=0))
    assert isinstance(retry, ProduceResponse) and retry.error_code == Errors.NONE and retry.base_offset == 0
    assert c.ctl.data("T", 0).log.high_watermark == 5
    # The producer state is part of the committed log: a new leader knows it too.
    c.ctl.crash_broker(leader)
    new = c.leader("T")
    assert new != leader
    retry = client.ask(new, "Produce", ProduceRequest("T", 0, 2, producer_id=7, base_sequence=3))
    assert retry.error_code == Errors.NONE and retry.base_offset == 3
    assert c.ctl.data("T", 0).log.high_watermark == 5
    # Another sequence, another producer, or no producer id: appended.
    assert client.ask(new, "Produce", ProduceRequest("T", 0, 1, producer_id=7, base_sequence=5)).base_offset == 5
    assert client.ask(new, "Produce", ProduceRequest("T", 0, 1, producer_id=8, base_sequence=0)).base_offset == 6
    assert client.ask(new, "Produce", ProduceRequest("T", 0, 1)).base_offset == 7
    assert client.ask(new, "Produce", ProduceRequest("T", 0, 1)).base_offset == 8
    assert [e.kind for e in c.trace.events].count("produce.duplicate") == 2


def test_a_retry_that_arrives_while_the_original_replicates_gets_its_answer() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    request = ProduceRequest("T", 0, 4, producer_id=7, base_sequence=0)
    original = client.send(leader, "Produce", request)
    c.run(LATENCY + 1)
    assert c.ctl.log("T", 0).pending_count == 1
    retry = client.send(leader, "Produce", request)
    for cid in (original, retry):
        answer = client.wait(cid)
        assert answer.error_code == Errors.NONE and answer.base_offset == 0
    assert c.ctl.data("T", 0).log.high_watermark == 4


# --- the share coordinator (SC-6, SC-7) ------------------------------------------------------------


def test_a_share_state_write_is_answered_only_after_commit() -> None:
    c, client, key = initialized()
    coordinator = c.share_coordinator()
    host = c.brokers[coordinator].share_coordinators[0]
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    committed_before = log.committed_count
    cid = client.send(coordinator, "WriteShareGroupState", write(key, 0, 0, 4))
    c.run(LATENCY + 1)  # the write reached the coordinator: applied in memory, not yet committed
    assert len(host.shard.records) == committed_before + 1
    assert log.committed_count == committed_before and log.pending_count == 1
    c.run(2 * LATENCY - 2)
    assert cid not in client.answers and log.pending_count == 1
    answer = client.wait(cid)
    assert isinstance(answer, WriteShareGroupStateResponse) and answer.error_code == Errors.NONE
    assert log.committed_count == committed_before + 1 and log.pending_count == 0
    assert [e[1] for e in c.observer.of("write")] == [write(key, 0, 0, 4)]


def _a_read_behind_a_write() -> tuple[Cluster, Client, int, int]:
    """A write of offsets 0-4 and a read (at the stored leader epoch, raised by a read before: it
    writes nothing), both just handled by the share coordinator; the write's record is replicating."""
    c, client, key = initialized()
    coordinator = c.share_coordinator()
    raised = client.ask(coordinator, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0))
    assert isinstance(raised, ReadShareGroupStateResponse) and raised.error_code == Errors.NONE
    written = client.send(coordinator, "WriteShareGroupState", write(key, 0, 0, 4))
    read = client.send(coordinator, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0))
    c.run(LATENCY + 1)
    return c, client, written, read


def test_a_read_that_writes_nothing_is_answered_only_after_the_writes_before_it_commit() -> None:
    # swarm_locks seed 1493: a read at leader epoch 4 raised the stored epoch in memory; a second read at
    # epoch 4, which wrote nothing, was answered at once, so the new leader acted on state whose records
    # (that raise, and an epoch-1 write accepted just before it) were not committed yet. Kafka's
    # coordinator runtime answers such a request once everything appended before it is committed.
    c, client, written, read = _a_read_behind_a_write()
    log = c.ctl.log(SHARE_STATE_TOPIC, 0)
    assert log.pending_count == 1  # the write's record; the read wrote nothing, and waits behind it
    c.run(LATENCY)  # an answer sent at once would be here by now
    assert read not in client.answers and log.pending_count == 1
    answer = client.wait(read)
    assert log.pending_count == 0 and written in client.answers
    assert client.answers[written][0] <= client.answers[read][0]  # in append order
    assert isinstance(answer, ReadShareGroupStateResponse) and answer.error_code == Errors.NONE
    assert answer.state_batches == (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1),)  # durable by now


def test_a_read_behind_writes_that_are_lost_is_refused() -> None:
    # The share-state partition's leadership moves while the write replicates: the write's record is
    # lost, and the read that saw it in memory is answered NOT_COORDINATOR, not with that state.
    c, client, written, read = _a_read_behind_a_write()
    assert c.ctl.move_leadership(SHARE_STATE_TOPIC, 0)
    for cid in (written, read):
        answer = client.wait(cid)
        assert answer.error_code == Errors.NOT_COORDINATOR, answer
    assert not any(isinstance(body, ReadShareGroupStateResponse) and body.state_batches
                   for _, body in client.answers.values())


def test_a_crash_loses_uncommitted_state_and_the_new_coordinator_replays_the_same_state() -> None:
    c, client, key = initialized()
    old = c.share_coordinator()
    answered = client.ask(old, "WriteShareGroupState", write(key, 0, 0, 4))
    assert answered.error_code == Errors.NONE
    state_answered = c.brokers[old].share_coordinators[0].shard.state(key)
    lost = client.send(old, "WriteShareGroupState", write(key, 0, 5, 9))
    c.run(LATENCY + 1)
    assert c.brokers[old].share_coordinators[0].shard.state(key) != state_answered  # applied in memory only
    c.ctl.crash_broker(old)
    new = c.share_coordinator()
    assert new not in (old, -1)
    # The new coordinator is loading (SC-6).
    loading = client.ask(new, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0), within_ms=2 * LATENCY)
    assert isinstance(loading, ReadShareGroupStateResponse)
    assert loading.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
    loaded(c)
    assert lost not in client.answers
    shard = c.brokers[new].share_coordinators[0].shard
    assert shard.state(key) == state_answered
    committed: Any = c.ctl.log(SHARE_STATE_TOPIC, 0).committed
    assert shard.state(key) == ShareCoordinatorShard.replay(committed).state(key)
    read = client.ask(new, "ReadShareGroupState", ReadShareGroupStateRequest(key, 0))
    assert isinstance(read, ReadShareGroupStateResponse)
    assert read.state_batches == (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 1),)


def test_share_state_requests_to_a_non_coordinator_get_not_coordinator() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    other = next(b for b in c.brokers if b != c.share_coordinator())
    resp = client.ask(other, "ReadShareGroupState", ReadShareGroupStateRequest(c.key(), -1))
    assert isinstance(resp, ReadShareGroupStateResponse) and resp.error_code == Errors.NOT_COORDINATOR


def test_a_coordinator_without_enough_replicas_fails_the_write_and_keeps_its_state() -> None:
    c, client, key = initialized()
    coordinator = c.share_coordinator()
    before = c.brokers[coordinator].share_coordinators[0].shard.state(key)
    for b in [b for b in c.brokers if b != coordinator]:
        c.ctl.crash_broker(b)
    resp = client.ask(coordinator, "WriteShareGroupState", write(key, 0, 0, 4))
    assert isinstance(resp, WriteShareGroupStateResponse) and resp.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    loaded(c)
    assert c.brokers[coordinator].share_coordinators[0].shard.state(key) == before  # rebuilt from the log


# --- the group coordinator (GC-6, GC-7) --------------------------------------------------------------


def heartbeat(group: str = "g", member_id: str = "", epoch: int = 0) -> ShareGroupHeartbeatRequest:
    return ShareGroupHeartbeatRequest(group, member_id, epoch, subscribed_topic_names=("T",) if epoch == 0 else None)


def test_the_group_coordinator_initializes_state_through_the_share_coordinator() -> None:
    c = Cluster(data_partitions=2)
    loaded(c)
    client = c.client()
    coordinator = c.leader(CONSUMER_OFFSETS_TOPIC)
    other = next(b for b in c.brokers if b != coordinator)
    wrong = client.ask(other, "ShareGroupHeartbeat", heartbeat())
    assert isinstance(wrong, ShareGroupHeartbeatResponse) and wrong.error_code == Errors.NOT_COORDINATOR
    joined = client.ask(coordinator, "ShareGroupHeartbeat", heartbeat())
    assert isinstance(joined, ShareGroupHeartbeatResponse) and joined.error_code == Errors.NONE
    assert joined.member_id is not None
    c.run(200)  # GC-7: InitializeShareGroupState for T-0 and T-1, then the partitions are assignable
    share_shard = c.brokers[c.share_coordinator()].share_coordinators[0].shard
    assert share_shard.keys() == [c.key(0), c.key(1)]
    again = client.ask(coordinator, "ShareGroupHeartbeat", heartbeat(member_id=joined.member_id,
                                                                     epoch=joined.member_epoch))
    assert isinstance(again, ShareGroupHeartbeatResponse) and again.assignment is not None
    assert again.assignment.partitions() == {TopicPartition("T", 0), TopicPartition("T", 1)}
    # Every record the group coordinator answered about is committed on __consumer_offsets.
    log = c.ctl.log(CONSUMER_OFFSETS_TOPIC, 0)
    assert log.pending_count == 0
    group_shard = c.brokers[coordinator].group_coordinators[0].shard
    assert group_shard.records == log.committed


def test_group_coordinator_failover_replays_the_group() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    old = c.leader(CONSUMER_OFFSETS_TOPIC)
    joined = client.ask(old, "ShareGroupHeartbeat", heartbeat())
    c.run(200)
    epoch_before = c.brokers[old].group_coordinators[0].shard.share.group("g").group_epoch  # type: ignore[union-attr]
    assert c.ctl.move_leadership(CONSUMER_OFFSETS_TOPIC, 0)
    new = c.leader(CONSUMER_OFFSETS_TOPIC)
    assert old not in c.brokers[new].group_coordinators or new != old
    assert 0 not in c.brokers[old].group_coordinators
    early = client.ask(new, "ShareGroupHeartbeat", heartbeat(member_id=joined.member_id, epoch=joined.member_epoch),
                       within_ms=2 * LATENCY)
    assert early.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
    loaded(c)
    group = c.brokers[new].group_coordinators[0].shard.share.group("g")
    assert group is not None and joined.member_id in group.members
    assert group.group_epoch == epoch_before  # GC-6; Kafka trunk's onLoaded does not bump it (the KIP's does)


def test_offset_commit_and_fetch_through_the_group_coordinator() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    coordinator = c.leader(CONSUMER_OFFSETS_TOPIC)
    commit = client.ask(coordinator, "OffsetCommit",
                        OffsetCommitRequest("cg", -1, "", (OffsetCommitRequestPartition("T", 0, 17),)))
    assert isinstance(commit, OffsetCommitResponse) and commit.error_codes == {Errors.NONE}
    c.ctl.move_leadership(CONSUMER_OFFSETS_TOPIC, 0)
    loaded(c)
    fetched = client.ask(c.leader(CONSUMER_OFFSETS_TOPIC), "OffsetFetch",
                         OffsetFetchRequest("cg", (("T", 0),)))
    assert isinstance(fetched, OffsetFetchResponse)
    assert [(p.partition, p.committed_offset) for p in fetched.partitions] == [(0, 17)]


# --- controller + brokers ----------------------------------------------------------------------------------


def test_a_restarted_broker_rejoins_and_can_lead_again() -> None:
    c = Cluster()
    loaded(c)
    client = c.client()
    leader = c.leader("T")
    client.ask(leader, "Produce", ProduceRequest("T", 0, 2))
    c.ctl.crash_broker(leader)
    assert leader not in c.ctl.partitions[("T", 0)].isr
    c.ctl.restart_broker(leader)
    c.run(c.ctl.catchup_ms + 1)
    assert leader in c.ctl.partitions[("T", 0)].isr
    assert c.ctl.move_leadership("T", 0, to=leader)
    fetched = client.ask(leader, "Fetch", FetchRequest("T", 0, 0))
    assert isinstance(fetched, FetchResponse) and fetched.records == ((0, 1),)  # committed data survived


def test_a_request_to_a_broker_that_crashes_fails_at_once_not_after_the_timeout() -> None:
    c = Cluster()
    loaded(c)
    coordinator = c.share_coordinator()
    sender = c.brokers[next(b for b in c.brokers if b != coordinator)]
    answers: list[tuple[int, object]] = []
    sender.request(broker_node(coordinator), "WriteShareGroupState", write(c.key(), -1, 0, 4),
                   lambda answer: answers.append((c.sched.now_ms, answer)))
    crashed_at = c.sched.now_ms
    c.brokers[coordinator].crash()
    c.net.crash_node(broker_node(coordinator))
    c.run(4 * LATENCY)
    assert answers == [(crashed_at + LATENCY, None)]  # the reset, one latency later; the timeout is 5 s
    sender.request(broker_node(coordinator), "WriteShareGroupState", write(c.key(), -1, 0, 4),
                   lambda answer: answers.append((c.sched.now_ms, answer)))
    c.run(4 * LATENCY)
    assert answers[1] == (crashed_at + 5 * LATENCY, None)  # refused: it is still down


def test_a_request_that_times_out_closes_the_connection_yet_may_still_land() -> None:
    """Kafka's NetworkClient closes a connection on a request timeout, for inter-broker sends too: every
    request in flight on it fails at once, but what was already sent still reaches the coordinator (TCP
    delivers it before the close), and the next request goes on a new connection, not behind it."""
    c = Cluster()
    loaded(c)
    client = c.client()
    key = c.key()
    initialize(c, client, key)
    coordinator = broker_node(c.share_coordinator())
    sender = c.brokers[next(b for b in c.brokers if broker_node(b) != coordinator)]
    held = c.net.add_delay(Distribution.constant(9_000), MessageFilter(kinds=("WriteShareGroupState",)))
    answers: list[tuple[str, int, object]] = []
    sent_at = c.sched.now_ms
    for name, first in (("held", 0), ("behind it", 5)):
        sender.request(coordinator, "WriteShareGroupState", write(key, 0, first, first + 4),
                       lambda answer, name=name: answers.append((name, c.sched.now_ms, answer)))
        c.run(1)
    c.net.remove_delay(held)
    timeout_ms = sender.settings.request_timeout_ms
    c.run(timeout_ms)
    # The first timeout fails both, and the connection is new.
    assert [(name, at) for name, at, answer in answers if answer is None] == [
        ("held", sent_at + timeout_ms), ("behind it", sent_at + timeout_ms)]
    assert c.net.connection(sender.node, coordinator) == 1
    sender.request(coordinator, "WriteShareGroupState", write(key, 0, 10, 14),
                   lambda answer: answers.append(("retry", c.sched.now_ms, answer)))
    c.run(100)
    retry = answers[-1]
    assert retry[0] == "retry" and isinstance(retry[2], WriteShareGroupStateResponse)  # not held behind 9 s
    assert [w[1].state_batches[0].first_offset for w in c.observer.of("write")] == [10]
    c.run(9_000)
    # The held writes land, late, on the old connection: the coordinator takes them; their answers are lost.
    assert [w[1].state_batches[0].first_offset for w in c.observer.of("write")] == [10, 0, 5]
    assert len(answers) == 3
