"""One topic-partition's log, as the share-partition leader reads it.

Records carry no payload here: a log is offsets and what occupies them. Every
offset below the log end offset holds exactly one of

* a data record (plain, or transactional with a producer id),
* a transaction control marker (commit or abort): it occupies an offset but is
  not a record, and is never delivered (SP-13),
* nothing, once compaction has removed the record there (a gap, SP-14).

Replication lives in the simulator, so the high-water mark only moves when the
caller advances it. The last stable offset (LSO) is the first offset of the
oldest transaction whose fate is not yet known below the high-water mark
(Kafka's "first unstable offset"), capped by the high-water mark and never
below the log start offset. Retention and
DeleteRecords move the log start offset forward.

``read`` answers with a few ranges (``LogSpan``), never one object per offset:
the leader only needs to know which stretches are deliverable records and
which must be archived.

Record batches. Every ``append`` is one producer batch and every transaction
marker its own one-record control batch; the log keeps each batch's first
offset (``batch_last`` / ``batch_first`` answer by bisection, so ``read`` stays
as cheap as before). Compaction removes records but keeps a batch's offsets
range, as Kafka's cleaner keeps batch boundaries (``LogCleaner`` rewrites a
batch with its base and last offsets). A batch compaction emptied completely is
dropped by Kafka's cleaner (``MemoryRecords.filterTo`` keeps an empty batch only
to preserve a producer's last sequence); ``fetch_base`` skips such batches, so
a fetch starts at the first batch that still holds something.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Final

from model import mutants as _mutants
from model.core.message import Message


class SpanKind(IntEnum):
    RECORD = 0  # a record the share group may deliver
    GAP = 1  # the record was removed by compaction (SP-14)
    MARKER = 2  # a transaction control marker: occupies an offset, is not a record
    ABORTED = 3  # a record of an aborted transaction; only reported for read_committed (SP-13)


class LogSpan(Message):
    """Offsets ``first..last`` (inclusive) that are all of one kind."""

    FIELDS = ("first", "last", "kind")
    __slots__ = FIELDS

    def __init__(self, first: int, last: int, kind: SpanKind) -> None:
        self.first: Final = first
        self.last: Final = last
        self.kind: Final = kind

    @property
    def deliverable(self) -> bool:
        return self.kind == SpanKind.RECORD


class LogError(ValueError):
    """A call the log cannot honour (a caller bug, not a protocol error)."""


class _Intervals:
    """Sorted, disjoint, non-adjacent inclusive ranges of offsets."""

    __slots__ = ("firsts", "lasts")

    def __init__(self) -> None:
        self.firsts: list[int] = []
        self.lasts: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.firsts)

    def add(self, first: int, last: int) -> None:
        # Every range touching or adjacent to [first, last] merges with it.
        i = bisect_left(self.lasts, first - 1)
        j = bisect_right(self.firsts, last + 1)
        if i < j:
            first = min(first, self.firsts[i])
            last = max(last, self.lasts[j - 1])
        self.firsts[i:j] = [first]
        self.lasts[i:j] = [last]

    def overlapping(self, low: int, high: int) -> list[tuple[int, int]]:
        """The parts of the ranges inside [low, high], in order."""
        out: list[tuple[int, int]] = []
        i = bisect_left(self.lasts, low)
        firsts, lasts = self.firsts, self.lasts
        while i < len(firsts) and firsts[i] <= high:
            out.append((max(firsts[i], low), min(lasts[i], high)))
            i += 1
        return out

    def __contains__(self, offset: int) -> bool:
        i = bisect_left(self.lasts, offset)
        return i < len(self.firsts) and self.firsts[i] <= offset

    def count(self) -> int:
        return sum(last - first + 1 for first, last in zip(self.firsts, self.lasts))


@dataclass
class _Transaction:
    first_offset: int
    batches: list[tuple[int, int]] = field(default_factory=list)
    marker_offset: int | None = None  # set when committed or aborted


def _subtract(ranges: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``ranges`` minus ``holes`` (both sorted and disjoint)."""
    out: list[tuple[int, int]] = []
    for first, last in ranges:
        cursor = first
        for hole_first, hole_last in holes:
            if hole_last < cursor or hole_first > last:
                continue
            if hole_first > cursor:
                out.append((cursor, hole_first - 1))
            cursor = max(cursor, hole_last + 1)
        if cursor <= last:
            out.append((cursor, last))
    return out


class PartitionLog:
    """Offsets, high-water mark, log start offset, transactions and compaction gaps."""

    def __init__(self, log_start_offset: int = 0) -> None:
        if log_start_offset < 0:
            raise LogError(f"log start offset {log_start_offset} < 0")
        self._log_start = log_start_offset
        self._log_end = log_start_offset
        self._high_watermark = log_start_offset
        self._gaps = _Intervals()
        self._markers = _Intervals()
        self._aborted = _Intervals()
        self._batch_firsts: list[int] = []  # the first offset of every batch, ascending
        self._transactions: dict[int, _Transaction] = {}  # open, by producer id
        self._unstable: list[_Transaction] = []  # ended, marker not yet below the HWM

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._log_end

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        lso = self._high_watermark
        for txn in self._transactions.values():
            lso = min(lso, txn.first_offset)
        for txn in self._unstable:
            lso = min(lso, txn.first_offset)
        # Records deleted below the log start no longer hold anything back (as Kafka).
        return max(lso, self._log_start)

    def bound(self, read_committed: bool) -> int:
        """SP-7 / SP-13: how far a share group may read (exclusive)."""
        return self.last_stable_offset if read_committed else self._high_watermark

    # -- writes ----------------------------------------------------------------------------

    def append(self, count: int = 1, *, producer_id: int | None = None, transactional: bool = False) -> tuple[int, int]:
        """Append one batch of ``count`` records; returns its (first, last) offsets."""
        if count < 1:
            raise LogError(f"a batch holds at least one record, not {count}")
        if transactional and producer_id is None:
            raise LogError("a transactional batch needs a producer id")
        if not transactional and producer_id is not None and producer_id in self._transactions:
            raise LogError(f"producer {producer_id} has an open transaction; its batches are transactional")
        first = self._log_end
        last = first + count - 1
        self._log_end = last + 1
        self._batch_firsts.append(first)
        if transactional:
            assert producer_id is not None
            txn = self._transactions.get(producer_id)
            if txn is None:
                txn = self._transactions[producer_id] = _Transaction(first)
            txn.batches.append((first, last))
        return first, last

    def end_transaction(self, producer_id: int, *, commit: bool) -> int:
        """Write the commit or abort marker of the producer's open transaction; returns its offset."""
        txn = self._transactions.pop(producer_id, None)
        if txn is None:
            raise LogError(f"producer {producer_id} has no open transaction")
        marker = self._log_end
        self._log_end += 1
        self._batch_firsts.append(marker)  # a control batch of one record
        self._markers.add(marker, marker)
        if not commit:
            for first, last in txn.batches:
                self._aborted.add(first, last)
        # The mutant aborted-transaction-holds-lso: an aborted transaction's marker is never taken as
        # written, so the transaction holds the last stable offset back for good.
        txn.marker_offset = None if not commit and _mutants.ACTIVE == "aborted-transaction-holds-lso" else marker
        self._unstable.append(txn)
        self._settle()
        return marker

    def open_transactions(self) -> list[int]:
        return sorted(self._transactions)

    def advance_high_watermark(self, offset: int | None = None) -> int:
        """Move the high-water mark to ``offset`` (default: the log end). It never moves back."""
        target = self._log_end if offset is None else offset
        if target > self._log_end:
            raise LogError(f"high-water mark {target} beyond the log end offset {self._log_end}")
        self._high_watermark = max(self._high_watermark, target)
        self._settle()
        return self._high_watermark

    def delete_records(self, before_offset: int) -> int:
        """Retention / DeleteRecords: the log start offset moves to ``before_offset`` (≤ HWM)."""
        if before_offset > self._high_watermark:
            raise LogError(f"cannot delete records up to {before_offset}: above the high-water mark")
        self._log_start = max(self._log_start, before_offset)
        return self._log_start

    def compact(self, offsets: Iterable[int]) -> None:
        """Compaction removes these records; markers and offsets outside [log start, HWM) stay."""
        chosen = sorted(
            o for o in set(offsets) if self._log_start <= o < self._high_watermark and o not in self._markers
        )
        run_first = run_last = None
        for o in chosen:
            if run_last is not None and o == run_last + 1:
                run_last = o
                continue
            if run_first is not None and run_last is not None:
                self._gaps.add(run_first, run_last)
            run_first = run_last = o
        if run_first is not None and run_last is not None:
            self._gaps.add(run_first, run_last)

    def _settle(self) -> None:
        # A transaction is stable once its marker is below the high-water mark.
        if self._unstable:
            self._unstable = [
                t for t in self._unstable if t.marker_offset is None or t.marker_offset >= self._high_watermark
            ]

    @property
    def all_records(self) -> bool:
        """No gap, marker or aborted record anywhere: every offset is a record (a fast path)."""
        return not (self._gaps or self._markers or self._aborted)

    # -- batches ---------------------------------------------------------------------------

    def batch_first(self, offset: int) -> int:
        """The first offset of the batch holding ``offset`` (``offset`` itself below the first batch)."""
        firsts = self._batch_firsts
        i = bisect_right(firsts, offset) - 1
        return firsts[i] if i >= 0 else offset

    def batch_last(self, offset: int) -> int:
        """The last offset of the batch holding ``offset`` (< the log end offset)."""
        firsts = self._batch_firsts
        i = bisect_right(firsts, offset)
        return firsts[i] - 1 if i < len(firsts) else self._log_end - 1

    def batch_bounds(self, offset: int) -> tuple[int, int]:
        return self.batch_first(offset), self.batch_last(offset)

    def batches_in(self, first: int, last: int) -> list[tuple[int, int]]:
        """The batches overlapping [first, last], as (first, last) offsets (for tests and reports)."""
        out: list[tuple[int, int]] = []
        offset = first
        while offset <= last and offset < self._log_end:
            bounds = self.batch_bounds(offset)
            out.append(bounds)
            offset = bounds[1] + 1
        return out

    def fetch_base(self, offset: int, high: int) -> int:
        """Where a fetch from ``offset`` starts: the first offset of the batch holding it, skipping
        batches compaction emptied completely (Kafka's cleaner drops them); ``high`` (exclusive)
        if nothing below it remains."""
        base = offset if offset > self._log_start else self._log_start
        if base >= high:
            return high
        firsts = self._batch_firsts
        i = bisect_right(firsts, base) - 1
        if i >= 0:
            base = firsts[i] if firsts[i] > self._log_start else self._log_start
        if not self._gaps:
            return base
        while base < high:
            last = self.batch_last(base)
            covered = self._gaps.overlapping(base, last)
            if not covered or covered[0] != (base, last):
                return base
            base = last + 1
        return high

    # -- reads -----------------------------------------------------------------------------

    def read(self, from_offset: int, to_offset: int, *, read_committed: bool) -> list[LogSpan]:
        """Spans tiling [max(from, log start), min(to, bound)) in offset order.

        Under read_uncommitted aborted records are plain records; under
        read_committed they are ABORTED. Markers and gaps are never records.
        """
        low = max(from_offset, self._log_start)
        high = min(to_offset, self.bound(read_committed))
        if low >= high:
            return []
        if not (self._gaps or self._markers or (read_committed and self._aborted)):
            return [LogSpan(low, high - 1, SpanKind.RECORD)]
        last = high - 1
        gaps = self._gaps.overlapping(low, last)
        special = [(f, l_, SpanKind.GAP) for f, l_ in gaps]
        special += [(f, l_, SpanKind.MARKER) for f, l_ in self._markers.overlapping(low, last)]
        if read_committed:
            # A compacted aborted record is a gap: it has no record at all.
            aborted = _subtract(self._aborted.overlapping(low, last), gaps)
            special += [(f, l_, SpanKind.ABORTED) for f, l_ in aborted]
        special.sort()
        spans: list[LogSpan] = []
        cursor = low
        for first, span_last, kind in special:
            if first > cursor:
                spans.append(LogSpan(cursor, first - 1, SpanKind.RECORD))
            if spans and spans[-1].kind == kind and spans[-1].last + 1 == first:
                spans[-1] = LogSpan(spans[-1].first, span_last, kind)
            else:
                spans.append(LogSpan(first, span_last, kind))
            cursor = span_last + 1
        if cursor <= last:
            spans.append(LogSpan(cursor, last, SpanKind.RECORD))
        return spans

    def share_spans(self, from_offset: int, to_offset: int, *, read_committed: bool) -> list[tuple[int, int, bool]]:
        """What a Kafka share-partition leader acquires of [from, to) (SharePartition.acquire at the
        pinned commit): (first, last, acquire) runs tiling it. Whole fetched batches are acquired,
        offsets the cleaner removed and control markers with them (the client acknowledges those with
        GAP, ShareCompletedFetch); only a read_committed group's aborted records -- compacted ones
        too -- are left out, archived by the leader (filterAbortedTransactionalAcquiredRecords)."""
        runs: list[tuple[int, int, bool]] = []
        for span in self.read(from_offset, to_offset, read_committed=read_committed):
            if span.kind == SpanKind.ABORTED:
                pieces = [(span.first, span.last, False)]
            elif span.kind == SpanKind.GAP and read_committed and self._aborted:
                pieces, cursor = [], span.first
                for a_first, a_last in self._aborted.overlapping(span.first, span.last):
                    if a_first > cursor:
                        pieces.append((cursor, a_first - 1, True))
                    pieces.append((a_first, a_last, False))
                    cursor = a_last + 1
                if cursor <= span.last:
                    pieces.append((cursor, span.last, True))
            else:
                pieces = [(span.first, span.last, True)]
            for first, last, take in pieces:
                if runs and runs[-1][2] == take and runs[-1][1] + 1 == first:
                    runs[-1] = (runs[-1][0], last, take)
                else:
                    runs.append((first, last, take))
        return runs

    def gaps_in(self, first: int, last: int) -> list[tuple[int, int]]:
        """The offsets of [first, last] with no record a client could find in a fetch: removed by the
        cleaner, or control markers (ShareCompletedFetch acknowledges them with GAP)."""
        out = self._gaps.overlapping(first, last) + self._markers.overlapping(first, last)
        if len(out) > 1:
            out.sort()
            merged = [out[0]]
            for f, l_ in out[1:]:
                if f <= merged[-1][1] + 1:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], l_))
                else:
                    merged.append((f, l_))
            out = merged
        return out

    def kind_of(self, offset: int, *, read_committed: bool) -> SpanKind | None:
        """What occupies ``offset`` for this isolation level; None outside [log start, bound)."""
        spans = self.read(offset, offset + 1, read_committed=read_committed)
        return spans[0].kind if spans else None

    def is_transaction_marker(self, offset: int) -> bool:
        return offset in self._markers

    def is_compacted(self, offset: int) -> bool:
        return offset in self._gaps

    def is_aborted(self, offset: int) -> bool:
        return offset in self._aborted and offset not in self._gaps
