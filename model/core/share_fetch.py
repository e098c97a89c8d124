"""ShareFetch and ShareAcknowledge (000_2de40ef26c3dd7ed.txt), consumer ↔ share-partition leader.

The wire nests Topics → Partitions; these classes keep that shape flat:
one entry per (topic id, partition). Acknowledgements ride on the next
ShareFetch or go in a ShareAcknowledge (CL-2); the session epoch follows CL-1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from model.core.errors import Errors
from model.core.message import Message
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    leader_id: int = -1
    leader_epoch: int = -1


NO_LEADER: Final = LeaderIdAndEpoch()


class ShareFetchPartition(Message):
    FIELDS = ("topic_id", "partition", "partition_max_bytes", "acknowledgement_batches")
    __slots__ = FIELDS

    def __init__(self, topic_id: str, partition: int, partition_max_bytes: int = 1 << 20,
                 acknowledgement_batches: tuple[AcknowledgementBatch, ...] = ()) -> None:
        self.topic_id: Final = topic_id
        self.partition: Final = partition
        self.partition_max_bytes: Final = partition_max_bytes  # 0 when the partition is only acknowledged
        self.acknowledgement_batches: Final = acknowledgement_batches


class ShareFetchRequest(Message):
    FIELDS = ("group_id", "member_id", "share_session_epoch", "partitions", "forgotten", "max_wait_ms",
              "min_bytes", "max_bytes", "max_records", "acquire_mode")
    __slots__ = FIELDS

    def __init__(self, group_id: str, member_id: str, share_session_epoch: int,
                 partitions: tuple[ShareFetchPartition, ...] = (), forgotten: tuple[tuple[str, int], ...] = (),
                 max_wait_ms: int = 500, min_bytes: int = 1, max_bytes: int = 0x7FFFFFFF,
                 max_records: int = 500, acquire_mode: str = "batch_optimized") -> None:
        self.group_id: Final = group_id
        self.member_id: Final = member_id
        self.share_session_epoch: Final = share_session_epoch
        self.partitions: Final = partitions
        self.forgotten: Final = forgotten  # ForgottenTopicsData: (topic id, partition)
        self.max_wait_ms: Final = max_wait_ms
        self.min_bytes: Final = min_bytes
        self.max_bytes: Final = max_bytes
        # The consumer's max.poll.records, which bounds what a leader acquires for it.
        self.max_records: Final = max_records
        # ShareFetch ShareAcquireMode (KIP-1206): "batch_optimized" or "record_limit" (max_records is hard).
        self.acquire_mode: Final = acquire_mode


class ShareFetchPartitionResponse(Message):
    FIELDS = ("topic_id", "partition", "error_code", "error_message", "acknowledge_error_code",
              "acknowledge_error_message", "current_leader", "acquired_records", "produce_times", "gaps")
    __slots__ = FIELDS

    def __init__(self, topic_id: str, partition: int, error_code: Errors = Errors.NONE,
                 error_message: str | None = None, acknowledge_error_code: Errors = Errors.NONE,
                 acknowledge_error_message: str | None = None, current_leader: LeaderIdAndEpoch = NO_LEADER,
                 acquired_records: tuple[AcquiredRecords, ...] = (), produce_times: tuple[int, ...] = (),
                 gaps: tuple[tuple[int, int], ...] = ()) -> None:
        self.topic_id: Final = topic_id
        self.partition: Final = partition
        self.error_code: Final = error_code
        self.error_message: Final = error_message
        self.acknowledge_error_code: Final = acknowledge_error_code
        self.acknowledge_error_message: Final = acknowledge_error_message
        self.current_leader: Final = current_leader
        self.acquired_records: Final = acquired_records
        # One produce time per offset of ``acquired_records``, flattened in order
        # (see model.core.produce_fetch); () when the leader does not say.
        self.produce_times: Final = produce_times
        # (first, last) runs of acquired offsets the fetched batches hold no record for: removed by the
        # log cleaner, or control markers. Not a wire field: on the wire they are what the records
        # lack; the client (ShareCompletedFetch) acknowledges them with GAP.
        self.gaps: Final = gaps


class ShareFetchResponse(Message):
    FIELDS = ("error_code", "error_message", "responses")
    __slots__ = FIELDS

    def __init__(self, error_code: Errors = Errors.NONE, error_message: str | None = None,
                 responses: tuple[ShareFetchPartitionResponse, ...] = ()) -> None:
        self.error_code: Final = error_code
        self.error_message: Final = error_message
        self.responses: Final = responses


@dataclass(frozen=True, slots=True)
class ShareAcknowledgePartition:
    topic_id: str
    partition: int
    acknowledgement_batches: tuple[AcknowledgementBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeRequest:
    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[ShareAcknowledgePartition, ...]


@dataclass(frozen=True, slots=True)
class ShareAcknowledgePartitionResponse:
    topic_id: str
    partition: int
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    current_leader: LeaderIdAndEpoch = NO_LEADER


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResponse:
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    responses: tuple[ShareAcknowledgePartitionResponse, ...] = ()
