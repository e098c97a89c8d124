"""The data path: Produce, Fetch and transaction markers (client ↔ partition leader), and OffsetFetch.

Records carry no payload (see ``model.core.log``): a Produce says how many
records a batch holds, and a Fetch answers with offset ranges. The network
kinds are the Kafka API names: "Produce", "Fetch", and "EndTxnMarker" (our
stand-in for Kafka's WriteTxnMarkers: the simulated producer plays its own
transaction coordinator and asks each partition leader it wrote to for a
commit or abort marker). "OffsetFetch" (to the group coordinator) tells a
KIP-848 consumer where to resume a partition it was just assigned.

End-to-end latency needs each record's produce time. The partition leader
keeps them (one int per offset); responses that hand records to a consumer
carry them flattened: ``produce_times`` holds one time per offset of the
returned ranges, in range order (so ``sum(last - first + 1)`` entries). An
empty tuple means the leader did not say (the consumer records no latency).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from model.core.errors import Errors
from model.core.message import Message

# A produce time for an offset the leader knows nothing about (a marker, a gap).
UNKNOWN_PRODUCE_TIME = -1


class ProduceRequest(Message):
    """A batch of ``records`` (>= 1) for one partition (a ``Message``: built on every event)."""

    FIELDS = ("topic", "partition", "records", "producer_id", "transactional", "produce_time_ms",
              "base_sequence", "keys", "dlq_source")
    __slots__ = FIELDS

    def __init__(self, topic: str, partition: int, records: int, producer_id: int | None = None,
                 transactional: bool = False, produce_time_ms: int = 0, base_sequence: int = -1,
                 keys: tuple[int, ...] = (), dlq_source: tuple[object, int, int] | None = None) -> None:
        self.topic: Final = topic
        self.partition: Final = partition
        self.records: Final = records
        self.producer_id: Final = producer_id
        # Needs a producer id; opens its transaction on this partition.
        self.transactional: Final = transactional
        # When the producer handed the batch over, for end-to-end latency.
        self.produce_time_ms: Final = produce_time_ms
        # Idempotence: the batch's first sequence number for (producer_id, partition),
        # -1 when not idempotent. A leader that already appended this (producer id,
        # base sequence) answers with the first append's base offset instead of
        # appending again: a retry after a lost response does not duplicate records.
        self.base_sequence: Final = base_sequence
        # One key per record (key numbers, what log compaction keeps the latest of); () when unkeyed.
        self.keys: Final = keys
        # KIP-1191: a share-partition leader's produce to its group's dead-letter topic carries the records'
        # source, (SharePartitionKey, first offset, last offset): trunk's DLQ record headers.
        self.dlq_source: Final = dlq_source


class ProduceResponse(Message):
    FIELDS = ("topic", "partition", "error_code", "base_offset", "leader_epoch")
    __slots__ = FIELDS

    def __init__(self, topic: str, partition: int, error_code: Errors = Errors.NONE, base_offset: int = -1,
                 leader_epoch: int = -1) -> None:
        self.topic: Final = topic
        self.partition: Final = partition
        self.error_code: Final = error_code
        # First offset of the batch (answered once it is committed, acks=all).
        self.base_offset: Final = base_offset
        self.leader_epoch: Final = leader_epoch


@dataclass(frozen=True, slots=True)
class FetchRequest:
    topic: str
    partition: int
    fetch_offset: int
    # 0 appends nothing to the answer: the offsets alone (our ListOffsets stand-in,
    # which is how the admin client resolves "earliest" / "latest").
    max_records: int = 500
    read_committed: bool = False  # isolation.level: read up to the LSO instead of the HWM
    leader_epoch: int = -1  # the fetcher's view (-1: do not check); stale → FENCED_LEADER_EPOCH


DELETE_TO_HIGH_WATERMARK: Final = -1  # Kafka's DeleteRecordsRequest.HIGH_WATERMARK


@dataclass(frozen=True, slots=True)
class DeleteRecordsRequest:
    """Admin.deleteRecords for one partition: move its log start offset up to ``offset`` (<= the high-water
    mark; -1: the high-water mark). ``fraction`` (a sharesim stand-in for a client that first asked for
    the offsets): when >= 0, the offset is that fraction of the way from the log start to the HWM."""

    topic: str
    partition: int
    offset: int = DELETE_TO_HIGH_WATERMARK
    fraction: float = -1.0


@dataclass(frozen=True, slots=True)
class DeleteRecordsResponse:
    topic: str
    partition: int
    error_code: Errors = Errors.NONE  # OFFSET_OUT_OF_RANGE past the HWM; NOT_LEADER_OR_FOLLOWER
    low_watermark: int = -1  # the log start offset after the deletion


@dataclass(frozen=True, slots=True)
class FetchResponse:
    topic: str
    partition: int
    error_code: Errors = Errors.NONE  # OFFSET_OUT_OF_RANGE below log_start_offset or past the HWM
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # Deliverable records as inclusive (first, last) ranges, in order; aborted
    # records (read_committed), markers and compaction gaps are left out.
    records: tuple[tuple[int, int], ...] = ()
    # Where the consumer's next fetch starts: past the last offset examined,
    # which may be past the last record returned (markers, gaps, aborted).
    next_fetch_offset: int = -1
    produce_times: tuple[int, ...] = ()  # flattened over ``records`` (module doc)


@dataclass(frozen=True, slots=True)
class EndTxnMarkerRequest:
    topic: str
    partition: int
    producer_id: int
    commit: bool  # commit marker when True, abort marker otherwise


@dataclass(frozen=True, slots=True)
class EndTxnMarkerResponse:
    topic: str
    partition: int
    error_code: Errors = Errors.NONE
    marker_offset: int = -1


# --- OffsetFetch: where a KIP-848 consumer resumes a newly assigned partition -----------------


@dataclass(frozen=True, slots=True)
class OffsetFetchRequest:
    """Kafka's OffsetFetch (version 9 carries the member id and epoch), to the group coordinator."""

    group_id: str
    # (topic, partition) pairs; None asks for every committed offset of the group.
    partitions: tuple[tuple[str, int], ...] | None = None
    member_id: str = ""  # "" (or epoch -1): fetch outside group management
    member_epoch: int = -1  # -1: outside group management (admin), not checked
    require_stable: bool = True  # wait for pending transactional offset commits (none are modelled)


@dataclass(frozen=True, slots=True)
class OffsetFetchResponsePartition:
    topic: str
    partition: int
    committed_offset: int = -1  # -1: nothing committed (the consumer applies auto.offset.reset)
    committed_leader_epoch: int = -1
    error_code: Errors = Errors.NONE


@dataclass(frozen=True, slots=True)
class OffsetFetchResponse:
    partitions: tuple[OffsetFetchResponsePartition, ...] = ()
    # NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS / STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID ...
    error_code: Errors = Errors.NONE
    error_message: str | None = None


def record_count(ranges: tuple[tuple[int, int], ...]) -> int:
    """How many offsets inclusive ``ranges`` cover (the length of their ``produce_times``)."""
    return sum(last - first + 1 for first, last in ranges)
