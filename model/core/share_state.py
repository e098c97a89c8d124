"""Share-partition state as it crosses the wire: record states, acknowledge
types, and the five share-state RPCs between share-partition leaders, the
group coordinator and the share coordinator (000_2de40ef26c3dd7ed.txt).

The wire schemas nest Topics → Partitions; the coordinators handle one
share-partition at a time (as Kafka's persister splits requests by key), so
each message here is the per-partition slice, field names kept in snake_case.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from model.core.errors import Errors
from model.core.message import Message


class RecordState(IntEnum):
    """SP-1. The values are the persisted DeliveryState codes; ACQUIRED is never persisted.

    ARCHIVING (3, KIP-1191; trunk's ``RecordState.ARCHIVING``) is the dead-letter queue's first phase:
    a record rejected, or at the delivery-count limit, while its group has a DLQ topic. It is persisted,
    not deliverable and not terminal (the SPSO stops at it) until the leader has written it to the DLQ
    topic and made it ARCHIVED (``SharePartition.take_dlq`` / ``complete_dlq``)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4

    @property
    def terminal(self) -> bool:
        return self in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


PERSISTED_STATES = (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVING, RecordState.ARCHIVED)


class AcknowledgeType(IntEnum):
    """SP-3. AcknowledgeTypes of ShareFetch / ShareAcknowledge.

    RENEW (KIP-1222, Kafka 4.x; trunk's ``AcknowledgeType.RENEW``, id 4) is not a state change: the
    leader restarts the acquisition lock of records the member holds and writes nothing, so it never
    reaches the share coordinator (its 4 is not ``RecordState.ARCHIVED``'s, which is a state code)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


class SharePartitionKey:
    """SC-1: the share coordinator's key, "groupId:topicId:partition"; immutable, hashable, ordered.

    Written out rather than a frozen dataclass for the reason TopicPartition is (model/core/metadata.py):
    the coordinators and monitors look it up thousands of times a run."""

    __slots__ = ("_hash", "group_id", "partition", "topic_id")

    def __init__(self, group_id: str, topic_id: str, partition: int) -> None:
        self.group_id: Final = group_id
        self.topic_id: Final = topic_id
        self.partition: Final = partition
        self._hash: Final = hash((group_id, topic_id, partition))

    def _key(self) -> tuple[str, str, int]:
        return (self.group_id, self.topic_id, self.partition)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SharePartitionKey):
            return NotImplemented
        return self.partition == other.partition and self.topic_id == other.topic_id and self.group_id == other.group_id

    def __lt__(self, other: SharePartitionKey) -> bool:
        return self._key() < other._key()

    def __le__(self, other: SharePartitionKey) -> bool:
        return self._key() <= other._key()

    def __reduce__(self) -> tuple[type[SharePartitionKey], tuple[str, str, int]]:
        return SharePartitionKey, self._key()  # pickle and copy by the constructor (compiled too)

    def __repr__(self) -> str:
        return (f"SharePartitionKey(group_id={self.group_id!r}, topic_id={self.topic_id!r}, "
                f"partition={self.partition!r})")

    def __str__(self) -> str:
        return f"{self.group_id}:{self.topic_id}:{self.partition}"


class StateBatch(Message):
    """A persisted range of offsets sharing one delivery state and count."""

    FIELDS = ("first_offset", "last_offset", "delivery_state", "delivery_count")
    __slots__ = FIELDS

    def __init__(self, first_offset: int, last_offset: int, delivery_state: RecordState, delivery_count: int) -> None:
        self.first_offset: Final = first_offset
        self.last_offset: Final = last_offset
        self.delivery_state: Final = delivery_state
        self.delivery_count: Final = delivery_count


# A start offset of -1 means "not being written" (write) or "not yet known" (read, SP-10).
UNKNOWN_OFFSET = -1
# KIP-1226 (Kafka 4.2): DeliveryCompleteCount -1 means "not known": nothing written it yet, or the
# start offset is not yet known (initialize with start offset -1).
UNKNOWN_COUNT = -1


@dataclass(frozen=True, slots=True)
class InitializeShareGroupStateRequest:
    key: SharePartitionKey
    state_epoch: int
    start_offset: int = UNKNOWN_OFFSET


@dataclass(frozen=True, slots=True)
class InitializeShareGroupStateResponse:
    key: SharePartitionKey
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateRequest:
    key: SharePartitionKey
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateResponse:
    key: SharePartitionKey
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    state_epoch: int = 0
    start_offset: int = UNKNOWN_OFFSET
    state_batches: tuple[StateBatch, ...] = ()


class WriteShareGroupStateRequest(Message):
    FIELDS = ("key", "state_epoch", "leader_epoch", "start_offset", "state_batches", "delivery_complete_count")
    __slots__ = FIELDS

    def __init__(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                 state_batches: tuple[StateBatch, ...], delivery_complete_count: int = UNKNOWN_COUNT) -> None:
        self.key: Final = key
        self.state_epoch: Final = state_epoch
        self.leader_epoch: Final = leader_epoch
        self.start_offset: Final = start_offset
        self.state_batches: Final = state_batches
        # KIP-1226 (version 1): the offsets at or above the start offset whose delivery is complete
        # (Acknowledged or Archived) as the leader counts them when it writes; -1: not given.
        self.delivery_complete_count: Final = delivery_complete_count


class WriteShareGroupStateResponse(Message):
    FIELDS = ("key", "error_code", "error_message")
    __slots__ = FIELDS

    def __init__(self, key: SharePartitionKey, error_code: Errors = Errors.NONE,
                 error_message: str | None = None) -> None:
        self.key: Final = key
        self.error_code: Final = error_code
        self.error_message: Final = error_message


@dataclass(frozen=True, slots=True)
class DeleteShareGroupStateRequest:
    key: SharePartitionKey
    # Not in Kafka's request (sharesim's fence, README "A delete is fenced by the state epoch"): the group
    # epoch of the coordinator deleting, so that a delete of an earlier life cannot delete a later one.
    # -1: not given, never fenced.
    state_epoch: int = -1


@dataclass(frozen=True, slots=True)
class DeleteShareGroupStateResponse:
    key: SharePartitionKey
    error_code: Errors = Errors.NONE
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateSummaryRequest:
    key: SharePartitionKey
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class ReadShareGroupStateSummaryResponse:
    key: SharePartitionKey
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    state_epoch: int = 0
    start_offset: int = UNKNOWN_OFFSET
    delivery_complete_count: int = UNKNOWN_COUNT  # KIP-1226, version 1 (ReadShareGroupStateResponse has none)
