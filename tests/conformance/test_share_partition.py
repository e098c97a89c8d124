"""SharePartitionTest, against ``model.core.share_partition.SharePartition`` through ``builders.Leader``.

Kafka's test compares the cached in-flight batches (and their per-offset state once split); the
model keeps ranges of offsets, so the translations compare the state and delivery count of each
offset (``Leader.states``) and the owner where Kafka names it (the cached batches' first offsets are
``SharePartition.in_flight_batch_starts``). Kafka's ``updateCacheAndOffsets(n)`` is the log start offset moving to
n (``Leader.move_log_start``); its timer tasks are deadlines here (``Leader.advance_time``).
"""

from __future__ import annotations

import pytest

from model.core.config import GroupConfig
from model.core.errors import Errors
from model.core.share_partition import AcknowledgementBatch, PartitionStatus
from model.core.share_state import ReadShareGroupStateResponse, RecordState, WriteShareGroupStateResponse
from tests.conformance.builders import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    LEADER_KEY,
    LOCK_MS,
    MEMBER,
    OTHER_MEMBER,
    REJECT,
    RELEASE,
    Leader,
    batch,
    not_ready_error,
)
from tests.conformance.divergences import divergence

# -- maybeInitialize ---------------------------------------------------------------------------


def test_maybe_initialize() -> None:
    """SharePartitionTest.testMaybeInitialize"""
    leader = Leader(start=5, state_epoch=3, batches=[batch(5, 10, 0, 2), batch(11, 15, 4, 3)])
    assert leader.active and leader.sp.state_epoch == 3
    assert (leader.start_offset, leader.end_offset) == (5, 15)
    assert leader.states(5, 10) == [(AVAILABLE, 2)] * 6
    assert leader.states(11, 15) == [(ARCHIVED, 3)] * 5


def test_maybe_initialize_delivery_complete_count() -> None:
    """SharePartitionTest.testMaybeInitialize: deliveryCompleteCount is the 5 archived records read."""
    leader = Leader(start=5, state_epoch=3, batches=[batch(5, 10, 0, 2), batch(11, 15, 4, 3)])
    assert leader.sp.delivery_complete_count == 5


def test_maybe_initialize_with_empty_state_batches() -> None:
    """SharePartitionTest.testMaybeInitializeWithEmptyStateBatches"""
    leader = Leader(start=10, state_epoch=5)
    assert leader.active and leader.sp.state_epoch == 5
    assert (leader.start_offset, leader.end_offset, leader.sp.in_flight_count) == (10, 10, 0)


def test_maybe_initialize_state_batches_with_gap_at_beginning() -> None:
    """SharePartitionTest.testMaybeInitializeStateBatchesWithGapAtBeginning: 10-14 have no state; the
    batches after keep theirs."""
    leader = Leader(start=10, state_epoch=3, batches=[batch(15, 20, 2, 2), batch(21, 30, 4, 3)])
    assert (leader.start_offset, leader.end_offset) == (10, 30)
    assert leader.states(15, 20) == [(ACKNOWLEDGED, 2)] * 6 and leader.states(21, 30) == [(ARCHIVED, 3)] * 10
    assert all(state is AVAILABLE and count == 0 for state, count in leader.states(10, 14))


def test_maybe_initialize_state_batches_with_gap_not_at_beginning() -> None:
    """SharePartitionTest.testMaybeInitializeStateBatchesWithGapNotAtBeginning: the start offset moves past
    the acknowledged 15-20 to 21; 21-29 have no state; 30-40 stay archived."""
    leader = Leader(start=15, state_epoch=3, batches=[batch(15, 20, 2, 2), batch(30, 40, 4, 3)])
    assert (leader.start_offset, leader.end_offset) == (21, 40)
    assert leader.states(30, 40) == [(ARCHIVED, 3)] * 11
    assert leader.states(21, 29) == [(AVAILABLE, 0)] * 9


def test_maybe_initialize_state_batches_without_gaps() -> None:
    """SharePartitionTest.testMaybeInitializeStateBatchesWithoutGaps: every stored batch is terminal: the
    start offset moves past them all (31) and nothing is in flight."""
    leader = Leader(start=15, state_epoch=3, batches=[batch(15, 20, 2, 2), batch(21, 30, 4, 3)])
    assert (leader.start_offset, leader.end_offset, leader.sp.in_flight_count) == (31, 31, 0)


@pytest.mark.parametrize("error", [Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                                   Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.GROUP_ID_NOT_FOUND,
                                   Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.FENCED_STATE_EPOCH,
                                   Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_SERVER_ERROR])
def test_maybe_initialize_with_error_partition_response(error: Errors) -> None:
    """SharePartitionTest.testMaybeInitializeWithErrorPartitionResponse: the read fails, the partition is
    FAILED and serves nothing."""
    leader = Leader()
    leader.sp.read_request()
    leader.sp.recover(ReadShareGroupStateResponse(LEADER_KEY, error), 0)
    assert leader.sp.status is PartitionStatus.FAILED
    assert not_ready_error(leader) == error


def test_maybe_initialize_share_partition_again() -> None:
    """SharePartitionTest.testMaybeInitializeSharePartitionAgain: a second initialize of an active
    partition changes nothing."""
    leader = Leader(start=5, state_epoch=3, batches=[batch(5, 10, 0, 2), batch(11, 15, 4, 3)])
    assert leader.active and (leader.start_offset, leader.end_offset) == (5, 15)
    assert leader.states(5, 10) == [(AVAILABLE, 2)] * 6


def test_maybe_initialize_fenced_share_partition() -> None:
    """SharePartitionTest.testMaybeInitializeFencedSharePartition: a fenced partition answers
    LEADER_NOT_AVAILABLE and stays fenced."""
    leader = Leader()
    leader.acquire(0, 1)
    leader.write_error = Errors.FENCED_LEADER_EPOCH
    leader.release()
    assert leader.sp.status is PartitionStatus.FENCED
    assert not_ready_error(leader) == Errors["LEADER_NOT_AVAILABLE"]


def test_maybe_initialize_default_start_epoch_group_config_returns_earliest() -> None:
    """SharePartitionTest.testMaybeInitializeDefaultStartEpochGroupConfigReturnsEarliest: no start offset
    stored; share.auto.offset.reset=earliest starts at the log start offset."""
    leader = Leader(start=-1, log_end=10, log_start=0)
    leader.sp.group = leader.sp.group.__class__(auto_offset_reset="earliest")
    leader.sp.read_request()
    leader.sp.recover(ReadShareGroupStateResponse(LEADER_KEY, state_epoch=0, start_offset=-1), 0)
    leader.settle()
    assert leader.active and (leader.start_offset, leader.end_offset) == (0, 0)


def test_maybe_initialize_default_start_epoch_group_config_not_present() -> None:
    """SharePartitionTest.testMaybeInitializeDefaultStartEpochGroupConfigNotPresent: the default (latest)
    starts at the end of the log."""
    leader = Leader(start=-1, log_end=15)
    assert leader.active and (leader.start_offset, leader.end_offset) == (15, 15)


def test_maybe_initialize_and_acquire() -> None:
    """SharePartitionTest.testMaybeInitializeAndAcquire: with max fetch records 1, the gap 10-14 before the
    first stored batch is acquired whole; then, with 10, every available record up to 30 in one go."""
    leader = Leader(start=10, state_epoch=3, batches=[batch(15, 18, 0, 2), batch(20, 22, 4, 2),
                                                     batch(26, 30, 0, 1)])
    assert leader.acquire(10, 40, max_records=1) == [(10, 14, 1)]


def test_maybe_initialize_and_acquire_stored_state() -> None:
    """SharePartitionTest.testMaybeInitializeAndAcquire: the second fetch hands out the stored AVAILABLE
    batches with their next delivery count, the gaps between them as first deliveries, and skips the
    ARCHIVED one; then the records after the window."""
    leader = Leader(start=10, state_epoch=3, batches=[batch(15, 18, 0, 2), batch(20, 22, 4, 2),
                                                     batch(26, 30, 0, 1)])
    got = leader.acquire(10, 21)  # as many as the window holds that are not archived
    assert got == [(10, 14, 1), (15, 18, 3), (19, 19, 1), (23, 25, 1), (26, 30, 2)]
    assert leader.acquire(31, 19) == [(31, 49, 1)]
    assert leader.end_offset == 49


# -- acquire -----------------------------------------------------------------------------------


def test_acquire_single_record() -> None:
    """SharePartitionTest.testAcquireSingleRecord"""
    leader = Leader()
    assert leader.acquire(0, 1) == [(0, 0, 1)]
    assert leader.states(0, 0) == [(ACQUIRED, 1)] and leader.owner(0) == MEMBER


def test_acquire_multiple_records() -> None:
    """SharePartitionTest.testAcquireMultipleRecords: records 10-14 (the log starts at 10)."""
    leader = Leader(log_start=10)
    assert leader.acquire(10, 5) == [(10, 14, 1)]
    assert leader.states(10, 14) == [(ACQUIRED, 1)] * 5 and leader.owner(10) == MEMBER


def test_acquire_with_max_fetch_records() -> None:
    """SharePartitionTest.testAcquireWithMaxFetchRecords: max fetch records 10 over a fetched batch of 25
    acquires the whole batch after the 5 already in flight (5-24)."""
    leader = Leader()
    assert leader.acquire(0, 5, max_records=10) == [(0, 4, 1)]
    assert leader.acquire(0, 25, max_records=10) == [(5, 24, 1)]


def test_acquire_multiple_records_with_overlap_and_new_batch() -> None:
    """SharePartitionTest.testAcquireMultipleRecordsWithOverlapAndNewBatch: 0-4, then a fetch of 0-9
    acquires only 5-9."""
    leader = Leader()
    assert leader.acquire(0, 5) == [(0, 4, 1)]
    assert leader.acquire(0, 10) == [(5, 9, 1)]


def test_acquire_same_batch_again() -> None:
    """SharePartitionTest.testAcquireSameBatchAgain: records already acquired are not acquired again."""
    leader = Leader(log_start=10)
    assert leader.acquire(10, 5) == [(10, 14, 1)]
    assert leader.acquire(10, 5) == []
    assert leader.acquire(10, 2) == []


def test_acquire_with_empty_fetch_records() -> None:
    """SharePartitionTest.testAcquireWithEmptyFetchRecords"""
    leader = Leader()
    assert leader.acquire(0, 0) == []
    assert leader.sp.in_flight_count == 0


def test_acquire_with_max_in_flight_records_and_try_acquire_new_batch() -> None:
    """SharePartitionTest.testAcquireWithMaxInFlightRecordsAndTryAcquireNewBatch: with 20 in-flight records
    allowed, 0-9, then 10-24 (Kafka completes the batch that crosses the limit), then nothing."""
    leader = Leader(max_in_flight=20)
    assert leader.acquire(0, 10) == [(0, 9, 1)]
    leader.produce_batches(5, 10, 5, 2)  # 10-14, 15-24, 25-29, 30-31
    assert leader.acquire(10, 22, max_records=500) == [(10, 24, 1)]
    assert leader.sp.next_fetch_offset == 25
    assert leader.acquire(25, 10, max_records=500) == []  # at capacity, and the fetch is past the end
    assert leader.sp.next_fetch_offset == 25
    assert leader.acquire(25, 10) == []


def test_can_acquire_records_with_cached_data_and_limit_reached() -> None:
    """SharePartitionTest.testCanAcquireRecordsWithCachedDataAndLimitReached: with 1 in-flight record
    allowed, nothing more is acquired once 5 are in flight."""
    leader = Leader(max_in_flight=1)
    leader.acquire(0, 5)
    assert leader.sp.in_flight_count >= 1
    assert leader.acquire(5, 1) == []


def test_acquire_released_record() -> None:
    """SharePartitionTest.testAcquireReleasedRecord: 12-13 released, acquired again with count 2."""
    leader = Leader(log_start=10)
    leader.acquire(10, 5)
    assert leader.acknowledge(MEMBER, (12, 13, RELEASE)) == Errors.NONE
    assert leader.states(10, 14) == [(ACQUIRED, 1)] * 2 + [(AVAILABLE, 1)] * 2 + [(ACQUIRED, 1)]
    assert leader.acquire(10, 5) == [(12, 13, 2)]


@divergence("window-without-holes")
def test_acquire_released_record_multiple_batches() -> None:
    """SharePartitionTest.testAcquireReleasedRecordMultipleBatches: batches 10-14, 15-19, 23-27 and 28-32
    fetched one by one (20-22 hold no batch and are never fetched); 12-30 released in one acknowledgement,
    then acquired again piece by piece with delivery count 2. Kafka's cache has no entry for 20-22, so
    the acknowledgement skips them; the model's window has no holes: 20-22 are in it, ARCHIVED, and the
    acknowledgement across them is refused."""
    leader = Leader(log_start=10)
    leader.produce_batches(5, 5, 3, 5, 5)
    leader.log.compact([20, 21, 22])
    assert leader.acquire(10, 5) == [(10, 14, 1)]
    assert leader.acquire(15, 5) == [(15, 19, 1)]
    assert leader.acquire(20, 8) == [(23, 27, 1)]
    assert leader.acquire(28, 5) == [(28, 32, 1)]
    assert leader.sp.next_fetch_offset == 33
    assert leader.acknowledge(MEMBER, (12, 30, RELEASE)) == Errors.NONE
    assert leader.sp.next_fetch_offset == 12
    assert leader.acquire(12, 21) == [(12, 19, 2), (23, 30, 2)]


# -- acknowledge -------------------------------------------------------------------------------


def test_acknowledge_single_record_batch() -> None:
    """SharePartitionTest.testAcknowledgeSingleRecordBatch: 1 accepted while 0 is still acquired."""
    leader = Leader()
    leader.acquire(0, 1)
    leader.acquire(1, 1)
    assert leader.acknowledge(MEMBER, (1, 1, ACCEPT)) == Errors.NONE
    assert leader.states(0, 1) == [(ACQUIRED, 1), (ACKNOWLEDGED, 1)]


def test_acknowledge_multiple_record_batch() -> None:
    """SharePartitionTest.testAcknowledgeMultipleRecordBatch: the whole window accepted; the start offset
    moves past it and nothing is left in flight."""
    leader = Leader(log_start=5)
    leader.acquire(5, 10)
    assert leader.acknowledge(MEMBER, (5, 14, ACCEPT)) == Errors.NONE
    assert (leader.start_offset, leader.sp.in_flight_count) == (15, 0)


def test_acknowledge_multiple_record_batch_with_gap_offsets() -> None:
    """SharePartitionTest.testAcknowledgeMultipleRecordBatchWithGapOffsets: batches 5-6 and 10-18 (7-9 hold
    no batch, 15-17 are missing from the second); the second fetch acquires 10-18 whole, and 15-17,
    acknowledged with GAP, become ARCHIVED while the others are released or accepted. (The model's window
    has no holes: 7-9 are in it, archived, where Kafka's cache has nothing.)"""
    leader = Leader(log_start=5)
    leader.produce_batches(2, 3, 9)
    leader.log.compact([7, 8, 9, 15, 16, 17])
    assert leader.acquire(5, 2) == [(5, 6, 1)]
    assert leader.sp.next_fetch_offset == 7
    assert leader.acquire(7, 12) == [(10, 18, 1)]
    assert leader.sp.next_fetch_offset == 19
    second = (10, 18, RELEASE, RELEASE, RELEASE, RELEASE, RELEASE, GAP, GAP, GAP, ACCEPT)
    assert leader.acknowledge(MEMBER, (5, 6, RELEASE), second) == Errors.NONE
    assert leader.sp.next_fetch_offset == 5
    assert leader.states(5, 6) == [(AVAILABLE, 1)] * 2
    assert leader.states(10, 18) == [(AVAILABLE, 1)] * 5 + [(ARCHIVED, 1)] * 3 + [(ACKNOWLEDGED, 1)]


def test_acknowledge_out_of_range_cached_data_empty_cache() -> None:
    """SharePartitionTest.testAcknowledgeOutOfRangeCachedData: acknowledging with nothing in flight is
    INVALID_RECORD_STATE."""
    leader = Leader()
    assert leader.acknowledge(MEMBER, (0, 15, REJECT)) == Errors.INVALID_RECORD_STATE


def test_acknowledge_out_of_range_cached_data() -> None:
    """SharePartitionTest.testAcknowledgeOutOfRangeCachedData: offsets beyond the in-flight records are
    INVALID_REQUEST."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    assert leader.acknowledge(MEMBER, (20, 25, REJECT)) == Errors.INVALID_REQUEST


def test_acknowledge_with_another_member() -> None:
    """SharePartitionTest.testAcknowledgeWithAnotherMember"""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    assert leader.acknowledge(OTHER_MEMBER, (5, 9, REJECT)) == Errors.INVALID_RECORD_STATE
    assert leader.states(5, 9) == [(ACQUIRED, 1)] * 5


def test_acknowledge_when_offset_not_acquired() -> None:
    """SharePartitionTest.testAcknowledgeWhenOffsetNotAcquired: released records cannot be accepted;
    re-acquired, a subset is rejected, and rejecting it again fails."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    assert leader.acknowledge(MEMBER, (5, 9, RELEASE)) == Errors.NONE
    assert leader.acknowledge(MEMBER, (5, 9, ACCEPT)) == Errors.INVALID_RECORD_STATE
    assert leader.acquire(5, 5) == [(5, 9, 2)]
    assert leader.acknowledge(MEMBER, (6, 8, REJECT)) == Errors.NONE
    assert leader.acknowledge(MEMBER, (6, 8, REJECT)) == Errors.INVALID_RECORD_STATE


def test_acknowledge_rollback_with_full_batch_error() -> None:
    """SharePartitionTest.testAcknowledgeRollbackWithFullBatchError: a request repeating a batch fails
    with INVALID_RECORD_STATE and every record stays ACQUIRED."""
    leader = Leader(log_start=5)
    for first in (5, 10, 15):
        leader.acquire(first, 5)
    error = leader.acknowledge(MEMBER, (5, 9, RELEASE), (10, 14, ACCEPT), (15, 19, ACCEPT), (15, 19, ACCEPT))
    assert leader.states(5, 19) == [(ACQUIRED, 1)] * 15
    assert error == Errors.INVALID_RECORD_STATE


def test_acknowledge_rollback_with_subset_error() -> None:
    """SharePartitionTest.testAcknowledgeRollbackWithSubsetError: the same with an overlapping subset."""
    leader = Leader(log_start=5)
    for first in (5, 10, 15):
        leader.acquire(first, 5)
    error = leader.acknowledge(MEMBER, (5, 9, RELEASE), (10, 14, ACCEPT), (15, 19, ACCEPT), (16, 19, ACCEPT))
    assert leader.states(5, 19) == [(ACQUIRED, 1)] * 15
    assert error == Errors.INVALID_RECORD_STATE


def test_acknowledge_subset_with_another_member() -> None:
    """SharePartitionTest.testAcknowledgeSubsetWithAnotherMember: 5-7 accepted by their owner, then 9-11 by
    another member: refused."""
    leader = Leader(log_start=5)
    leader.acquire(5, 7)
    assert leader.acknowledge(MEMBER, (5, 7, ACCEPT)) == Errors.NONE
    assert leader.acknowledge(OTHER_MEMBER, (9, 11, ACCEPT)) == Errors.INVALID_RECORD_STATE


def test_invalid_acknowledge_type_in_batch_acknowledgement() -> None:
    """SharePartitionTest.testInvalidAcknowledgeTypeInBatchAcknowledgement: type 5 over 1-10 is INVALID_REQUEST
    and the records stay acquired."""
    leader = Leader(log_start=1)
    leader.acquire(1, 10)
    assert leader.acknowledge(MEMBER, (1, 10, 5)) == Errors.INVALID_REQUEST
    assert leader.states(1, 10) == [(ACQUIRED, 1)] * 10


def test_invalid_acknowledge_type_in_subset_acknowledgement() -> None:
    """SharePartitionTest.testInvalidAcknowledgeTypeInSubsetAcknowledgement: type -1 over 2-3."""
    leader = Leader(log_start=1)
    leader.acquire(1, 10)
    assert leader.acknowledge(MEMBER, (2, 3, -1)) == Errors.INVALID_REQUEST
    assert leader.states(1, 10) == [(ACQUIRED, 1)] * 10


def test_maybe_update_cached_state_when_acknowledge_type_accept() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAcknowledgeTypeAccept: a fetched batch of 250 is
    acquired whole although 200 records may be in flight; accepted, the window empties."""
    leader = Leader()
    assert leader.acquire(0, 250) == [(0, 249, 1)]
    assert leader.acknowledge(MEMBER, (0, 249, ACCEPT)) == Errors.NONE
    assert (leader.start_offset, leader.end_offset, leader.sp.in_flight_count) == (250, 250, 0)


def test_maybe_update_cached_state_when_acknowledge_type_reject() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAcknowledgeTypeReject, with 200 records (the model's
    in-flight limit is hard, see testMaybeUpdateCachedStateWhenAcknowledgeTypeAccept): all rejected, the
    window empties and more can be acquired."""
    leader = Leader()
    assert leader.acquire(0, 200) == [(0, 199, 1)]
    assert leader.acquire(200, 1) == []
    assert leader.acknowledge(MEMBER, (0, 199, REJECT)) == Errors.NONE
    assert (leader.start_offset, leader.sp.in_flight_count) == (200, 0)
    assert leader.acquire(200, 1) == [(200, 200, 1)]


def test_maybe_update_cached_state_when_acknowledge_type_release() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAcknowledgeTypeRelease, with 200 records: released
    records stay in flight, AVAILABLE, and the start offset does not move."""
    leader = Leader()
    leader.acquire(0, 200)
    assert leader.acknowledge(MEMBER, (0, 199, RELEASE)) == Errors.NONE
    assert (leader.start_offset, leader.end_offset) == (0, 199)
    assert leader.states(0, 199) == [(AVAILABLE, 1)] * 200


def test_maybe_update_cached_state_when_acknowledgements_from_beginning_for_batch_subset() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAcknowledgementsFromBeginningForBatchSubset: 0-14
    and 15-29 acquired (with room for 30 in flight: Kafka's limit of 20 is soft to the batch end, the
    model's hard); accepting 0-12 moves the start offset to 13 only."""
    leader = Leader(max_in_flight=30)
    leader.acquire(0, 15)
    leader.acquire(15, 15)
    assert leader.acknowledge(MEMBER, (0, 12, ACCEPT)) == Errors.NONE
    assert leader.states(13, 14) == [(ACQUIRED, 1)] * 2
    assert (leader.start_offset, leader.end_offset) == (13, 29)


def test_maybe_update_cached_state_when_acknowledgements_in_between() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAcknowledgementsInBetween: 0-14 and 15-29 acquired
    (room for 30 in flight, as above); rejecting 10-14 does not move the start offset."""
    leader = Leader(max_in_flight=30)
    leader.acquire(0, 15)
    leader.acquire(15, 15)
    assert leader.acknowledge(MEMBER, (10, 14, REJECT)) == Errors.NONE
    assert leader.states(9, 10) == [(ACQUIRED, 1), (ARCHIVED, 1)]
    assert leader.states(15, 15) == [(ACQUIRED, 1)] and leader.owner(15) == MEMBER
    assert (leader.start_offset, leader.end_offset) == (0, 29)


def test_maybe_update_cached_state_when_all_records_in_cached_state_are_acknowledged() -> None:
    """SharePartitionTest.testMaybeUpdateCachedStateWhenAllRecordsInCachedStateAreAcknowledged: 0-29 accepted
    (room for 30 in flight, as above); the window is empty and more can be acquired."""
    leader = Leader(max_in_flight=30)
    leader.acquire(0, 15)
    leader.acquire(15, 15)
    assert leader.acknowledge(MEMBER, (0, 29, ACCEPT)) == Errors.NONE
    assert (leader.start_offset, leader.end_offset, leader.sp.in_flight_count) == (30, 30, 0)
    assert leader.acquire(30, 1) == [(30, 30, 1)]


# -- acquisition lock --------------------------------------------------------------------------


def test_acquisition_lock_for_acquiring_single_record() -> None:
    """SharePartitionTest.testAcquisitionLockForAcquiringSingleRecord: the lock expires, the record is
    AVAILABLE with its delivery count 1."""
    leader = Leader()
    leader.acquire(0, 1)
    leader.advance_time(LOCK_MS)
    assert leader.states(0, 0) == [(AVAILABLE, 1)] and leader.owner(0) is None


def test_acquisition_lock_timeout_cause_max_delivery_count_exceed() -> None:
    """SharePartitionTest.testAcquisitionLockTimeoutCauseMaxDeliveryCountExceed: with delivery limit 2,
    the second expiry archives 10-19 (0-9 keep the start offset where it is)."""
    leader = Leader(max_delivery_count=2)
    leader.acquire(0, 10)
    leader.acquire(10, 10)
    leader.advance_time(LOCK_MS)
    assert leader.states(10, 19) == [(AVAILABLE, 1)] * 10
    assert leader.acquire(10, 10) == [(10, 19, 2)]  # a fetch at 10: 0-9 stay AVAILABLE
    leader.advance_time(LOCK_MS)
    assert leader.states(0, 9) == [(AVAILABLE, 1)] * 10
    assert leader.states(10, 19) == [(ARCHIVED, 2)] * 10


def test_acquisition_lock_timeout_cause_spso_move_forward() -> None:
    """SharePartitionTest.testAcquisitionLockTimeoutCauseSPSOMoveForward: 0-4 reach the limit of 2 and are
    archived; the start offset moves to 5."""
    leader = Leader(max_delivery_count=2)
    leader.acquire(0, 10)
    leader.advance_time(LOCK_MS)
    assert leader.acquire(0, 5) == [(0, 4, 2)]
    leader.advance_time(LOCK_MS)
    assert leader.start_offset == 5
    assert leader.states(5, 9) == [(AVAILABLE, 1)] * 5


def test_acquisition_lock_timeout_cause_spso_move_forward_and_clear_cached_state() -> None:
    """SharePartitionTest.testAcquisitionLockTimeoutCauseSPSOMoveForwardAndClearCachedState: all archived,
    nothing in flight."""
    leader = Leader(max_delivery_count=2)
    leader.acquire(0, 10)
    leader.advance_time(LOCK_MS)
    leader.acquire(0, 10)
    leader.advance_time(LOCK_MS)
    assert (leader.start_offset, leader.sp.in_flight_count) == (10, 0)


def test_acknowledge_after_acquisition_lock_timeout() -> None:
    """SharePartitionTest.testAcknowledgeAfterAcquisitionLockTimeout: after expiry neither ACCEPT nor REJECT
    is allowed."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    leader.advance_time(LOCK_MS)
    assert leader.acknowledge(MEMBER, (5, 9, ACCEPT)) == Errors.INVALID_RECORD_STATE
    assert leader.acknowledge(MEMBER, (5, 9, REJECT)) == Errors.INVALID_RECORD_STATE
    assert leader.states(5, 9) == [(AVAILABLE, 1)] * 5


def test_acquisition_lock_after_different_acknowledges() -> None:
    """SharePartitionTest.testAcquisitionLockAfterDifferentAcknowledges: 5-6 released, 8-9 accepted; when
    the lock expires 7 becomes AVAILABLE too, and no lock is left."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    assert leader.acknowledge(MEMBER, (5, 6, RELEASE)) == Errors.NONE
    assert leader.acknowledge(MEMBER, (8, 9, ACCEPT)) == Errors.NONE
    leader.advance_time(LOCK_MS)
    assert leader.states(5, 9) == [(AVAILABLE, 1)] * 3 + [(ACKNOWLEDGED, 1)] * 2
    assert leader.sp.next_lock_deadline_ms() is None and leader.start_offset == 5


def test_acquisition_lock_on_acknowledging_single_record_batch() -> None:
    """SharePartitionTest.testAcquisitionLockOnAcknowledgingSingleRecordBatch: a released record has no
    lock; its expiry time passing changes nothing."""
    leader = Leader()
    leader.acquire(0, 1)
    assert leader.acknowledge(MEMBER, (0, 0, RELEASE)) == Errors.NONE
    assert leader.sp.next_lock_deadline_ms() is None
    leader.advance_time(LOCK_MS)
    assert leader.states(0, 0) == [(AVAILABLE, 1)]


@divergence("lock-timeout-waits-for-write")
def test_acquisition_lock_on_batch_with_write_share_group_state_failure() -> None:
    """SharePartitionTest.testAcquisitionLockOnBatchWithWriteShareGroupStateFailure: the expiry's write
    fails (UNKNOWN_SERVER_ERROR); the records are AVAILABLE nonetheless (trunk logs the failure)."""
    leader = Leader(log_start=5)
    leader.acquire(5, 10)
    leader.write_error = Errors.UNKNOWN_SERVER_ERROR
    leader.advance_time(LOCK_MS)
    assert leader.states(5, 14) == [(AVAILABLE, 1)] * 10


# -- releaseAcquiredRecords --------------------------------------------------------------------


def test_release_single_record_batch() -> None:
    """SharePartitionTest.testReleaseSingleRecordBatch: AVAILABLE, delivery count kept (KAFKA-19972)."""
    leader = Leader()
    leader.acquire(0, 1)
    leader.release()
    assert leader.states(0, 0) == [(AVAILABLE, 1)] and leader.owner(0) is None


def test_release_multiple_record_batch() -> None:
    """SharePartitionTest.testReleaseMultipleRecordBatch"""
    leader = Leader(log_start=5)
    leader.acquire(5, 10)
    leader.release()
    assert leader.states(5, 14) == [(AVAILABLE, 1)] * 10


def test_release_multiple_acknowledged_record_batch() -> None:
    """SharePartitionTest.testReleaseMultipleAcknowledgedRecordBatch: acknowledged records are not released.
    (Kafka's fetches leave 7-9 untracked; here they are records, fetched and accepted with the rest: the
    model cannot leave offsets inside its window untracked, see the gap-offset tests.)"""
    leader = Leader()
    leader.acquire(0, 5)
    leader.acquire(5, 14)
    assert leader.acknowledge(MEMBER, (5, 18, ACCEPT)) == Errors.NONE
    leader.release()
    assert leader.states(0, 4) == [(AVAILABLE, 1)] * 5
    assert leader.states(5, 18) == [(ACKNOWLEDGED, 1)] * 14


def test_release_acquired_records_with_another_member() -> None:
    """SharePartitionTest.testReleaseAcquiredRecordsWithAnotherMember: releasing one member's records
    leaves the other's acquired. (Kafka's batch 10-20 has records only at 10, 11, 14, 16 and 20; here
    every offset is a record, acknowledged with the same types, GAP included.)"""
    leader = Leader(log_start=5)
    leader.acquire(5, 5, member=OTHER_MEMBER)
    leader.acquire(10, 11)
    assert leader.acknowledge(MEMBER, (10, 18, ACCEPT, ACCEPT, GAP, GAP, ACCEPT, GAP, ACCEPT, GAP, ACCEPT)) \
        == Errors.NONE
    leader.release(MEMBER)
    assert leader.states(5, 9) == [(ACQUIRED, 1)] * 5 and leader.owner(5) == OTHER_MEMBER
    assert leader.states(19, 20) == [(AVAILABLE, 1)] * 2
    assert [s for s, _ in leader.states(10, 18)] == [ACKNOWLEDGED, ACKNOWLEDGED, ARCHIVED, ARCHIVED, ACKNOWLEDGED,
                                                     ARCHIVED, ACKNOWLEDGED, ARCHIVED, ACKNOWLEDGED]
    leader.release(OTHER_MEMBER)
    assert leader.states(5, 9) == [(AVAILABLE, 1)] * 5 and leader.owner(5) is None


def test_release_acquired_records_for_empty_cached_data() -> None:
    """SharePartitionTest.testReleaseAcquiredRecordsForEmptyCachedData"""
    leader = Leader()
    leader.release()
    assert leader.sp.in_flight_count == 0 and leader.writes == []


def test_release_acquired_records_after_different_acknowledges() -> None:
    """SharePartitionTest.testReleaseAcquiredRecordsAfterDifferentAcknowledges: only ACQUIRED records move."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    assert leader.acknowledge(MEMBER, (5, 6, RELEASE)) == Errors.NONE
    assert leader.acknowledge(MEMBER, (8, 9, ACCEPT)) == Errors.NONE
    leader.release()
    assert leader.states(5, 9) == [(AVAILABLE, 1)] * 3 + [(ACKNOWLEDGED, 1)] * 2


def test_max_delivery_count_limit_not_exceeded_for_records_subset_after_release_acquired_records() -> None:
    """SharePartitionTest.testMaxDeliveryCountLimitNotExceededForRecordsSubsetAfterReleaseAcquiredRecords:
    with limit 2, 10-14 released and delivered again, then the session's records released: 10-14 are
    archived at the limit, 0-9 (delivered once) are AVAILABLE."""
    leader = Leader(max_delivery_count=2)
    leader.acquire(0, 10)
    leader.acquire(10, 5)
    assert leader.acknowledge(MEMBER, (10, 14, RELEASE)) == Errors.NONE
    assert leader.acquire(10, 5) == [(10, 14, 2)]
    leader.release()
    assert leader.states(0, 9) == [(AVAILABLE, 1)] * 10
    assert leader.states(10, 14) == [(ARCHIVED, 2)] * 5


def test_release_acquired_records_do_not_decrease_delivery_count() -> None:
    """SharePartitionTest.testReleaseAcquiredRecordsDoNotDecreaseDeliveryCount (KAFKA-19972): released
    records keep their count, and the next acquisition counts on from it."""
    leader = Leader(log_start=5)
    leader.acquire(5, 5)
    leader.acquire(10, 5)
    assert leader.acknowledge(MEMBER, (12, 13, ACCEPT)) == Errors.NONE
    leader.release()
    assert leader.states(5, 11) == [(AVAILABLE, 1)] * 7 and leader.states(14, 14) == [(AVAILABLE, 1)]
    assert leader.acquire(5, 10) == [(5, 11, 2), (14, 14, 2)]


# -- the delivery-count limit ------------------------------------------------------------------


def test_max_delivery_count_limit_exceeded_for_record_batch() -> None:
    """SharePartitionTest.testMaxDeliveryCountLimitExceededForRecordBatch: limit 2, released twice: archived,
    the start offset passes them."""
    leader = Leader(log_start=5, max_delivery_count=2)
    leader.acquire(5, 10)
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    leader.acquire(5, 10)
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    assert (leader.start_offset, leader.end_offset, leader.sp.in_flight_count) == (15, 15, 0)


def test_max_delivery_count_limit_exceeded_for_records_subset() -> None:
    """SharePartitionTest.testMaxDeliveryCountLimitExceededForRecordsSubset"""
    leader = Leader(log_start=10, max_delivery_count=2)
    leader.acquire(10, 5)
    leader.acquire(15, 5)
    assert leader.acknowledge(MEMBER, (10, 12, ACCEPT), (13, 16, RELEASE), (17, 19, ACCEPT)) == Errors.NONE
    assert leader.acquire(10, 10) == [(13, 16, 2)]
    assert leader.acknowledge(MEMBER, (13, 16, RELEASE)) == Errors.NONE
    assert (leader.start_offset, leader.sp.in_flight_count) == (20, 0)


def test_max_delivery_count_limit_exceeded_for_records_subset_and_cached_state_not_cleared() -> None:
    """SharePartitionTest.testMaxDeliveryCountLimitExceededForRecordsSubsetAndCachedStateNotCleared: limit
    2; 0-4 acquired, 0-1 released and acquired again, then 0-4 released: 0-1 are archived at the limit,
    2-4 AVAILABLE with count 1. (Trunk keeps 0-1 in its cached batch; the model's window starts after
    them, at 2, the offset trunk fetches from next.)"""
    leader = Leader(max_delivery_count=2)
    leader.acquire(0, 5)
    assert leader.acknowledge(MEMBER, (0, 1, RELEASE)) == Errors.NONE
    assert leader.acquire(0, 2) == [(0, 1, 2)]
    assert leader.acknowledge(MEMBER, (0, 4, RELEASE)) == Errors.NONE
    assert leader.start_offset == 2
    assert leader.states(2, 4) == [(AVAILABLE, 1)] * 3


# -- writes to the persister -------------------------------------------------------------------


@divergence("unknown-topic-write-drops-state")
def test_acknowledge_batch_with_write_share_group_state_failure() -> None:
    """SharePartitionTest.testAcknowledgeBatchWithWriteShareGroupStateFailure: the write answers
    UNKNOWN_TOPIC_OR_PARTITION; the acknowledgement fails with it and the records stay ACQUIRED."""
    leader = Leader(log_start=5)
    leader.acquire(5, 10)
    leader.write_error = Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert leader.acknowledge(MEMBER, (5, 14, ACCEPT)) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert leader.states(5, 14) == [(ACQUIRED, 1)] * 10 and leader.owner(5) == MEMBER


def test_acknowledge_batch_with_write_share_group_state_failure_retriable() -> None:
    """SharePartitionTest.testAcknowledgeBatchWithWriteShareGroupStateFailure, with an error the model takes
    as a failed write (NOT_COORDINATOR): the acknowledgement fails (COORDINATOR_NOT_AVAILABLE, as trunk's
    fetchPersisterError maps it; testWriteShareGroupStateFailure), the records stay ACQUIRED."""
    leader = Leader(log_start=5)
    leader.acquire(5, 10)
    leader.write_error = Errors.NOT_COORDINATOR
    assert leader.acknowledge(MEMBER, (5, 14, ACCEPT)) == Errors.COORDINATOR_NOT_AVAILABLE
    assert leader.states(5, 14) == [(ACQUIRED, 1)] * 10 and leader.owner(5) == MEMBER


@pytest.mark.parametrize(("error", "status"), [
    (Errors.FENCED_STATE_EPOCH, PartitionStatus.STALE_STATE),
    (Errors.FENCED_LEADER_EPOCH, PartitionStatus.FENCED),
])
def test_write_share_group_state_failure(error: Errors, status: PartitionStatus) -> None:
    """SharePartitionTest.testWriteShareGroupStateFailure: FENCED_STATE_EPOCH and FENCED_LEADER_EPOCH end
    this leader's state, and the acknowledgement is answered NOT_LEADER_OR_FOLLOWER for both."""
    leader = Leader()
    leader.acquire(0, 5)
    leader.write_error = error
    assert leader.acknowledge(MEMBER, (0, 4, ACCEPT)) == Errors.NOT_LEADER_OR_FOLLOWER
    assert leader.sp.status is status


def test_write_share_group_state() -> None:
    """SharePartitionTest.testWriteShareGroupState: an acknowledgement is written with the state epoch
    and the changed records."""
    leader = Leader(state_epoch=3)
    leader.acquire(0, 5)
    assert leader.acknowledge(MEMBER, (0, 4, ACCEPT)) == Errors.NONE
    request = leader.writes[-1]
    assert request.state_epoch == 3 and request.key == LEADER_KEY


def test_number_of_write_calls_on_updates() -> None:
    """SharePartitionTest.testNumberOfWriteCallsOnUpdates: 2-6 accepted, then the member's records released:
    one write (the release has nothing left to release)."""
    leader = Leader(log_start=2)
    leader.acquire(2, 5)
    before = len(leader.writes)  # the model's own write of the log start offset, at recovery
    assert leader.acknowledge(MEMBER, (2, 6, ACCEPT)) == Errors.NONE
    leader.release()
    assert len(leader.writes) == before + 1


def test_acquire_with_write_share_group_state_delay() -> None:
    """SharePartitionTest.testAcquireWithWriteShareGroupStateDelay: 2-3 and 5-9 released, the write not
    answered yet: a fetch of 0-14 acquires only 10-14; once the write is answered, the released 7."""
    leader = Leader()
    leader.acquire(0, 5)
    leader.acquire(5, 5)
    result = leader.sp.acknowledge(MEMBER, [AcknowledgementBatch(2, 3, (RELEASE,)),
                                            AcknowledgementBatch(5, 9, (RELEASE,))], leader.now)
    assert result.error_code == Errors.NONE
    held = leader.sp.take_writes()
    leader.produce_to(15)
    assert [(a.first_offset, a.last_offset) for a in leader.sp.acquire(MEMBER, 15, leader.now)] == [(10, 14)]
    for w in held:
        leader.sp.complete_write(w.write_id, WriteShareGroupStateResponse(LEADER_KEY), leader.now)
    assert leader.acquire(0, 15) == [(2, 3, 2), (5, 9, 2)]


# -- the log start offset moves ------------------------------------------------------------------


def test_lso_movement_on_initialization_share_partition() -> None:
    """SharePartitionTest.testLsoMovementOnInitializationSharePartition"""
    leader = Leader()
    leader.move_log_start(0)
    assert (leader.start_offset, leader.end_offset) == (0, 0)
    leader.move_log_start(5)
    assert (leader.start_offset, leader.end_offset) == (5, 5)


def test_lso_movement_for_archiving_batches() -> None:
    """SharePartitionTest.testLsoMovementForArchivingBatches: below the new start offset 20, AVAILABLE
    records are archived and ACQUIRED ones stay with their member; above it nothing changes."""
    leader = Leader(log_start=2)
    for first in range(2, 37, 5):
        leader.acquire(first, 5)
    assert leader.acknowledge(MEMBER, (2, 6, ACCEPT), (12, 16, RELEASE), (22, 26, RELEASE),
                              (27, 31, REJECT)) == Errors.NONE
    leader.move_log_start(20)
    assert (leader.start_offset, leader.end_offset) == (20, 36)
    assert leader.states(22, 36) == [(AVAILABLE, 1)] * 5 + [(ARCHIVED, 1)] * 5 + [(ACQUIRED, 1)] * 5
    assert leader.owner(7) == MEMBER and leader.states(7, 11) == [(ACQUIRED, 1)] * 5


def test_lso_movement_for_archiving_batches_above_the_start() -> None:
    """SharePartitionTest.testLsoMovementForArchivingBatches: the part above the new start offset."""
    leader = Leader(log_start=2)
    for first in range(2, 37, 5):
        leader.acquire(first, 5)
    assert leader.acknowledge(MEMBER, (2, 6, ACCEPT), (12, 16, RELEASE), (22, 26, RELEASE),
                              (27, 31, REJECT)) == Errors.NONE
    leader.move_log_start(20)
    assert (leader.start_offset, leader.end_offset) == (20, 36)
    assert leader.states(22, 36) == [(AVAILABLE, 1)] * 5 + [(ARCHIVED, 1)] * 5 + [(ACQUIRED, 1)] * 5


def test_lso_movement_ahead_of_end_offset() -> None:
    """SharePartitionTest.testLsoMovementAheadOfEndOffset: start and end at the new log start 14."""
    leader = Leader(log_start=2)
    leader.acquire(2, 5)
    leader.acquire(7, 5)
    leader.move_log_start(14)
    assert (leader.start_offset, leader.end_offset) == (14, 14)


def test_lso_movement_to_end_offset() -> None:
    """SharePartitionTest.testLsoMovementToEndOffset: released records below the new start 11 are
    archived; acquired ones stay acquired."""
    leader = Leader(log_start=2)
    leader.acquire(2, 5)
    leader.acquire(7, 5)
    assert leader.acknowledge(MEMBER, (7, 8, RELEASE)) == Errors.NONE
    leader.move_log_start(11)
    assert (leader.start_offset, leader.end_offset) == (11, 11)
    assert leader.states(11, 11) == [(ACQUIRED, 1)]
    assert leader.states(7, 10) == [(ARCHIVED, 1)] * 2 + [(ACQUIRED, 1)] * 2


def test_acknowledge_batch_post_lso_movement() -> None:
    """SharePartitionTest.testAcknowledgeBatchPostLsoMovement: a batch acknowledged after the start moved
    into it: the offsets below the start are skipped, the rest applied."""
    leader = Leader(log_start=2)
    leader.acquire(2, 5)
    leader.acquire(7, 5)
    leader.move_log_start(9)
    assert leader.acknowledge(MEMBER, (7, 11, ACCEPT)) == Errors.NONE
    assert leader.start_offset == 12


# -- mechanisms the model does not have ----------------------------------------------------------


def test_next_fetch_offset_initial_state() -> None:
    """SharePartitionTest.testNextFetchOffsetInitialState"""
    assert Leader().sp.__getattribute__("next_fetch_offset") == 0


def test_next_fetch_offset_with_multiple_consumers() -> None:
    """SharePartitionTest.testNextFetchOffsetWithMultipleConsumers: member-1 releases 0-2; member-2's fetch
    at offset 3 acquires 3-4, leaving 0-2 AVAILABLE for member-1's next fetch."""
    leader = Leader(max_in_flight=100)
    leader.acquire(0, 3)
    assert leader.acknowledge(MEMBER, (0, 2, RELEASE)) == Errors.NONE
    assert leader.acquire(3, 2, member=OTHER_MEMBER) == [(3, 4, 1)]
    assert leader.acquire(0, 3) == [(0, 2, 2)]


def test_maybe_acquire_and_release_fetch_lock() -> None:
    """SharePartitionTest.testMaybeAcquireAndReleaseFetchLock: the lock is taken once, not again by the same
    fetch id while held, and can be taken again once released. (Kafka's lock-time metrics are not modelled.)"""
    sp = Leader().sp
    assert sp.maybe_acquire_fetch_lock("fetch-1")
    assert not sp.maybe_acquire_fetch_lock("fetch-1")
    assert sp.release_fetch_lock("fetch-1")
    assert sp.maybe_acquire_fetch_lock("fetch-1")
    assert sp.release_fetch_lock("fetch-1")
    assert sp.fetch_lock is None


def test_renew_acknowledge_with_complete_batch_ack() -> None:
    """SharePartitionTest.testRenewAcknowledgeWithCompleteBatchAck: RENEW (type 4) keeps the records
    acquired under a new lock."""
    leader = Leader()
    leader.acquire(0, 5)
    assert leader.acknowledge(MEMBER, (0, 4, 4)) == Errors.NONE
    assert leader.states(0, 4) == [(ACQUIRED, 1)] * 5


def test_throttle_records_when_pending_deliveries_exist() -> None:
    """SharePartitionTest.testThrottleRecordsWhenPendingDeliveriesExist: at delivery count
    max(2, ceil(limit / 2)) a batch is acquired in smaller pieces."""
    leader = Leader(max_delivery_count=5)
    leader.acquire(0, 10)
    for _ in range(2):
        leader.acknowledge(MEMBER, (0, 9, RELEASE))
        leader.acquire(0, 10)
    leader.acknowledge(MEMBER, (0, 9, RELEASE))
    assert leader.acquire(0, 10) == [(0, 4, 4)]


def test_acquire_single_batch_in_record_limit_mode() -> None:
    """SharePartitionTest.testAcquireSingleBatchInRecordLimitMode: in record_limit mode max fetch records
    5 over a batch of 10 acquires 0-4 and leaves 5-9 AVAILABLE in the same in-flight batch; another
    member's fetch of the batch acquires 5-9."""
    leader = Leader()
    assert leader.acquire(0, 10, max_records=5, mode="record_limit") == [(0, 4, 1)]
    assert leader.sp.next_fetch_offset == 5 and leader.sp.in_flight_batch_starts() == [0]
    assert leader.states(0, 9) == [(ACQUIRED, 1)] * 5 + [(AVAILABLE, 0)] * 5
    assert leader.acquire(0, 10, member=OTHER_MEMBER, max_records=5, mode="record_limit") == [(5, 9, 1)]
    assert leader.owner(5) == OTHER_MEMBER and leader.sp.next_fetch_offset == 10


def test_acquire_multiple_batches_in_record_limit_mode() -> None:
    """SharePartitionTest.testAcquireMultipleBatchesInRecordLimitMode: batches 10-14, 15-29 and 30-44;
    10 records in record_limit mode acquire 10-19, the in-flight batch runs to 29 and 20-29 stay
    AVAILABLE."""
    leader = Leader(log_start=10)
    leader.produce_batches(5, 15, 15)
    assert leader.acquire(10, 35, max_records=10, mode="record_limit") == [(10, 19, 1)]
    assert leader.sp.next_fetch_offset == 20 and leader.sp.in_flight_batch_starts() == [10]
    assert (leader.start_offset, leader.end_offset) == (10, 29)
    assert leader.states(19, 20) == [(ACQUIRED, 1), (AVAILABLE, 0)]


DLQ_TOPIC = "test-dlq-topic"  # SharePartitionTest.configProviderWithDlqTopic
ARCHIVING = RecordState.ARCHIVING


def _enqueued(leader: Leader) -> list[tuple[int, int, int, str]]:
    return [(e.first_offset, e.last_offset, e.delivery_count, e.cause) for e in leader.dlq_enqueued]


def test_acknowledge_reject_with_dlq_enabled() -> None:
    """SharePartitionTest.testAcknowledgeRejectWithDlqEnabled: a REJECT with a DLQ topic goes ACQUIRED ->
    ARCHIVING (phase 1 write) -> DLQ enqueue -> ARCHIVED (phase 2 write); the SPSO then passes it."""
    leader = Leader(start=5, dlq_topic=DLQ_TOPIC)
    assert leader.acquire(5, 5) == [(5, 9, 1)]
    assert leader.acquire(10, 5) == [(10, 14, 1)]
    assert leader.acknowledge(MEMBER, (5, 9, REJECT)) == Errors.NONE
    assert leader.state(5) is None  # evicted: the start offset moved past it
    assert leader.state(10) == (ACQUIRED, 1)
    assert leader.start_offset == 10
    assert leader.sp.delivery_complete_count == 0
    assert _enqueued(leader) == [(5, 9, 1, "client-reject")]  # exactly once
    # The two phases are two durable writes: ARCHIVING, then ARCHIVED.
    states = [[(b.first_offset, b.last_offset, b.delivery_state) for b in w.state_batches] for w in leader.writes]
    assert states[-2:] == [[(5, 9, ARCHIVING)], [(5, 9, ARCHIVED)]]


def test_acknowledge_reject_with_dlq_supplier_enabled_but_no_dlq_topic_configured() -> None:
    """SharePartitionTest.testAcknowledgeRejectWithDlqSupplierEnabledButNoDlqTopicConfigured: without a DLQ
    topic a REJECT goes straight to ARCHIVED and nothing is enqueued."""
    leader = Leader(start=5)
    leader.acquire(5, 5)
    leader.acquire(10, 5)
    assert leader.acknowledge(MEMBER, (5, 9, REJECT)) == Errors.NONE
    assert leader.start_offset == 10
    assert leader.state(10) == (ACQUIRED, 1)
    assert leader.dlq_enqueued == []
    assert all(b.delivery_state != ARCHIVING for w in leader.writes for b in w.state_batches)


def test_acquisition_lock_timeout_with_dlq_enabled_complete_batch() -> None:
    """SharePartitionTest.testAcquisitionLockTimeoutWithDlqEnabledCompleteBatch: a lock timeout at the
    delivery-count limit goes to ARCHIVING (not ARCHIVED), then through the DLQ to ARCHIVED."""
    leader = Leader(max_delivery_count=2, dlq_topic=DLQ_TOPIC)
    leader.acquire(0, 10)
    leader.acquire(10, 10)
    leader.advance_time(LOCK_MS)
    assert leader.state(0) == (AVAILABLE, 1) and leader.state(10) == (AVAILABLE, 1)
    assert leader.sp.delivery_complete_count == 0
    assert leader.acquire(0, 10) == [(0, 9, 2)]
    leader.advance_time(LOCK_MS)
    assert leader.start_offset == 10
    assert leader.sp.delivery_complete_count == 0
    assert leader.state(10) == (AVAILABLE, 1)
    assert _enqueued(leader) == [(0, 9, 2, "delivery-count-exceeded")]


def test_maybe_initialize_archiving_state_with_dlq_enabled() -> None:
    """SharePartitionTest.testMaybeInitializeArchivingStateWithDlqEnabled: a batch read back ARCHIVING
    (phase 1 durable, phase 2 not) is resumed: enqueued once, with the cause inferred from its delivery
    count, and made ARCHIVED with one write."""
    leader = Leader(start=5, state_epoch=3, batches=[batch(5, 9, 0, 2), batch(10, 14, 3, 5)], dlq_topic=DLQ_TOPIC)
    assert leader.active
    assert leader.state(5) == (AVAILABLE, 2)
    assert leader.state(10) == (ARCHIVED, 5)
    assert (leader.start_offset, leader.end_offset) == (5, 14)
    assert leader.sp.delivery_complete_count == 5
    assert _enqueued(leader) == [(10, 14, 5, "delivery-count-exceeded")]
    assert len(leader.writes) == 1


def test_maybe_initialize_archiving_state_with_dlq_disabled() -> None:
    """SharePartitionTest.testMaybeInitializeArchivingStateWithDlqDisabled: ARCHIVING read back is drained
    to ARCHIVED even with no DLQ now (it would stall the start offset otherwise); the enqueue is still
    attempted, cause client-reject (delivery count below the limit)."""
    leader = Leader(start=0, state_epoch=3, batches=[batch(0, 4, 3, 2)])
    assert leader.active
    assert (leader.start_offset, leader.end_offset) == (5, 5)
    assert leader.sp.delivery_complete_count == 0
    assert _enqueued(leader) == [(0, 4, 2, "client-reject")]
    assert len(leader.writes) == 1


def test_maybe_initialize_multiple_archiving_states() -> None:
    """SharePartitionTest.testMaybeInitializeMultipleArchivingStates: each ARCHIVING batch is drained on
    its own, its cause inferred from its delivery count; one phase-2 write each."""
    leader = Leader(start=0, state_epoch=3, dlq_topic=DLQ_TOPIC,
                    batches=[batch(0, 4, 0, 1), batch(5, 9, 3, 2), batch(10, 14, 3, 5)])
    assert leader.state(0) == (AVAILABLE, 1)
    assert leader.state(5) == (ARCHIVED, 2)
    assert leader.state(10) == (ARCHIVED, 5)
    assert (leader.start_offset, leader.end_offset) == (0, 14)
    assert leader.sp.delivery_complete_count == 10
    assert sorted(_enqueued(leader)) == [(5, 9, 2, "client-reject"), (10, 14, 5, "delivery-count-exceeded")]
    assert len(leader.writes) == 2


def test_max_delivery_count_uses_group_config_when_present() -> None:
    """SharePartitionTest.testMaxDeliveryCountUsesGroupConfigWhenPresent"""
    leader = Leader(max_delivery_count=5)
    leader.sp.group = GroupConfig(delivery_count_limit=8)
    assert leader.sp.delivery_count_limit == 8


def test_max_delivery_count_falls_back_to_default_when_no_group_config() -> None:
    """SharePartitionTest.testMaxDeliveryCountFallsBackToDefaultWhenNoGroupConfig"""
    assert Leader(max_delivery_count=5).sp.delivery_count_limit == 5


def test_dynamic_delivery_count_decrease_causes_archival() -> None:
    """SharePartitionTest.testDynamicDeliveryCountDecreaseCausesArchival: the group's limit drops to 2
    while 5-14 are on their second delivery; released, they are archived."""
    leader = Leader(max_delivery_count=10, log_start=5)
    leader.acquire(5, 10)
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    assert leader.acquire(5, 10) == [(5, 14, 2)]
    leader.sp.group = GroupConfig(delivery_count_limit=2)
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    assert leader.acquire(5, 10) == []
    assert leader.sp.next_fetch_offset == 15


def test_dynamic_delivery_count_increase_allows_more_deliveries() -> None:
    """SharePartitionTest.testDynamicDeliveryCountIncreaseAllowsMoreDeliveries"""
    leader = Leader(max_delivery_count=2, log_start=5)
    leader.acquire(5, 10)
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    leader.sp.group = GroupConfig(delivery_count_limit=10)
    assert leader.acquire(5, 10) == [(5, 14, 2)]
    assert leader.acknowledge(MEMBER, (5, 14, RELEASE)) == Errors.NONE
    assert leader.acquire(5, 10) == [(5, 14, 3)]
    assert leader.sp.in_flight_count == 10


def test_max_in_flight_records_uses_group_config_when_present() -> None:
    """SharePartitionTest.testMaxInFlightRecordsUsesGroupConfigWhenPresent"""
    leader = Leader(max_in_flight=2000)
    leader.sp.group = GroupConfig(partition_max_record_locks=5000)
    assert leader.sp.max_record_locks == 5000
    assert Leader(max_in_flight=2000).sp.max_record_locks == 2000
