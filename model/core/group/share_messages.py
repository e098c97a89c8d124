"""The group-coordinator RPCs of share groups, as dataclasses (000_2de40ef26c3dd7ed.txt).

ShareGroupHeartbeat, ShareGroupDescribe, the admin offsets APIs
(Alter/Delete/DescribeShareGroupOffsets), DeleteGroups and ListGroups. Field
names are the seeds' names in snake_case; nested arrays are tuples. Two fields
the wire carries in the request header rather than the body, ``client_id`` and
``client_host``, ride on the heartbeat request here.

Topics are named by topic name inside sharesim (``TopicPartition``); where the
wire carries a topic id the messages carry both the id and the name.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from model.core.errors import Errors
from model.core.message import Message
from model.core.metadata import MetadataImage, TopicPartition

# ShareGroupHeartbeat member epochs with a meaning of their own (GC-1).
JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1

# The ShareGroupDescribe / ListGroups group states of a share group.
GROUP_STATE_EMPTY = "Empty"
GROUP_STATE_STABLE = "Stable"
GROUP_STATE_DEAD = "Dead"
SHARE_GROUP_TYPE = "share"

# AuthorizedOperations when IncludeAuthorizedOperations is false (schema default).
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


# --- common structs ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """The ``TopicPartitions`` common struct: one topic's partitions."""

    topic_id: str
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Assignment:
    """The ``Assignment`` common struct: the partitions assigned to a member."""

    topic_partitions: tuple[TopicPartitions, ...] = ()

    @staticmethod
    def of(partitions: Iterable[TopicPartition], metadata: MetadataImage) -> Assignment:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return Assignment(
            tuple(
                TopicPartitions(metadata.topic_id(topic) or "", topic, tuple(sorted(by_topic[topic])))
                for topic in sorted(by_topic)
            )
        )

    def partitions(self) -> frozenset[TopicPartition]:
        return frozenset(
            TopicPartition(tps.topic_name, p) for tps in self.topic_partitions for p in tps.partitions
        )


# --- ShareGroupHeartbeat (apiKey 76) --------------------------------------------------------


class ShareGroupHeartbeatRequest(Message):
    """Epoch 0 joins (all fields set), -1 leaves; otherwise only changed fields are set."""

    FIELDS = ("group_id", "member_id", "member_epoch", "rack_id", "subscribed_topic_names", "client_id",
              "client_host")
    __slots__ = FIELDS

    def __init__(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None = None,
                 subscribed_topic_names: tuple[str, ...] | None = None, client_id: str = "",
                 client_host: str = "") -> None:
        self.group_id: Final = group_id
        self.member_id: Final = member_id
        self.member_epoch: Final = member_epoch
        self.rack_id: Final = rack_id
        self.subscribed_topic_names: Final = subscribed_topic_names
        self.client_id: Final = client_id
        self.client_host: Final = client_host


class ShareGroupHeartbeatResponse(Message):
    """``assignment`` is None unless the member joined or its assignment changed."""

    FIELDS = ("error_code", "error_message", "member_id", "member_epoch", "heartbeat_interval_ms", "assignment",
              "throttle_time_ms")
    __slots__ = FIELDS

    def __init__(self, error_code: Errors = Errors.NONE, error_message: str | None = None,
                 member_id: str | None = None, member_epoch: int = 0, heartbeat_interval_ms: int = 0,
                 assignment: Assignment | None = None, throttle_time_ms: int = 0) -> None:
        self.error_code: Final = error_code
        self.error_message: Final = error_message
        self.member_id: Final = member_id
        self.member_epoch: Final = member_epoch
        self.heartbeat_interval_ms: Final = heartbeat_interval_ms
        self.assignment: Final = assignment
        self.throttle_time_ms: Final = throttle_time_ms


# --- ShareGroupDescribe (apiKey 77) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareGroupDescribeRequest:
    group_ids: tuple[str, ...]
    include_authorized_operations: bool = False


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: Assignment


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
    authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED


@dataclass(frozen=True, slots=True)
class ShareGroupDescribeResponse:
    groups: tuple[DescribedGroup, ...]
    throttle_time_ms: int = 0


# --- AlterShareGroupOffsets ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsRequestPartition:
    partition_index: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsRequestTopic:
    topic_name: str
    partitions: tuple[AlterShareGroupOffsetsRequestPartition, ...]


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsRequest:
    group_id: str
    topics: tuple[AlterShareGroupOffsetsRequestTopic, ...]


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsResponsePartition:
    partition_index: int
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsResponseTopic:
    topic_name: str
    topic_id: str
    partitions: tuple[AlterShareGroupOffsetsResponsePartition, ...]


@dataclass(frozen=True, slots=True)
class AlterShareGroupOffsetsResponse:
    """The seed's schema has per-partition errors only; the shipped Kafka adds the top-level pair."""

    responses: tuple[AlterShareGroupOffsetsResponseTopic, ...] = ()
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    throttle_time_ms: int = 0


# --- DeleteShareGroupOffsets -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsRequestTopic:
    topic_name: str


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsRequest:
    group_id: str
    topics: tuple[DeleteShareGroupOffsetsRequestTopic, ...]


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsResponseTopic:
    topic_name: str
    topic_id: str
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteShareGroupOffsetsResponse:
    responses: tuple[DeleteShareGroupOffsetsResponseTopic, ...] = ()
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    throttle_time_ms: int = 0


# --- DescribeShareGroupOffsets ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequestTopic:
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsRequest:
    """``topics`` None asks for every share-partition with initialized state."""

    group_id: str
    topics: tuple[DescribeShareGroupOffsetsRequestTopic, ...] | None = None


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponsePartition:
    partition_index: int
    start_offset: int
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponseTopic:
    topic_name: str
    topic_id: str
    partitions: tuple[DescribeShareGroupOffsetsResponsePartition, ...]


@dataclass(frozen=True, slots=True)
class DescribeShareGroupOffsetsResponse:
    responses: tuple[DescribeShareGroupOffsetsResponseTopic, ...] = ()
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    throttle_time_ms: int = 0


# --- DeleteGroups ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeleteGroupsRequest:
    groups_names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteGroupsResponse:
    results: tuple[DeletableGroupResult, ...]
    throttle_time_ms: int = 0


# --- ListGroups (version 6 lists share groups) ----------------------------------------------


@dataclass(frozen=True, slots=True)
class ListGroupsRequest:
    """Empty filters match every group."""

    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True)
class ListGroupsResponse:
    groups: tuple[ListedGroup, ...] = ()
    error_code: Errors = Errors.NONE
    throttle_time_ms: int = 0
