"""The ghost ledger keeps the client-visible facts as ranges."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from invariants.ledger import DurableState, Ledger, topic_id_of
from invariants.sink import ViolationSink
from model.core.share_partition import AcquiredRecords
from model.core.share_state import RecordState, SharePartitionKey, StateBatch, WriteShareGroupStateRequest
from model.sim.controller import topic_id_for

KEY = SharePartitionKey("g", "t-id", 0)


def _write(start: int, *batches: tuple[int, int, RecordState, int],
           state_epoch: int = 1) -> WriteShareGroupStateRequest:
    return WriteShareGroupStateRequest(KEY, state_epoch, 1, start, tuple(StateBatch(*b) for b in batches))


def test_durable_state_follows_accepted_writes_and_restarts_with_the_state_epoch() -> None:
    ledger = Ledger(ViolationSink(1))
    write = _write(-1, (0, 4, RecordState.ACKNOWLEDGED, 1), (5, 9, RecordState.AVAILABLE, 2))
    ledger.on_write_accepted(write, 0)
    assert ledger.was_accepted(write)
    ledger.on_write_completed(write, 1)
    assert not ledger.was_accepted(write)
    durable = ledger.durable[KEY]
    assert list(durable.terminal) == [(0, 4)] and list(durable.counts) == [(0, 4, 1), (5, 9, 2)]
    ledger.on_write_accepted(_write(3, (7, 7, RecordState.AVAILABLE, 1)), 2)  # start 3; a lower count loses
    assert durable.start == 3 and list(durable.terminal) == [(3, 4)]
    assert list(durable.counts) == [(3, 4, 1), (5, 9, 2)]
    ledger.on_state_read(KEY, 4, 3)
    ledger.on_write_accepted(_write(0, state_epoch=2), 4)  # SP-12: an admin reset
    assert durable.state_epoch == 2 and list(durable.terminal) == [] and list(durable.counts) == []
    assert durable.read_epoch == 4  # the leader epoch read is not reset by a new state epoch


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8), st.integers(0, 6)), max_size=25))
def test_raise_counts_keeps_the_highest_count_of_every_offset(writes: list[tuple[int, int, int]]) -> None:
    durable = DurableState()
    expected: dict[int, int] = {}
    for first, length, count in writes:
        durable.raise_counts(first, first + length, count)
        for offset in range(first, first + length + 1):
            expected[offset] = max(expected.get(offset, count), count)
    got = {o: c for lo, hi, c in durable.counts for o in range(lo, hi + 1)}
    assert got == expected


def test_deliveries_and_aborted_transactions() -> None:
    ledger = Ledger(ViolationSink(1))
    ledger.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 10)
    ledger.on_acquire(KEY, "m2", [AcquiredRecords(5, 6, 2)], 3, 20)
    assert [(lo, hi, d.member_id, d.delivery_count) for lo, hi, d in ledger.deliveries[KEY]] == [
        (0, 4, "m1", 1), (5, 6, "m2", 2), (7, 9, "m1", 1)]
    ledger.on_records_committed("t", 0, 0, 3, 9, True, 0)
    ledger.on_records_committed("t", 0, 3, 2, None, False, 1)
    ledger.on_records_committed("t", 0, 5, 2, 9, True, 2)
    ledger.on_transaction_ended("t", 0, 9, False, 3)
    assert ledger.high_watermark[("t", 0)] == 7
    assert list(ledger.aborted[("t-id", 0)]) == [(0, 2), (5, 6)]
    assert topic_id_of("t") == topic_id_for("t")


class _Step:
    def __init__(self, spso: int, state_epoch: int = 1) -> None:
        self.key, self.ready, self.spso, self.state_epoch = KEY, True, spso, state_epoch
        self.group = type("G", (), {"read_committed": False})()


def test_ranges_below_the_spso_are_forgotten_as_the_window_moves() -> None:
    ledger = Ledger(ViolationSink(1))
    ledger.on_write_accepted(_write(-1, (0, 1999, RecordState.ACKNOWLEDGED, 1),
                                    (2000, 2099, RecordState.AVAILABLE, 2)), 0)
    ledger.on_acquire(KEY, "m1", [AcquiredRecords(0, 2099, 1)], 1, 0)
    ledger.on_share_partition_step(_Step(500), 0, 1)  # type: ignore[arg-type]
    assert list(ledger.durable[KEY].terminal) == [(0, 1999)]  # not yet: trims come in steps
    ledger.on_share_partition_step(_Step(2000), 0, 2)  # type: ignore[arg-type]
    durable = ledger.durable[KEY]
    assert list(durable.terminal) == [] and list(durable.counts) == [(2000, 2099, 2)]
    assert [(lo, hi) for lo, hi, _ in ledger.deliveries[KEY]] == [(2000, 2099)]
    assert ledger.read_committed == {"g": False}
