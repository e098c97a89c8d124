"""The seven share-group record kinds the group coordinator writes to
``__consumer_offsets`` (000_2de40ef26c3dd7ed.txt, GC-6), and their tombstones.

Each record is a key (group id, and member id for per-member kinds) and a
value; a ``Tombstone`` carries only the key and deletes it. Replaying a log of
these records in order rebuilds every share group (``ShareGroupManager.replay``).

Where the model departs from the seed's schemas, on purpose:

- assignments name partitions by topic name (``TopicPartition``), not topic id;
- ``ShareGroupStatePartitionMetadata`` has the shipped Kafka's third list,
  ``initializing_topics``, and each initializing partition keeps the start
  offset it is being initialized to, so a new coordinator can finish an
  AlterShareGroupOffsets after failover (GC-7);
- ``deleting_topics`` lists partitions (the seed lists topics only), so the
  deletion can be resumed after the topic itself is gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.core.metadata import TopicPartition
from model.core.share_state import UNKNOWN_OFFSET

# ShareGroupCurrentMemberAssignment.State: a share member has no revocation
# barrier (GC-4), so it is always stable.
MEMBER_STATE_STABLE = 0


@dataclass(frozen=True, slots=True, order=True)
class RecordKey:
    """What a record overwrites: the newest record with the same key wins (compaction)."""

    kind: str
    group_id: str
    member_id: str | None = None


# --- the seven kinds ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupMetadata:
    """Reserves the group id as a share group; carries the group epoch (GC-2)."""

    group_id: str
    epoch: int

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class ShareGroupMemberMetadata:
    """A member and its subscription, so membership survives failover (GC-1, GC-6)."""

    group_id: str
    member_id: str
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupMemberMetadata", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True, order=True)
class TopicMetadata:
    """One subscribed topic as the group last saw it in the cluster metadata."""

    topic_id: str
    topic_name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ShareGroupPartitionMetadata:
    """The subscription metadata: partition counts of the subscribed topics.

    A change (partitions added, a subscribed topic created or deleted) bumps
    the group epoch (GC-2); a new coordinator compares it with its own
    metadata to notice partitions added while no coordinator was running.
    """

    group_id: str
    topics: tuple[TopicMetadata, ...]

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupPartitionMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMetadata:
    """The assignment epoch: the group epoch the target assignment was computed from (GC-3)."""

    group_id: str
    assignment_epoch: int

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupTargetAssignmentMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class ShareGroupTargetAssignmentMember:
    """One member's target assignment (GC-3)."""

    group_id: str
    member_id: str
    assigned_partitions: tuple[TopicPartition, ...]

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupTargetAssignmentMember", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True)
class ShareGroupCurrentMemberAssignment:
    """A member's current assignment and epochs (GC-4); the previous epoch lets a
    member whose response was lost retry with the epoch it still knows."""

    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    assigned_partitions: tuple[TopicPartition, ...]
    state: int = MEMBER_STATE_STABLE

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupCurrentMemberAssignment", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True, order=True)
class TopicPartitionsInfo:
    """A topic's share-partitions in ShareGroupStatePartitionMetadata.

    ``start_offsets`` is parallel to ``partitions`` for initializing topics
    (the offset each partition is initialized to, -1 = not known yet) and empty
    elsewhere.
    """

    topic_id: str
    topic_name: str
    partitions: tuple[int, ...]
    start_offsets: tuple[int, ...] = ()

    def start_offset(self, index: int) -> int:
        return self.start_offsets[index] if self.start_offsets else UNKNOWN_OFFSET


@dataclass(frozen=True, slots=True)
class ShareGroupStatePartitionMetadata:
    """Which share-partitions have durable state: being initialized, initialized
    (assignable, GC-5), being deleted (GC-7, GC-8). Written whole on every change."""

    group_id: str
    initializing_topics: tuple[TopicPartitionsInfo, ...] = ()
    initialized_topics: tuple[TopicPartitionsInfo, ...] = ()
    deleting_topics: tuple[TopicPartitionsInfo, ...] = ()

    @property
    def key(self) -> RecordKey:
        return RecordKey("ShareGroupStatePartitionMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class Tombstone:
    """Deletes the record with this key (a member leaving, the group being deleted)."""

    key: RecordKey


ShareGroupRecord = (
    ShareGroupMetadata
    | ShareGroupMemberMetadata
    | ShareGroupPartitionMetadata
    | ShareGroupTargetAssignmentMetadata
    | ShareGroupTargetAssignmentMember
    | ShareGroupCurrentMemberAssignment
    | ShareGroupStatePartitionMetadata
    | Tombstone
)

SHARE_GROUP_RECORD_TYPES: tuple[type, ...] = (
    ShareGroupMetadata,
    ShareGroupMemberMetadata,
    ShareGroupPartitionMetadata,
    ShareGroupTargetAssignmentMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupCurrentMemberAssignment,
    ShareGroupStatePartitionMetadata,
)


def tombstone(kind: type, group_id: str, member_id: str | None = None) -> Tombstone:
    return Tombstone(RecordKey(kind.__name__, group_id, member_id))


def is_share_group_record(record: object) -> bool:
    """True for the records ``ShareGroupManager.replay`` understands (the shard routes by this)."""
    if isinstance(record, Tombstone):
        return record.key.kind in {t.__name__ for t in SHARE_GROUP_RECORD_TYPES}
    return isinstance(record, SHARE_GROUP_RECORD_TYPES)
