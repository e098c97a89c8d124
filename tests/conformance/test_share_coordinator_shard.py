"""ShareCoordinatorShardTest, against ``model.core.share_coordinator.ShareCoordinatorShard``.

Kafka's shard returns records and its runtime replays them; the model's shard applies the records
it returns before returning (``apply`` is its replay), so "replay the result" is implicit here.
Where Kafka's test deliberately does not replay a record (to show the stored leader epoch is
untouched until it is), only the response and the record are compared. Kafka's timestamps are not
in the model; its deliveryCompleteCount is (KIP-1226: ``delivery_complete_count`` of the write, the
records, the stored state and the read-summary).
"""

from __future__ import annotations

from model.core.errors import Errors
from model.core.metadata import MetadataImage
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_records import ShareSnapshot, ShareTombstone, ShareUpdate
from model.core.share_state import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    SharePartitionKey,
)
from tests.conformance.builders import (
    COORDINATOR_KEY as KEY,
)
from tests.conformance.builders import (
    as_tuples,
    batch,
    initialized_shard,
    write,
    write_and_replay,
)

NEGATIVE_PARTITION = SharePartitionKey(KEY.group_id, KEY.topic_id, -1)
# Kafka's test builder: an image that knows the topic with one partition (PARTITION + 1).
ONE_PARTITION = MetadataImage().with_topic("topic", 1, topic_id=KEY.topic_id)


def _stored(shard: ShareCoordinatorShard, key: SharePartitionKey = KEY) -> tuple[int, int, int, list[tuple[int, ...]]]:
    """(state epoch, leader epoch, start offset, batches) as stored."""
    state = shard.state(key)
    assert state is not None
    return state.state_epoch, state.leader_epoch, state.start_offset, as_tuples(state.state_batches)


# -- replay ----------------------------------------------------------------------------------


def test_replay_with_share_snapshot() -> None:
    """ShareCoordinatorShardTest.testReplayWithShareSnapshot: a second snapshot replaces the first,
    leader epoch included."""
    shard = ShareCoordinatorShard()
    shard.apply(ShareSnapshot(KEY, 0, 0, 1, 0, (batch(0, 10, 0, 1),)))
    assert _stored(shard) == (0, 1, 0, [(0, 10, 0, 1)])
    shard.apply(ShareSnapshot(KEY, 1, 1, 2, 0, (batch(11, 12, 0, 1),)))
    assert _stored(shard) == (1, 2, 0, [(11, 12, 0, 1)])


# -- write -----------------------------------------------------------------------------------


def test_write_fails_on_uninitialized_partition() -> None:
    """ShareCoordinatorShardTest.testWriteFailsOnUninitializedPartition"""
    shard = ShareCoordinatorShard()
    assert write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)]) == \
        (Errors.INVALID_REQUEST, 0)


def test_write_fails_on_uninitialized_partition_without_state() -> None:
    """ShareCoordinatorShardTest.testWriteFailsOnUninitializedPartition: whatever the code, nothing is stored."""
    shard = ShareCoordinatorShard()
    error, records = write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)])
    assert error != Errors.NONE and records == 0 and shard.state(KEY) is None


def test_write_state_success() -> None:
    """ShareCoordinatorShardTest.testWriteStateSuccess: an update record with the request's start offset
    and batches; the leader epoch stays the one the read stored."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    before = len(shard.records)
    assert write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)]) == (Errors.NONE, 1)
    record = shard.records[before]
    assert isinstance(record, ShareUpdate) and record.start_offset == 0
    assert as_tuples(record.state_batches) == [(0, 10, 0, 1)]
    assert _stored(shard) == (0, 0, 0, [(0, 10, 0, 1)])


def test_subsequent_write_state_snapshot_epoch_updates_successfully() -> None:
    """ShareCoordinatorShardTest.testSubsequentWriteStateSnapshotEpochUpdatesSuccessfully: two updates on
    the same snapshot; their equal-state batches combine into one."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    snapshot_epoch = shard.state(KEY).snapshot_epoch  # type: ignore[union-attr]
    write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)])
    write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(11, 20, 0, 1)])
    last = shard.records[-1]
    assert isinstance(last, ShareUpdate) and last.snapshot_epoch == snapshot_epoch
    assert _stored(shard) == (0, 0, 0, [(0, 20, 0, 1)])


def test_write_state_invalid_partition_request_data() -> None:
    """ShareCoordinatorShardTest.testWriteStateInvalidPartitionRequestData"""
    shard = ShareCoordinatorShard()
    assert write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)],
                 key=NEGATIVE_PARTITION) == (Errors.INVALID_REQUEST, 0)
    assert shard.state(KEY) is None


def test_write_state_invalid_leader_epoch_request_data() -> None:
    """ShareCoordinatorShardTest.testWriteStateInvalidLeaderEpochRequestData (KAFKA-20743); on an
    initialized key too, where the old model accepted it."""
    assert write(ShareCoordinatorShard(), state_epoch=0, leader_epoch=-1, start=0) == (Errors.INVALID_REQUEST, 0)
    shard = initialized_shard()
    write_and_replay(shard, 0)
    assert write(shard, state_epoch=0, leader_epoch=-1, start=5) == (Errors.INVALID_REQUEST, 0)
    assert _stored(shard) == (0, 0, 0, [(0, 10, 0, 1)])


def test_write_state_invalid_state_epoch_request_data() -> None:
    """ShareCoordinatorShardTest.testWriteStateInvalidStateEpochRequestData (KAFKA-20743)"""
    assert write(ShareCoordinatorShard(), state_epoch=-1, leader_epoch=0, start=0) == (Errors.INVALID_REQUEST, 0)
    shard = initialized_shard()
    write_and_replay(shard, 0)
    assert write(shard, state_epoch=-1, leader_epoch=0, start=5) == (Errors.INVALID_REQUEST, 0)
    assert _stored(shard) == (0, 0, 0, [(0, 10, 0, 1)])


def test_write_null_metadata_image() -> None:
    """ShareCoordinatorShardTest.testWriteNullMetadataImage: without a metadata image, UNKNOWN_TOPIC_OR_PARTITION."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    shard.on_metadata_update(None)
    assert write(shard, state_epoch=0, leader_epoch=0, start=0) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, 0)


def test_write_state_fenced_leader_epoch_error() -> None:
    """ShareCoordinatorShardTest.testWriteStateFencedLeaderEpochError"""
    shard = initialized_shard()
    write_and_replay(shard, 1)
    assert write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)]) == \
        (Errors.FENCED_LEADER_EPOCH, 0)
    assert _stored(shard)[1] == 1


def test_write_state_fenced_state_epoch_error() -> None:
    """ShareCoordinatorShardTest.testWriteStateFencedStateEpochError"""
    shard = initialized_shard(1)
    assert write(shard, state_epoch=0, leader_epoch=5, start=0, batches=[batch(11, 20, 0, 1)]) == \
        (Errors.FENCED_STATE_EPOCH, 0)
    assert _stored(shard) == (1, -1, -1, [])


def test_write_state_discards_start_offset_regression() -> None:
    """ShareCoordinatorShardTest.testWriteStateDiscardsStartOffsetRegression (apache/kafka b77567478f)"""
    shard = initialized_shard(5)
    write_and_replay(shard, 3)
    assert write(shard, state_epoch=5, leader_epoch=3, start=5, batches=[batch(11, 20, 4, 1)]) == (Errors.NONE, 1)
    assert write(shard, state_epoch=5, leader_epoch=3, start=2, batches=[batch(0, 20, 0, 1)]) == (Errors.NONE, 1)
    last = shard.records[-1]
    assert isinstance(last, ShareUpdate)
    # Kafka's record says start offset 5 with the batch clipped to 5-20; the model's says 5 too.
    assert last.start_offset == 5 and as_tuples(last.state_batches) == [(5, 20, 0, 1)]
    assert _stored(shard) == (5, 3, 5, [(5, 10, 0, 1), (11, 20, 4, 1)])


def _two_writes(first: tuple[int, int], second: tuple[int, int]) -> tuple[ShareUpdate, ShareUpdate]:
    """ShareCoordinatorShardTest's delivery-complete-count cases: a key at state epoch 5 read and written by
    leader epoch 3, then two writes of (start offset, deliveryCompleteCount) with no batches."""
    shard = initialized_shard(5)
    write_and_replay(shard, 3)
    records = []
    for start, complete in (first, second):
        assert write(shard, state_epoch=5, leader_epoch=3, start=start, complete=complete) == (Errors.NONE, 1)
        records.append(shard.records[-1])
    a, b = records
    assert isinstance(a, ShareUpdate) and isinstance(b, ShareUpdate)
    assert (a.start_offset, a.delivery_complete_count) == first  # the first write is stored as sent
    state = shard.state(KEY)
    assert state is not None
    assert (state.start_offset, state.delivery_complete_count) == (b.start_offset, b.delivery_complete_count)
    return a, b


def test_write_state_discards_delivery_complete_count_regression_incoming_start_offset_greater() -> None:
    """ShareCoordinatorShardTest.testWriteStateDiscardsDeliveryCompleteCountRegressionIncomingStartOffsetGreater:
    a write ahead of the stored start offset brings its own count, even a lower one."""
    _, second = _two_writes((5, 10), (11, 4))
    assert (second.start_offset, second.delivery_complete_count) == (11, 4)


def test_write_state_discards_delivery_complete_count_regression_incoming_start_offset_equal() -> None:
    """ShareCoordinatorShardTest.testWriteStateDiscardsDeliveryCompleteCountRegressionIncomingStartOffsetEqual:
    at the stored start offset the higher count stays."""
    _, second = _two_writes((11, 10), (11, 5))
    assert (second.start_offset, second.delivery_complete_count) == (11, 10)


def test_write_state_discards_delivery_complete_count_regression_incoming_start_offset_smaller() -> None:
    """ShareCoordinatorShardTest.testWriteStateDiscardsDeliveryCompleteCountRegressionIncomingStartOffsetSmaller:
    a write behind the stored start offset keeps the stored start offset and count."""
    _, second = _two_writes((15, 10), (11, 20))
    assert (second.start_offset, second.delivery_complete_count) == (15, 10)


# -- read ------------------------------------------------------------------------------------


def test_read_fails_on_uninitialized_partition() -> None:
    """ShareCoordinatorShardTest.testReadFailsOnUninitializedPartition"""
    shard = ShareCoordinatorShard()
    response, records = shard.read(ReadShareGroupStateRequest(KEY, 1))
    assert (response.error_code, records, shard.state(KEY)) == (Errors.INVALID_REQUEST, [], None)


def test_read_state_success() -> None:
    """ShareCoordinatorShardTest.testReadStateSuccess: state epoch, start offset and batches; a higher
    leader epoch gives a record (Kafka's test does not replay it)."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    response, records = shard.read(ReadShareGroupStateRequest(KEY, 1))
    assert response.error_code == Errors.NONE
    assert (response.state_epoch, response.start_offset) == (0, 0)
    assert as_tuples(response.state_batches) == [(0, 10, 0, 1)]
    assert len(records) == 1


def test_read_state_summary_success() -> None:
    """ShareCoordinatorShardTest.testReadStateSummarySuccess: no record, the leader epoch untouched."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    response, records = shard.read_summary(ReadShareGroupStateSummaryRequest(KEY, 1))
    assert (response.error_code, response.state_epoch, response.start_offset, records) == (Errors.NONE, 0, 0, [])
    assert response.delivery_complete_count == 0
    assert _stored(shard)[1] == 0


def test_read_state_invalid_request_data() -> None:
    """ShareCoordinatorShardTest.testReadStateInvalidRequestData: a negative partition."""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    response, records = shard.read(ReadShareGroupStateRequest(NEGATIVE_PARTITION, 5))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])
    assert _stored(shard)[1] == 0


def test_read_state_summary_invalid_request_data() -> None:
    """ShareCoordinatorShardTest.testReadStateSummaryInvalidRequestData"""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    response, records = shard.read_summary(ReadShareGroupStateSummaryRequest(NEGATIVE_PARTITION, 5))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])


def test_read_null_metadata_image() -> None:
    """ShareCoordinatorShardTest.testReadNullMetadataImage"""
    shard = initialized_shard()
    write_and_replay(shard, 0)
    shard.on_metadata_update(None)
    response, records = shard.read(ReadShareGroupStateRequest(KEY, 5))
    assert (response.error_code, records) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert _stored(shard)[1] == 0


def test_read_state_fenced_leader_epoch_error() -> None:
    """ShareCoordinatorShardTest.testReadStateFencedLeaderEpochError"""
    shard = initialized_shard()
    write_and_replay(shard, 5)
    response, records = shard.read(ReadShareGroupStateRequest(KEY, 3))
    assert (response.error_code, records) == (Errors.FENCED_LEADER_EPOCH, [])
    assert _stored(shard)[1] == 5


def test_read_state_leader_epoch_update_success() -> None:
    """ShareCoordinatorShardTest.testReadStateLeaderEpochUpdateSuccess: an update record raising the
    leader epoch to 2 on the snapshot of the initialize (start offset -1, no batches)."""
    shard = initialized_shard()
    response, records = shard.read(ReadShareGroupStateRequest(KEY, 2))
    assert (response.error_code, response.start_offset, response.state_epoch, response.state_batches) == \
        (Errors.NONE, -1, 0, ())
    assert records == [ShareUpdate(KEY, 0, 2, -1, ())]
    assert _stored(shard) == (0, 2, -1, [])


def test_read_state_leader_epoch_update_no_update() -> None:
    """ShareCoordinatorShardTest.testReadStateLeaderEpochUpdateNoUpdate: the same leader epoch again
    writes nothing."""
    shard = initialized_shard()
    assert len(shard.read(ReadShareGroupStateRequest(KEY, 2))[1]) == 1
    for _ in range(2):
        response, records = shard.read(ReadShareGroupStateRequest(KEY, 2))
        assert (response.error_code, records) == (Errors.NONE, [])
    assert _stored(shard)[1] == 2


def test_read_state_negative_leader_epoch_disallowed() -> None:
    """ShareCoordinatorShardTest.testReadStateNegativeLeaderEpochDisallowed (KAFKA-20743): on an
    initialized key too, where the old model served it."""
    response, records = ShareCoordinatorShard().read(ReadShareGroupStateRequest(KEY, -1))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])
    shard = initialized_shard()
    response, records = shard.read(ReadShareGroupStateRequest(KEY, -1))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])
    assert _stored(shard)[1] == -1


# -- the snapshot policy -------------------------------------------------------------------------


def test_non_sequential_batch_updates() -> None:
    """ShareCoordinatorShardTest.testNonSequentialBatchUpdates: with a snapshot on every write, batches
    written in ACQUIRED (state 1) survive later writes of other batches and a start offset move."""
    shard = initialized_shard(updates_per_snapshot=0)
    write_and_replay(shard, 0)
    assert write(shard, state_epoch=0, leader_epoch=0, start=100, batches=[
        batch(100, 109, 1, 1), batch(110, 119, 1, 2), batch(120, 129, 1, 0)]) == (Errors.NONE, 1)
    write(shard, state_epoch=0, leader_epoch=0, start=-1, batches=[batch(100, 109, 2, 1)])
    write(shard, state_epoch=0, leader_epoch=0, start=110, batches=[batch(120, 129, 2, 1)])
    assert _stored(shard)[2:] == (110, [(110, 119, 1, 2), (120, 129, 2, 1)])


def test_snapshot_update_count_boundary() -> None:
    """ShareCoordinatorShardTest.testSnapshotUpdateCountBoundary: with 2 updates per snapshot, two writes
    are updates and the third a snapshot."""
    shard = initialized_shard(updates_per_snapshot=2)
    kinds = []
    for _ in range(3):
        write(shard, state_epoch=0, leader_epoch=0, start=0, batches=[batch(0, 10, 0, 1)])
        kinds.append(type(shard.records[-1]))
    assert kinds == [ShareUpdate, ShareUpdate, ShareSnapshot]


# -- delete ----------------------------------------------------------------------------------


def test_delete_state_success() -> None:
    """ShareCoordinatorShardTest.testDeleteStateSuccess: a tombstone; the key's state is gone."""
    shard = ShareCoordinatorShard()
    shard.apply(ShareSnapshot(KEY, 0, 0, 0, 0, (batch(0, 10, 0, 1),)))
    response, records = shard.delete(DeleteShareGroupStateRequest(KEY))
    assert (response.error_code, records) == (Errors.NONE, [ShareTombstone(KEY)])
    assert shard.state(KEY) is None


def test_delete_state_uninitialized_record() -> None:
    """ShareCoordinatorShardTest.testDeleteStateUninitializedRecord: NONE, nothing written."""
    response, records = ShareCoordinatorShard().delete(DeleteShareGroupStateRequest(KEY))
    assert (response.error_code, records) == (Errors.NONE, [])


def test_delete_state_invalid_request_data() -> None:
    """ShareCoordinatorShardTest.testDeleteStateInvalidRequestData"""
    response, records = ShareCoordinatorShard().delete(DeleteShareGroupStateRequest(NEGATIVE_PARTITION))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])


def test_delete_topic_id_non_existent_in_metadata_image() -> None:
    """ShareCoordinatorShardTest.testDeleteTopicIdNonExistentInMetadataImage: the image lacks the topic."""
    shard = ShareCoordinatorShard()
    shard.apply(ShareSnapshot(KEY, 0, 0, 0, 0, ()))
    shard.on_metadata_update(MetadataImage())
    response, records = shard.delete(DeleteShareGroupStateRequest(KEY))
    assert (response.error_code, records) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert shard.state(KEY) is not None


# -- initialize ------------------------------------------------------------------------------


def test_initialize_state_success() -> None:
    """ShareCoordinatorShardTest.testInitializeStateSuccess: one snapshot with the state epoch and start offset
    (and, the start offset being known, deliveryCompleteCount 0: ShareGroupOffset.fromRequest)."""
    shard = ShareCoordinatorShard()
    response, records = shard.initialize(InitializeShareGroupStateRequest(KEY, 5, 10))
    assert response.error_code == Errors.NONE
    assert records == [ShareSnapshot(KEY, 0, 5, -1, 10, (), 0)]
    assert _stored(shard) == (5, -1, 10, [])


def test_initialize_state_idempotent() -> None:
    """ShareCoordinatorShardTest.testInitializeStateIdempotent: the same initialize again writes nothing."""
    shard = ShareCoordinatorShard()
    shard.initialize(InitializeShareGroupStateRequest(KEY, 5, 10))
    state = shard.state(KEY)
    response, records = shard.initialize(InitializeShareGroupStateRequest(KEY, 5, 10))
    assert (response.error_code, records, shard.state(KEY)) == (Errors.NONE, [], state)


def test_initialize_state_not_idempotent_when_start_offset_changes() -> None:
    """ShareCoordinatorShardTest.testInitializeStateNotIdempotentWhenStartOffsetChanges"""
    shard = ShareCoordinatorShard()
    shard.initialize(InitializeShareGroupStateRequest(KEY, 5, 10))
    response, records = shard.initialize(InitializeShareGroupStateRequest(KEY, 5, 20))
    assert (response.error_code, len(records)) == (Errors.NONE, 1)
    assert _stored(shard)[2] == 20


def test_initialize_state_invalid_request_data() -> None:
    """ShareCoordinatorShardTest.testInitializeStateInvalidRequestData: a negative partition, then a
    state epoch below the stored one (FENCED_STATE_EPOCH)."""
    shard = ShareCoordinatorShard()
    response, records = shard.initialize(InitializeShareGroupStateRequest(NEGATIVE_PARTITION, 0, 0))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])
    shard.apply(ShareSnapshot(KEY, 0, 5, -1, 0, ()))
    response, records = shard.initialize(InitializeShareGroupStateRequest(KEY, 1, 0))
    assert (response.error_code, records) == (Errors.FENCED_STATE_EPOCH, [])


def test_initialize_state_invalid_state_epoch_request_data() -> None:
    """ShareCoordinatorShardTest.testInitializeStateInvalidStateEpochRequestData"""
    response, records = ShareCoordinatorShard().initialize(InitializeShareGroupStateRequest(KEY, -1, 1))
    assert (response.error_code, records) == (Errors.INVALID_REQUEST, [])


def test_initialize_partition_id_non_existent_in_metadata_image() -> None:
    """ShareCoordinatorShardTest.testInitializePartitionIdNonExistentInMetadataImage: the topic is known,
    the partition is not."""
    shard = ShareCoordinatorShard()
    shard.on_metadata_update(ONE_PARTITION)
    response, records = shard.initialize(
        InitializeShareGroupStateRequest(SharePartitionKey(KEY.group_id, KEY.topic_id, 1), 0, 0))
    assert (response.error_code, records) == (Errors.UNKNOWN_TOPIC_OR_PARTITION, [])
    response, records = shard.initialize(InitializeShareGroupStateRequest(KEY, 0, 0))  # partition 0 is known
    assert (response.error_code, len(records)) == (Errors.NONE, 1)


# -- cold partitions -----------------------------------------------------------------------------


class _Clock:
    """Kafka's MockTime: the shard's clock, moved by hand."""

    def __init__(self) -> None:
        self.now_ms = 0

    def __call__(self) -> int:
        return self.now_ms


INTERVAL_MS = 10_000  # ShareCoordinatorTestConfig: share.coordinator.cold.partition.snapshot.interval.ms


def _cold_shard(*partitions: int) -> tuple[ShareCoordinatorShard, _Clock]:
    """A shard on a clock with a snapshot (0-10 Available, written now) of each of ``partitions``."""
    clock = _Clock()
    shard = ShareCoordinatorShard(clock=clock)
    for partition in partitions:
        shard.apply(ShareSnapshot(SharePartitionKey(KEY.group_id, KEY.topic_id, partition), 0, 0, 0, 0,
                                  (batch(0, 10, 0, 1),), 11, clock.now_ms, clock.now_ms))
    return shard, clock


def test_snapshot_cold_partitions_no_eligible_partitions() -> None:
    """ShareCoordinatorShardTest.testSnapshotColdPartitionsNoEligiblePartitions: two keys whose snapshots are
    younger than the interval: nothing to snapshot."""
    shard, clock = _cold_shard(0, 1)
    clock.now_ms += 5_000
    assert shard.snapshot_cold(INTERVAL_MS) == []


def test_snapshot_cold_partitions_snapshot_update_not_considered() -> None:
    """ShareCoordinatorShardTest.testSnapshotColdPartitionsSnapshotUpdateNotConsidered: a key written by an
    update since its snapshot is re-snapshotted once the interval has passed, with the update merged in, its
    create timestamp kept and now as its write timestamp."""
    shard, clock = _cold_shard(0)
    write_and_replay(shard, 0)  # a read and a write: updates; the snapshot's timestamps stay
    clock.now_ms += 12_000
    records = shard.snapshot_cold(INTERVAL_MS)
    assert records == [ShareSnapshot(KEY, 1, 0, 0, 0, (batch(0, 10, 0, 1),), 11, 0, 12_000)]


def test_snapshot_cold_partitions_does_not_perpetually_snapshot() -> None:
    """ShareCoordinatorShardTest.testSnapshotColdPartitionsDoesNotPerpetuallySnapshot: a lone snapshot older
    than the interval is re-snapshotted once, then, every key being cold-snapshotted, not again."""
    shard, clock = _cold_shard(0)
    clock.now_ms += 12_000
    assert shard.snapshot_cold(INTERVAL_MS) == [ShareSnapshot(KEY, 1, 0, 0, 0, (batch(0, 10, 0, 1),), 11, 0, 12_000)]
    clock.now_ms += 12_000
    assert shard.snapshot_cold(INTERVAL_MS) == []


def test_on_topics_deleted_topic_ids() -> None:
    """ShareCoordinatorShardTest.testOnTopicsDeletedTopicIds: the shard tombstones the keys of deleted topics
    (and only those; none for an empty set)."""
    shard = ShareCoordinatorShard()
    shard.apply(ShareSnapshot(KEY, 0, 0, 0, 0, (batch(0, 10, 0, 1),), 11))
    other = SharePartitionKey(KEY.group_id, "other-topic-id", 0)
    shard.apply(ShareSnapshot(other, 0, 0, 0, 0, ()))
    assert shard.on_topics_deleted(set()) == []
    assert shard.on_topics_deleted({KEY.topic_id}) == [ShareTombstone(KEY)]
    assert shard.keys() == [other]
