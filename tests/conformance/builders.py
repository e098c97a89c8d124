"""Machines as Kafka's tests build them, and the adapters between Kafka's test vocabulary and ours.

Kafka's SharePartitionTest drives a SharePartition whose persister answers at once; ``Leader``
is a ``SharePartition`` over a ``PartitionLog`` whose writes are answered as soon as they are
made (``settle``), with Kafka's test defaults (delivery limit 5, 200 in-flight records, lock
30 s). Kafka fetches batches from the log and passes them in; here ``acquire(first, count)``
makes sure the log holds those records (one batch for what is missing, or the batches
``produce_batches`` wrote) and asks the model to acquire from a fetch at ``first`` whose
fetched batches end at ``first + count - 1``, with max fetch records ``count`` unless given.
Kafka's ``endOffset`` is the
last offset of the in-flight window (the start offset when it is empty); ``end_offset`` here.

ShareCoordinatorShardTest replays a snapshot with leader epoch -1 and start offset -1 to
initialize a key (``initialized_shard``), and reads before it writes (``write_and_replay``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import ApiError, Errors
from model.core.group.result import CoordinatorResult
from model.core.group.share_group import ShareGroupManager, ShareGroupMember, _Batch
from model.core.group.share_messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from model.core.group.share_records import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    Tombstone,
)
from model.core.log import PartitionLog
from model.core.metadata import MetadataImage, TopicPartition
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_partition import AcknowledgementBatch, DlqEnqueue, PartitionStatus, PendingWrite, SharePartition
from model.core.share_records import ShareSnapshot
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

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = (RecordState.AVAILABLE, RecordState.ACQUIRED,
                                               RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3
MEMBER = "member-1"
OTHER_MEMBER = "member-2"


def batch(first: int, last: int, state: int, count: int) -> StateBatch:
    """A PersisterStateBatch; states 1 and 3 (which RecordState does not name) pass through as ints."""
    return StateBatch(first, last, cast(RecordState, state), count)


def as_tuples(batches: Iterable[StateBatch]) -> list[tuple[int, int, int, int]]:
    return [(b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count) for b in batches]


# -- the share coordinator ---------------------------------------------------------------------

COORDINATOR_KEY = SharePartitionKey("group1", "topic-id", 0)


def initialized_shard(state_epoch: int = 0, *, updates_per_snapshot: int = 500,
                      key: SharePartitionKey = COORDINATOR_KEY) -> ShareCoordinatorShard:
    """ShareCoordinatorShardTest.initSharePartition: a snapshot with leader epoch -1 and start offset -1."""
    shard = ShareCoordinatorShard(updates_per_snapshot)
    shard.apply(ShareSnapshot(key=key, snapshot_epoch=0, state_epoch=state_epoch, leader_epoch=-1,
                              start_offset=-1, state_batches=()))
    return shard


def write_and_replay(shard: ShareCoordinatorShard, leader_epoch: int,
                     key: SharePartitionKey = COORDINATOR_KEY) -> None:
    """ShareCoordinatorShardTest.writeAndReplayRecord: a read at ``leader_epoch``, then a write of 0-10."""
    read, _ = shard.read(ReadShareGroupStateRequest(key, leader_epoch))
    assert read.error_code == Errors.NONE, read
    written, _ = shard.write(WriteShareGroupStateRequest(key, read.state_epoch, leader_epoch, 0,
                                                         (batch(0, 10, 0, 1),), 0))
    assert written.error_code == Errors.NONE, written


def write(shard: ShareCoordinatorShard, *, state_epoch: int, leader_epoch: int, start: int,
          batches: Sequence[StateBatch] = (), key: SharePartitionKey = COORDINATOR_KEY,
          complete: int = -1) -> tuple[Errors, int]:
    """A WriteShareGroupState (``complete``: its deliveryCompleteCount): its error and how many records it wrote."""
    response, records = shard.write(WriteShareGroupStateRequest(key, state_epoch, leader_epoch, start,
                                                                tuple(batches), complete))
    return response.error_code, len(records)


# -- the share-partition leader ----------------------------------------------------------------

LEADER_KEY = SharePartitionKey("test-group", "test-topic-id", 0)
LOCK_MS = 30_000


class Leader:
    """A SharePartition as SharePartitionTest's builder makes it, with a persister that answers at once."""

    def __init__(self, *, start: int = 0, batches: Sequence[StateBatch] = (), state_epoch: int = 0,
                 log_end: int = 0, max_delivery_count: int = 5, max_in_flight: int = 200,
                 lock_ms: int = LOCK_MS, read_committed: bool = False, log_start: int = 0,
                 dlq_topic: str = "") -> None:
        self.log = PartitionLog(log_start)
        if log_end > log_start:
            self.log.append(log_end - log_start)
            self.log.advance_high_watermark()
        broker = BrokerConfig(delivery_count_limit=max_delivery_count, partition_max_record_locks=max_in_flight,
                              record_lock_duration_ms=lock_ms)
        group = GroupConfig(isolation_level="read_committed" if read_committed else "read_uncommitted",
                            dlq_topic=dlq_topic)
        self.dlq_enqueued: list[DlqEnqueue] = []  # what the DLQ manager was asked to write (it always succeeds)
        self.sp = SharePartition(LEADER_KEY, self.log, leader_epoch=0, broker=broker, group=group)
        self.now = 0
        self.write_error = Errors.NONE  # the answer the persister gives to every write
        self.writes: list[WriteShareGroupStateRequest] = []
        self.sp.read_request()
        self.sp.recover(ReadShareGroupStateResponse(LEADER_KEY, state_epoch=state_epoch, start_offset=start,
                                                    state_batches=tuple(batches)), self.now)
        self.settle()

    # Kafka's accessors.

    @property
    def start_offset(self) -> int:
        return self.sp.spso

    @property
    def end_offset(self) -> int:
        return self.sp.speo - 1 if self.sp.speo > self.sp.spso else self.sp.spso

    @property
    def active(self) -> bool:
        return self.sp.status is PartitionStatus.ACTIVE

    def state(self, offset: int) -> tuple[RecordState, int] | None:
        s = self.sp.state_of(offset)
        return None if s is None else (s.state, s.delivery_count)

    def states(self, first: int, last: int) -> list[tuple[RecordState, int]]:
        out = []
        for offset in range(first, last + 1):
            s = self.state(offset)
            assert s is not None, f"offset {offset} is not in the window [{self.sp.spso}, {self.sp.speo})"
            out.append(s)
        return out

    def owner(self, offset: int) -> str | None:
        s = self.sp.state_of(offset)
        return None if s is None else s.owner

    # Kafka's operations.

    def produce_to(self, end: int) -> None:
        """The log holds records up to ``end`` (exclusive), all below the high-water mark."""
        if self.log.log_end_offset < end:
            self.log.append(end - self.log.log_end_offset)
        self.log.advance_high_watermark()

    def produce_batches(self, *sizes: int) -> None:
        """Append record batches of these sizes (Kafka's memoryRecordsBuilder, one per size)."""
        for size in sizes:
            self.log.append(size)
        self.log.advance_high_watermark()

    def acquire(self, first: int, count: int, member: str = MEMBER, max_records: int | None = None,
                mode: str = "batch_optimized") -> list[tuple[int, int, int]]:
        """Fetch ``count`` records from ``first`` (the fetched batches end at ``first + count - 1``) and
        acquire them: (first, last, delivery count) runs."""
        self.produce_to(first + count)
        acquired = self.sp.acquire(member, count if max_records is None else max_records, self.now, first,
                                   acquire_mode=mode, fetch_last=first + count - 1)
        self.settle()
        return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]

    def acknowledge(self, member: str, *batches: tuple[int, ...]) -> Errors:
        """Each batch is (first, last, type, ...): one type for the range or one per offset."""
        result = self.sp.acknowledge(member, [AcknowledgementBatch(b[0], b[1], tuple(b[2:])) for b in batches],
                                     self.now)
        if result.error_code != Errors.NONE:
            return result.error_code
        completions = self.settle()
        mine = [c for c in completions if c.write_id == result.write_id]
        return mine[0].error_code if mine else Errors.NONE

    def release(self, member: str = MEMBER) -> None:
        self.sp.release_member(member, self.now)
        self.settle()

    def advance_time(self, ms: int) -> None:
        """Time passes; expired acquisition locks fire (Kafka's timer tasks)."""
        self.now += ms
        self.sp.expire_locks(self.now)
        self.settle()

    def move_log_start(self, offset: int) -> None:
        """The log start offset moves (Kafka's updateCacheAndOffsets(logStartOffset))."""
        self.produce_to(offset)
        self.log.delete_records(offset)
        self.sp.advance_log_start(self.now)
        self.settle()

    def settle(self) -> list[object]:
        """Answer every write (and the writes those cause) with ``write_error``."""
        done: list[object] = []
        rounds = 0
        while writes := self._dlq_then_writes():
            rounds += 1
            for w in writes:
                self.writes.append(w.request)
                done.append(self.sp.complete_write(
                    w.write_id, WriteShareGroupStateResponse(LEADER_KEY, self.write_error), self.now))
            if self.write_error != Errors.NONE and rounds > 1:
                break  # a failing persister: the retries would fail forever
        return done


    def _dlq_then_writes(self) -> list[PendingWrite]:
        """Kafka's mock DLQ manager answers every enqueue at once: phase 2 follows (KIP-1191)."""
        for enqueue in self.sp.take_dlq():
            self.dlq_enqueued.append(enqueue)
            self.sp.complete_dlq(enqueue)
        return self.sp.take_writes()


def not_ready_error(leader: Leader) -> Errors:
    try:
        leader.sp.acquire(MEMBER, 1, leader.now)
    except ApiError as e:
        return e.error
    return Errors.NONE


# -- the share-group coordinator ---------------------------------------------------------------


def reconciled_member(member_epoch: int, subscription: Sequence[str], assigned: Iterable[TopicPartition],
                      target_epoch: int, target: Iterable[TopicPartition],
                      topics: dict[str, int] | None = None) -> ShareGroupMember:
    """ShareGroupAssignmentBuilder(member).withTargetAssignment(epoch, target).build(), done by the
    model's group manager: a group replayed from records (the member's current assignment at
    ``member_epoch``, its target at ``target_epoch``), reconciled once (GC-4, ``_reconcile``)."""
    metadata = MetadataImage()
    for name, count in (topics or {"topic1": 10, "topic2": 10}).items():
        metadata = metadata.with_topic(name, count)
    manager = ShareGroupManager(BrokerConfig(), metadata, lambda: "unused")
    gid, mid = "group", "member"
    for record in (
        ShareGroupMetadata(gid, target_epoch),
        ShareGroupMemberMetadata(gid, mid, None, "", "", tuple(subscription)),
        ShareGroupCurrentMemberAssignment(gid, mid, member_epoch, member_epoch, tuple(sorted(assigned))),
        ShareGroupTargetAssignmentMember(gid, mid, tuple(sorted(target))),
        ShareGroupTargetAssignmentMetadata(gid, target_epoch),
    ):
        manager.replay(record)
    group = manager.group(gid)
    assert group is not None
    manager._reconcile(group, mid, _Batch())  # the model's assignment builder
    return group.members[mid]


class GroupCoordinator:
    """GroupMetadataManagerTestContext for share groups: a ShareGroupManager, its clock and its records.

    ``create_group`` makes a share group by its epoch record (epoch 1 unless told: a new group's epoch,
    as trunk's and the model's under ``protocol = "kafka"``), so the epochs Kafka's tests expect line up."""

    def __init__(self, topics: dict[str, int] | None = None, config: BrokerConfig | None = None) -> None:
        metadata = MetadataImage()
        for name, count in (topics or {}).items():
            metadata = metadata.with_topic(name, count)
        self.config = config or BrokerConfig()
        self.manager = ShareGroupManager(self.config, metadata, lambda: "generated-member-id")
        self.now = 0
        self.records: list[object] = []
        self.state_requests: list[object] = []

    def take(self, result: CoordinatorResult) -> CoordinatorResult:
        self.records.extend(result.records)
        self.state_requests.extend(result.outputs)
        return result

    def create_group(self, group_id: str, epoch: int = 1) -> None:
        self.manager.replay(ShareGroupMetadata(group_id, epoch))

    def replay(self, *records: object) -> None:
        for record in records:
            self.manager.replay(record)

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                  topics: Sequence[str] | None = None) -> ShareGroupHeartbeatResponse:
        request = ShareGroupHeartbeatRequest(group_id, member_id, member_epoch,
                                             subscribed_topic_names=None if topics is None else tuple(topics))
        response = self.take(self.manager.heartbeat(request, self.now)).response
        assert isinstance(response, ShareGroupHeartbeatResponse)
        return response

    def initialize_all(self) -> None:
        """Answer every InitializeShareGroupState sent so far with success."""
        sent, self.state_requests = self.state_requests, []
        for request in sent:
            if isinstance(request, InitializeShareGroupStateRequest):
                self.take(self.manager.on_initialize_response(InitializeShareGroupStateResponse(request.key),
                                                              self.now))

    def initialize_requests(self) -> dict[str, tuple[int, set[int]]]:
        """topic id → (state epoch, partitions) of the InitializeShareGroupState requests sent so far."""
        out: dict[str, tuple[int, set[int]]] = {}
        for request in self.state_requests:
            if isinstance(request, InitializeShareGroupStateRequest):
                _, partitions = out.get(request.key.topic_id, (request.state_epoch, set()))
                partitions.add(request.key.partition)
                out[request.key.topic_id] = (request.state_epoch, partitions)
        return out

    def sleep(self, ms: int) -> CoordinatorResult:
        self.now += ms
        return self.take(self.manager.expire(self.now))


def record_kind(record: object) -> str:
    """A record's kind, a tombstone as "-Kind" (the form Kafka's expected record lists compare by)."""
    return f"-{record.key.kind}" if isinstance(record, Tombstone) else type(record).__name__
