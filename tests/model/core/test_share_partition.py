"""SharePartition, rule by rule (SP-1..SP-15), with the error codes each rule answers."""

from __future__ import annotations

import pytest

from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import ApiError, Errors
from model.core.log import PartitionLog
from model.core.share_partition import (
    AcknowledgementBatch,
    AcquiredRecords,
    OffsetState,
    PartitionStatus,
    PendingWrite,
    SharePartition,
    WriteReason,
    ack_batches_problem,
)
from model.core.share_state import (
    UNKNOWN_OFFSET,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryResponse,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateResponse,
)

KEY = SharePartitionKey("g", "t", 0)
OK = WriteShareGroupStateResponse(KEY)
AV, AQ, ACK, ARC = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3
LOCK = 30_000
KIP = BrokerConfig(protocol="kip")  # the KIP as written, where Kafka trunk answers otherwise
RENEW = 4


def make(records: int = 20, *, start: int = 0, broker: BrokerConfig | None = None,
         group: GroupConfig | None = None, log: PartitionLog | None = None,
         batches: tuple[StateBatch, ...] = (), leader_epoch: int = 1) -> SharePartition:
    if log is None:
        # One-record batches: Kafka's batch-wise acquisition then takes max records as given.
        log = PartitionLog()
        for _ in range(records):
            log.append(1)
        log.advance_high_watermark()
    sp = SharePartition(KEY, log, leader_epoch=leader_epoch, broker=broker, group=group)
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=start, state_batches=batches), 0)
    if sp.status is PartitionStatus.INITIALIZING:
        settle(sp)
    return sp


def settle(sp: SharePartition, now_ms: int = 0) -> list[PendingWrite]:
    """Answer every pending write with success (and the writes they cause)."""
    done: list[PendingWrite] = []
    while writes := sp.take_writes():
        for w in writes:
            sp.complete_write(w.write_id, OK, now_ms)
        done += writes
    return done


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int, now_ms: int = 0) -> Errors:
    result = sp.acknowledge(member, [AcknowledgementBatch(first, last, tuple(types))], now_ms)
    return result.error_code


def states(sp: SharePartition, first: int, last: int) -> list[tuple[RecordState, int]]:
    out = []
    for o in range(first, last + 1):
        s = sp.state_of(o)
        assert s is not None, o
        out.append((s.state, s.delivery_count))
    return out


# -- SP-1 states and transitions ------------------------------------------------------------


def test_sp1_acquired_is_never_persisted_and_terminal_states_stay() -> None:
    sp = make(10)
    sp.acquire("m1", 10, 0)
    assert ack(sp, "m1", 0, 9, ACCEPT, ACCEPT, RELEASE, REJECT, GAP, ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT) == 0
    writes = settle(sp)
    assert all(b.delivery_state != AQ for w in writes for b in w.request.state_batches)
    assert sp.state_of(3) == OffsetState(ARC, 1, None, False) and sp.state_of(2) == OffsetState(AV, 1, None, False)
    # Terminal records are never acquired again; only the AVAILABLE ones are.
    got = sp.acquire("m2", 10, 0)
    assert got == [AcquiredRecords(2, 2, 2), AcquiredRecords(7, 7, 2)]


# -- SP-2 acquire -----------------------------------------------------------------------------


def test_sp2_acquire_sets_owner_count_and_lock_and_writes_nothing() -> None:
    sp = make(10)
    assert sp.acquire("m1", 4, now_ms=1_000) == [AcquiredRecords(0, 3, 1)]
    assert sp.take_writes() == []
    assert sp.state_of(0) == OffsetState(AQ, 1, "m1", False)
    assert sp.next_lock_deadline_ms() == 1_000 + LOCK
    assert sp.speo == 4 and sp.acquired_count == 4


def test_sp2_group_lock_duration_overrides_broker() -> None:
    sp = make(10, group=GroupConfig(record_lock_duration_ms=15_000))
    sp.acquire("m1", 1, now_ms=100)
    assert sp.next_lock_deadline_ms() == 15_100


def test_acquire_nothing_when_asked_for_nothing_or_nothing_is_there() -> None:
    sp = make(3)
    assert sp.acquire("m1", 0, 0) == []
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 2, 1)]
    assert sp.acquire("m2", 10, 0) == []


# -- SP-3 acknowledge -------------------------------------------------------------------------


@pytest.mark.parametrize(("ack_type", "state"), [(ACCEPT, ACK), (RELEASE, AV), (REJECT, ARC), (GAP, ARC)])
def test_sp3_each_type_moves_to_its_state_after_the_write(ack_type: int, state: RecordState) -> None:
    sp = make(10)
    sp.acquire("m1", 10, 0)
    result = sp.acknowledge("m1", [AcknowledgementBatch(4, 4, (ack_type,))], 0)
    assert result.error_code == Errors.NONE and result.write_id is not None
    # In transition until the write is answered: still ACQUIRED in the observer's eyes.
    assert sp.state_of(4) == OffsetState(AQ, 1, "m1", True)
    [w] = sp.take_writes()
    assert w.write_id == result.write_id and w.reason is WriteReason.ACKNOWLEDGE and w.member_id == "m1"
    assert w.request.state_batches == (StateBatch(4, 4, state, 1),)
    done = sp.complete_write(w.write_id, OK, 0)
    assert (done.member_id, done.error_code) == ("m1", Errors.NONE)
    assert sp.state_of(4) == OffsetState(state, 1, None, False)


def test_sp3_invalid_record_state_cases_change_nothing() -> None:
    """protocol = "kip": every offset outside the window is INVALID_RECORD_STATE (Kafka: see below)."""
    sp = make(20, broker=KIP)
    sp.acquire("m1", 5, now_ms=0)  # 0-4
    sp.acquire("m2", 5, now_ms=0)  # 5-9
    bad = [
        ("m2", [AcknowledgementBatch(0, 0, (ACCEPT,))], 0),  # another member's record
        ("m1", [AcknowledgementBatch(0, 4, (ACCEPT,))], LOCK),  # lock expired (deadline reached)
        ("m1", [AcknowledgementBatch(10, 10, (ACCEPT,))], 0),  # beyond the SPEO
        ("m1", [AcknowledgementBatch(3, 6, (ACCEPT,))], 0),  # straddles two members
        # A valid batch then an invalid one: the whole request fails.
        ("m1", [AcknowledgementBatch(0, 1, (ACCEPT,)), AcknowledgementBatch(5, 5, (ACCEPT,))], 0),
    ]
    before = list(sp.batches())
    for member, batches, now in bad:
        result = sp.acknowledge(member, batches, now)
        assert result.error_code == Errors.INVALID_RECORD_STATE, (member, batches)
        assert result.write_id is None and result.error_message
    assert list(sp.batches()) == before and sp.take_writes() == []
    # Acknowledged twice: the second one finds the record in transition, then terminal.
    assert ack(sp, "m1", 0, 0, ACCEPT) == Errors.NONE
    assert ack(sp, "m1", 0, 0, ACCEPT) == Errors.INVALID_RECORD_STATE
    settle(sp)
    assert ack(sp, "m1", 1, 1, ACCEPT) == Errors.NONE
    settle(sp)
    assert sp.spso == 2
    assert ack(sp, "m1", 0, 0, ACCEPT) == Errors.INVALID_RECORD_STATE  # below the SPSO
    # An AVAILABLE record is not acknowledgeable.
    assert ack(sp, "m1", 2, 2, RELEASE) == Errors.NONE
    settle(sp)
    assert ack(sp, "m1", 2, 2, ACCEPT) == Errors.INVALID_RECORD_STATE


def test_sp3_kafka_answers_outside_the_window() -> None:
    """Trunk (SharePartition.acknowledge): past the window INVALID_REQUEST, nothing in flight
    INVALID_RECORD_STATE. Below the SPSO but not the log start: INVALID_RECORD_STATE, where trunk answers
    success (divergence ack-below-spso-confirmed); below the log start: skipped (test_an_ack_across_...)."""
    empty = make(20)
    assert ack(empty, "m1", 0, 3, ACCEPT) == Errors.INVALID_RECORD_STATE
    sp = make(20)
    sp.acquire("m1", 5, now_ms=0)  # 0-4
    before = list(sp.batches())
    assert ack(sp, "m1", 10, 10, ACCEPT) == Errors.INVALID_REQUEST
    assert ack(sp, "m1", 3, 5, ACCEPT) == Errors.INVALID_REQUEST
    assert list(sp.batches()) == before and sp.take_writes() == []
    assert ack(sp, "m1", 0, 1, ACCEPT) == Errors.NONE
    settle(sp)
    assert sp.spso == 2
    assert ack(sp, "m1", 0, 1, ACCEPT) == Errors.INVALID_RECORD_STATE  # acknowledged already: refused
    assert ack(sp, "m1", 0, 3, ACCEPT) == Errors.INVALID_RECORD_STATE and sp.take_writes() == []
    assert ack(sp, "m1", 2, 3, ACCEPT) == Errors.NONE


def test_late_ack_below_the_spso_is_refused_where_trunk_confirms_it() -> None:
    """tests/conformance/divergences.py "ack-below-spso-confirmed": member m1's lock on 0-4 expires, m2
    acquires and accepts them, the SPSO moves to 5; m1's late ACCEPT of 0-4 is INVALID_RECORD_STATE here,
    success in trunk (SharePartition.acknowledge skips every batch below its start offset)."""
    sp = make(10)
    sp.acquire("m1", 5, now_ms=0)
    sp.expire_locks(LOCK)
    settle(sp, LOCK)
    assert sp.acquire("m2", 5, LOCK) == [AcquiredRecords(0, 4, 2)]
    assert ack(sp, "m2", 0, 4, ACCEPT, now_ms=LOCK) == Errors.NONE
    settle(sp, LOCK)
    assert sp.spso == 5 and sp.log.log_start_offset == 0
    assert ack(sp, "m1", 0, 4, ACCEPT, now_ms=LOCK) == Errors.INVALID_RECORD_STATE


def test_sp3_kafka_overlapping_batches_fail_whole() -> None:
    """Trunk: batches applied in order; an offset acknowledged twice in one request is INVALID_RECORD_STATE
    and the batches before it roll back (SharePartitionTest.testAcknowledgeRollbackWithFullBatchError)."""
    sp = make(20)
    sp.acquire("m1", 10, now_ms=0)
    before = list(sp.batches())
    result = sp.acknowledge("m1", [AcknowledgementBatch(0, 4, (ACCEPT,)), AcknowledgementBatch(4, 6, (RELEASE,))], 0)
    assert result.error_code == Errors.INVALID_RECORD_STATE and result.write_id is None
    assert list(sp.batches()) == before and sp.take_writes() == []
    # Out of order but disjoint: the share-partition applies both (the broker refuses the request first,
    # ack_batches_problem).
    result = sp.acknowledge("m1", [AcknowledgementBatch(5, 9, (ACCEPT,)), AcknowledgementBatch(0, 4, (ACCEPT,))], 0)
    assert result.error_code == Errors.NONE


@pytest.mark.parametrize(("batches", "problem"), [
    ([AcknowledgementBatch(0, 2, (ACCEPT,)), AcknowledgementBatch(2, 3, (ACCEPT,))], False),  # trunk's "<"
    ([AcknowledgementBatch(0, 2, (ACCEPT,)), AcknowledgementBatch(1, 3, (ACCEPT,))], True),
    ([AcknowledgementBatch(2, 3, (ACCEPT,)), AcknowledgementBatch(0, 1, (ACCEPT,))], True),
    ([AcknowledgementBatch(3, 2, (ACCEPT,))], True),
    ([AcknowledgementBatch(0, 1, ())], True),
    ([AcknowledgementBatch(0, 3, (ACCEPT, ACCEPT))], True),
    ([AcknowledgementBatch(0, 0, (5,))], True),
    ([AcknowledgementBatch(0, 0, (RENEW,)), AcknowledgementBatch(1, 2, (GAP, REJECT))], False),
])
def test_broker_refuses_what_kafka_apis_refuses(batches: list[AcknowledgementBatch], problem: bool) -> None:
    """KafkaApis.validateAcknowledgementBatches: what never reaches a share-partition."""
    assert (ack_batches_problem(batches) is not None) is problem


def test_renew_restarts_the_lock_and_writes_nothing() -> None:
    """KIP-1222 / trunk acknowledgeCompleteBatch: RENEW keeps the records ACQUIRED by the member under a
    lock of a full duration from now; nothing is written; the old deadline no longer expires them."""
    sp = make(20)
    sp.acquire("m1", 10, now_ms=0)
    result = sp.acknowledge("m1", [AcknowledgementBatch(2, 5, (RENEW,))], 20_000)
    assert result.error_code == Errors.NONE and result.write_id is None and sp.take_writes() == []
    deadlines = {b.first_offset: b.lock_deadline_ms for b in sp.batches()}
    assert deadlines == {0: LOCK, 2: 20_000 + LOCK, 6: LOCK}
    assert sp.next_lock_deadline_ms() == LOCK
    sp.expire_locks(LOCK)
    [w] = sp.take_writes()
    assert {(b.first_offset, b.last_offset) for b in w.request.state_batches} == {(0, 1), (6, 9)}
    sp.complete_write(w.write_id, OK, LOCK)
    assert sp.state_of(3) == OffsetState(AQ, 1, "m1", False)
    assert ack(sp, "m1", 2, 5, ACCEPT, now_ms=LOCK + 1) == Errors.NONE  # within the renewed lock
    # Another member's records, or records not ACQUIRED, cannot be renewed.
    assert sp.acknowledge("m2", [AcknowledgementBatch(2, 2, (RENEW,))], LOCK).error_code == Errors.INVALID_RECORD_STATE


def test_renew_mixed_with_other_types_writes_only_the_others() -> None:
    sp = make(10)
    sp.acquire("m1", 10, now_ms=0)
    result = sp.acknowledge("m1", [AcknowledgementBatch(0, 3, (ACCEPT, RENEW, RENEW, REJECT))], 100)
    assert result.error_code == Errors.NONE and result.write_id is not None
    [w] = sp.take_writes()
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in w.request.state_batches] == [
        (0, 0, ACK), (3, 3, ARC)]
    assert all(b.delivery_state != RENEW or b.delivery_state == ARC for b in w.request.state_batches)
    sp.complete_write(w.write_id, OK, 100)
    assert sp.state_of(1) == OffsetState(AQ, 1, "m1", False)
    assert [b.lock_deadline_ms for b in sp.batches() if b.first_offset == 1] == [100 + LOCK]


@pytest.mark.parametrize(
    "batches",
    [
        [AcknowledgementBatch(3, 2, (ACCEPT,))],  # not a range
        [AcknowledgementBatch(-1, 2, (ACCEPT,))],
        [AcknowledgementBatch(0, 3, (ACCEPT, ACCEPT))],  # 2 types for 4 offsets
        [AcknowledgementBatch(0, 0, (7,))],  # unknown type
        [AcknowledgementBatch(0, 0, ())],
        [AcknowledgementBatch(2, 3, (ACCEPT,)), AcknowledgementBatch(0, 1, (ACCEPT,))],  # descending
        [AcknowledgementBatch(0, 2, (ACCEPT,)), AcknowledgementBatch(2, 3, (ACCEPT,))],  # overlapping
    ],
)
def test_sp3_malformed_requests_are_invalid_request(batches: list[AcknowledgementBatch]) -> None:
    """protocol = "kip" (unordered or overlapping batches are malformed too; Kafka: see above)."""
    sp = make(10, broker=KIP)
    sp.acquire("m1", 10, 0)
    result = sp.acknowledge("m1", batches, 0)
    assert result.error_code == Errors.INVALID_REQUEST and result.write_id is None
    assert sp.take_writes() == [] and sp.state_of(0) == OffsetState(AQ, 1, "m1", False)


def test_sp3_per_offset_types_and_several_batches() -> None:
    sp = make(10, broker=KIP)
    sp.acquire("m1", 10, 0)
    result = sp.acknowledge("m1", [
        AcknowledgementBatch(0, 3, (ACCEPT, ACCEPT, RELEASE, REJECT)),
        AcknowledgementBatch(5, 9, (ACCEPT,)),
    ], 0)
    assert result.error_code == Errors.NONE
    [w] = sp.take_writes()
    assert w.request.start_offset == UNKNOWN_OFFSET  # 4 is still acquired: no SPSO move past 2
    assert w.request.state_batches == (
        StateBatch(0, 1, ACK, 1), StateBatch(2, 2, AV, 1), StateBatch(3, 3, ARC, 1), StateBatch(5, 9, ACK, 1))
    sp.complete_write(w.write_id, OK, 0)
    assert sp.spso == 2 and states(sp, 2, 9) == [(AV, 1), (ARC, 1), (AQ, 1)] + [(ACK, 1)] * 5
    assert ack(sp, "m1", 4, 4, ACCEPT) == Errors.NONE
    settle(sp)
    assert sp.spso == 2  # 2 is AVAILABLE


def test_empty_acknowledgement_is_a_no_op() -> None:
    sp = make(3)
    assert sp.acknowledge("m1", [], 0).error_code == Errors.NONE and sp.take_writes() == []


# -- SP-4 lock timeout ------------------------------------------------------------------------


def test_sp4_lock_timeout_returns_records_to_available_durably() -> None:
    sp = make(10)
    sp.acquire("m1", 3, now_ms=0)  # 0-2, until 30 000
    sp.acquire("m2", 3, now_ms=10)  # 3-5, until 30 010
    assert sp.next_lock_deadline_ms() == LOCK
    assert sp.expire_locks(LOCK - 1) is None
    write_id = sp.expire_locks(LOCK)
    assert write_id is not None
    [w] = sp.take_writes()
    assert w.reason is WriteReason.LOCK_TIMEOUT
    assert w.request.state_batches == (StateBatch(0, 2, AV, 1),)
    assert sp.state_of(0) == OffsetState(AQ, 1, "m1", True)
    assert sp.next_lock_deadline_ms() == LOCK + 10  # the records in transition have no timer
    assert sp.acquire("m3", 3, LOCK) == [AcquiredRecords(6, 8, 1)]  # in transition: not acquirable
    sp.complete_write(write_id, OK, LOCK)
    assert sp.state_of(0) == OffsetState(AV, 1, None, False)
    assert sp.acquire("m3", 3, LOCK) == [AcquiredRecords(0, 2, 2)]


# -- SP-5 delivery count limit ---------------------------------------------------------------


def test_sp5_release_timeout_and_member_release_archive_at_the_limit() -> None:
    sp = make(10, broker=BrokerConfig(delivery_count_limit=2, protocol="kip"))
    sp.acquire("m1", 3, 0)
    assert ack(sp, "m1", 0, 2, RELEASE) == Errors.NONE
    settle(sp)
    assert sp.acquire("m1", 1, 0) == [AcquiredRecords(0, 0, 2)]
    assert sp.acquire("m2", 1, 0) == [AcquiredRecords(1, 1, 2)]
    assert sp.acquire("m3", 1, 0) == [AcquiredRecords(2, 2, 2)]
    assert ack(sp, "m1", 0, 0, RELEASE) == Errors.NONE  # count 2 = limit
    [w] = sp.take_writes()
    # Archived, so the SPSO passes it: the write is just the new start offset.
    assert (w.request.start_offset, w.request.state_batches) == (1, ())
    sp.complete_write(w.write_id, OK, 0)
    assert sp.spso == 1
    assert sp.release_member("m2", 0) is not None  # SP-15 at the limit
    sp.expire_locks(LOCK)  # SP-4 at the limit
    writes = settle(sp, LOCK)
    assert [w.reason for w in writes] == [WriteReason.RELEASE, WriteReason.LOCK_TIMEOUT]
    assert sp.spso == 3 and sp.acquire("m4", 3, LOCK) == [AcquiredRecords(3, 5, 1)]


# -- SP-6 SPSO --------------------------------------------------------------------------------


def test_sp6_spso_moves_only_once_durable_and_never_back() -> None:
    sp = make(10, broker=KIP)
    sp.acquire("m1", 5, 0)
    assert ack(sp, "m1", 0, 4, ACCEPT) == Errors.NONE
    assert sp.spso == 0  # not before the write succeeds
    [w] = sp.take_writes()
    assert (w.request.start_offset, w.request.state_batches) == (5, ())
    sp.complete_write(w.write_id, OK, 0)
    assert sp.spso == 5 and sp.state_of(4) is None


def test_sp6_spso_does_not_pass_records_in_transition() -> None:
    sp = make(10, broker=KIP)
    sp.acquire("m1", 1, 0)  # 0
    sp.acquire("m2", 1, 0)  # 1
    first = sp.acknowledge("m1", [AcknowledgementBatch(0, 0, (ACCEPT,))], 0).write_id
    second = sp.acknowledge("m2", [AcknowledgementBatch(1, 1, (ACCEPT,))], 0).write_id
    w1, w2 = sp.take_writes()
    # Two writes in flight: the first moves the start offset, the second does not carry one.
    assert (w1.request.start_offset, w2.request.start_offset) == (1, UNKNOWN_OFFSET)
    assert w2.request.state_batches == (StateBatch(1, 1, ACK, 1),)
    assert second is not None and first is not None
    sp.complete_write(second, OK, 0)
    assert sp.spso == 0  # 0 is still in transition
    sp.complete_write(first, OK, 0)
    assert sp.spso == 2


# -- SP-7 / SP-13 SPEO bounds -----------------------------------------------------------------


def test_sp7_speo_never_beyond_the_high_water_mark() -> None:
    log = PartitionLog()
    log.append(10)
    log.advance_high_watermark(4)
    sp = make(log=log)
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 3, 1)] and sp.speo == 4
    log.advance_high_watermark(7)
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(4, 6, 1)] and sp.speo == 7


def _sp13_log() -> PartitionLog:
    log = PartitionLog()
    log.append(2)  # 0-1
    log.append(2, producer_id=9, transactional=True)  # 2-3, aborted below
    log.append(1, producer_id=8, transactional=True)  # 4, still open
    log.advance_high_watermark()
    return log


def test_sp13_kafka_acquires_markers_with_the_batches_and_archives_aborted_records() -> None:
    """Trunk (SharePartition.acquire, filterAbortedTransactionalAcquiredRecords): the control batches
    are acquired with the fetched batches (the client acknowledges them with GAP); a read_committed
    group's aborted records are archived by the leader."""
    log = _sp13_log()
    sp = make(log=log, group=GroupConfig(isolation_level="read_committed"))
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 1, 1)]
    log.end_transaction(9, commit=False)  # marker 5
    log.end_transaction(8, commit=True)  # marker 6
    log.append(1)  # 7
    log.advance_high_watermark()
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(4, 7, 1)]
    [w] = sp.take_writes()
    assert w.reason is WriteReason.ARCHIVE
    assert w.request.state_batches == (StateBatch(2, 3, ARC, 0),)
    sp.complete_write(w.write_id, OK, 0)
    assert states(sp, 2, 3) == [(ARC, 0)] * 2


def test_sp13_read_committed_stops_at_the_lso_and_archives_aborted_records() -> None:
    """The KIP (protocol "kip"): markers are archived by the leader, never acquired."""
    log = _sp13_log()
    sp = make(log=log, broker=KIP, group=GroupConfig(isolation_level="read_committed"))
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 1, 1)]
    assert sp.speo == 2  # the open transaction at 2 holds the LSO
    log.end_transaction(9, commit=False)  # marker 5
    log.end_transaction(8, commit=True)  # marker 6
    log.append(1)  # 7
    log.advance_high_watermark()
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(4, 4, 1), AcquiredRecords(7, 7, 1)]
    [w] = sp.take_writes()
    assert w.reason is WriteReason.ARCHIVE
    assert w.request.state_batches == (StateBatch(2, 3, ARC, 0), StateBatch(5, 6, ARC, 0))
    sp.complete_write(w.write_id, OK, 0)
    assert states(sp, 2, 3) == [(ARC, 0)] * 2


def test_sp13_read_uncommitted_delivers_aborted_records_but_not_markers() -> None:
    log = PartitionLog()
    log.append(2, producer_id=9, transactional=True)  # 0-1
    log.end_transaction(9, commit=False)  # 2
    log.append(1)  # 3
    log.advance_high_watermark()
    sp = make(log=log, broker=KIP)
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 1, 1), AcquiredRecords(3, 3, 1)]
    [w] = sp.take_writes()
    assert w.request.state_batches == (StateBatch(2, 2, ARC, 0),)


def test_sp13_kafka_read_uncommitted_acquires_aborted_records_and_the_marker() -> None:
    """Trunk: a read_uncommitted group gets the aborted records and the control batch with the rest
    (ShareCompletedFetch acknowledges the marker's offset with GAP); nothing is archived."""
    log = PartitionLog()
    log.append(2, producer_id=9, transactional=True)  # 0-1
    log.end_transaction(9, commit=False)  # 2
    log.append(1)  # 3
    log.advance_high_watermark()
    sp = make(log=log)
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(0, 3, 1)]
    assert sp.take_writes() == []


# -- SP-8 in-flight bound ---------------------------------------------------------------------


def test_sp8_window_bound_but_available_records_inside_it_still_go() -> None:
    sp = make(500, broker=BrokerConfig(partition_max_record_locks=100))
    assert sp.acquire("m1", 500, 0) == [AcquiredRecords(0, 99, 1)]
    assert sp.in_flight_count == 100 and sp.acquire("m2", 10, 0) == []
    assert ack(sp, "m1", 50, 59, RELEASE) == Errors.NONE
    settle(sp)
    assert sp.acquire("m2", 500, 0) == [AcquiredRecords(50, 59, 2)]
    assert ack(sp, "m1", 0, 9, ACCEPT) == Errors.NONE
    settle(sp)
    assert sp.spso == 10 and sp.acquire("m2", 500, 0) == [AcquiredRecords(100, 109, 1)]
    assert sp.speo - sp.spso == 100


# -- SP-9 persist before respond ------------------------------------------------------------


def test_sp9_failed_acknowledgement_returns_records_to_acquired() -> None:
    sp = make(10)
    sp.acquire("m1", 5, 0)
    result = sp.acknowledge("m1", [AcknowledgementBatch(0, 4, (ACCEPT,))], 0)
    [w] = sp.take_writes()
    done = sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.COORDINATOR_NOT_AVAILABLE), 10)
    assert done.write_id == result.write_id
    assert (done.member_id, done.error_code) == ("m1", Errors.COORDINATOR_NOT_AVAILABLE)
    assert states(sp, 0, 4) == [(AQ, 1)] * 5 and sp.state_of(0).owner == "m1"  # type: ignore[union-attr]
    assert sp.spso == 0 and sp.take_writes() == []
    assert ack(sp, "m1", 0, 4, ACCEPT, now_ms=20) == Errors.NONE  # it can be acknowledged again


def test_sp9_failed_acknowledgement_after_the_lock_expired_releases_durably() -> None:
    sp = make(10, broker=BrokerConfig(delivery_count_limit=2))
    sp.acquire("m1", 2, 0)
    sp.acknowledge("m1", [AcknowledgementBatch(0, 1, (ACCEPT,))], LOCK - 1)
    assert sp.expire_locks(LOCK) is None  # in transition: the write decides
    [w] = sp.take_writes()
    done = sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.REQUEST_TIMED_OUT), LOCK + 5)
    assert done.error_code == Errors.UNKNOWN_SERVER_ERROR  # trunk: fetchPersisterError's default
    [follow] = sp.take_writes()
    assert follow.reason is WriteReason.LOCK_TIMEOUT
    assert follow.request.state_batches == (StateBatch(0, 1, AV, 1),)
    sp.complete_write(follow.write_id, OK, LOCK + 5)
    assert states(sp, 0, 1) == [(AV, 1)] * 2


def test_sp9_failed_lock_timeout_write_is_retried() -> None:
    sp = make(10)
    sp.acquire("m1", 2, 0)
    first = sp.expire_locks(LOCK)
    [w] = sp.take_writes()
    sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.COORDINATOR_LOAD_IN_PROGRESS), LOCK)
    [retry] = sp.take_writes()
    assert retry.write_id != first and retry.reason is WriteReason.LOCK_TIMEOUT
    assert retry.request.state_batches == w.request.state_batches
    assert sp.state_of(0) == OffsetState(AQ, 1, "m1", True)
    sp.complete_write(retry.write_id, OK, LOCK)
    assert sp.state_of(0) == OffsetState(AV, 1, None, False)


def test_complete_unknown_write_is_a_caller_bug() -> None:
    sp = make(1)
    with pytest.raises(ValueError):
        sp.complete_write(99, OK, 0)


# -- SP-10 recovery ---------------------------------------------------------------------------


def test_sp10_recovery_restores_batches_without_owners_and_fills_holes() -> None:
    batches = (StateBatch(10, 11, ACK, 1), StateBatch(12, 12, ARC, 5), StateBatch(15, 16, AV, 2),
               StateBatch(18, 18, ACK, 1))
    sp = make(30, start=10, batches=batches)
    # 10-12 are terminal: the SPSO is past them; 13-14 and 17 have no state: AVAILABLE, count 0.
    assert (sp.spso, sp.speo) == (13, 19)
    assert states(sp, 13, 18) == [(AV, 0), (AV, 0), (AV, 2), (AV, 2), (AV, 0), (ACK, 1)]
    assert all(b.owner is None for b in sp.batches())
    assert sp.durable_delivery_count(15) == 2 and sp.durable_delivery_count(13) == 0
    assert sp.take_writes() == []
    assert sp.acquire("m1", 10, 0) == [
        AcquiredRecords(13, 14, 1), AcquiredRecords(15, 16, 3), AcquiredRecords(17, 17, 1),
        AcquiredRecords(19, 23, 1)]


@pytest.mark.parametrize(("reset", "start"), [("latest", 20), ("earliest", 5)])
def test_sp10_unknown_start_offset_uses_auto_offset_reset_and_is_written_first(reset: str, start: int) -> None:
    log = PartitionLog()
    log.append(20)
    log.advance_high_watermark()
    log.delete_records(5)
    sp = SharePartition(KEY, log, leader_epoch=3, group=GroupConfig(auto_offset_reset=reset))
    assert sp.not_ready_error == Errors.LEADER_NOT_AVAILABLE  # trunk's initializedOrThrowException
    assert SharePartition(KEY, log, leader_epoch=3, broker=KIP).not_ready_error == Errors.COORDINATOR_LOAD_IN_PROGRESS
    with pytest.raises(ApiError) as refused:
        sp.acquire("m1", 1, 0)
    assert refused.value.error == Errors.LEADER_NOT_AVAILABLE
    req = sp.read_request()
    assert (req.key, req.leader_epoch) == (KEY, 3)
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=4), 0)
    assert sp.status is PartitionStatus.INITIALIZING and not sp.ready
    [w] = sp.take_writes()
    assert w.reason is WriteReason.INITIALIZE
    assert (w.request.start_offset, w.request.state_batches) == (start, ())
    assert (w.request.state_epoch, w.request.leader_epoch) == (4, 3)
    assert sp.acknowledge("m1", [], 0).error_code == Errors.LEADER_NOT_AVAILABLE
    sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.COORDINATOR_NOT_AVAILABLE), 0)
    [retry] = sp.take_writes()  # retried until it is durable
    sp.complete_write(retry.write_id, OK, 0)
    assert sp.ready and sp.spso == start


@pytest.mark.parametrize("error", [Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.FENCED_LEADER_EPOCH,
                                   Errors.COORDINATOR_LOAD_IN_PROGRESS])
def test_sp10_read_errors_leave_it_not_ready(error: Errors) -> None:
    log = PartitionLog()
    sp = SharePartition(KEY, log, leader_epoch=1)
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, error), 0)
    assert not sp.ready and sp.status is PartitionStatus.FAILED and sp.not_ready_error == error
    with pytest.raises(ApiError) as refused:
        sp.acquire("m1", 1, 0)
    assert refused.value.error == error
    assert sp.release_member("m1", 0) is None
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=0), 0)
    assert sp.ready


# -- SP-11 approximate counts -----------------------------------------------------------------


def test_sp11_durable_count_lags_acquisition_and_never_exceeds_the_count() -> None:
    sp = make(5)
    sp.acquire("m1", 1, 0)
    assert sp.durable_delivery_count(0) == 0 and sp.state_of(0).delivery_count == 1  # type: ignore[union-attr]
    ack(sp, "m1", 0, 0, RELEASE)
    settle(sp)
    sp.acquire("m1", 1, 0)
    assert sp.durable_delivery_count(0) == 1 and sp.state_of(0).delivery_count == 2  # type: ignore[union-attr]


# -- SP-12 admin reset ------------------------------------------------------------------------


def test_sp12_fenced_state_epoch_drops_the_state_and_reads_again() -> None:
    sp = make(10)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 1, ACCEPT)
    [w] = sp.take_writes()
    done = sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.FENCED_STATE_EPOCH), 0)
    assert done.error_code == Errors.NOT_LEADER_OR_FOLLOWER  # trunk: fetchPersisterError
    assert sp.status is PartitionStatus.STALE_STATE and sp.not_ready_error == Errors.FENCED_STATE_EPOCH
    assert list(sp.batches()) == [] and sp.in_flight_count == 0
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=2, start_offset=3), 0)
    assert sp.ready and sp.state_epoch == 2 and sp.spso == 3
    assert sp.acquire("m2", 2, 0) == [AcquiredRecords(3, 4, 1)]


def test_sp12_state_epoch_check_on_the_first_session() -> None:
    sp = make(10)
    assert not sp.check_state_epoch(ReadShareGroupStateSummaryResponse(KEY, state_epoch=1, start_offset=0))
    assert sp.check_state_epoch(ReadShareGroupStateSummaryResponse(KEY, state_epoch=2, start_offset=7))
    assert sp.not_ready_error == Errors.FENCED_STATE_EPOCH


def test_sc9_a_write_answered_no_state_drops_the_state_and_reads_again() -> None:
    # swarm seed 6394583595046328460: the group was deleted (its state tombstoned) under a leader that
    # kept serving; its write came back UNKNOWN_TOPIC_OR_PARTITION and was re-issued until the group,
    # created again, re-initialized the state at state epoch 1 with no leader epoch stored: the old
    # life's writes were then accepted into the new state and the SPSO jumped past offsets it lacks.
    sp = make(10)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 1, ACCEPT)
    [w] = sp.take_writes()
    no_state = WriteShareGroupStateResponse(KEY, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    done = sp.complete_write(w.write_id, no_state, 0)
    assert done.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert sp.status is PartitionStatus.STALE_STATE and not sp.ready
    assert sp.take_writes() == [] and list(sp.batches()) == [] and sp.in_flight_count == 0
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=4), 0)  # the new life
    assert sp.ready and sp.spso == 4
    assert sp.acquire("m1", 2, 0) == [AcquiredRecords(4, 5, 1)]


def test_sc9_the_first_session_finds_the_state_deleted() -> None:
    # swarm seed 4300022205136953387: a session opens on a leader whose group was deleted; the summary
    # answers that no state exists, and the leader must not serve (and later write) the old life.
    sp = make(10)
    sp.acquire("m1", 5, 0)
    gone = ReadShareGroupStateSummaryResponse(KEY, Errors.UNKNOWN_TOPIC_OR_PARTITION)
    assert sp.check_state_epoch(gone)
    assert sp.status is PartitionStatus.STALE_STATE and sp.in_flight_count == 0
    assert not sp.check_state_epoch(gone)  # not ready: nothing more to drop
    transient = ReadShareGroupStateSummaryResponse(KEY, Errors.COORDINATOR_LOAD_IN_PROGRESS)
    fresh = make(10)
    assert not fresh.check_state_epoch(transient) and fresh.ready


@pytest.mark.parametrize(("broker", "answer"), [(None, Errors.LEADER_NOT_AVAILABLE),
                                                (KIP, Errors.NOT_LEADER_OR_FOLLOWER)])
def test_fenced_leader_epoch_makes_a_zombie(broker: BrokerConfig | None, answer: Errors) -> None:
    sp = make(10, broker=broker)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 4, ACCEPT)
    [w] = sp.take_writes()
    sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.FENCED_LEADER_EPOCH), 0)
    assert sp.status is PartitionStatus.FENCED and sp.not_ready_error == answer
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=0), 0)
    assert not sp.ready and sp.take_writes() == []


# -- SP-14 compaction gaps --------------------------------------------------------------------


def test_sp14_gaps_are_archived_durably_and_never_delivered() -> None:
    log = PartitionLog()
    log.append(10)
    log.advance_high_watermark()
    log.compact([0, 1, 5])
    sp = make(log=log, broker=KIP)
    assert sp.acquire("m1", 10, 0) == [AcquiredRecords(2, 4, 1), AcquiredRecords(6, 9, 1)]
    [w] = sp.take_writes()
    assert w.reason is WriteReason.ARCHIVE
    # 0-1 let the SPSO move to 2, but 5 will be durably archived above it: so the
    # batches are written (StartOffset -1) and a recovering leader skips 0-1.
    assert w.request.start_offset == UNKNOWN_OFFSET
    assert w.request.state_batches == (StateBatch(0, 1, ARC, 0), StateBatch(5, 5, ARC, 0))
    assert sp.spso == 0 and sp.state_of(0) == OffsetState(AV, 0, None, True)
    sp.complete_write(w.write_id, OK, 0)
    assert sp.spso == 2 and sp.state_of(5) == OffsetState(ARC, 0, None, False)


def test_sp14_record_compacted_while_in_flight_is_archived_when_next_fetched() -> None:
    log = PartitionLog()
    log.append(5)
    log.advance_high_watermark()
    sp = make(log=log, broker=KIP)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 4, RELEASE)
    settle(sp)
    log.compact([2])
    assert sp.acquire("m2", 5, 0) == [AcquiredRecords(0, 1, 2), AcquiredRecords(3, 4, 2)]
    [w] = sp.take_writes()
    assert w.request.state_batches == (StateBatch(2, 2, ARC, 1),)


def test_sp14_kafka_record_compacted_while_in_flight_is_delivered_and_gap_acknowledged() -> None:
    """Trunk (SharePartition.acquire; ShareCompletedFetch): the batch is acquired again whole, the
    compacted offset with it; the client's GAP for it archives it (SP-3), durably."""
    log = PartitionLog()
    log.append(5)
    log.advance_high_watermark()
    sp = make(log=log)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 4, RELEASE)
    settle(sp)
    log.compact([2])
    assert sp.acquire("m2", 5, 0) == [AcquiredRecords(0, 4, 2)]
    assert sp.take_writes() == []
    assert ack(sp, "m2", 0, 4, RELEASE, RELEASE, GAP, RELEASE, RELEASE) == Errors.NONE
    [w] = settle(sp)
    assert StateBatch(2, 2, ARC, 2) in w.request.state_batches
    assert states(sp, 0, 4) == [(AV, 2)] * 2 + [(ARC, 2)] + [(AV, 2)] * 2


def test_sp14_gap_only_window_still_writes_the_start_offset() -> None:
    log = PartitionLog()
    log.append(3)
    log.advance_high_watermark()
    log.compact([0, 1, 2])
    sp = make(log=log, broker=KIP)
    assert sp.acquire("m1", 10, 0) == []
    [w] = sp.take_writes()
    assert (w.request.start_offset, w.request.state_batches) == (3, ())
    sp.complete_write(w.write_id, OK, 0)
    assert (sp.spso, sp.speo) == (3, 3)


# -- SP-15 session release --------------------------------------------------------------------


def test_sp15_release_member_returns_only_its_acquired_records() -> None:
    sp = make(10)
    sp.acquire("m1", 3, 0)
    sp.acquire("m2", 3, 0)
    ack(sp, "m1", 2, 2, ACCEPT)  # 2 in transition: left to its write
    write_id = sp.release_member("m1", 0)
    assert write_id is not None
    ws = sp.take_writes()
    assert [w.reason for w in ws] == [WriteReason.ACKNOWLEDGE, WriteReason.RELEASE]
    assert ws[1].request.state_batches == (StateBatch(0, 1, AV, 1),)
    settle_writes = ws
    for w in settle_writes:
        sp.complete_write(w.write_id, OK, 0)
    assert states(sp, 0, 5) == [(AV, 1), (AV, 1), (ACK, 1), (AQ, 1), (AQ, 1), (AQ, 1)]
    assert sp.release_member("m1", 0) is None


# -- log start offset -------------------------------------------------------------------------


def test_kafka_writes_the_spso_with_every_write_and_the_log_start_lazily() -> None:
    """Trunk: updateCacheAndOffsets writes nothing; writeShareGroupState carries startOffset() each time,
    whatever is in flight (the share coordinator keeps the higher, SC-4)."""
    log = PartitionLog()
    for _ in range(20):
        log.append(1)
    log.advance_high_watermark()
    sp = make(log=log)
    sp.acquire("m1", 10, 0)
    ack(sp, "m1", 0, 2, ACCEPT)
    [first] = sp.take_writes()
    assert first.request.start_offset == 0  # the SPSO it has; 0-2 are not durable yet
    ack(sp, "m1", 3, 4, ACCEPT)
    [second] = sp.take_writes()
    assert second.request.start_offset == 0  # a start offset already in flight does not stop it
    sp.complete_write(first.write_id, OK, 0)
    assert sp.spso == 3
    log.delete_records(7)
    assert sp.advance_log_start(0) is None and sp.take_writes() == [] and sp.spso == 7  # lazily
    ack(sp, "m1", 7, 7, RELEASE)
    [third] = sp.take_writes()
    assert third.request.start_offset == 7
    sp.complete_write(second.write_id, OK, 0)  # answered late: nothing moves back
    assert sp.spso == 7


@pytest.mark.parametrize(("broker", "answer", "written"), [(None, Errors.NONE, [(5, 6)]),
                                                          (KIP, Errors.INVALID_RECORD_STATE, None)])
def test_an_ack_across_the_log_start(broker: BrokerConfig | None, answer: Errors,
                                     written: list[tuple[int, int]] | None) -> None:
    """Trunk (SharePartitionTest.testAcknowledgeBatchPostLsoMovement): the offsets below the new start are
    skipped, the rest applied; protocol = "kip": the whole acknowledgement is refused."""
    log = PartitionLog()
    log.append(20)
    log.advance_high_watermark()
    sp = make(log=log, broker=broker)
    sp.acquire("m1", 10, 0)
    log.delete_records(5)
    sp.advance_log_start(0)
    settle(sp)
    assert ack(sp, "m1", 3, 6, ACCEPT) == answer
    writes = sp.take_writes()
    if written is None:
        assert writes == []
    else:
        [w] = writes
        assert [(b.first_offset, b.last_offset) for b in w.request.state_batches] == written \
            or (w.request.start_offset == 7 and w.request.state_batches == ())


def test_log_start_move_jumps_the_spso_durably() -> None:
    """protocol = "kip": a LOG_START write at once, never two start offsets in flight (trunk: below)."""
    log = PartitionLog()
    log.append(20)
    log.advance_high_watermark()
    sp = make(log=log, broker=KIP)
    sp.acquire("m1", 10, 0)
    ack(sp, "m1", 1, 2, ACCEPT)  # 0 stays acquired: this write carries no start offset
    [pending] = sp.take_writes()
    assert pending.request.start_offset == UNKNOWN_OFFSET
    log.delete_records(5)
    write_id = sp.advance_log_start(0)
    [w] = sp.take_writes()
    assert w.write_id == write_id and w.reason is WriteReason.LOG_START
    assert (w.request.start_offset, w.request.state_batches) == (5, ())
    assert sp.spso == 5 and sp.state_of(3) is None
    assert ack(sp, "m1", 3, 6, ACCEPT) == Errors.INVALID_RECORD_STATE  # 3-4 are gone (trunk: test_an_ack_across_...)
    # The acknowledgement in flight for 1-2 completes as a no-op on the window.
    done = sp.complete_write(pending.write_id, OK, 0)
    assert done.error_code == Errors.NONE and sp.spso == 5
    sp.complete_write(w.write_id, OK, 0)
    log.delete_records(15)
    assert sp.acquire("m2", 3, 0) == [AcquiredRecords(15, 17, 1)]
    [w2] = sp.take_writes()
    assert w2.request.start_offset == 15


def test_log_start_passing_acquired_records_keeps_them_until_their_lock_expires() -> None:
    """Trunk (updateCacheAndOffsets, releaseAcquisitionLockOnTimeout): ACQUIRED records below a moved log
    start stay with their member, their acknowledgement is skipped, their lock expiry archives them;
    AVAILABLE ones below it are archived at once. Nothing is written for either."""
    log = PartitionLog()
    for _ in range(20):
        log.append(1)  # one-record batches: a fetch of 4 takes exactly 4
    log.advance_high_watermark()
    sp = make(log=log)
    sp.acquire("m1", 4, 0)  # 0-3
    sp.acquire("m2", 4, 0)  # 4-7
    assert ack(sp, "m2", 4, 5, RELEASE) == Errors.NONE
    [w] = sp.take_writes()
    sp.complete_write(w.write_id, OK, 0)
    log.delete_records(6)
    assert sp.advance_log_start(10) is None and sp.take_writes() == []
    assert sp.spso == 6 and states(sp, 6, 7) == [(AQ, 1)] * 2
    assert [(s.first_offset, s.last_offset, s.state, s.owner) for s in sp.below_start] == [
        (0, 3, AQ, "m1"), (4, 5, ARC, None)]
    assert sp.next_lock_deadline_ms() == LOCK
    # An acknowledgement across the log start: 4-5 skipped, 6-7 applied.
    assert ack(sp, "m2", 4, 7, ACCEPT, now_ms=10) == Errors.NONE
    # m1's records: its ACCEPT is skipped with success, and they stay its own until the lock expires.
    assert ack(sp, "m1", 0, 3, ACCEPT, now_ms=10) == Errors.NONE
    assert sp.state_of(2) is not None and sp.state_of(2).owner == "m1"
    sp.expire_locks(LOCK)
    assert sp.below_start == [] and sp.state_of(2) is None


def test_log_start_passing_acquired_records_released_with_their_member() -> None:
    sp = make(10)
    sp.acquire("m1", 4, 0)
    sp.log.delete_records(3)
    sp.advance_log_start(0)
    assert sp.state_of(1) is not None and sp.state_of(3) is not None
    sp.release_member("m1", 0)
    assert sp.below_start == [] and sp.next_lock_deadline_ms() is None


def test_in_flight_ranges_split_only_where_records_differ() -> None:
    sp = make(1000, broker=BrokerConfig(partition_max_record_locks=1000))
    sp.acquire("m1", 500, 0)
    assert len(list(sp.batches())) == 1
    sp.acknowledge("m1", [AcknowledgementBatch(0, 9, (ACCEPT, RELEASE) * 5)], 0)
    assert len(list(sp.batches())) == 11  # 10 single offsets + the rest
    settle(sp)
    sp.acquire("m2", 5, 0)  # the 5 released ones, each between acknowledged offsets
    assert len(list(sp.batches())) == 10
    ack(sp, "m2", 1, 1, ACCEPT)
    ack(sp, "m2", 3, 3, ACCEPT)
    ack(sp, "m2", 5, 5, ACCEPT)
    ack(sp, "m2", 7, 7, ACCEPT)
    ack(sp, "m2", 9, 9, ACCEPT)
    settle(sp)
    assert sp.spso == 10 and len(list(sp.batches())) == 1


def test_the_durable_start_offset_never_moves_back() -> None:
    """Found by the stateful test. (1) A lock-timeout write carrying StartOffset 4 is in
    flight when the log start moves to 3: a LOG_START write of 3 answered after it would
    move the durable start back and re-expose the archived records; none is sent. (2) The
    log start moves to 6 while it is still in flight: that write waits for the answer."""
    sp = make(10, broker=BrokerConfig(delivery_count_limit=2, protocol="kip"))
    sp.acquire("m1", 4, 0)
    ack(sp, "m1", 0, 3, RELEASE)
    settle(sp)
    sp.acquire("m1", 4, 0)  # count 2 = limit: a timeout archives them
    timeout = sp.expire_locks(LOCK)
    [w] = sp.take_writes()
    assert (w.request.start_offset, w.request.state_batches) == (4, ())
    sp.log.delete_records(3)
    assert sp.advance_log_start(LOCK) is None and sp.spso == 3 and sp.take_writes() == []
    sp.log.delete_records(6)
    assert sp.advance_log_start(LOCK) is None and sp.spso == 6 and sp.take_writes() == []
    assert timeout is not None
    sp.complete_write(timeout, OK, LOCK)
    [later] = sp.take_writes()
    assert later.reason is WriteReason.LOG_START and later.request.start_offset == 6 == sp.spso


def test_a_start_offset_sent_once_is_not_sent_lower_even_if_its_answer_was_an_error() -> None:
    """Found by the stateful test: a write may be applied although its answer is an error
    (lost). After a failed StartOffset 5, moves up to 5 are written as batches only."""
    sp = make(10, broker=KIP)
    sp.acquire("m1", 5, 0)
    ack(sp, "m1", 0, 4, ACCEPT)
    [w] = sp.take_writes()
    assert w.request.start_offset == 5
    sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.REQUEST_TIMED_OUT), 0)
    ack(sp, "m1", 0, 2, ACCEPT)
    [again] = sp.take_writes()
    assert again.request.start_offset == UNKNOWN_OFFSET
    assert again.request.state_batches == (StateBatch(0, 2, ACK, 1),)
    sp.complete_write(again.write_id, OK, 0)
    assert sp.spso == 3
    ack(sp, "m1", 3, 4, ACCEPT)
    sp.acquire("m1", 1, 0)  # 5: the next move past 5 writes a start offset again
    [last] = sp.take_writes()
    assert last.request.start_offset == UNKNOWN_OFFSET
    sp.complete_write(last.write_id, OK, 0)
    ack(sp, "m1", 5, 5, ACCEPT)
    [beyond] = sp.take_writes()
    assert (beyond.request.start_offset, beyond.request.state_batches) == (6, ())


def test_a_failed_acknowledgement_of_an_expired_record_at_the_limit_goes_to_archiving_with_a_dlq() -> None:
    """model/kafka_divergences.py "failed-ack-at-limit-to-dlq": the acknowledgement of a record on its last
    delivery fails after its lock expired; with a dead-letter queue the model releases it as a lock timeout
    does (ARCHIVING, then the DLQ), where trunk's rollback (completeStateTransition) archives it directly."""
    sp = make(1, broker=BrokerConfig(delivery_count_limit=2), group=GroupConfig(dlq_topic="dlq"))
    sp.acquire("m1", 1, 0)
    assert ack(sp, "m1", 0, 0, RELEASE) == Errors.NONE
    settle(sp)
    sp.acquire("m1", 1, 0)  # the last delivery: count 2 of 2
    assert ack(sp, "m1", 0, 0, ACCEPT) == Errors.NONE
    [w] = sp.take_writes()
    sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY, Errors.COORDINATOR_NOT_AVAILABLE), LOCK + 1)
    [release] = sp.take_writes()
    assert [(b.first_offset, b.delivery_state) for b in release.request.state_batches] == [
        (0, RecordState.ARCHIVING)]
