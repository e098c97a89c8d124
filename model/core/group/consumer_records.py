"""The KIP-848 consumer-group record kinds in ``__consumer_offsets`` (004_32d84b698b32e157.txt).

A group with N members is N + 2 records plus its assignments: one
ConsumerGroupMetadata (the group epoch), one ConsumerGroupPartitionMetadata
(the partition counts it is subscribed to), one ConsumerGroupMemberMetadata
per member, the target assignment as one ConsumerGroupTargetAssignmentMember
per member and a ConsumerGroupTargetAssignmentMetadata (its epoch), and one
ConsumerGroupCurrentMemberAssignment per member. Committed offsets are
OffsetCommit records. A ``ConsumerTombstone`` carries only a key and deletes
what it names. Replaying the records in order rebuilds every consumer group
(GC-6, ``ConsumerGroupManager.replay``).

Where the model departs from the seed's schemas, on purpose:

- partitions are named by topic name, not topic id (partition metadata keeps both);
- the member record carries the shipped Kafka's ``rebalance_timeout_ms`` and
  ``server_assignor`` (the KIP's ``Assignors`` list is for client-side
  assignors, not modelled);
- the current member assignment carries the shipped Kafka's
  ``previous_member_epoch``, ``state`` and ``partitions_pending_revocation``
  instead of the KIP's Error / Metadata fields: without them a new
  coordinator could not resume a reconciliation (CG-2) or accept a member
  whose last response was lost (CG-4).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from model.core.metadata import TopicPartition


class MemberState(IntEnum):
    """Where a member is in its reconciliation (CG-2), as Kafka's MemberState."""

    STABLE = 0  # owns exactly what it was given for its epoch
    UNREVOKED_PARTITIONS = 1  # waits for the member to revoke partitions; stays in its epoch
    UNRELEASED_PARTITIONS = 2  # in the target epoch, waits for others to release partitions


@dataclass(frozen=True, slots=True, order=True)
class ConsumerRecordKey:
    """What a record overwrites: the newest record with the same key wins (compaction)."""

    kind: str
    group_id: str
    member_id: str | None = None
    topic: str | None = None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """The group epoch (CG-1); always the group's latest epoch."""

    group_id: str
    epoch: int

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupMetadata", self.group_id)


@dataclass(frozen=True, slots=True, order=True)
class SubscribedTopicMetadata:
    topic: str
    topic_id: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupPartitionMetadata:
    """The partition counts of the subscribed topics; a change bumps the group epoch."""

    group_id: str
    epoch: int
    topics: tuple[SubscribedTopicMetadata, ...]  # sorted by topic name

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupPartitionMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupMemberMetadata:
    """A member and its subscription, so membership survives failover."""

    group_id: str
    member_id: str
    group_epoch: int
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rebalance_timeout_ms: int

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupMemberMetadata", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMetadata:
    """The epoch of the group epoch the target assignment was computed from."""

    group_id: str
    assignment_epoch: int

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupTargetAssignmentMetadata", self.group_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupTargetAssignmentMember:
    """One member's share of the target assignment (only changed members are written)."""

    group_id: str
    member_id: str
    partitions: tuple[TopicPartition, ...]  # sorted
    error: int = 0

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupTargetAssignmentMember", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True)
class ConsumerGroupCurrentMemberAssignment:
    """Where the member's reconciliation stands: its epoch and what it owns (CG-2)."""

    group_id: str
    member_id: str
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned_partitions: tuple[TopicPartition, ...]  # sorted
    partitions_pending_revocation: tuple[TopicPartition, ...]  # sorted

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("ConsumerGroupCurrentMemberAssignment", self.group_id, self.member_id)


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    """A committed offset of one partition (OffsetCommitValue)."""

    group_id: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int

    @property
    def key(self) -> ConsumerRecordKey:
        return ConsumerRecordKey("OffsetCommit", self.group_id, topic=self.topic, partition=self.partition)


@dataclass(frozen=True, slots=True)
class ConsumerTombstone:
    """Deletes whatever the key names (a member's record, an offset, the group)."""

    key: ConsumerRecordKey

    @property
    def group_id(self) -> str:
        return self.key.group_id


ConsumerGroupRecord = (
    ConsumerGroupMetadata
    | ConsumerGroupPartitionMetadata
    | ConsumerGroupMemberMetadata
    | ConsumerGroupTargetAssignmentMetadata
    | ConsumerGroupTargetAssignmentMember
    | ConsumerGroupCurrentMemberAssignment
    | OffsetCommit
    | ConsumerTombstone
)

CONSUMER_RECORD_TYPES: tuple[type, ...] = (
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupMemberMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupCurrentMemberAssignment,
    OffsetCommit,
    ConsumerTombstone,
)


def tombstone(
    kind: type,
    group_id: str,
    member_id: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
) -> ConsumerTombstone:
    return ConsumerTombstone(ConsumerRecordKey(kind.__name__, group_id, member_id, topic, partition))


def is_consumer_record(record: object) -> bool:
    """Whether a record in the shared log belongs to the consumer-group manager."""
    return isinstance(record, CONSUMER_RECORD_TYPES)
