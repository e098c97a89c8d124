"""gap-only-without-record (SP-3, SP-14): a GAP acknowledgement a leader takes is judged against the data
log itself; a GAP on an offset the log holds a record at is a violation, one on a compacted offset or a
control marker is not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from invariants.share_checks import GapAckMonitor
from invariants.sink import ViolationSink
from model.core.log import PartitionLog
from model.core.share_partition import AcknowledgementBatch
from model.core.share_state import SharePartitionKey

KEY = SharePartitionKey("g", "t-id", 0)
GAP, ACCEPT = 0, 1


def _monitor(log: PartitionLog) -> tuple[GapAckMonitor, ViolationSink]:
    sink = ViolationSink(1)
    monitor = GapAckMonitor(sink)
    step: Any = SimpleNamespace(key=KEY, log=log)
    monitor.on_share_partition_step(step, log.high_watermark, 0)
    return monitor, sink


def _log(records: int, compacted: list[int]) -> PartitionLog:
    log = PartitionLog()
    log.append(records)
    log.advance_high_watermark()
    log.compact(compacted)
    return log


def test_a_gap_on_a_record_is_a_violation() -> None:
    monitor, sink = _monitor(_log(10, [3, 4]))
    monitor.on_acknowledge(KEY, "m", (AcknowledgementBatch(2, 5, (ACCEPT, GAP, GAP, GAP)),), 0, 7)
    assert [v.invariant for v in sink.violations] == ["gap-only-without-record"]
    assert (sink.violations[0].state["first"], sink.violations[0].state["last"]) == (5, 5)


def test_gaps_on_compacted_offsets_and_markers_are_not() -> None:
    log = PartitionLog()
    log.append(2, producer_id=9, transactional=True)  # 0-1
    log.end_transaction(9, commit=True)  # marker 2
    log.append(3)  # 3-5
    log.advance_high_watermark()
    log.compact([4])
    monitor, sink = _monitor(log)
    monitor.on_acknowledge(KEY, "m", (AcknowledgementBatch(0, 5, (ACCEPT, ACCEPT, GAP, ACCEPT, GAP, ACCEPT)),),
                           0, 7)
    monitor.on_acknowledge(KEY, "m", (AcknowledgementBatch(4, 4, (GAP,)),), 0, 8)
    assert sink.violations == []


@given(st.sets(st.integers(0, 19)), st.integers(0, 19), st.integers(0, 19))
def test_a_gap_run_is_a_violation_exactly_when_it_covers_a_record(compacted: set[int], a: int, b: int) -> None:
    first, last = min(a, b), max(a, b)
    monitor, sink = _monitor(_log(20, sorted(compacted)))
    monitor.on_acknowledge(KEY, "m", (AcknowledgementBatch(first, last, (GAP,)),), 0, 1)
    has_record = any(o not in compacted for o in range(first, last + 1))
    assert [v.invariant for v in sink.violations] == (["gap-only-without-record"] if has_record else [])
