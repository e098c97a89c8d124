"""PartitionLog: offsets, high-water mark, log start, transactions (LSO, markers, aborted
records), compaction gaps, and reads as ranges (SP-7, SP-13, SP-14)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.log import LogError, LogSpan, PartitionLog, SpanKind

R, G, M, A = SpanKind.RECORD, SpanKind.GAP, SpanKind.MARKER, SpanKind.ABORTED


def _log(n: int) -> PartitionLog:
    log = PartitionLog()
    log.append(n)
    log.advance_high_watermark()
    return log


def test_append_assigns_offsets_and_hwm_moves_only_when_told() -> None:
    log = PartitionLog()
    assert log.append(3) == (0, 2)
    assert log.append() == (3, 3)
    assert (log.log_end_offset, log.high_watermark) == (4, 0)
    assert log.read(0, 10, read_committed=False) == []  # nothing readable above the HWM
    assert log.advance_high_watermark(2) == 2
    assert log.read(0, 10, read_committed=False) == [LogSpan(0, 1, R)]
    assert log.advance_high_watermark() == 4
    assert log.advance_high_watermark(1) == 4  # never back
    with pytest.raises(LogError):
        log.advance_high_watermark(5)


def test_bad_appends() -> None:
    log = PartitionLog()
    with pytest.raises(LogError):
        log.append(0)
    with pytest.raises(LogError):
        log.append(1, transactional=True)
    log.append(1, producer_id=7, transactional=True)
    with pytest.raises(LogError):
        log.append(1, producer_id=7)  # its open transaction takes all its batches
    with pytest.raises(LogError):
        log.end_transaction(8, commit=True)
    with pytest.raises(LogError):
        PartitionLog(-1)


def test_a_long_run_is_one_span() -> None:
    log = _log(1_000_000)
    assert log.read(10, 999_990, read_committed=True) == [LogSpan(10, 999_989, R)]


def test_delete_records_moves_log_start_not_beyond_hwm() -> None:
    log = _log(10)
    assert log.delete_records(4) == 4
    assert log.delete_records(2) == 4  # never back
    assert log.read(0, 10, read_committed=False) == [LogSpan(4, 9, R)]
    with pytest.raises(LogError):
        log.delete_records(11)
    start = PartitionLog(100)
    assert start.append(1) == (100, 100)


def test_committed_transaction_marker_is_not_a_record() -> None:
    log = PartitionLog()
    log.append(2)  # 0-1
    log.append(3, producer_id=1, transactional=True)  # 2-4
    log.advance_high_watermark()
    assert log.last_stable_offset == 2  # the open transaction holds the LSO
    assert log.read(0, 10, read_committed=True) == [LogSpan(0, 1, R)]
    assert log.read(0, 10, read_committed=False) == [LogSpan(0, 4, R)]
    assert log.end_transaction(1, commit=True) == 5
    assert log.last_stable_offset == 2  # the marker is not below the HWM yet
    log.advance_high_watermark()
    assert log.last_stable_offset == 6
    assert log.read(0, 10, read_committed=True) == [LogSpan(0, 4, R), LogSpan(5, 5, M)]
    assert log.is_transaction_marker(5)


def test_aborted_records_are_only_hidden_from_read_committed() -> None:
    log = PartitionLog()
    log.append(2, producer_id=1, transactional=True)  # 0-1 (aborted)
    log.append(1)  # 2
    log.append(2, producer_id=1, transactional=True)  # 3-4 (aborted)
    log.append(2, producer_id=2, transactional=True)  # 5-6 (committed)
    log.end_transaction(1, commit=False)  # 7
    log.end_transaction(2, commit=True)  # 8
    log.advance_high_watermark()
    assert log.read(0, 9, read_committed=True) == [
        LogSpan(0, 1, A), LogSpan(2, 2, R), LogSpan(3, 4, A), LogSpan(5, 6, R), LogSpan(7, 8, M)]
    assert log.read(0, 9, read_committed=False) == [LogSpan(0, 6, R), LogSpan(7, 8, M)]
    assert log.is_aborted(3) and not log.is_aborted(2)
    assert log.kind_of(3, read_committed=True) == A
    assert log.kind_of(3, read_committed=False) == R
    assert log.kind_of(99, read_committed=False) is None


def test_two_open_transactions_lso_is_the_oldest() -> None:
    log = PartitionLog()
    log.append(1, producer_id=1, transactional=True)  # 0
    log.append(1, producer_id=2, transactional=True)  # 1
    log.advance_high_watermark()
    assert log.open_transactions() == [1, 2]
    log.end_transaction(2, commit=True)
    log.advance_high_watermark()
    assert log.last_stable_offset == 0
    log.end_transaction(1, commit=True)
    log.advance_high_watermark()
    assert log.last_stable_offset == log.high_watermark == 4


def test_compaction_makes_gaps_but_not_of_markers_or_unreplicated_records() -> None:
    log = PartitionLog()
    log.append(5, producer_id=1, transactional=True)  # 0-4
    log.end_transaction(1, commit=False)  # 5
    log.append(4)  # 6-9
    log.advance_high_watermark(8)
    log.compact([1, 2, 5, 6, 9, 3])  # 5 is a marker, 9 is above the HWM
    assert log.read(0, 10, read_committed=False) == [
        LogSpan(0, 0, R), LogSpan(1, 3, G), LogSpan(4, 4, R), LogSpan(5, 5, M), LogSpan(6, 6, G),
        LogSpan(7, 7, R)]
    # A compacted aborted record is a gap, not an aborted record.
    assert log.read(0, 10, read_committed=True) == [
        LogSpan(0, 0, A), LogSpan(1, 3, G), LogSpan(4, 4, A), LogSpan(5, 5, M), LogSpan(6, 6, G),
        LogSpan(7, 7, R)]
    assert log.is_compacted(2) and not log.is_aborted(2)


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("append"), st.integers(1, 5), st.sampled_from([None, 1, 2])),
            st.tuples(st.just("end"), st.sampled_from([1, 2]), st.booleans()),
            st.tuples(st.just("hwm"), st.integers(0, 3), st.none()),
            st.tuples(st.just("compact"), st.lists(st.integers(0, 60), max_size=6), st.none()),
            st.tuples(st.just("delete"), st.integers(0, 60), st.none()),
        ),
        max_size=30,
    ),
    window=st.tuples(st.integers(0, 70), st.integers(0, 70)),
)
def test_read_agrees_with_a_per_offset_model(ops: list[tuple[str, Any, Any]],
                                              window: tuple[int, int]) -> None:
    """Reads tile [max(from, log start), min(to, bound)) and match a per-offset model."""
    log = PartitionLog()
    kind: dict[int, str] = {}  # offset -> "data" | "marker"
    owner: dict[int, int] = {}  # transactional data offset -> producer
    open_txn: dict[int, list[int]] = {}
    aborted: set[int] = set()
    gaps: set[int] = set()
    for op, a, b in ops:
        if op == "append":
            pid = b if isinstance(b, int) else None
            first, last = log.append(int(a), producer_id=pid, transactional=pid is not None)
            for o in range(first, last + 1):
                kind[o] = "data"
                if pid is not None:
                    owner[o] = pid
                    open_txn.setdefault(pid, []).append(o)
        elif op == "end":
            pid = int(a)
            if pid not in open_txn:
                continue
            marker = log.end_transaction(pid, commit=bool(b))
            kind[marker] = "marker"
            if not b:
                aborted.update(open_txn[pid])
            del open_txn[pid]
        elif op == "hwm":
            log.advance_high_watermark(min(log.log_end_offset, log.high_watermark + int(a)))
        elif op == "compact":
            offsets = list(a)
            log.compact(offsets)
            gaps.update(o for o in offsets if log.log_start_offset <= o < log.high_watermark
                        and kind.get(o) == "data")
        elif op == "delete":
            log.delete_records(min(int(a), log.high_watermark))
    low, high = min(window), max(window)
    for read_committed in (False, True):
        spans = log.read(low, high, read_committed=read_committed)
        start = max(low, log.log_start_offset)
        end = min(high, log.bound(read_committed))
        covered = [o for s in spans for o in range(s.first, s.last + 1)]
        assert covered == list(range(start, end))
        for s in spans:
            for o in range(s.first, s.last + 1):
                if kind[o] == "marker":
                    expected = M
                elif o in gaps:
                    expected = G
                elif read_committed and o in aborted:
                    expected = A
                else:
                    expected = R
                assert s.kind == expected, (o, read_committed)
    # The LSO is never above an open transaction's first offset.
    for offsets in open_txn.values():
        assert log.last_stable_offset <= max(min(offsets), log.log_start_offset)
    assert log.last_stable_offset <= log.high_watermark
