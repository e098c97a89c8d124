"""The simulated admin client against a scripted fake coordinator / partition leader."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

from model.core.errors import Errors
from model.core.group.share_messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
)
from model.core.produce_fetch import FetchRequest, FetchResponse
from model.sim.admin import AdminClient, AdminResult
from model.sim.client import ClientConfig
from model.sim.faults import FaultEvent
from model.sim.network import Message, Network
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, ClusterMetadata, Envelope, PartitionInfo
from model.sim.rng import RandomStreams
from model.sim.timers import Scheduler

TOPIC = "t"


def metadata_for(partitions: int, coordinator: int, version: int = 1) -> ClusterMetadata:
    parts = {(TOPIC, p): PartitionInfo(TOPIC, p, 1, 1, (1, 2), (1, 2)) for p in range(partitions)}
    parts[(CONSUMER_OFFSETS_TOPIC, 0)] = PartitionInfo(CONSUMER_OFFSETS_TOPIC, 0, coordinator, version, (1, 2), (1, 2))
    return ClusterMetadata(version, parts, {TOPIC: "tid"}, (1, 2))


class Fake:
    def __init__(self, partitions: int = 2) -> None:
        self.scheduler = Scheduler()
        self.network = Network(self.scheduler, nx.Graph(), RandomStreams(1))
        self.metadata = metadata_for(partitions, coordinator=1)
        self.coordinator = 1
        self.load_in_progress = 0  # answer COORDINATOR_LOAD_IN_PROGRESS this many times
        self.group_members = 0
        self.seen: list[tuple[int, object]] = []
        self.added: list[tuple[str, int]] = []
        for b in (1, 2):
            self.network.register(f"b{b}", self.handler(b))
        self.admin = AdminClient("admin", self.scheduler, self.network, lambda: self.metadata,
                                 add_partitions=self.add_partitions, config=ClientConfig(metadata_refresh_ms=50))
        self.admin.start()

    def add_partitions(self, topic: str, add: int) -> None:
        self.added.append((topic, add))
        self.metadata = metadata_for(self.metadata.partition_count(TOPIC) + add, self.coordinator, 2)

    def handler(self, broker: int) -> Callable[[Message], None]:
        def handle(message: Message) -> None:
            env: Envelope = message.payload
            self.seen.append((broker, env.body))
            response = self.answer(broker, env.body)
            self.network.send(message.dst, message.src, message.kind + "Response",
                              Envelope(env.correlation_id, response))

        return handle

    def answer(self, broker: int, body: object) -> object:
        if isinstance(body, FetchRequest):
            return FetchResponse(body.topic, body.partition, high_watermark=100 + body.partition,
                                 last_stable_offset=100, log_start_offset=10 + body.partition)
        not_me = broker != self.coordinator
        loading = self.load_in_progress > 0
        if loading and not not_me:
            self.load_in_progress -= 1
        if isinstance(body, AlterShareGroupOffsetsRequest):
            if not_me or loading:
                return AlterShareGroupOffsetsResponse(
                    error_code=Errors.NOT_COORDINATOR if not_me else Errors.COORDINATOR_LOAD_IN_PROGRESS)
            error = Errors.NON_EMPTY_GROUP if self.group_members else Errors.NONE
            return AlterShareGroupOffsetsResponse((AlterShareGroupOffsetsResponseTopic(TOPIC, "tid", tuple(
                AlterShareGroupOffsetsResponsePartition(p.partition_index, error) for t in body.topics
                for p in t.partitions)),))
        if isinstance(body, DeleteShareGroupOffsetsRequest):
            error = Errors.NOT_COORDINATOR if not_me else Errors.NONE
            return DeleteShareGroupOffsetsResponse((DeleteShareGroupOffsetsResponseTopic(TOPIC, "tid", error),))
        if isinstance(body, DeleteGroupsRequest):
            error = Errors.NOT_COORDINATOR if not_me else Errors.NONE
            return DeleteGroupsResponse((DeletableGroupResult(body.groups_names[0], error),))
        raise AssertionError(body)


def test_alter_offsets_to_an_offset() -> None:
    fake = Fake()
    got: list[AdminResult] = []
    fake.admin.alter_share_group_offsets("g", TOPIC, 1, 42, got.append)
    fake.scheduler.run(until=1_000)
    assert [r.error for r in got] == [Errors.NONE]
    (req,) = [b for _, b in fake.seen if isinstance(b, AlterShareGroupOffsetsRequest)]
    assert [(p.partition_index, p.start_offset) for p in req.topics[0].partitions] == [(1, 42)]


def test_alter_offsets_earliest_and_latest_resolve_per_partition() -> None:
    fake = Fake(partitions=3)
    fake.admin.alter_share_group_offsets("g", TOPIC, None, "earliest")
    fake.admin.alter_share_group_offsets("g", TOPIC, None, "latest")
    fake.scheduler.run(until=1_000)
    reqs = [b for _, b in fake.seen if isinstance(b, AlterShareGroupOffsetsRequest)]
    starts = sorted(tuple((p.partition_index, p.start_offset) for p in r.topics[0].partitions) for r in reqs)
    assert starts == [((0, 10), (1, 11), (2, 12)), ((0, 100), (1, 101), (2, 102))]
    assert [r.error for r in fake.admin.results] == [Errors.NONE, Errors.NONE]


def test_non_empty_group_is_an_outcome_not_a_retry() -> None:
    fake = Fake()
    fake.group_members = 2
    fake.admin.alter_share_group_offsets("g", TOPIC, 0, 5)
    fake.scheduler.run(until=5_000)
    assert [r.error for r in fake.admin.results] == [Errors.NON_EMPTY_GROUP]
    assert sum(isinstance(b, AlterShareGroupOffsetsRequest) for _, b in fake.seen) == 1


def test_load_in_progress_and_moved_coordinator_are_retried() -> None:
    fake = Fake()
    fake.load_in_progress = 2
    fake.admin.alter_share_group_offsets("g", TOPIC, 0, 5)
    fake.scheduler.run(until=5_000)
    assert [r.error for r in fake.admin.results] == [Errors.NONE]
    assert sum(isinstance(b, AlterShareGroupOffsetsRequest) for _, b in fake.seen) == 3
    # The coordinator moves to b2; the admin learns it from NOT_COORDINATOR and a refresh.
    fake.coordinator = 2
    fake.metadata = metadata_for(2, coordinator=2, version=2)
    fake.admin.delete_group("g")
    fake.scheduler.run(until=10_000)
    brokers = [b for b, body in fake.seen if isinstance(body, DeleteGroupsRequest)]
    assert brokers[-1] == 2
    assert fake.admin.results[-1].operation == "delete_group" and fake.admin.results[-1].error == Errors.NONE


def test_gives_up_after_the_api_timeout_on_silence() -> None:
    fake = Fake()
    fake.network.unregister("b1")
    fake.network.unregister("b2")
    fake.admin.delete_share_group_offsets("g", [TOPIC])
    fake.scheduler.run(until=200_000)
    # default.api.timeout.ms 60 s, request.timeout.ms 30 s: attempts at 0 and 30.1 s time out; the
    # next (after a 200 ms back-off, at 60.3 s) would start past the deadline.
    assert [(r.error, r.time_ms) for r in fake.admin.results] == [(Errors.REQUEST_TIMED_OUT, 60_100)]
    assert fake.admin.metrics.requests_timed_out == 2


def test_fault_events_drive_the_admin_kinds() -> None:
    fake = Fake(partitions=2)
    assert fake.admin.apply(FaultEvent(10, "admin_add_partitions", "t", params=(("add", 2),)))
    assert fake.added == [(TOPIC, 2)]
    fake.scheduler.run(until=500)  # the admin's metadata refresh sees 4 partitions
    assert fake.admin.apply(FaultEvent(20, "admin_alter_offsets", "g", params=(("offset", "latest"), ("topic", TOPIC))))
    assert fake.admin.apply(FaultEvent(30, "admin_delete_group", "g"))
    assert not fake.admin.apply(FaultEvent(40, "consumer_crash", "c1"))
    fake.scheduler.run(until=2_000)
    ops = [(r.operation, r.error) for r in fake.admin.results]
    # In completion order: "latest" needs a Fetch to the leader before the alter goes out.
    assert ops == [("add_partitions", Errors.NONE), ("delete_group", Errors.NONE), ("alter_offsets", Errors.NONE)]
    (alter,) = [b for _, b in fake.seen if isinstance(b, AlterShareGroupOffsetsRequest)]
    assert len(alter.topics[0].partitions) == 4
