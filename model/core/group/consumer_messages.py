"""The KIP-848 consumer-group RPCs, as dataclasses (004_32d84b698b32e157.txt).

ConsumerGroupHeartbeat, OffsetCommit (version 9: the member epoch replaces the
generation) and ConsumerGroupDescribe. Field names are the KIP's names in
snake_case; arrays are tuples. ``client_id`` and ``client_host`` travel in the
request header on the wire and ride on the heartbeat request here.

Where the model departs from the schemas, on purpose:

- partitions are named by topic name (``TopicPartition``), not topic id;
- client-side assignors (ClientAssignors, ConsumerGroupPrepareAssignment /
  InstallAssignment) are not modelled: the shipped Kafka dropped them and
  CG-7 names only the server-side ``uniform`` and ``range``;
- the heartbeat response's ``Assignment`` keeps the KIP's split into
  partitions usable now and partitions still pending their previous owner
  (CG-2); the client acts on the first only.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.core.errors import Errors
from model.core.metadata import TopicPartition

# Member epochs with a meaning of their own (CG-4, CG-5).
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

# RebalanceTimeoutMs when the member does not send it (unchanged since last time).
REBALANCE_TIMEOUT_UNCHANGED = -1

# ConsumerGroupDescribe / ListGroups states of a consumer group (Kafka's names).
GROUP_STATE_EMPTY = "Empty"
GROUP_STATE_ASSIGNING = "Assigning"
GROUP_STATE_RECONCILING = "Reconciling"
GROUP_STATE_STABLE = "Stable"
GROUP_STATE_DEAD = "Dead"
CONSUMER_GROUP_TYPE = "consumer"


# --- ConsumerGroupHeartbeat ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatRequest:
    """A member's heartbeat. ``None`` (or -1) fields did not change since the last one."""

    group_id: str
    member_id: str  # "" on the very first join: the coordinator generates one
    member_epoch: int  # 0 joins, -1 leaves, -2 leaves temporarily (static)
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = REBALANCE_TIMEOUT_UNCHANGED
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartition, ...] | None = None  # the partitions the member owns
    client_id: str = ""
    client_host: str = ""

    @property
    def is_full(self) -> bool:
        """Kafka's test for a full request: a join, or every non-optional field set."""
        return self.member_epoch == JOIN_GROUP_MEMBER_EPOCH or (
            self.rebalance_timeout_ms != REBALANCE_TIMEOUT_UNCHANGED
            and (self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)
            and self.topic_partitions is not None
        )


@dataclass(frozen=True, slots=True)
class HeartbeatAssignment:
    """The response's ``Assignment``: what the member may use now, and what waits (CG-2)."""

    assigned_topic_partitions: frozenset[TopicPartition] = frozenset()
    pending_topic_partitions: frozenset[TopicPartition] = frozenset()
    error: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerGroupHeartbeatResponse:
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    # None when the assignment did not change since the member last heard it.
    assignment: HeartbeatAssignment | None = None
    throttle_time_ms: int = 0


# --- OffsetCommit (version 9) ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitRequestPartition:
    topic: str
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition_index)


@dataclass(frozen=True, slots=True)
class OffsetCommitRequest:
    group_id: str
    # -1 from the admin client or a consumer outside group management.
    generation_id_or_member_epoch: int
    member_id: str
    partitions: tuple[OffsetCommitRequestPartition, ...]
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class OffsetCommitResponsePartition:
    topic: str
    partition_index: int
    error_code: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class OffsetCommitResponse:
    partitions: tuple[OffsetCommitResponsePartition, ...]
    error_message: str | None = None
    throttle_time_ms: int = 0

    @property
    def error_codes(self) -> frozenset[Errors]:
        return frozenset(p.error_code for p in self.partitions)


# --- ConsumerGroupDescribe -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: frozenset[TopicPartition]  # what the coordinator considers the member owns
    target_assignment: frozenset[TopicPartition]
    # The case studies' "pending-partitions": in the target, waiting for their previous owner.
    pending_partitions: frozenset[TopicPartition] = frozenset()


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0
