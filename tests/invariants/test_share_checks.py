"""The ledger checks of the share-partition leader: each fires on a hand-built bad trace with exactly
its catalogue id, and stays quiet on the good trace next to it.

The traces are hook calls in the order a broker makes them; ``_run`` hands them to the standard
monitors (ledger last, as in a run).
"""

from __future__ import annotations

from invariants.ledger import Ledger
from invariants.monitors import Monitors, standard_monitors
from invariants.share_checks import AbortedDeliveryMonitor
from invariants.sink import ViolationSink
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords
from model.core.share_state import RecordState, SharePartitionKey, StateBatch, WriteShareGroupStateRequest

KEY = SharePartitionKey("g", "t-id", 0)


def _monitors() -> Monitors:
    return standard_monitors(5, delivery_count_limit=5, lock_duration_ms=30_000)


def _ids(monitors: Monitors) -> list[str]:
    return [v.invariant for v in monitors.violations]


def _write(*batches: tuple[int, int, RecordState, int], start: int = -1, state_epoch: int = 1,
           leader_epoch: int = 1) -> WriteShareGroupStateRequest:
    return WriteShareGroupStateRequest(KEY, state_epoch, leader_epoch, start,
                                       tuple(StateBatch(f, l_, s, c) for f, l_, s, c in batches))


def _durable(monitors: Monitors, request: WriteShareGroupStateRequest, now: int = 0) -> None:
    """A write accepted by the coordinator and then taken as done by its leader."""
    monitors.on_write_accepted(request, now)
    monitors.on_write_completed(request, now)


# -- record-state-transition (SP-1) ------------------------------------------------------------------


def test_persisting_acquired_is_an_illegal_transition() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 4, RecordState.AVAILABLE, 1)))
    assert monitors.violations == []
    _durable(monitors, _write((5, 9, RecordState.ACQUIRED, 1)))
    assert _ids(monitors) == ["record-state-transition"]
    assert monitors.violations[0].state["state"] == int(RecordState.ACQUIRED)
    assert monitors.violations[0].event == "write accepted" and monitors.violations[0].spec == ("SP-1",)


def test_a_terminal_offset_written_back_to_available_is_an_illegal_transition() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 9, RecordState.ACKNOWLEDGED, 2)))
    _durable(monitors, _write((0, 4, RecordState.AVAILABLE, 1)))  # a late retry with a lower count: SC-4 drops it
    assert monitors.violations == []
    _durable(monitors, _write((5, 6, RecordState.AVAILABLE, 2)))
    assert _ids(monitors) == ["record-state-transition"]
    assert (monitors.violations[0].state["first"], monitors.violations[0].state["last"]) == (5, 6)


def test_acquiring_a_durably_terminal_offset_is_an_illegal_transition() -> None:
    monitors = _monitors()
    _durable(monitors, _write((3, 3, RecordState.ARCHIVED, 1)))
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(0, 2, 1), AcquiredRecords(4, 9, 1)], 1, 10)
    assert monitors.violations == []
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(3, 3, 2)], 1, 20)
    assert _ids(monitors) == ["record-state-transition"]


# -- ack-after-durable-write (SP-9) ----------------------------------------------------------------------


def test_a_write_taken_as_done_before_the_coordinator_accepted_it() -> None:
    monitors = _monitors()
    good, early = _write((0, 4, RecordState.ACKNOWLEDGED, 1)), _write((5, 9, RecordState.ACKNOWLEDGED, 1))
    _durable(monitors, good)
    assert monitors.violations == []
    monitors.on_write_completed(early, 10)  # answered before commit ...
    monitors.on_write_accepted(early, 12)  # ... accepted only later
    assert _ids(monitors) == ["ack-after-durable-write"]
    assert monitors.violations[0].time_ms == 10


def test_an_equal_but_distinct_write_does_not_stand_in_for_the_one_answered() -> None:
    monitors = _monitors()
    monitors.on_write_accepted(_write((0, 4, RecordState.ACKNOWLEDGED, 1)), 0)
    monitors.on_write_completed(_write((0, 4, RecordState.ACKNOWLEDGED, 1)), 1)
    assert _ids(monitors) == ["ack-after-durable-write"]


# -- counts-not-below-durable (SP-11) ------------------------------------------------------------------------


def test_a_delivery_count_at_or_below_the_durable_count() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 9, RecordState.AVAILABLE, 2)))
    _durable(monitors, _write((0, 4, RecordState.AVAILABLE, 1)))  # a late, lower write does not lower it (SC-4)
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 3)], 2, 10)
    assert monitors.violations == []
    monitors.on_acquire(KEY, "m2", [AcquiredRecords(2, 3, 2)], 3, 20)  # a new leader restored count 1
    assert _ids(monitors) == ["counts-not-below-durable"]
    assert monitors.violations[0].state["durable_count"] == 2


# -- no-aborted-delivery (SP-13) ------------------------------------------------------------------------------


class _Group:
    def __init__(self, read_committed: bool) -> None:
        self.read_committed = read_committed


class _Partition:
    """What the ledger reads of a ready leader: its key, epochs and isolation."""

    def __init__(self, read_committed: bool, state_epoch: int = 1) -> None:
        self.key = KEY
        self.ready = True
        self.state_epoch = state_epoch
        self.spso = 0
        self.group = _Group(read_committed)


def _transactions(monitors: Monitors) -> None:
    """Offsets 0-4 committed, 5-9 aborted, 10 their marker, 11-14 plain."""
    monitors.on_records_committed("t", 0, 0, 5, 7, True, 0)
    monitors.on_transaction_ended("t", 0, 7, True, 1)
    monitors.on_records_committed("t", 0, 5, 5, 7, True, 2)
    monitors.on_transaction_ended("t", 0, 7, False, 3)
    monitors.on_records_committed("t", 0, 11, 4, None, False, 4)


def _aborted_monitors() -> Monitors:
    sink = ViolationSink(5)
    ledger = Ledger(sink)
    return Monitors((AbortedDeliveryMonitor(sink, ledger), ledger), sink)


def test_an_aborted_record_delivered_under_read_committed() -> None:
    monitors = _aborted_monitors()
    _transactions(monitors)
    monitors.on_share_partition_step(_Partition(read_committed=True), 10, 5)  # type: ignore[arg-type]
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(0, 4, 1), AcquiredRecords(11, 14, 1)], 1, 6)
    assert monitors.violations == []
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(9, 11, 1)], 1, 7)
    assert _ids(monitors) == ["no-aborted-delivery"]
    assert (monitors.violations[0].state["first"], monitors.violations[0].state["last"]) == (9, 9)


def test_aborted_records_are_plain_records_under_read_uncommitted() -> None:
    monitors = _aborted_monitors()
    _transactions(monitors)
    monitors.on_share_partition_step(_Partition(read_committed=False), 15, 5)  # type: ignore[arg-type]
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(0, 14, 1)], 1, 6)
    assert monitors.violations == []


# -- exclusive-acquisition (E-3) at the moment the leader takes an acknowledgement ------------------------------


def test_an_acknowledgement_taken_from_a_member_without_a_live_lock() -> None:
    monitors = _monitors()
    monitors.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 1, 0)
    monitors.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 4, (1,)),), 1, 100)
    assert monitors.violations == []
    monitors.on_acknowledge(KEY, "m2", (AcknowledgementBatch(5, 5, (1,)),), 1, 200)  # not the owner
    monitors.on_acknowledge(KEY, "m1", (AcknowledgementBatch(6, 6, (1,)),), 1, 30_000)  # the lock has expired
    monitors.on_acknowledge(KEY, "m1", (AcknowledgementBatch(10, 10, (1,)),), 1, 300)  # never acquired
    # ack-own-session-only (issue 25) also sees the acknowledgements of records m2 never held and nobody acquired
    assert _ids(monitors) == ["exclusive-acquisition", "ack-own-session-only", "exclusive-acquisition",
                              "exclusive-acquisition", "ack-own-session-only"]
    exclusive = [v for v in monitors.violations if v.invariant == "exclusive-acquisition"]
    assert [v.state["holder"] for v in exclusive] == ["m1", "m1", None]


# -- share-session-epoch (CL-1) ---------------------------------------------------------------------------------


def test_share_session_epochs_open_increment_and_close() -> None:
    monitors = _monitors()
    for epoch in (0, 1, 2, -1, 0, 1):
        monitors.on_share_session(1, "g", "m1", epoch, epoch)
    monitors.on_share_session(2, "g", "m1", 0, 10)  # another broker, its own session
    assert monitors.violations == []
    monitors.on_share_session(1, "g", "m1", 3, 20)  # skipped 2
    monitors.on_share_session(2, "g", "m2", 5, 21)  # never opened
    monitors.on_share_session(2, "g", "m3", -1, 22)  # closes nothing
    assert _ids(monitors) == ["share-session-epoch"] * 3
    assert [v.state["expected"] for v in monitors.violations] == [2, None, None]


def test_a_session_the_broker_evicted_or_lost_in_a_crash_is_not_open() -> None:
    monitors = _monitors()
    for member in ("m1", "m2", "m3"):
        monitors.on_share_session(1, "g", member, 0, 0)
    monitors.on_share_session(2, "g", "m3", 0, 0)
    monitors.on_share_session_evicted(1, "g", "m1", 10)
    monitors.on_event("broker.crash", 11, broker=1)
    monitors.on_share_session(2, "g", "m3", 1, 12)  # broker 2 did not crash
    assert monitors.violations == []
    monitors.on_share_session(1, "g", "m1", 1, 20)  # continued after the eviction
    monitors.on_share_session(1, "g", "m2", 1, 21)  # continued after the crash
    assert _ids(monitors) == ["share-session-epoch"] * 2


# -- dead-letter-queue (KIP-1191) and ARCHIVING in SP-1 ------------------------------------------------------


def test_archiving_made_archived_without_the_dlq_violates_the_dead_letter_queue() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 4, RecordState.ARCHIVING, 1)))  # phase 1
    monitors.on_dlq_committed("dlq", 0, 0, (KEY, 0, 2), 1)  # 0-2 reached the DLQ topic
    monitors.on_dlq_given_up(KEY, 3, 3, 1)  # 3's enqueue failed: archived regardless, as trunk does
    _durable(monitors, _write((0, 3, RecordState.ARCHIVED, 1)))  # phase 2 for 0-3: fine
    assert monitors.violations == []
    _durable(monitors, _write((4, 4, RecordState.ARCHIVED, 1)))  # 4 never went to the DLQ
    assert _ids(monitors) == ["dead-letter-queue"]
    assert monitors.violations[0].state["offset"] == 4


def test_a_dlq_record_that_was_never_archiving_violates_the_dead_letter_queue() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 4, RecordState.ARCHIVING, 1)))
    monitors.on_dlq_committed("dlq", 0, 0, (KEY, 0, 4), 1)
    monitors.on_dlq_committed("dlq", 0, 5, (KEY, 0, 4), 2)  # a duplicate after a failover: allowed
    assert monitors.violations == []
    monitors.on_dlq_committed("dlq", 0, 10, (KEY, 5, 5), 3)  # 5 was never ARCHIVING
    assert _ids(monitors) == ["dead-letter-queue"]
    assert monitors.violations[0].state["offset"] == 5


def test_a_dlq_record_owed_in_an_earlier_life_may_still_arrive_but_no_other() -> None:
    """An admin reset begins a new life (state epoch 2); the old life's leader may still finish the enqueue
    of what was durably ARCHIVING before it (swarm_config seed 7789094685951172101), and only that."""
    monitors = _monitors()
    _durable(monitors, _write((10, 13, RecordState.ARCHIVING, 3)))  # owed to the DLQ in life 1
    _durable(monitors, _write(start=0, state_epoch=2))  # the reset: life 2 from offset 0
    monitors.on_dlq_committed("dlq", 0, 0, (KEY, 13, 13), 1)  # life 1's leader finishes its enqueue
    assert monitors.violations == []
    monitors.on_dlq_committed("dlq", 0, 1, (KEY, 14, 14), 2)  # 14 was ARCHIVING in no life
    assert _ids(monitors) == ["dead-letter-queue"]
    assert monitors.violations[0].state["offset"] == 14


def test_durably_archiving_written_back_to_available_or_acquired_is_an_illegal_transition() -> None:
    monitors = _monitors()
    _durable(monitors, _write((0, 4, RecordState.ARCHIVING, 2)))
    monitors.on_acquire(KEY, "m", [AcquiredRecords(5, 9, 1)], 1, 1)
    _durable(monitors, _write((0, 1, RecordState.AVAILABLE, 1)))  # a late retry with a lower count: SC-4 drops it
    assert monitors.violations == []
    monitors.on_acquire(KEY, "m", [AcquiredRecords(3, 4, 3)], 1, 2)
    assert _ids(monitors) == ["record-state-transition"]
    monitors = _monitors()
    _durable(monitors, _write((0, 4, RecordState.ARCHIVING, 2)))
    _durable(monitors, _write((2, 2, RecordState.AVAILABLE, 2)))
    assert _ids(monitors) == ["record-state-transition"]
