"""The share-partition leader: record states, acquisition locks, SPSO/SPEO and
durable share state for one (share group, topic-partition) (SP-1..SP-15).

Inputs are explicit (``now_ms``, requests, responses); outputs are returned.
Every durable change becomes a ``PendingWrite`` (a WriteShareGroupState with an
id) placed in the leader's outbox; the caller drains it with ``take_writes()``
after each call, sends the requests to the share coordinator and hands each
answer back with ``complete_write(write_id, response, now_ms)``.

Two-phase writes (SP-9). Records changed by a durable write are *in
transition* until its answer: they cannot be acquired or acknowledged again,
and the SPSO does not pass them. ``state_of`` keeps showing the state they had
before the change, so an observer only ever sees legal SP-1 transitions. On
success they take their new state; on failure an acknowledgement's records go
back to ACQUIRED, or — if their lock expired meanwhile — to AVAILABLE/ARCHIVED
(SP-4, SP-5) with a new write. Other writes (lock timeout, member release,
archiving, log start, initial start offset) are re-issued under a new id.
Several writes may be in flight at once; they touch disjoint records because a
record in transition cannot be changed again.

Acknowledgement validation is all-or-nothing: if any offset of any batch is not
ACQUIRED by the member under a live lock (or is in transition, or acknowledged
twice in the request), the whole request fails with INVALID_RECORD_STATE and
nothing changes (as Kafka rolls back every batch of a failed request);
malformed batches fail with INVALID_REQUEST. Offsets below the SPSO are
skipped, offsets past the window are INVALID_REQUEST, and RENEW restarts a
lock without a write (``acknowledge``, trunk's behaviour; protocol "kip" keeps
the KIP's stricter checks).

Not ready. Until the state is read (and, when the start offset was -1, the
chosen start offset written), fetches raise ``ApiError`` and acknowledgements
answer with ``not_ready_error``: LEADER_NOT_AVAILABLE while loading and once
fenced by a newer leader epoch (trunk's initializedOrThrowException; protocol
"kip": COORDINATOR_LOAD_IN_PROGRESS and NOT_LEADER_OR_FOLLOWER), the read's own
error if it failed, FENCED_STATE_EPOCH after an admin reset until re-read (SP-12).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from enum import Enum
from typing import Final

from model import mutants as _mutants
from model import situations as _situations
from model.core.config import BrokerConfig, GroupConfig, effective_lock_duration_ms
from model.core.errors import ApiError, Errors
from model.core.inflight import NO_DEADLINE, NO_WRITE, InFlightRange, InFlightWindow
from model.core.log import PartitionLog, SpanKind
from model.core.message import Message
from model.core.share_state import (
    UNKNOWN_OFFSET,
    AcknowledgeType,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)

AVAILABLE = RecordState.AVAILABLE
ACQUIRED = RecordState.ACQUIRED
ACKNOWLEDGED = RecordState.ACKNOWLEDGED
ARCHIVING = RecordState.ARCHIVING
ARCHIVED = RecordState.ARCHIVED
_TERMINAL = frozenset((ACKNOWLEDGED, ARCHIVED))
# share.acquire.mode (Kafka's ShareAcquireMode): whole batches (max records a soft limit), or max
# records a hard limit.
BATCH_OPTIMIZED = "batch_optimized"
RECORD_LIMIT = "record_limit"
ACQUIRE_MODES = (BATCH_OPTIMIZED, RECORD_LIMIT)
_VALID_ACK_TYPES = frozenset(int(t) for t in AcknowledgeType)
_REJECT = int(AcknowledgeType.REJECT)
# The situation (model/situations.py) each acknowledge type is counted as.
_ACK_SITUATION = {int(AcknowledgeType.GAP): "ack-gap", int(AcknowledgeType.ACCEPT): "ack-accept",
                  int(AcknowledgeType.RELEASE): "ack-release", int(AcknowledgeType.REJECT): "ack-reject",
                  int(AcknowledgeType.RENEW): "renew-accepted"}
_RENEW = int(AcknowledgeType.RENEW)  # not a state change (KIP-1222): no entry in _ACK_TARGET
# SP-3: the state an acknowledge type moves a record to (Release: see SP-5 in _released_state).
_ACK_TARGET = {
    int(AcknowledgeType.GAP): ARCHIVED,
    int(AcknowledgeType.ACCEPT): ACKNOWLEDGED,
    int(AcknowledgeType.RELEASE): AVAILABLE,
    int(AcknowledgeType.REJECT): ARCHIVED,
}


# -- what goes in and out --------------------------------------------------------------------


# Plain compiled classes, not NamedTuples: built on every fetch and acknowledgement, and a
# NamedTuple's __new__ is an interpreted lambda even in the compiled build (model/core/message.py).


class AcquiredRecords(Message):
    """ShareFetchResponse AcquiredRecords: offsets acquired together with their delivery count."""

    FIELDS = ("first_offset", "last_offset", "delivery_count")
    __slots__ = FIELDS

    def __init__(self, first_offset: int, last_offset: int, delivery_count: int) -> None:
        self.first_offset: Final = first_offset
        self.last_offset: Final = last_offset
        self.delivery_count: Final = delivery_count


class AcknowledgementBatch(Message):
    """ShareFetch/ShareAcknowledge AcknowledgementBatch: one type for the range or one per offset."""

    FIELDS = ("first_offset", "last_offset", "acknowledge_types")
    __slots__ = FIELDS

    def __init__(self, first_offset: int, last_offset: int, acknowledge_types: tuple[int, ...]) -> None:
        self.first_offset: Final = first_offset
        self.last_offset: Final = last_offset
        self.acknowledge_types: Final = acknowledge_types


class OffsetState(Message):
    FIELDS = ("state", "delivery_count", "owner", "in_transition")
    __slots__ = FIELDS

    def __init__(self, state: RecordState, delivery_count: int, owner: str | None, in_transition: bool) -> None:
        self.state: Final = state
        self.delivery_count: Final = delivery_count
        self.owner: Final = owner
        self.in_transition: Final = in_transition


class InFlightBatch(Message):
    """A read-only view of one in-flight range (written out, not a frozen dataclass: monitors read the
    whole window after every step, and a compiled class builds in a tenth of the time)."""

    FIELDS = ("first_offset", "last_offset", "state", "delivery_count", "owner", "lock_deadline_ms",
              "in_transition", "target_state", "durable_count")
    __slots__ = FIELDS

    def __init__(self, first_offset: int, last_offset: int, state: RecordState, delivery_count: int,
                 owner: str | None, lock_deadline_ms: int | None, in_transition: bool, target_state: RecordState,
                 durable_count: int) -> None:
        self.first_offset: Final = first_offset
        self.last_offset: Final = last_offset
        self.state: Final = state
        self.delivery_count: Final = delivery_count
        self.owner: Final = owner
        self.lock_deadline_ms: Final = lock_deadline_ms
        self.in_transition: Final = in_transition
        self.target_state: Final = target_state
        self.durable_count: Final = durable_count


class DlqEnqueue(Message):
    """KIP-1191 phase 2, step 1: records durably ARCHIVING, to be written to the group's dead-letter topic
    (trunk's ``ShareGroupDLQRecordParameter``). ``cause`` is trunk's: "client-reject" or
    "delivery-count-exceeded". ``generation`` ties it to one life of the leader's state (``complete_dlq``)."""

    FIELDS = ("first_offset", "last_offset", "delivery_count", "cause", "generation")
    __slots__ = FIELDS

    def __init__(self, first_offset: int, last_offset: int, delivery_count: int, cause: str,
                 generation: int) -> None:
        self.first_offset: Final = first_offset
        self.last_offset: Final = last_offset
        self.delivery_count: Final = delivery_count
        self.cause: Final = cause
        self.generation: Final = generation


class WriteReason(Enum):
    INITIALIZE = "initialize"  # SP-10: the start offset chosen by auto.offset.reset
    ACKNOWLEDGE = "acknowledge"  # SP-3
    LOCK_TIMEOUT = "lock-timeout"  # SP-4
    RELEASE = "release"  # SP-15
    ARCHIVE = "archive"  # SP-13 aborted records, SP-14 gaps, control markers
    LOG_START = "log-start"  # the log start offset moved past the SPSO
    DLQ_ARCHIVE = "dlq-archive"  # KIP-1191 phase 2: ARCHIVING -> ARCHIVED once written to the DLQ


# The situation (model/situations.py) of a release (``_release``) that archives records at the delivery limit.
_AT_LIMIT_SITUATION = {WriteReason.LOCK_TIMEOUT: "lock-timeout-at-limit", WriteReason.RELEASE: "release-at-limit"}


class PendingWrite(Message):
    FIELDS = ("write_id", "reason", "member_id", "request")
    __slots__ = FIELDS

    def __init__(self, write_id: int, reason: WriteReason, member_id: str | None,
                 request: WriteShareGroupStateRequest) -> None:
        self.write_id: Final = write_id
        self.reason: Final = reason
        self.member_id: Final = member_id  # the acknowledging member, for ACKNOWLEDGE writes
        self.request: Final = request


class AcknowledgeResult(Message):
    """An acknowledgement's immediate answer: an error, or the write whose completion answers it."""

    FIELDS = ("error_code", "write_id", "error_message")
    __slots__ = FIELDS

    def __init__(self, error_code: Errors, write_id: int | None = None, error_message: str | None = None) -> None:
        self.error_code: Final = error_code
        self.write_id: Final = write_id
        self.error_message: Final = error_message


class WriteCompletion(Message):
    """What a write's answer means; for ACKNOWLEDGE writes, ``error_code`` is the ack's result."""

    FIELDS = ("write_id", "reason", "member_id", "error_code")
    __slots__ = FIELDS

    def __init__(self, write_id: int, reason: WriteReason, member_id: str | None, error_code: Errors) -> None:
        self.write_id: Final = write_id
        self.reason: Final = reason
        self.member_id: Final = member_id
        self.error_code: Final = error_code


class PartitionStatus(Enum):
    EMPTY = "empty"  # no state read yet
    LOADING = "loading"  # ReadShareGroupState sent
    INITIALIZING = "initializing"  # the start offset chosen for a -1 is being written
    ACTIVE = "active"
    FAILED = "failed"  # the read failed; read again
    STALE_STATE = "stale-state"  # SP-12: the state epoch moved on; read again
    FENCED = "fenced"  # a newer leader epoch exists: this leader is a zombie


class _WriteInfo:
    __slots__ = ("first", "last", "member_id", "orphaned", "reason", "request")

    def __init__(self, reason: WriteReason, member_id: str | None, first: int, last: int,
                 request: WriteShareGroupStateRequest) -> None:
        self.reason = reason
        self.member_id = member_id
        self.first = first  # offsets whose ranges may carry this write id
        self.last = last
        self.request = request
        self.orphaned = False  # the state it was written for is gone (reset, fenced)


Change = tuple[int, int, RecordState, int]  # first, last, target state, delivery count


# -- the leader ------------------------------------------------------------------------------


class SharePartition:
    def __init__(
        self,
        key: SharePartitionKey,
        log: PartitionLog,
        *,
        leader_epoch: int,
        broker: BrokerConfig | None = None,
        group: GroupConfig | None = None,
    ) -> None:
        self.key = key
        self.log = log
        self.broker = broker or BrokerConfig()
        self.group = group or GroupConfig()
        self._leader_epoch = leader_epoch
        self._state_epoch = 0
        self._status = PartitionStatus.EMPTY
        self._load_error = Errors.NONE
        self._spso = 0
        self._speo = 0
        self._window = InFlightWindow()
        # KIP-1226 deliveryCompleteCount, kept as trunk keeps it (one counter moved by each transition
        # rather than a scan per write): the offsets of the window whose state, or the state their write
        # carries, is ACKNOWLEDGED or ARCHIVED. Rare paths (recovery, the log start) count afresh.
        self._complete = 0
        # Kafka's cached in-flight batches: the first offset of each, ascending; a batch runs to the
        # next one's start (or the window's end). Starts below the SPSO are pruned lazily.
        self._batch_starts: list[int] = []
        # Records below the SPSO the log start offset passed while they were ACQUIRED (and, beside them,
        # the AVAILABLE ones it archived): trunk keeps them in its cache with their member until they are
        # acknowledged (skipped) or their lock expires (archived). See ``_follow_log_start``.
        self._below: list[InFlightRange] = []
        self._pending: dict[int, _WriteInfo] = {}
        self._outbox: list[PendingWrite] = []
        self._next_write_id = 1
        self._start_writes = 0  # pending writes that carry a StartOffset (at most one, see _payload)
        self._log_start_unwritten = False  # a log start move waits for that write
        self._start_sent = UNKNOWN_OFFSET  # the highest StartOffset ever sent for this state
        self._archive_id = NO_WRITE  # the ARCHIVE write being built by acquire
        self._archive_first = self._archive_last = 0
        self._dlq_outbox: list[DlqEnqueue] = []
        self._dlq_generation = 0  # bumped whenever the state is dropped: older enqueues answer into nothing

    # -- read-only accessors ---------------------------------------------------------------

    @property
    def spso(self) -> int:
        return self._spso

    @property
    def speo(self) -> int:
        return self._speo

    @property
    def state_epoch(self) -> int:
        return self._state_epoch

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    @property
    def status(self) -> PartitionStatus:
        return self._status

    @property
    def ready(self) -> bool:
        """Serving fetches and acknowledgements (otherwise they are answered ``not_ready_error``)."""
        if self._status is PartitionStatus.ACTIVE:
            return True
        # mutant: taken for initialized while its state is still being read
        return _mutants.ACTIVE == "serve-while-loading" and self._status is PartitionStatus.LOADING

    @property
    def in_flight_count(self) -> int:
        """SP-8: the window SPEO - SPSO (every offset in it, whatever its state)."""
        return self._speo - self._spso

    @property
    def acquired_count(self) -> int:
        return sum(r.size for r in self._window.ranges if r.state == ACQUIRED)

    @property
    def delivery_complete_count(self) -> int:
        """KIP-1226: the offsets of the window whose delivery is complete (Acknowledged or Archived), those
        in transition counted by the state their write carries, as trunk's SharePartition counts a terminal
        transition when it begins (and takes it back if the write fails)."""
        if _mutants.ACTIVE == "delivery-complete-count-wrong":
            return _complete_from(self._window.ranges, self._spso)
        return self._complete

    def _recount_complete(self) -> None:
        """Count ``_complete`` afresh, after a path that rebuilds or trims the window."""
        self._complete = _complete_from(self._window.ranges, self._spso)

    @property
    def not_ready_error(self) -> Errors:
        """What a request to a share-partition that is not ACTIVE is answered with.

        As trunk's ``SharePartition.initializedOrThrowException``: LEADER_NOT_AVAILABLE while its
        state is being read or its start offset written (INITIALIZING) and once it is fenced (a
        newer leader epoch read the state; trunk marks the partition FENCED). A failed read answers
        its own error; after an admin reset (SP-12) FENCED_STATE_EPOCH until re-read.
        protocol = "kip": COORDINATOR_LOAD_IN_PROGRESS while loading, NOT_LEADER_OR_FOLLOWER fenced.
        """
        status = self._status
        if status is PartitionStatus.ACTIVE:
            return Errors.NONE
        if status is PartitionStatus.FAILED:
            return self._load_error
        if status is PartitionStatus.STALE_STATE:
            return Errors.FENCED_STATE_EPOCH
        if self.broker.kafka:
            return Errors.LEADER_NOT_AVAILABLE
        if status is PartitionStatus.FENCED:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return Errors.COORDINATOR_LOAD_IN_PROGRESS

    @property
    def delivery_count_limit(self) -> int:
        """The group's dynamic limit if set, else the broker's (Kafka's maxDeliveryCount)."""
        if _mutants.ACTIVE == "group-limit-ignored":
            return self.broker.delivery_count_limit  # mutant: the group's setting is not read
        return self.group.delivery_count_limit or self.broker.delivery_count_limit

    @property
    def max_record_locks(self) -> int:
        """The group's dynamic bound if set, else the broker's (Kafka's maxInFlightRecords)."""
        return self.group.partition_max_record_locks or self.broker.partition_max_record_locks

    @property
    def lock_duration_ms(self) -> int:
        return effective_lock_duration_ms(self.broker, self.group)

    @property
    def dlq_enabled(self) -> bool:
        """Trunk's ``SharePartition.isDLQEnabledForGroup``: the DLQ feature is on (the broker's supplier;
        here protocol "kafka": KIP-932 has no DLQ) and the group names a topic in
        ``errors.deadletterqueue.topic.name``."""
        return bool(self.group.dlq_topic) and self.broker.kafka

    def _limit_state(self) -> RecordState:
        """What a record at the delivery-count limit becomes instead of AVAILABLE (trunk's
        ``InFlightState.tryUpdateState``): ARCHIVING with a DLQ, else ARCHIVED."""
        return ARCHIVING if self.dlq_enabled else ARCHIVED

    def state_of(self, offset: int) -> OffsetState | None:
        """The state of an offset in the window [SPSO, SPEO), or of one the log start offset passed while
        it was ACQUIRED (``below_start``); None otherwise."""
        if offset < self._spso:
            r = next((b for b in self._below if b.first <= offset <= b.last), None)
            return None if r is None else OffsetState(r.state, r.delivery_count, r.owner, False)
        if offset >= self._speo:
            return None
        r = self._window.find(offset)
        if r is None:
            return None
        return OffsetState(r.state, r.delivery_count, r.owner, r.write_id != NO_WRITE)

    def batches(self) -> Iterator[InFlightBatch]:
        for r in self._window.ranges:
            yield InFlightBatch(
                r.first, r.last, r.state, r.delivery_count, r.owner,
                None if r.lock_deadline_ms == NO_DEADLINE else r.lock_deadline_ms,
                r.write_id != NO_WRITE, r.target, r.durable_count,
            )

    @property
    def below_start(self) -> list[InFlightBatch]:
        """The records below the SPSO still held after the log start offset passed them (ACQUIRED until
        acknowledged or their lock expires; ARCHIVED beside them), as trunk's cache keeps them."""
        return [InFlightBatch(r.first, r.last, r.state, r.delivery_count, r.owner,
                              None if r.lock_deadline_ms == NO_DEADLINE else r.lock_deadline_ms,
                              False, r.target, r.durable_count) for r in self._below]

    def durable_delivery_count(self, offset: int) -> int:
        """The delivery count of ``offset`` as of the last successful write or read (0 outside the window)."""
        r = self._window.find(offset) if self._spso <= offset < self._speo else None
        return r.durable_count if r is not None else 0

    def pending_write_ids(self) -> list[int]:
        return sorted(self._pending)

    def take_writes(self) -> list[PendingWrite]:
        """Drain the outbox: the writes to send to the share coordinator, oldest first."""
        out, self._outbox = self._outbox, []
        return out

    def take_dlq(self) -> list[DlqEnqueue]:
        """Drain the DLQ outbox: records whose ARCHIVING state is durable (phase 1 done), to be written to
        the dead-letter topic; hand each back with ``complete_dlq`` whatever the produce's outcome."""
        out, self._dlq_outbox = self._dlq_outbox, []
        return out

    def complete_dlq(self, enqueue: DlqEnqueue) -> int | None:
        """KIP-1191 phase 2 (trunk's ``SharePartition.initiateDLQAndArchive``): the DLQ produce finished,
        successfully or not (trunk logs a failed enqueue and archives regardless, so a partition never
        stalls on ARCHIVING): the records still ARCHIVING go to ARCHIVED with a second durable write.
        Returns its write id (None if nothing is left: the state was dropped, or the log start passed them).

        Unlike trunk, a failed phase-2 write is written again (as every leader-side change here,
        ``_write_failed``) rather than kept ARCHIVED in memory only: the SPSO passes records only once
        their terminal state is durable (SP-6)."""
        if enqueue.generation != self._dlq_generation or self._status is not PartitionStatus.ACTIVE:
            return None
        if _mutants.ACTIVE == "dlq-skips-phase-two":
            return None  # mutant: the records stay ARCHIVING for ever, the SPSO stuck before them
        window = self._window
        first, last = max(enqueue.first_offset, self._spso), enqueue.last_offset
        if first > last or first >= self._speo:
            return None
        i, j = window.isolate(first, min(last, self._speo - 1))
        write_id = NO_WRITE
        changes: list[Change] = []
        for r in window.ranges[i:j]:
            if r.state == ARCHIVING and r.write_id == NO_WRITE:
                if write_id == NO_WRITE:
                    write_id = self._new_write_id()
                r.write_id = write_id
                r.target = ARCHIVED
                self._complete += r.last - r.first + 1  # ARCHIVING was not complete (phase 2 counts it)
                changes.append((r.first, r.last, ARCHIVED, r.delivery_count))
        if not changes:
            window.merge(first, last)
            return None
        return self._issue(WriteReason.DLQ_ARCHIVE, None, changes, write_id=write_id)

    def _enqueue_archiving(self, ranges: Sequence[InFlightRange]) -> None:
        """Phase 1 is durable for ``ranges``: queue the ARCHIVING ones for the DLQ. The cause is not
        persisted; like trunk's ``maybeResumeDlqArchiving`` it is inferred from the delivery count."""
        limit = self.delivery_count_limit
        for r in ranges:
            if r.state == ARCHIVING and r.write_id == NO_WRITE:
                cause = "delivery-count-exceeded" if r.delivery_count >= limit else "client-reject"
                _situations.COUNTS["dlq-enqueue"] += 1
                self._dlq_outbox.append(DlqEnqueue(r.first, r.last, r.delivery_count, cause, self._dlq_generation))

    # -- recovery (SP-10, SP-12) -----------------------------------------------------------

    def read_request(self) -> ReadShareGroupStateRequest:
        """Start (re)loading the durable state with this leader's epoch."""
        if self._status is not PartitionStatus.FENCED:
            self._status = PartitionStatus.LOADING
        return ReadShareGroupStateRequest(self.key, self._leader_epoch)

    def recover(self, resp: ReadShareGroupStateResponse, now_ms: int) -> None:
        """SP-10: rebuild the window from the durable state.

        The SPSO is the stored start offset advanced past leading terminal
        batches (a write may record terminal batches instead of the start
        offset, see ``_payload``). Persisted batches come back with no owner;
        offsets of the window without persisted state are AVAILABLE with
        count 0. A start offset of -1 is resolved by share.auto.offset.reset and
        written before the partition serves fetches.
        """
        if self._status is PartitionStatus.FENCED:
            return
        if resp.error_code != Errors.NONE:
            _situations.COUNTS["read-failed"] += 1
            self._status = PartitionStatus.FAILED
            self._load_error = resp.error_code
            return
        self._drop_state()
        self._state_epoch = resp.state_epoch
        start = self._start_sent = resp.start_offset
        if _mutants.ACTIVE == "recover-ignores-start-offset":
            start = UNKNOWN_OFFSET  # mutant: an initialized start offset taken for "not yet known"
        unknown = start == UNKNOWN_OFFSET
        if unknown:
            earliest = self.group.auto_offset_reset == "earliest" and _mutants.ACTIVE != "offset-reset-ignored"
            start = self.log.log_start_offset if earliest else self.log.bound(self.group.read_committed)
        window = self._window
        cursor = start
        for b in sorted(resp.state_batches, key=lambda b: b.first_offset):
            first = max(b.first_offset, cursor)
            if b.last_offset < first:
                continue
            if first > cursor:
                window.append(InFlightRange(cursor, first - 1, AVAILABLE, 0))
                self._batch_starts.append(cursor)  # Kafka fetches the gap as batches of its own
            state = AVAILABLE if b.delivery_state == ACQUIRED else RecordState(b.delivery_state)
            count = 0 if _mutants.ACTIVE == "recover-resets-counts" else b.delivery_count
            window.append(InFlightRange(first, b.last_offset, state, count, durable_count=count))
            self._batch_starts.append(first)  # a persisted batch is a cached batch
            cursor = b.last_offset + 1
        self._spso = start
        self._speo = cursor
        self._recount_complete()
        self._advance_spso()
        if unknown:
            _situations.COUNTS["read-uninitialized-start"] += 1
            self._follow_log_start(now_ms, write=False)
            self._status = PartitionStatus.INITIALIZING
            self._issue(WriteReason.INITIALIZE, None, [], start_offset=self._spso)
        else:
            self._status = PartitionStatus.ACTIVE
            self._follow_log_start(now_ms)
            # Trunk's maybeResumeDlqArchiving: records read back ARCHIVING (phase 1 durable, phase 2
            # not) go to the DLQ and then ARCHIVED, whether or not the group has a DLQ now.
            self._enqueue_archiving(self._window.ranges)

    def check_state_epoch(self, summary: ReadShareGroupStateSummaryResponse) -> bool:
        """SP-12 (002: checked when the first share session opens): a newer state epoch
        means an admin reset; drop the state and read again. Returns True if dropped."""
        if not self.ready:
            return False
        newer = summary.error_code == Errors.NONE and summary.state_epoch > self._state_epoch
        # SC-9/GC-8: no state for the key: it was deleted (its group or topic), and what this leader
        # holds belongs to a life that is over. A re-created group initializes it at a higher state
        # epoch (its group epoch carries on), which fences this leader's writes, but only once the
        # new life exists; dropping now keeps them out of the gap too.
        if newer or summary.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            _situations.COUNTS["state-epoch-reset-on-session-open"] += 1
            self._drop_state()
            self._status = PartitionStatus.STALE_STATE
            return True
        return False

    def _drop_state(self) -> None:
        self._window.clear()
        self._complete = 0
        self._batch_starts.clear()
        self._below.clear()
        self._dlq_outbox.clear()
        self._dlq_generation += 1
        for info in self._pending.values():
            info.orphaned = True
        self._start_writes = 0
        self._log_start_unwritten = False
        self._speo = self._spso

    # -- acquire (SP-2, SP-5, SP-7, SP-8, SP-13, SP-14) ---------------------------------------

    def acquire(self, member_id: str, max_records: int, now_ms: int, fetch_offset: int | None = None, *,
                acquire_mode: str = BATCH_OPTIMIZED, batch_size: int | None = None,
                fetch_last: int | None = None) -> list[AcquiredRecords]:
        """Acquire records for ``member_id`` from a fetch at ``fetch_offset`` (default: the
        ``next_fetch_offset``). Raises ApiError when the partition is not ready.

        Kafka (``broker.kafka``, SharePartition.acquire at the pinned commit): the fetch returns
        whole record batches from the batch holding the fetch offset up to the HWM (LSO for
        read_committed), or to ``fetch_last``; whole batches are acquired, so ``max_records``
        and the in-flight bound are soft limits that end at a batch end, unless
        ``acquire_mode`` is ``record_limit`` (a hard limit). In-flight batches that diverged
        are acquired offset by offset, with delivery-count throttling. Offsets the cleaner removed
        inside fetched batches, and control markers, are acquired with them (the client
        acknowledges them with GAP); a read_committed group's aborted records, and batches the
        cleaner emptied before the first fetched one, are archived.

        KIP (``protocol = "kip"``): up to ``max_records`` records (a hard limit), the lowest
        AVAILABLE offsets of the window first, then new offsets up to the bound and the
        in-flight limit; offsets without a deliverable record are archived."""
        if self._status is not PartitionStatus.ACTIVE and not self.ready:  # (ready: the mutant too)
            raise ApiError(self.not_ready_error, f"share-partition {self.key} is {self._status.value}")
        if max_records <= 0:
            return []
        self._follow_log_start(now_ms)
        if _mutants.ACTIVE == "ack-after-lock-expired":
            self.expire_locks(now_ms)  # mutant: expired locks are swept lazily, here
        deadline = now_ms + self.lock_duration_ms
        acquired: list[AcquiredRecords] = []
        if self.broker.kafka:
            self._acquire_batches(member_id, max_records, deadline, acquired, fetch_offset,
                                  acquire_mode == RECORD_LIMIT, batch_size or max_records, fetch_last)
        else:
            remaining = max_records
            if self._window.ranges:
                remaining = self._acquire_available(member_id, remaining, deadline, acquired)
            if remaining > 0:
                self._acquire_new(member_id, remaining, deadline, acquired)
        if self._archive_id != NO_WRITE:
            self._issue_archive()
        return acquired

    @property
    def next_fetch_offset(self) -> int:
        """Where the next fetch reads from (Kafka's SharePartition.nextFetchOffset): the first
        AVAILABLE offset of the window that is not in transition, else the window's end."""
        for r in self._window.ranges:
            if r.state == AVAILABLE and r.write_id == NO_WRITE:
                return r.first
        return self._speo

    def window_within_record_locks(self) -> bool:
        """SP-8: SPEO - SPSO <= max record locks. Kafka's bound is soft to a batch end
        (lastOffsetAndMaxRecordsToAcquire): the window may run on to the end of the log batch
        holding the last offset within the limit."""
        limit = self.max_record_locks
        if self._speo - self._spso <= limit:
            return True
        return self.broker.kafka and self._speo - 1 <= self.log.batch_last(self._spso + limit - 1)

    @property
    def throttle_delivery_count(self) -> int:
        """The delivery count from which acquisitions are throttled (Kafka's
        throttleRecordsDeliveryLimit): max(2, ceil(limit / 2))."""
        return max(2, -(-self.delivery_count_limit // 2))

    def in_flight_batch_starts(self) -> list[int]:
        """The first offsets of Kafka's cached in-flight batches in the window (for tests and reports)."""
        spso = self._spso
        starts = [s for s in self._batch_starts if spso <= s < self._speo]
        if self._speo > spso and (not starts or starts[0] != spso):
            starts.insert(0, spso)
        return starts

    # -- Kafka: batch-wise acquisition -------------------------------------------------------

    def _acquire_batches(self, member_id: str, max_records: int, deadline: int,
                         acquired: list[AcquiredRecords], fetch_offset: int | None, record_limit: bool,
                         batch_size: int, fetch_last: int | None) -> None:
        read_committed = self.group.read_committed
        bound = self.log.bound(read_committed)
        mutant = _mutants.ACTIVE
        if mutant is not None:
            if mutant == "read-past-lso":
                bound, read_committed = self.log.bound(False), False
            elif mutant == "deliver-aborted":
                read_committed = False
            elif mutant == "ignore-fetch-offset":
                fetch_offset = self._speo  # mutant: always fetch after the window (AVAILABLE records stranded)
        window = self._window
        if fetch_offset is None:
            fetch_offset = self.next_fetch_offset if window.ranges else self._speo
        base = self.log.fetch_base(fetch_offset, bound)
        last = bound - 1 if fetch_last is None else min(fetch_last, bound - 1)
        if base > last or last < self._spso:
            return
        # SharePartition.lastOffsetAndMaxRecordsToAcquire: the in-flight bound (soft to a batch end).
        in_flight = self._speo - self._spso
        max_acquire = min(max_records, self.max_record_locks - (0 if mutant == "inflight-limit-per-fetch"
                                                                 else in_flight))
        if max_acquire <= 0:
            _situations.COUNTS["in-flight-limit-reached"] += 1
            end = self._speo - 1
            if fetch_offset > end or in_flight == 0:
                return
            max_acquire = min(max_records, end - fetch_offset + 1)
            last = min(last, end)
        speo = self._speo
        if base < speo or fetch_offset < speo:
            count, throttled = 0, False
            pos = base if base > self._spso else self._spso
            if pos < speo and pos <= last:
                count, throttled = self._acquire_in_window(member_id, max_acquire, deadline, acquired,
                                                           fetch_offset, base, last, record_limit, read_committed)
            elif fetch_offset < base:
                self._archive_available(max(fetch_offset, self._spso), min(base, speo) - 1)
            if throttled or count >= max_acquire or self._speo > last:
                return
            max_acquire -= count
        self._acquire_new_batches(member_id, base if base > self._speo else self._speo, last, max_acquire, deadline,
                                  acquired, record_limit, batch_size, read_committed)

    def _acquire_in_window(self, member_id: str, max_acquire: int, deadline: int,
                           acquired: list[AcquiredRecords], fetch_offset: int, base: int, last: int,
                           record_limit: bool, read_committed: bool) -> tuple[int, bool]:
        """The in-flight batches overlapping the fetched [base, last]: whole AVAILABLE batches, or
        offset by offset. Returns how many offsets were acquired and whether throttling stopped it."""
        window = self._window
        mutant = _mutants.ACTIVE
        if fetch_offset < base and fetch_offset < self._speo:
            # maybeArchiveStaleBatches: batches compaction emptied before the first fetched one.
            self._archive_available(max(fetch_offset, self._spso), min(base, self._speo) - 1)
        starts = self._batch_starts
        k = bisect_right(starts, self._spso) - 1
        if k > 0:
            del starts[:k]
        count = 0
        pos = max(base, self._spso)
        throttled = False
        limit = self.delivery_count_limit
        throttle_at = self.throttle_delivery_count
        while pos < self._speo and pos <= last and count < max_acquire:
            i = bisect_right(starts, pos) - 1
            b_first = max(starts[i], self._spso) if i >= 0 else self._spso
            b_last = min(starts[i + 1] - 1 if i + 1 < len(starts) else self._speo - 1, self._speo - 1)
            pos = b_last + 1
            r = window.find(b_first)
            assert r is not None
            # mutant: a batch whose offsets diverged is taken for whole, with its first offset's state
            split = r.last < b_last and mutant != "ignore-batch-split"
            lo, hi = max(b_first, base), min(b_last, last)
            if not split:
                top = r.delivery_count if r.state == AVAILABLE and r.write_id == NO_WRITE else -1
            elif count > 0:
                top = self._max_available_count(lo, hi)
            else:
                # Nothing acquired yet: the offset-wise walk below meets every AVAILABLE offset of
                # the range up to where it stops, and it stops early only at a throttled one (or
                # with max records reached), so it tells whether the batch is throttled.
                top = -1
            throttle = top >= throttle_at and mutant != "no-throttling"
            if throttle and count > 0:
                throttled = True  # the throttled records go alone, in a later fetch
                break
            full = b_first >= base and b_last <= last
            subset = record_limit and b_last - b_first + 1 > max_acquire - count
            if not full or split or subset or throttle:
                if not split and (r.state != AVAILABLE or r.write_id != NO_WRITE):
                    continue
                if split:
                    _situations.COUNTS["acquire-split-batch"] += 1
                got, met = self._acquire_offsets(member_id, lo, hi, b_last - b_first + 1, record_limit,
                                                 max_acquire - count, deadline, acquired, limit, throttle_at,
                                                 read_committed)
                if got:
                    count += got
                    if throttle or met:
                        throttled = True
                        break
                continue
            if r.state != AVAILABLE or r.write_id != NO_WRITE:
                continue
            self._acquire_span(b_first, b_last, member_id, deadline, acquired, read_committed)
            count += b_last - b_first + 1
        return count, throttled

    def _max_available_count(self, first: int, last: int) -> int:
        """The highest delivery count among AVAILABLE offsets of [first, last] not in transition (-1: none)."""
        window = self._window
        ranges = window.ranges
        i = window.index_of(first)
        top = -1
        while i < len(ranges) and ranges[i].first <= last:
            r = ranges[i]
            if r.state == AVAILABLE and r.write_id == NO_WRITE and r.delivery_count > top:
                top = r.delivery_count
            i += 1
        return top

    def _acquire_span(self, first: int, last: int, member_id: str, deadline: int,
                      acquired: list[AcquiredRecords], read_committed: bool) -> None:
        """Acquire [first, last] (AVAILABLE): the next delivery. As trunk's SharePartition.acquire,
        offsets whose record compaction removed since they entered the window, and control markers,
        are acquired with the batch (the client acknowledges them with GAP, SP-14); only a
        read_committed group's aborted records are archived (``PartitionLog.share_spans``)."""
        window = self._window
        ranges = window.ranges
        if self.log.all_records:
            k = window.index_of(first)
            r = ranges[k]
            if r.first == first and r.last == last:  # a whole range: no split
                _acquire_range(r, member_id, deadline, acquired)
                window.merge_indices(k - 1, k + 1)
                return
        k, end = window.isolate(first, last)
        start = k
        if self.log.all_records:  # the common case: no log read needed
            while k < end:
                r = ranges[k]
                r.state = r.target = ACQUIRED
                r.delivery_count += 1
                r.owner = member_id
                r.lock_deadline_ms = deadline
                _add_acquired(acquired, r.first, r.last, r.delivery_count)
                k += 1
            window.merge_indices(start - 1, end)
            return
        while k < end:
            r = ranges[k]
            for _first, span_last, take in self.log.share_spans(r.first, r.last + 1,
                                                                    read_committed=read_committed):
                r = ranges[k]
                if r.last > span_last:
                    ranges.insert(k + 1, r.split_off(span_last + 1))
                    end += 1
                if take:
                    _acquire_range(r, member_id, deadline, acquired)
                else:
                    _situations.COUNTS["acquire-aborted-archived"] += 1
                    self._tag_archived(r)
                k += 1
        window.merge_indices(start - 1, end)  # with the neighbours only: nothing else changed

    def _acquire_offsets(self, member_id: str, first: int, last: int, batch_records: int, record_limit: bool,
                         remaining: int, deadline: int, acquired: list[AcquiredRecords], limit: int,
                         throttle_at: int, read_committed: bool) -> tuple[int, bool]:
        """SharePartition.acquireSubsetBatchRecords: the AVAILABLE offsets of [first, last] one by one
        (a run of equal delivery count at a time). A record on its last delivery goes alone; from the
        throttle count on, at most ``batch_records >> (count - throttle + 1)`` records are acquired.
        Returns how many were acquired and whether an AVAILABLE offset at the throttle count was met."""
        window = self._window
        ranges = window.ranges
        throttling = _mutants.ACTIVE != "no-throttling"
        got = 0
        throttle_max = -1
        met = False
        i = window.index_of(first)
        while i < len(ranges):
            r = ranges[i]
            if r.first > last:
                break
            if r.state != AVAILABLE or r.write_id != NO_WRITE:
                i += 1
                continue
            pos = r.first if r.first > first else first
            piece_last = r.last if r.last < last else last
            c = r.delivery_count
            if c >= throttle_at and throttling:
                met = True
            if limit > 2 and c == limit - 1 and got > 0 and throttling:
                break  # on its last delivery attempt: alone, in the next fetch
            if c >= throttle_at and throttle_max < 0 and throttling:
                throttle_max = max(1, batch_records >> (c - throttle_at + 1))
                _situations.COUNTS["acquire-throttled"] += 1
            n = piece_last - pos + 1
            alone = limit > 2 and c + 1 == limit and throttling
            if alone:
                n = 1
                _situations.COUNTS["acquire-last-delivery-alone"] += 1
            if record_limit and n > remaining - got:
                n = remaining - got
            if throttle_max >= 0 and n > throttle_max - got:
                n = throttle_max - got
            self._acquire_span(pos, pos + n - 1, member_id, deadline, acquired, read_committed)
            got += n
            if alone or (record_limit and got == remaining) or got == throttle_max or pos + n > last:
                break
            i = window.index_of(pos + n)
        return got, met

    def _archive_available(self, first: int, last: int) -> None:
        """Archive the AVAILABLE offsets of [first, last] not in transition (their records are gone)."""
        if first > last:
            return
        window = self._window
        pos = first
        while pos <= last:
            r = window.find(pos)
            assert r is not None
            piece_last = min(r.last, last)
            if r.state == AVAILABLE and r.write_id == NO_WRITE:
                i, _ = window.isolate(pos, piece_last)
                self._tag_archived(window.ranges[i])
            pos = piece_last + 1

    def _acquire_new_batches(self, member_id: str, first: int, last: int, remaining: int, deadline: int,
                             acquired: list[AcquiredRecords], record_limit: bool, batch_size: int,
                             read_committed: bool) -> None:
        """SharePartition.acquireNewBatchRecords: new offsets from ``first``, whole batches up to the
        batch holding the ``remaining``-th offset (record_limit: that many offsets acquired, the rest of
        the batch AVAILABLE). Batches compaction emptied between the window's end and ``first`` are
        archived; in-flight batches are cut at log batch boundaries every ``batch_size`` offsets
        (createBatches)."""
        window = self._window
        log = self.log
        if first > self._speo:
            # Kafka leaves such a hole out of its cache; the window here has none, so the hole is
            # archived, and it counts against the in-flight bound (as Kafka's in-flight count,
            # endOffset - startOffset + 1, counts it from the next fetch on): a hole longer than the
            # room left is archived up to the bound, the rest by later fetches.
            hole_end = first
            if _mutants.ACTIVE != "inflight-limit-per-fetch":
                hole_end = min(first, self._spso + self.max_record_locks)
            hole = InFlightRange(self._speo, hole_end - 1, AVAILABLE, 0)
            _situations.COUNTS["acquire-compacted-hole"] += 1
            self._tag_archived(hole)
            window.append(hole)
            self._batch_starts.append(self._speo)
            self._speo = hole_end
            if hole_end < first:
                return
            if _mutants.ACTIVE != "inflight-limit-per-fetch":
                remaining = min(remaining, self.max_record_locks - (self._speo - self._spso))
        if first > last or remaining <= 0:
            return
        new_last = last
        if remaining < last - first + 1:
            new_last = min(last, log.batch_last(first + remaining - 1))
        acquire_last = min(new_last, first + remaining - 1) if record_limit else new_last
        starts = self._batch_starts
        starts.append(first)
        if not record_limit and new_last - first + 1 > batch_size:
            current = first
            offset = log.batch_last(first) + 1
            while offset <= new_last:
                if offset - current >= batch_size:
                    starts.append(offset)
                    current = offset
                offset = log.batch_last(offset) + 1
        if log.all_records:  # the common case: no log read needed
            window.append(InFlightRange(first, acquire_last, ACQUIRED, 1, member_id, deadline))
            _add_acquired(acquired, first, acquire_last, 1)
            spans: list[tuple[int, int, bool]] = []
        else:
            # Whole batches, compacted offsets and markers included (trunk's acquireNewBatchRecords
            # does not look inside them); a read_committed group's aborted records are archived.
            spans = log.share_spans(first, acquire_last + 1, read_committed=read_committed)
        for span_first, span_last, take in spans:
            if take:
                window.append(InFlightRange(span_first, span_last, ACQUIRED, 1, member_id, deadline))
                _add_acquired(acquired, span_first, span_last, 1)
            else:
                _situations.COUNTS["acquire-aborted-archived"] += 1
                r = InFlightRange(span_first, span_last, AVAILABLE, 0)
                self._tag_archived(r)
                window.append(r)
        if acquire_last < new_last:
            _situations.COUNTS["acquire-record-limit-partial"] += 1
            if _mutants.ACTIVE == "record-limit-rest-locked":
                # mutant: the rest of the batch is taken as acquired, by no one, under no lock
                window.append(InFlightRange(acquire_last + 1, new_last, ACQUIRED, 0, None, 2**62))
            else:
                window.append(InFlightRange(acquire_last + 1, new_last, AVAILABLE, 0))
        self._speo = new_last + 1

    # -- KIP: record-wise acquisition ---------------------------------------------------------

    def _acquire_available(self, member_id: str, remaining: int, deadline: int,
                           acquired: list[AcquiredRecords]) -> int:
        read_committed = self.group.read_committed and _mutants.ACTIVE != "deliver-aborted"
        ranges = self._window.ranges
        touched = False
        k = 0
        while k < len(ranges) and remaining > 0:
            r = ranges[k]
            if r.state != AVAILABLE or r.write_id != NO_WRITE:
                k += 1
                continue
            touched = True
            # No delivery-count check here: as in Kafka, records reach the limit when released or
            # when their lock times out, and are archived there (SP-5).
            # Replace r by its pieces: acquired records, archived non-records (a record
            # compacted away since it entered the window is found now, SP-14), and the
            # rest, still AVAILABLE.
            pieces: list[InFlightRange] = []
            rest: InFlightRange | None = r
            for span in self.log.read(r.first, r.last + 1, read_committed=read_committed):
                if remaining <= 0 or rest is None:
                    break
                last = span.last
                if span.kind == SpanKind.RECORD:
                    last = min(last, span.first + remaining - 1)
                    remaining -= last - span.first + 1
                piece = rest
                rest = piece.split_off(last + 1) if last < piece.last else None
                if span.kind == SpanKind.RECORD:
                    _acquire_range(piece, member_id, deadline, acquired)
                else:
                    self._tag_archived(piece)
                pieces.append(piece)
            if rest is not None:
                pieces.append(rest)
            ranges[k:k + 1] = pieces
            # Merge with the range before (the one after is looked at next time round).
            k += len(pieces) - self._window.merge_indices(k - 1, k + len(pieces) - 1)
        if touched:
            self._window.merge_indices(k - 1, k)
        return remaining

    def _acquire_new(self, member_id: str, remaining: int, deadline: int,
                     acquired: list[AcquiredRecords]) -> None:
        read_committed = self.group.read_committed
        upper = min(self.log.bound(read_committed), self._spso + self.max_record_locks)  # SP-7, SP-8
        if _mutants.ACTIVE is not None:
            upper, read_committed = self._mutant_acquire_bound(upper, read_committed)
        if self._speo >= upper:
            return
        window = self._window
        for span in self.log.read(self._speo, upper, read_committed=read_committed):
            if remaining <= 0:
                break
            if span.kind == SpanKind.RECORD:
                last = min(span.last, span.first + remaining - 1)
                window.append(InFlightRange(span.first, last, ACQUIRED, 1, member_id, deadline))
                _add_acquired(acquired, span.first, last, 1)
                remaining -= last - span.first + 1
                self._speo = last + 1
            else:
                r = InFlightRange(span.first, span.last, AVAILABLE, 0)
                self._tag_archived(r)
                window.append(r)
                self._speo = span.last + 1

    def _mutant_acquire_bound(self, upper: int, read_committed: bool) -> tuple[int, bool]:
        """The mutants of ``_acquire_new``: the upper offset and isolation it reads with."""
        mutant = _mutants.ACTIVE
        if mutant == "read-past-lso":
            return min(self.log.bound(False), self._spso + self.max_record_locks), False
        if mutant == "deliver-aborted":
            return upper, False
        if mutant == "inflight-limit-per-fetch":
            return min(self.log.bound(read_committed), self._speo + self.max_record_locks), read_committed
        return upper, read_committed

    def _tag_archived(self, r: InFlightRange) -> None:
        """SP-13/SP-14: an offset with no deliverable record becomes ARCHIVED, durably;
        one ARCHIVE write per acquire carries them all."""
        if self._archive_id == NO_WRITE:
            self._archive_id = self._new_write_id()
            self._archive_first, self._archive_last = r.first, r.last
        r.write_id = self._archive_id
        r.target = ARCHIVED
        self._complete += r.last - r.first + 1  # AVAILABLE before (a new range is counted here, not on append)
        self._archive_first = min(self._archive_first, r.first)
        self._archive_last = max(self._archive_last, r.last)

    def _issue_archive(self) -> None:
        write_id, first, last = self._archive_id, self._archive_first, self._archive_last
        self._archive_id = NO_WRITE
        self._window.merge(first, last)
        i, j = self._window.isolate(first, last)
        changes: list[Change] = [(r.first, r.last, ARCHIVED, r.delivery_count)
                                 for r in self._window.ranges[i:j] if r.write_id == write_id]
        self._issue(WriteReason.ARCHIVE, None, changes, write_id=write_id)

    # -- acknowledge (SP-3, SP-5, SP-9) ------------------------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AcknowledgementBatch],
                    now_ms: int) -> AcknowledgeResult:
        """SP-3: apply a member's acknowledgement batches, all or nothing.

        As trunk's ``SharePartition.acknowledge`` (pinned commit): the batches are taken in order;
        one wholly below the log start offset is skipped and one that spans it is applied from the
        log start on (the records below are gone, ``fetchSubMapForAcknowledgementBatch``);
        offsets past the in-flight records answer INVALID_REQUEST (INVALID_RECORD_STATE when
        nothing is in flight); an offset an earlier batch of the same request already changed, or
        one not ACQUIRED by the member under a live lock, fails the whole request with
        INVALID_RECORD_STATE and nothing is applied (trunk rolls back the batches it began,
        ``rollbackOrProcessStateUpdates``). Batches that overlap by more than one offset do not
        reach a share-partition on the wire: ``ack_batches_problem`` (KafkaApis'
        validateAcknowledgementBatches) answers INVALID_REQUEST first. RENEW (KIP-1222) restarts
        the acquisition lock of the records and writes nothing (``acknowledgeCompleteBatch`` /
        ``acknowledgePerOffsetBatchRecords``); a request of RENEWs only is answered at once.

        Deliberately not trunk (``divergence("ack-below-spso-confirmed")``): trunk skips, with
        success, every batch below its start offset, the SPSO, not only the log start; so a member
        whose lock expired, and whose records another member then acknowledged past the SPSO, is told
        its late ACCEPT or REJECT took effect when another's did (E-3: acknowledgements from anyone
        else are rejected). Here offsets at or above the log start but below the SPSO are
        INVALID_RECORD_STATE.

        protocol = "kip": overlapping or unordered batches make the request malformed
        (INVALID_REQUEST), and any offset outside the window [SPSO, SPEO) is INVALID_RECORD_STATE.
        """
        if self._status is not PartitionStatus.ACTIVE and not self.ready:
            return AcknowledgeResult(self.not_ready_error, None, f"share-partition is {self._status.value}")
        kafka = self.broker.kafka
        problem = _malformed(batches, ordered=not kafka)
        if problem:
            return AcknowledgeResult(Errors.INVALID_REQUEST, None, problem)
        if not batches:
            return AcknowledgeResult(Errors.NONE)
        self._follow_log_start(now_ms)
        spans: list[AcknowledgementBatch] = []
        if kafka:
            error, problem = self._kafka_spans(member_id, batches, now_ms, spans)
            if problem:
                return AcknowledgeResult(error, None, problem)
            if not spans:
                return AcknowledgeResult(Errors.NONE)  # all below the start offset: nothing left to do
        else:
            for b in batches:
                problem = self._not_acknowledgeable(member_id, b.first_offset, b.last_offset, now_ms)
                if problem:
                    return AcknowledgeResult(Errors.INVALID_RECORD_STATE, None, problem)
            spans.extend(batches)
        return self._apply_acknowledgement(member_id, spans, now_ms)

    def _kafka_spans(self, member_id: str, batches: Sequence[AcknowledgementBatch], now_ms: int,
                     spans: list[AcknowledgementBatch]) -> tuple[Errors, str | None]:
        """Trunk's per-batch checks, in request order: the parts of ``batches`` to apply go to ``spans``."""
        spso, speo = self._spso, self._speo
        gone = self.log.log_start_offset  # <= spso: _follow_log_start ran
        taken: list[tuple[int, int]] = []
        highest = -1  # the highest offset taken so far: a batch above it overlaps none (the usual order)
        for b in batches:
            first, last = b.first_offset, b.last_offset
            if last < gone:
                _situations.COUNTS["ack-below-log-start"] += 1
                continue  # the log start moved past it: the records are gone
            if speo == spso:
                return Errors.INVALID_RECORD_STATE, f"offsets {first}-{last}: nothing is in flight"
            if last >= speo:
                return Errors.INVALID_REQUEST, (f"offsets {first}-{last} go past the in-flight records "
                                                f"(the last is {speo - 1})")
            if first < gone:
                types = b.acknowledge_types
                b = AcknowledgementBatch(gone, last, types if len(types) == 1 else types[gone - first:])
                first = gone
            if first <= highest:
                for f, l_ in taken:
                    if first <= l_ and f <= last:
                        return Errors.INVALID_RECORD_STATE, (f"offsets {max(f, first)}-{min(l_, last)} are "
                                                             "acknowledged twice in one request")
            problem = self._not_acknowledgeable(member_id, first, last, now_ms)
            if problem:
                return Errors.INVALID_RECORD_STATE, problem
            taken.append((first, last))
            if last > highest:
                highest = last
            spans.append(b)
        return Errors.NONE, None

    def _apply_acknowledgement(self, member_id: str, spans: list[AcknowledgementBatch],
                               now_ms: int) -> AcknowledgeResult:
        """Valid: every offset of ``spans`` is ACQUIRED by the member under a live lock. Apply."""
        write_id = self._next_write_id  # taken only if something is written (RENEW writes nothing)
        limit = self.delivery_count_limit
        dlq = self.dlq_enabled
        window = self._window
        changes: list[Change] = []
        ranges = window.ranges
        complete = 0
        for b in spans:
            i, j = window.isolate(b.first_offset, b.last_offset)
            # Walk the batch's runs of equal type and its ranges together, splitting a
            # range where a run ends inside it; splice the pieces back in one go.
            pieces: list[InFlightRange] = []
            source = iter(ranges[i:j])
            r = next(source)
            for _, run_last, ack_type in _runs(b):
                renew = ack_type == _RENEW
                target = AVAILABLE if renew else _ACK_TARGET[ack_type]
                _situations.COUNTS[_ACK_SITUATION[ack_type]] += 1
                if ack_type == _REJECT and dlq:
                    target = ARCHIVING  # trunk's recordStateWithDlq
                while True:
                    tail = r.split_off(run_last + 1) if r.last > run_last else None
                    if renew:
                        if _mutants.ACTIVE != "renew-ignored":  # mutant: answered, but the lock runs on
                            r.lock_deadline_ms = now_ms + self.lock_duration_ms
                    else:
                        r.write_id = write_id
                        if target == AVAILABLE and r.delivery_count >= limit:  # at the limit: _limit_state
                            _situations.COUNTS["ack-release-at-limit"] += 1
                            r.target = ARCHIVING if dlq else ARCHIVED
                        else:
                            r.target = target
                        if r.target in _TERMINAL:  # from ACQUIRED
                            complete += r.last - r.first + 1
                        changes.append((r.first, r.last, r.target, r.delivery_count))
                    pieces.append(r)
                    if tail is not None:
                        r = tail
                        break
                    reached = r.last == run_last
                    r = next(source, r)
                    if reached:
                        break
            ranges[i:j] = pieces
        if len(spans) == 1:
            window.merge(spans[0].first_offset, spans[0].last_offset)
        else:
            window.merge(min(b.first_offset for b in spans), max(b.last_offset for b in spans))
        self._complete += complete
        if not changes:
            return AcknowledgeResult(Errors.NONE)  # renewals only: nothing to make durable
        self._next_write_id += 1
        self._issue(WriteReason.ACKNOWLEDGE, member_id, changes, write_id=write_id)
        if _mutants.ACTIVE == "spso-before-durable":
            self._advance_spso()
        return AcknowledgeResult(Errors.NONE, write_id)

    def _not_acknowledgeable(self, member_id: str, first: int, last: int, now_ms: int) -> str | None:
        if first < self._spso or last >= self._speo:
            return f"offsets {first}-{last} are not all in the in-flight window [{self._spso}, {self._speo})"
        ranges = self._window.ranges
        i = self._window.index_of(first)
        while i < len(ranges) and ranges[i].first <= last:
            r = ranges[i]
            if r.write_id != NO_WRITE:
                _situations.COUNTS["ack-in-transition"] += 1
                return f"offsets {max(r.first, first)}-{min(r.last, last)} have a state change in progress"
            if r.state != ACQUIRED:
                _situations.COUNTS["ack-after-lock-expired"] += 1
                return f"offsets {max(r.first, first)}-{min(r.last, last)} are {r.state.name}, not ACQUIRED"
            if r.owner != member_id and _mutants.ACTIVE != "ack-from-non-owner":
                _situations.COUNTS["ack-not-owner"] += 1
                return f"offsets {max(r.first, first)}-{min(r.last, last)} are acquired by another member"
            if r.lock_deadline_ms <= now_ms and _mutants.ACTIVE != "ack-after-lock-expired":
                _situations.COUNTS["ack-after-lock-expired"] += 1
                return f"the acquisition lock of offsets {max(r.first, first)}-{min(r.last, last)} expired"
            i += 1
        return None

    # -- lock timeout (SP-4) and member release (SP-15) --------------------------------------

    def next_lock_deadline_ms(self) -> int | None:
        """The earliest live acquisition lock deadline, for one cancellable timer."""
        deadlines = [r.lock_deadline_ms for r in self._window.ranges
                     if r.state == ACQUIRED and r.write_id == NO_WRITE]
        deadlines += [r.lock_deadline_ms for r in self._below if r.state == ACQUIRED]
        if _mutants.ACTIVE == "ack-after-lock-expired":
            return None  # mutant: no lock timer
        return min(deadlines) if deadlines else None

    def expire_locks(self, now_ms: int) -> int | None:
        """SP-4/SP-5: records whose lock expired by ``now_ms`` go back to AVAILABLE (or
        ARCHIVED at the delivery limit), durably. Returns the write id, if any."""
        if self._below:
            self._archive_below(lambda r: r.lock_deadline_ms <= now_ms)
        expired = [r for r in self._window.ranges
                   if r.state == ACQUIRED and r.write_id == NO_WRITE and r.lock_deadline_ms <= now_ms]
        return self._release(expired, WriteReason.LOCK_TIMEOUT) if expired else None

    def release_member(self, member_id: str, now_ms: int) -> int | None:
        """SP-15: the member's share session closed, or it left or was fenced: its ACQUIRED
        records return to AVAILABLE (count unchanged, SP-5 applies). Returns the write id."""
        if self._status is not PartitionStatus.ACTIVE:
            return None
        if self._below:
            self._archive_below(lambda r: r.owner == member_id)
        mine = [r for r in self._window.ranges
                if r.state == ACQUIRED and r.write_id == NO_WRITE and r.owner == member_id]
        if not mine:
            return None
        _situations.COUNTS["release-on-session-end"] += 1
        first = mine[0].first
        if any(r.state == ACQUIRED and r.owner != member_id for r in self._window.ranges if r.first < first):
            _situations.COUNTS["release-while-other-holds-earlier"] += 1
        return self._release(mine, WriteReason.RELEASE)

    def _release(self, ranges: list[InFlightRange], reason: WriteReason) -> int:
        write_id = self._new_write_id()
        limit = self.delivery_count_limit
        at_limit = self._limit_state()
        changes: list[Change] = []
        mutant = _mutants.ACTIVE
        for r in ranges:
            r.write_id = write_id
            if mutant == "release-decrements-count" and reason is WriteReason.RELEASE:
                r.delivery_count -= 1
            r.target = at_limit if r.delivery_count >= limit else AVAILABLE
            if mutant == "archive-below-limit" and r.delivery_count >= limit - 1:
                r.target = at_limit  # mutant: one delivery short of the limit
            if r.target is not AVAILABLE:
                _situations.COUNTS[_AT_LIMIT_SITUATION[reason]] += 1
            if mutant == "no-limit-on-lock-timeout" and reason is WriteReason.LOCK_TIMEOUT:
                r.target = AVAILABLE
            if r.target == ARCHIVED:  # from ACQUIRED
                self._complete += r.last - r.first + 1
            # mutant persist-acquired: the write carries the state the records have now
            changes.append((r.first, r.last, r.state if mutant == "persist-acquired" else r.target, r.delivery_count))
        self._issue(reason, None, changes, write_id=write_id)
        if reason is WriteReason.LOCK_TIMEOUT:
            _situations.COUNTS["lock-timeout"] += 1
        if mutant == "lock-timeout-before-write" and reason is WriteReason.LOCK_TIMEOUT:
            for r in ranges:  # mutant (Kafka trunk): AVAILABLE / ARCHIVED now, whatever becomes of the write
                _settle(r)
            self._advance_spso()  # past records ARCHIVED now, as trunk's next write callback does
        return write_id

    # -- log start offset (retention, DeleteRecords) ------------------------------------------

    def advance_log_start(self, now_ms: int) -> int | None:
        """The log start offset moved: the SPSO jumps to it, durably. Returns the write id
        (None if nothing moved, or if the write waits for a pending start-offset write)."""
        if self._status is not PartitionStatus.ACTIVE:
            return None
        return self._follow_log_start(now_ms)

    def _follow_log_start(self, now_ms: int, write: bool = True) -> int | None:
        log_start = self.log.log_start_offset
        if log_start <= self._spso or _mutants.ACTIVE == "log-start-unheard":
            return None  # mutant log-start-unheard: the leader never follows the log start
        # Trunk's updateCacheAndOffsets / archiveAvailableRecordsOnLsoMovement: below the new start,
        # AVAILABLE records are archived and ACQUIRED ones stay with their member (``_below``) until
        # acknowledged (the acknowledgement is skipped, ``_kafka_spans``) or their lock expires
        # (archived, ``expire_locks``); nothing is written for them. Terminal records are past; records
        # in transition leave the window and their writes complete as no-ops (a failed acknowledgement's
        # rollback to ACQUIRED below the start is not modelled: their lock would only archive them).
        # protocol = "kip": the KIP moves the SPSO to the log start and says nothing of the records below
        # it; they leave the window whatever their state (what the model did before trunk's was followed).
        _situations.COUNTS["log-start-past-spso"] += 1
        if self.broker.kafka:
            self._keep_below(log_start)
        self._window.drop_below(log_start)
        self._spso = log_start
        self._speo = max(self._speo, log_start)
        self._recount_complete()
        self._advance_spso()
        if self.broker.kafka:
            # Trunk's updateCacheAndOffsets writes nothing: the next write carries the new start
            # offset (every write carries the SPSO, _payload), "lazily".
            return None
        if not write or self._spso <= self._start_sent:
            return None  # a start offset at least this high was already sent
        if self._start_writes:
            # Never two start offsets in flight: a lower one arriving after a higher one
            # would move the durable start back. Write it once the other is answered.
            self._log_start_unwritten = True
            return None
        return self._issue(WriteReason.LOG_START, None, [], start_offset=self._spso)

    def _keep_below(self, log_start: int) -> None:
        ranges = self._window.ranges
        if not ranges or ranges[0].first >= log_start:
            return
        kept = self._below
        for r in ranges:
            if r.first >= log_start:
                break
            if r.write_id != NO_WRITE or r.state not in (ACQUIRED, AVAILABLE):
                continue
            last = min(r.last, log_start - 1)
            if r.state == ACQUIRED:
                _situations.COUNTS["acquired-below-log-start"] += 1
                kept.append(InFlightRange(r.first, last, ACQUIRED, r.delivery_count, r.owner, r.lock_deadline_ms,
                                          durable_count=r.durable_count))
            else:  # AVAILABLE: archived, not written (trunk writes nothing for it either)
                kept.append(InFlightRange(r.first, last, ARCHIVED, r.delivery_count,
                                          durable_count=r.durable_count))
        self._prune_below()

    def _archive_below(self, which: Callable[[InFlightRange], bool]) -> None:
        """Trunk's releaseAcquisitionLockOnTimeout / releaseAcquiredRecords: acquired records below the start
        offset whose lock expired or whose member left become ARCHIVED, whatever their delivery count."""
        for r in self._below:
            if r.state == ACQUIRED and which(r):
                r.state = r.target = ARCHIVED
                r.owner = None
                r.lock_deadline_ms = NO_DEADLINE
        self._prune_below()

    def _prune_below(self) -> None:
        # Trunk drops a cached batch once all of it is terminal; without batches here: once nothing
        # below the start is ACQUIRED any more.
        if all(r.state != ACQUIRED for r in self._below):
            self._below.clear()

    # -- durable writes (SP-9) --------------------------------------------------------------

    def complete_write(self, write_id: int, resp: WriteShareGroupStateResponse,
                       now_ms: int) -> WriteCompletion:
        """Apply the share coordinator's answer to write ``write_id``."""
        info = self._pending.pop(write_id, None)
        if info is None:
            raise ValueError(f"write {write_id} is not pending on {self.key}")
        error = resp.error_code
        # An acknowledgement is answered as trunk's fetchPersisterError maps the write's error (protocol "kafka").
        answer = _persister_error(error) if self.broker.kafka and info.reason is WriteReason.ACKNOWLEDGE else error
        done = WriteCompletion(write_id, info.reason, info.member_id, answer)
        if info.orphaned:
            return done
        if info.request.start_offset != UNKNOWN_OFFSET:
            self._start_writes -= 1
        if error == Errors.NONE:
            self._write_succeeded(write_id, info)
        elif error in (Errors.FENCED_STATE_EPOCH, Errors.UNKNOWN_TOPIC_OR_PARTITION):
            # SP-12: the state was re-initialized with a higher state epoch, or (SC-9) deleted with
            # its group or topic: what this leader holds is over; read again (once re-initialized).
            _situations.COUNTS["write-fenced-state-epoch"] += 1
            self._drop_state()
            self._status = PartitionStatus.STALE_STATE
        elif error == Errors.FENCED_LEADER_EPOCH:
            # A newer leader has read the state: this one is a zombie and stops.
            _situations.COUNTS["write-fenced-leader-epoch"] += 1
            self._drop_state()
            self._status = PartitionStatus.FENCED
        else:
            self._write_failed(write_id, info, now_ms)
        if self._log_start_unwritten and not self._start_writes and self._status is PartitionStatus.ACTIVE:
            self._log_start_unwritten = False
            if self._spso > self._start_sent:
                self._issue(WriteReason.LOG_START, None, [], start_offset=self._spso)
        return done

    def _write_succeeded(self, write_id: int, info: _WriteInfo) -> None:
        if info.reason is WriteReason.INITIALIZE:
            self._status = PartitionStatus.ACTIVE
        if info.first > info.last:
            return
        ranges = self._ranges_of(write_id, info)
        for r in ranges:
            r.durable_count = r.delivery_count
            _settle(r)
        self._enqueue_archiving(ranges)  # KIP-1191: phase 1 durable, on to the DLQ
        self._window.merge(info.first, info.last)
        self._advance_spso()

    def _write_failed(self, write_id: int, info: _WriteInfo, now_ms: int) -> None:
        ranges = self._ranges_of(write_id, info)
        if info.reason is WriteReason.LOCK_TIMEOUT and _mutants.ACTIVE == "lock-timeout-before-write":
            self._window.merge(info.first, info.last)  # mutant (Kafka trunk): the failure is only logged
            self._advance_spso()
            return
        if info.reason is not WriteReason.ACKNOWLEDGE:
            # The change already happened in the leader's eyes (a lock expired, a member
            # left, a gap was found, the log moved): write it again, under a new id.
            if ranges:
                new_id = self._new_write_id()
                changes: list[Change] = []
                for r in ranges:
                    r.write_id = new_id
                    changes.append((r.first, r.last, r.target, r.delivery_count))
                self._issue(info.reason, info.member_id, changes, write_id=new_id)
            elif info.reason is WriteReason.INITIALIZE or self._spso >= self._start_sent:
                # The SPSO now (never below the one that failed): everything under it is durable.
                self._issue(info.reason, None, [], start_offset=self._spso)
            _situations.COUNTS["state-write-reissued"] += 1
            return
        _situations.COUNTS["ack-write-failed"] += 1
        if _mutants.ACTIVE == "failed-ack-write-kept":
            self._write_succeeded(write_id, info)  # mutant: no rollback; the client still hears the error
            return
        # SP-9: the acknowledgement failed; its records go back to ACQUIRED, unless their
        # lock expired meanwhile: then to AVAILABLE or ARCHIVED (SP-4, SP-5), durably.
        expired: list[InFlightRange] = []
        for r in ranges:
            if r.target in _TERMINAL and r.state not in _TERMINAL:
                self._complete -= r.last - r.first + 1
            r.write_id = NO_WRITE
            r.target = r.state
            if r.lock_deadline_ms <= now_ms:
                expired.append(r)
        if expired:
            _situations.COUNTS["ack-write-failed-lock-expired"] += 1
            if any(r.delivery_count >= self.delivery_count_limit for r in expired):
                _situations.COUNTS["ack-write-failed-lock-expired-at-limit"] += 1
            self._release(expired, WriteReason.LOCK_TIMEOUT)
        self._window.merge(info.first, info.last)

    def _ranges_of(self, write_id: int, info: _WriteInfo) -> list[InFlightRange]:
        window = self._window
        ranges = window.ranges
        if info.first > info.last or not ranges:
            return []
        i = max(window.index_of(info.first), 0)
        out = []
        while i < len(ranges) and ranges[i].first <= info.last:
            if ranges[i].write_id == write_id:
                out.append(ranges[i])
            i += 1
        return out

    def _advance_spso(self) -> None:
        """SP-6: move past leading terminal records whose state is durable."""
        ranges = self._window.ranges
        k = 0
        n = len(ranges)
        while k < n and ranges[k].write_id == NO_WRITE and ranges[k].state in _TERMINAL:
            k += 1
        if _mutants.ACTIVE == "spso-before-durable":
            while k < n and ranges[k].target in _TERMINAL:  # mutant: also past writes still in flight
                k += 1
        if k:
            # Every range leaving was counted complete: terminal, or (mutant) terminal once written.
            self._complete -= ranges[k - 1].last + 1 - ranges[0].first
            self._spso = ranges[k - 1].last + 1
            del ranges[:k]

    def _new_write_id(self) -> int:
        write_id = self._next_write_id
        self._next_write_id += 1
        return write_id

    def _issue(self, reason: WriteReason, member_id: str | None, changes: list[Change], *,
               write_id: int | None = None, start_offset: int | None = None) -> int:
        """Build the WriteShareGroupState for ``changes`` and put it in the outbox."""
        if write_id is None:
            write_id = self._new_write_id()
        # The offsets whose ranges carry this write id (the payload may leave some out).
        first = min((c[0] for c in changes), default=0)
        last = max((c[1] for c in changes), default=-1)
        written = changes
        if start_offset is None:
            start_offset, written = self._payload(write_id, changes)
        batches = _state_batches(written)
        # KIP-1226 (trunk's writeShareGroupState sends startOffset() and deliveryCompleteCount() together):
        # counted from the start offset the write leaves stored (with -1, the highest sent); the offsets
        # between it and the SPSO are all complete.
        base = start_offset if start_offset != UNKNOWN_OFFSET else self._start_sent
        complete = self._complete_from_offset(self._spso if base == UNKNOWN_OFFSET else base)
        request = WriteShareGroupStateRequest(self.key, self._state_epoch, self._leader_epoch,
                                              start_offset, batches, complete)
        if start_offset != UNKNOWN_OFFSET:
            self._start_writes += 1
            self._start_sent = max(self._start_sent, start_offset)
        self._pending[write_id] = _WriteInfo(reason, member_id, first, last, request)
        self._outbox.append(PendingWrite(write_id, reason, member_id, request))
        return write_id

    def _complete_from_offset(self, base: int) -> int:
        """The deliveryCompleteCount counted from ``base``: the offsets at or above it that are, or are
        being made, terminal. Below the SPSO all are; above it, the head of the window is looked at."""
        spso = self._spso
        if _mutants.ACTIVE == "delivery-complete-count-wrong":
            return _complete_from(self._window.ranges, max(base, spso)) + max(0, spso - base)
        if base <= spso:
            return self._complete + spso - base
        return self._complete - _complete_between(self._window.ranges, spso, base)

    def _mutant_start_past_released(self) -> int:
        """The mutant start-offset-skips-released: the start offset a write carries passes the leading
        records that are terminal or were released back to AVAILABLE (delivered before), as if those were
        done. The leader's own SPSO stays; the share coordinator stores the higher start offset, durably."""
        start = self._spso
        for r in self._window.ranges:
            if r.first != start or not (r.state in _TERMINAL or (r.state == AVAILABLE and r.delivery_count > 0)):
                break
            start = r.last + 1
        return start

    def _payload(self, write_id: int, changes: list[Change]) -> tuple[int, list[Change]]:
        """The StartOffset and batches of a write carrying ``changes``.

        Rule: if this write, once it succeeds, lets the SPSO move to S, and no
        terminal (Acknowledged/Archived) state will be durable at or above S,
        write StartOffset = S with only the changes at or above S. Otherwise
        write StartOffset = -1 with every change, and let the SPSO be implied:
        a recovering leader advances the stored start offset past the leading
        terminal batches (``recover``), so both forms recover the same SPSO.

        This reproduces the 002 table exactly, including its quirk: after
        "Acknowledge 110 (consumer 1)" the SPSO moves 110→111 yet the write is
        StartOffset -1 with batch 110 Acknowledged count 2, because 113-119 are
        durably Acknowledged above the new SPSO; after "Acknowledge 100-109" and
        "Acknowledge 111, 112" nothing terminal stays above the new SPSO, so the
        writes are StartOffset 110 and 120 with no batches. Available batches
        above S do not count: they stay as they are.

        The durable start offset must never move back, even though writes may
        be answered in any order and a write answered with an error may still
        have been applied (its answer lost). So at most one write carrying a
        start offset is in flight (while one is, this one carries -1 and all its
        changes, and a log start move waits, ``_follow_log_start``), and no
        write carries a start offset at or below one sent before: the batches
        say the same thing to a recovering leader.

        That is protocol = "kip" (the 002 table). Kafka trunk's leader has no
        such guard: every write carries the SPSO it has (``writeShareGroupState``),
        and the share coordinator keeps the higher start offset (SC-4; the
        invariant stored-start-offset-monotonic checks it there).
        """
        mutant = _mutants.ACTIVE
        if mutant == "start-offset-skips-released":
            return self._mutant_start_past_released(), changes
        if self.broker.kafka or mutant == "start-offset-every-write" or mutant == "start-offset-every-write-max":
            # Trunk (writeShareGroupState: startOffset()), the mutant and its variant: the SPSO now,
            # whatever is in flight; the share coordinator keeps the higher start offset (SC-4).
            return self._spso, changes
        if self._start_writes:
            return UNKNOWN_OFFSET, changes
        ranges = self._window.ranges
        n = len(ranges)
        k = 0
        new_spso = self._spso
        while k < n:
            r = ranges[k]
            if r.write_id == NO_WRITE:
                passable = r.state in _TERMINAL
            else:
                passable = r.write_id == write_id and r.target in _TERMINAL
            if not passable:
                break
            new_spso = r.last + 1
            k += 1
        if new_spso == self._spso or new_spso <= self._start_sent:
            return UNKNOWN_OFFSET, changes
        for r in ranges[k:]:
            if r.write_id == NO_WRITE:
                if r.state in _TERMINAL:
                    return UNKNOWN_OFFSET, changes
            elif r.write_id == write_id and r.target in _TERMINAL:
                return UNKNOWN_OFFSET, changes
        return new_spso, [(max(f, new_spso), l_, s, c) for f, l_, s, c in changes if l_ >= new_spso]


    # -- the fetch lock (Kafka trunk: SharePartition.maybeAcquireFetchLock / releaseFetchLock) --------

    _fetch_lock: object | None = None  # the fetch id holding the lock (set per instance once taken)

    @property
    def fetch_lock(self) -> object | None:
        """The fetch id that holds this share-partition's fetch lock, or None."""
        return self._fetch_lock

    def maybe_acquire_fetch_lock(self, fetch_id: object) -> bool:
        """Take the fetch lock for ``fetch_id`` if nobody holds it: a fetch reads the log and acquires
        under it, so one share-partition is never fetched by two fetches at once. Not while the
        share-partition is not ACTIVE (Kafka: stateNotActive). A fetch id already holding it does not
        take it again (Kafka's compareAndSet(null, fetchId): the lock is not re-entrant)."""
        if not self.ready or self._fetch_lock is not None:
            return False
        self._fetch_lock = fetch_id
        return True

    def release_fetch_lock(self, fetch_id: object) -> bool:
        """Release the fetch lock. Like Kafka, the lock is freed even when ``fetch_id`` does not hold it
        (Kafka logs that and clears it); returns whether ``fetch_id`` held it."""
        held = self._fetch_lock == fetch_id
        self._fetch_lock = None
        return held

    def readable_count(self) -> int:
        """What a fetch would read now, in offsets (the model counts bytes as records): the AVAILABLE
        offsets of the window not in a write, plus the offsets past the SPEO up to the high-water mark
        (LSO for read_committed) and the in-flight bound. 0 when nothing can be acquired (Kafka:
        canAcquireRecords false, or an empty log read at the next fetch offset). A delayed share fetch
        compares this with its MinBytes."""
        if not self.ready:
            return 0
        available = 0
        for r in self._window.ranges:
            if r.state == AVAILABLE and r.write_id == NO_WRITE:
                available += r.size
        upper = min(self.log.bound(self.group.read_committed), self._spso + self.max_record_locks)
        return available + max(0, upper - self._speo)

# -- helpers that read top-down from the class above -------------------------------------------


# Trunk's SharePartition.fetchPersisterError: what a failed write makes of the request that waits on it.
_PERSISTER_ERRORS: Final = {
    Errors.NONE: Errors.NONE,
    Errors.NOT_COORDINATOR: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.COORDINATOR_NOT_AVAILABLE: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.COORDINATOR_LOAD_IN_PROGRESS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.GROUP_ID_NOT_FOUND: Errors.GROUP_ID_NOT_FOUND,
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.FENCED_LEADER_EPOCH: Errors.NOT_LEADER_OR_FOLLOWER,
    Errors.FENCED_STATE_EPOCH: Errors.NOT_LEADER_OR_FOLLOWER,
}


def _persister_error(error: Errors) -> Errors:
    """The answer an acknowledgement gets when its write failed with ``error`` (protocol "kafka");
    anything else is UNKNOWN_SERVER_ERROR."""
    return _PERSISTER_ERRORS.get(error, Errors.UNKNOWN_SERVER_ERROR)


def _settle(r: InFlightRange) -> None:
    """A change lands: the records take the state their write carried; the lock ends unless ACQUIRED."""
    r.state = r.target
    r.write_id = NO_WRITE
    if r.state != ACQUIRED:
        r.owner = None
        r.lock_deadline_ms = NO_DEADLINE


def _complete_from(ranges: Sequence[InFlightRange], start: int) -> int:
    """KIP-1226 deliveryCompleteCount: offsets at or above ``start`` that are, or are being made, terminal
    (ACKNOWLEDGED or ARCHIVED). One scan per write: kept to the plainest loop."""
    # mutant: a delivery (ACQUIRED) counted as complete
    also = ACQUIRED if _mutants.ACTIVE == "delivery-complete-count-wrong" else ACKNOWLEDGED
    terminal = (ACKNOWLEDGED, ARCHIVED, also)
    complete = 0
    for r in ranges:
        if (r.target if r.write_id else r.state) in terminal:
            last = r.last
            if last >= start:
                first = r.first
                complete += last - (first if first > start else start) + 1
    return complete


def _complete_between(ranges: Sequence[InFlightRange], start: int, end: int) -> int:
    """The offsets in [start, end) of ``ranges`` (from the window's head) that are, or are being made,
    terminal."""
    complete = 0
    for r in ranges:
        first = r.first
        if first >= end:
            break
        if (r.target if r.write_id else r.state) in _TERMINAL:
            last = r.last if r.last < end else end - 1
            complete += last - (first if first > start else start) + 1
    return complete


def _acquire_range(r: InFlightRange, member_id: str, deadline: int, acquired: list[AcquiredRecords]) -> None:
    """The records of ``r`` become ACQUIRED by ``member_id`` until ``deadline``, one delivery more (SP-2)."""
    r.state = r.target = ACQUIRED
    r.delivery_count += 1
    r.owner = member_id
    r.lock_deadline_ms = deadline
    _add_acquired(acquired, r.first, r.last, r.delivery_count)


def _add_acquired(acquired: list[AcquiredRecords], first: int, last: int, count: int) -> None:
    """Append to the ShareFetch AcquiredRecords, joining contiguous offsets of equal count."""
    if acquired:
        prev = acquired[-1]
        if prev.last_offset + 1 == first and prev.delivery_count == count:
            acquired[-1] = AcquiredRecords(prev.first_offset, last, count)
            return
    acquired.append(AcquiredRecords(first, last, count))


def _malformed(batches: Sequence[AcknowledgementBatch], ordered: bool = True) -> str | None:
    """INVALID_REQUEST checks: ranges well formed, types valid and as many as needed; with
    ``ordered`` (protocol = "kip") also ascending and non-overlapping."""
    previous_last = -1
    for b in batches:
        first, last, types = b.first_offset, b.last_offset, b.acknowledge_types
        if first < 0 or last < first:
            return f"batch {first}-{last} is not a range of offsets"
        if ordered and first <= previous_last:
            return f"batch {first}-{last} is not after the previous batch (ending {previous_last})"
        if len(types) != 1 and len(types) != last - first + 1:
            return f"batch {first}-{last} has {len(types)} acknowledge types; need 1 or {last - first + 1}"
        if not _VALID_ACK_TYPES.issuperset(types):
            return f"batch {first}-{last} has an unknown acknowledge type in {sorted(set(types))}"
        previous_last = last
    return None


def ack_batches_problem(batches: Sequence[AcknowledgementBatch]) -> str | None:
    """What a broker refuses before any share-partition sees the batches (INVALID_REQUEST for the
    partition): trunk's KafkaApis.validateAcknowledgementBatches. A batch may start at the previous
    batch's last offset (trunk compares with ``<``); the share-partition then fails the request
    with INVALID_RECORD_STATE (``SharePartition.acknowledge``)."""
    previous_last = -1
    for b in batches:
        first, last, types = b.first_offset, b.last_offset, b.acknowledge_types
        if last < first:
            return f"batch {first}-{last} is not a range of offsets"
        if first < previous_last:
            return f"batch {first}-{last} starts before the previous batch ends ({previous_last})"
        if not types or (len(types) > 1 and len(types) != last - first + 1):
            return f"batch {first}-{last} has {len(types)} acknowledge types; need 1 or {last - first + 1}"
        if not _VALID_ACK_TYPES.issuperset(types):
            return f"batch {first}-{last} has an unknown acknowledge type in {sorted(set(types))}"
        previous_last = last
    return None


def _runs(batch: AcknowledgementBatch) -> list[tuple[int, int, int]]:
    """The batch as (first, last, type) runs of equal acknowledge type."""
    first, last, types = batch.first_offset, batch.last_offset, batch.acknowledge_types
    if len(types) == 1:
        return [(first, last, int(types[0]))]
    runs: list[tuple[int, int, int]] = []
    start = first
    current = types[0]
    for k in range(1, len(types)):
        t = types[k]
        if t != current:
            runs.append((start, first + k - 1, int(current)))
            start = first + k
            current = t
    runs.append((start, last, int(current)))
    return runs


def _state_batches(changes: list[Change]) -> tuple[StateBatch, ...]:
    """Changes as persisted StateBatches, in offset order, adjacent equal ones joined."""
    if not changes:
        return ()
    if len(changes) == 1:
        f, l_, s, c = changes[0]
        return (StateBatch(f, l_, s, c),)
    out: list[StateBatch] = []
    cur_f, cur_l, cur_s, cur_c = None, -2, AVAILABLE, -1
    for f, l_, s, c in sorted(changes):
        if cur_f is not None and f == cur_l + 1 and s == cur_s and c == cur_c:
            cur_l = l_
            continue
        if cur_f is not None:
            out.append(StateBatch(cur_f, cur_l, cur_s, cur_c))
        cur_f, cur_l, cur_s, cur_c = f, l_, s, c
    if cur_f is not None:
        out.append(StateBatch(cur_f, cur_l, cur_s, cur_c))
    return tuple(out)
