"""ShareFetch and ShareAcknowledge (000_2de40ef26c3dd7ed.txt), consumer ↔ share-partition leader.

The wire nests Topics → Partitions; these dataclasses keep that shape flat:
one entry per (topic id, partition). Acknowledgements ride on the next
ShareFetch or go in a ShareAcknowledge (CL-2); the session epoch follows CL-1.
"""

from __future__ import annotations

from dataclasses import dataclass

from model.core.errors import Errors
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords


@dataclass(frozen=True, slots=True)
class LeaderIdAndEpoch:
    leader_id: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True, slots=True)
class ShareFetchPartition:
    topic_id: str
    partition: int
    # 0 when the partition is only acknowledged, not fetched.
    partition_max_bytes: int = 1 << 20
    acknowledgement_batches: tuple[AcknowledgementBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareFetchRequest:
    group_id: str
    member_id: str
    share_session_epoch: int
    partitions: tuple[ShareFetchPartition, ...] = ()
    forgotten: tuple[tuple[str, int], ...] = ()  # ForgottenTopicsData: (topic id, partition)
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 0x7FFFFFFF
    # The consumer's max.poll.records, which bounds what a leader acquires for it.
    max_records: int = 500


@dataclass(frozen=True, slots=True)
class ShareFetchPartitionResponse:
    topic_id: str
    partition: int
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    acknowledge_error_code: Errors = Errors.NONE
    acknowledge_error_message: str | None = None
    current_leader: LeaderIdAndEpoch = LeaderIdAndEpoch()
    acquired_records: tuple[AcquiredRecords, ...] = ()
    # One produce time per offset of ``acquired_records``, flattened in order
    # (see model.core.produce_fetch); () when the leader does not say.
    produce_times: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareFetchResponse:
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    responses: tuple[ShareFetchPartitionResponse, ...] = ()


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
    current_leader: LeaderIdAndEpoch = LeaderIdAndEpoch()


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeResponse:
    error_code: Errors = Errors.NONE
    error_message: str | None = None
    responses: tuple[ShareAcknowledgePartitionResponse, ...] = ()
