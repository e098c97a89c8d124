"""The share-coordinator checks (SC-3, SC-4, SC-5, SC-6, SC-8, KIP-1226) on a real ``ShareCoordinatorShard``
(and, for the delivery complete count, a real ``SharePartition``) driven by hand: each fires with exactly its
catalogue id on a bad step and stays quiet on the good one."""

from __future__ import annotations

from invariants.coordinator_checks import (
    CompleteCountMonitor,
    EarlierLifeMonitor,
    NegativeEpochMonitor,
    ReplayEqualMonitor,
    SnapshotLimitMonitor,
    StoredCompleteCountMonitor,
    StoredEpochMonitor,
    StoredStartOffsetMonitor,
    ZombieWriteMonitor,
)
from invariants.ledger import Ledger
from invariants.monitors import Monitors
from invariants.sink import ViolationSink
from model import mutants
from model.core.errors import Errors
from model.core.log import PartitionLog
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_partition import SharePartition
from model.core.share_records import ShareSnapshot, ShareTombstone, ShareUpdate
from model.core.share_state import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)

KEY = SharePartitionKey("g", "t-id", 0)
OTHER = SharePartitionKey("g", "t-id", 1)


def _write(leader_epoch: int, first: int = 0, count: int = 1, key: SharePartitionKey = KEY,
           state_epoch: int = 1) -> WriteShareGroupStateRequest:
    return WriteShareGroupStateRequest(key, state_epoch, leader_epoch, -1,
                                       (StateBatch(first, first, RecordState.AVAILABLE, count),))


def _shard(limit: int = 500) -> tuple[ShareCoordinatorShard, list[object]]:
    """A shard with KEY initialized and read at leader epoch 2; the records it wrote."""
    shard = ShareCoordinatorShard(limit)
    records: list[object] = []
    records += shard.initialize(InitializeShareGroupStateRequest(KEY, 1, 0))[1]
    records += shard.read(ReadShareGroupStateRequest(KEY, 2))[1]
    return shard, records


def _ids(sink: ViolationSink) -> list[str]:
    return [v.invariant for v in sink.violations]


# -- zombie-write-fenced (SC-5) -------------------------------------------------------------------------


def test_a_write_below_the_leader_epoch_read_is_accepted() -> None:
    sink = ViolationSink(1)
    ledger = Ledger(sink)
    monitors = Monitors((ZombieWriteMonitor(sink, ledger), ledger), sink)
    monitors.on_write_accepted(_write(1), 0)  # no read yet: leader 1 may write
    monitors.on_state_read(KEY, 2, 1)
    monitors.on_write_accepted(_write(2), 2)
    monitors.on_write_accepted(_write(1, key=OTHER), 3)  # another share-partition
    assert sink.violations == []
    monitors.on_write_accepted(_write(1), 4)
    assert _ids(sink) == ["zombie-write-fenced"]
    assert sink.violations[0].state["read_epoch"] == 2 and sink.violations[0].spec == ("SC-5",)


# -- stored-epoch-sources (SC-5) ----------------------------------------------------------------------------


def test_only_initialize_sets_the_state_epoch_and_only_read_the_leader_epoch() -> None:
    sink = ViolationSink(1)
    monitor = StoredEpochMonitor(sink)
    shard, _ = _shard()
    before = shard.state(KEY)
    assert before is not None and before.leader_epoch == 2
    read = ReadShareGroupStateRequest(KEY, 3)
    previous = shard.state(KEY)
    shard.read(read)
    monitor.on_share_state_handled(shard, read, previous, 0, 0)  # a read raises the leader epoch
    previous = shard.state(KEY)
    reinit = InitializeShareGroupStateRequest(KEY, 2, 0)
    shard.initialize(reinit)
    # Initialize raises the state epoch and keeps the leader's.
    monitor.on_share_state_handled(shard, reinit, previous, 1, 1)
    previous = shard.state(KEY)
    write = _write(3, state_epoch=2)
    shard.write(write)
    monitor.on_share_state_handled(shard, write, previous, 2, 2)
    assert sink.violations == []
    assert previous is not None
    # The write's stored state as if the write had raised the leader epoch, or the state epoch.
    monitor.on_share_state_handled(shard, write, previous.replace(leader_epoch=2), 3, 3)
    monitor.on_share_state_handled(shard, write, previous.replace(state_epoch=1), 4, 4)
    # An initialize that dropped the stored leader epoch (to -1).
    monitor.on_share_state_handled(shard, reinit, previous.replace(leader_epoch=5), 5, 5)
    assert _ids(sink) == ["stored-epoch-sources"] * 3
    assert [v.event for v in sink.violations] == ["WriteShareGroupState", "WriteShareGroupState",
                                                  "InitializeShareGroupState"]


# -- snapshot-update-limit (SC-3) -----------------------------------------------------------------------------


def _committed(monitor: SnapshotLimitMonitor, shard: ShareCoordinatorShard, request: object, now: int) -> None:
    """Handle ``request`` and commit the records it wrote, as a coordinator host does."""
    _, records = shard.handle(request)
    monitor.on_share_state_committed(7, records, now)


def test_updates_since_the_snapshot_are_counted_from_the_committed_log() -> None:
    sink = ViolationSink(1)
    monitor = SnapshotLimitMonitor(sink)
    shard, records = _shard(limit=2)
    monitor.on_share_coordinator_loaded(7, shard, [], [], 0)  # the limit is the coordinator's configuration
    monitor.on_share_state_committed(7, records, 0)
    for n in range(6):  # the real shard snapshots at the limit: never above it
        _committed(monitor, shard, _write(2, first=n), n)
    assert sink.violations == []
    # Three updates of one snapshot committed in a row: above the limit 2, whatever a coordinator counts.
    updates = [ShareUpdate(KEY, 9, 2, -1, ()) for _ in range(4)]
    monitor.on_share_state_committed(7, [_snapshot(0, snapshot_epoch=9), *updates], 10)
    assert _ids(sink) == ["snapshot-update-limit"]
    assert sink.violations[0].state["updates_since_snapshot"] == 3
    # A snapshot or a tombstone starts the count again.
    monitor.on_share_state_committed(7, [_snapshot(0, snapshot_epoch=10), *updates[:2], ShareTombstone(KEY),
                                         *updates[:2]], 11)
    assert len(sink.violations) == 1


def test_a_coordinator_that_forgets_the_updates_it_replayed_is_caught_though_its_count_is_within_the_limit() -> None:
    """The mutant replay-forgets-update-count: after a load the coordinator counts from 0, so it writes a
    whole limit of updates more. Its own count (what the check read before issue 25) never exceeds the
    limit; the committed log does."""
    sink = ViolationSink(1)
    monitor = SnapshotLimitMonitor(sink)
    shard, records = _shard(limit=3)
    monitor.on_share_coordinator_loaded(7, shard, [], [], 0)
    monitor.on_share_state_committed(7, records, 0)
    log = list(records)
    for n in range(2):
        _, written = shard.write(_write(2, first=n))
        log += written
        monitor.on_share_state_committed(7, written, n)
    with mutants.injected("replay-forgets-update-count"):
        loaded = ShareCoordinatorShard.replay(log, 3)  # type: ignore[arg-type]
        monitor.on_share_coordinator_loaded(7, loaded, log, [], 5)
        counts = []
        for n in range(2, 5):
            _, written = loaded.write(_write(2, first=n))
            monitor.on_share_state_committed(7, written, n)
            state = loaded.state(KEY)
            assert state is not None
            counts.append(state.updates_since_snapshot)
    assert max(counts) <= 3  # the coordinator's own count: the old oracle saw nothing
    assert _ids(sink) == ["snapshot-update-limit"]


# -- earlier-life-write-fenced (SC-5, GC-8) --------------------------------------------------------------


def test_a_write_sent_before_the_state_was_created_again_is_an_earlier_lifes() -> None:
    sink = ViolationSink(1)
    monitor = EarlierLifeMonitor(sink)
    shard, _ = _shard()
    previous = shard.state(KEY)
    monitor.on_share_state_created(KEY, 1, 0)  # the first life
    monitor.on_share_state_handled(shard, _write(2), previous, 5, 7)  # sent and accepted in it
    monitor.on_share_state_created(KEY, 3, 100)  # deleted with its group, initialized again
    monitor.on_share_state_handled(shard, _write(2, key=OTHER), previous, 50, 101)  # another key's life
    monitor.on_share_state_handled(shard, _write(2), previous, 100, 101)  # the same millisecond: given the benefit
    monitor.on_share_state_handled(shard, ReadShareGroupStateRequest(KEY, 3), previous, 50, 102)  # not a write
    assert sink.violations == []
    monitor.on_share_state_handled(shard, _write(2), previous, 99, 103)  # sent in the earlier life
    assert _ids(sink) == ["earlier-life-write-fenced"]
    assert sink.violations[0].state["sent_ms"] == 99
    assert sink.violations[0].state["created_ms"] == 100


# -- earlier-life-delete-fenced (SC-8, GC-8) -------------------------------------------------------------


def test_a_delete_sent_before_the_state_was_created_again_must_not_delete_it() -> None:
    sink = ViolationSink(1)
    monitor = EarlierLifeMonitor(sink)
    shard = ShareCoordinatorShard()

    def initialize(state_epoch: int, sent_ms: int, now_ms: int) -> None:
        request = InitializeShareGroupStateRequest(KEY, state_epoch, 0)
        previous = shard.state(KEY)
        shard.initialize(request)
        monitor.on_share_state_handled(shard, request, previous, sent_ms, now_ms)
        if previous is None:
            monitor.on_share_state_created(KEY, state_epoch, now_ms)

    def delete(state_epoch: int, sent_ms: int, now_ms: int) -> None:
        request = DeleteShareGroupStateRequest(KEY, state_epoch=state_epoch)
        previous = shard.state(KEY)
        shard.delete(request)
        monitor.on_share_state_handled(shard, request, previous, sent_ms, now_ms)

    initialize(1, 0, 2)  # the first life
    delete(4, 50, 60)  # its deletion
    initialize(9, 100, 102)  # the group created again: a new life, decided at 100 ms
    delete(4, 50, 150)  # the first deletion again, held on the wire: fenced, nothing deleted
    assert shard.state(KEY) is not None and sink.violations == []
    delete(9, 120, 160)  # sent in this life: it deletes
    assert shard.state(KEY) is None and sink.violations == []
    # An initialize held on the wire past the deletion of its own life, then that deletion: no anomaly.
    initialize(9, 110, 170)
    delete(9, 120, 171)
    assert shard.state(KEY) is None and sink.violations == []
    # Without the fence (Kafka's delete has no epoch) a stale delete deletes the new life.
    initialize(12, 200, 202)
    delete(-1, 50, 210)  # state epoch -1: not given, never fenced
    assert _ids(sink) == ["earlier-life-delete-fenced"]
    assert sink.violations[0].state["sent_ms"] == 50 and sink.violations[0].state["initialize_sent_ms"] == 200


# -- coordinator-replay-equal (SC-6) ----------------------------------------------------------------------------


def _log() -> list[object]:
    shard, records = _shard()
    records += shard.initialize(InitializeShareGroupStateRequest(OTHER, 1, 0))[1]
    for n in range(3):
        records += shard.write(_write(2, first=n, count=n + 1))[1]
    return records


def _replay(records: list[object], skip_updates: bool = False) -> ShareCoordinatorShard:
    shard = ShareCoordinatorShard()
    for record in records:
        if not (skip_updates and isinstance(record, ShareUpdate)):
            shard.apply(record)  # type: ignore[arg-type]
    return shard


def test_a_replay_that_differs_from_the_committed_state() -> None:
    sink = ViolationSink(1)
    monitor = ReplayEqualMonitor(sink)
    records = _log()
    monitor.on_share_coordinator_loaded(7, _replay(records[:2]), records[:2], [], 0)
    monitor.on_share_coordinator_loaded(7, _replay(records), records, [], 1)
    # A tail still being replicated may differ from the committed state of its keys.
    monitor.on_share_coordinator_loaded(7, _replay(records), records[:-1], records[-1:], 2)
    assert sink.violations == []
    monitor.on_share_coordinator_loaded(7, _replay(records, skip_updates=True), records, [], 3)
    assert _ids(sink) == ["coordinator-replay-equal"]
    assert sink.violations[0].state["key"] == str(KEY) and sink.violations[0].event == "load __share_group_state-7"


def _load_from(records: list[object], start: int) -> ShareCoordinatorShard:
    """A new coordinator of a log whose records before ``start`` were deleted (SC-8)."""
    shard = ShareCoordinatorShard()
    shard.begin_load(start)
    for record in records[start:]:
        shard.apply(record)  # type: ignore[arg-type]
    shard.complete_load()
    return shard


def test_a_replay_is_judged_by_the_independent_reference_not_by_apply() -> None:
    """The mutant update-keeps-complete-count: apply keeps the stored DeliveryCompleteCount on a
    ShareUpdate. A reference replayed with the same apply (the check before issue 25) agrees with the
    loaded coordinator; the independent reference of the log's semantics does not."""
    sink = ViolationSink(1)
    monitor = ReplayEqualMonitor(sink)
    shard, records = _shard()
    records += shard.write(WriteShareGroupStateRequest(KEY, 1, 2, 5, (StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1),),
                                                       3))[1]
    with mutants.injected("update-keeps-complete-count"):
        loaded = _replay(records)
        old_reference = _replay(records)
        monitor.on_share_coordinator_loaded(7, loaded, records, [], 1)
    assert old_reference.state(KEY) == loaded.state(KEY)  # the old oracle: equal, nothing to report
    assert _ids(sink) == ["coordinator-replay-equal"]
    assert "complete 3" in sink.violations[0].message


def test_the_reference_follows_the_logs_semantics() -> None:
    """Kafka trunk's replay: a snapshot replaces, an update merges over it (higher delivery count wins,
    on equal counts the higher state; clipped at a new start offset; -1 keeps the start offset and the
    leader epoch), a tombstone forgets the key."""
    from invariants.state_log_reference import StateLogReference

    reference = StateLogReference()
    reference.replay(ShareSnapshot(KEY, 0, 1, 2, 0, (StateBatch(0, 9, RecordState.AVAILABLE, 1),), 0, 5, 5))
    reference.replay(ShareUpdate(KEY, 0, -1, -1, (StateBatch(3, 4, RecordState.ACKNOWLEDGED, 1),
                                                  StateBatch(6, 6, RecordState.AVAILABLE, 0)), 2))
    state = reference.states[KEY]
    assert state.batches == ((0, 2, 0, 1), (3, 4, 2, 1), (5, 9, 0, 1))
    assert (state.start_offset, state.leader_epoch, state.delivery_complete_count) == (0, 2, 2)
    reference.replay(ShareUpdate(KEY, 0, 4, 4, (StateBatch(8, 9, RecordState.ARCHIVED, 2),), 1))
    state = reference.states[KEY]
    assert state.batches == ((4, 4, 2, 1), (5, 7, 0, 1), (8, 9, 4, 2))
    assert (state.start_offset, state.leader_epoch, state.snapshot_epoch, state.state_epoch) == (4, 4, 0, 1)
    reference.replay(ShareTombstone(KEY))
    assert KEY not in reference.states


def test_a_replay_after_pruning_is_judged_against_the_whole_history() -> None:
    sink = ViolationSink(1)
    monitor = ReplayEqualMonitor(sink)
    shard, records = _shard(limit=2)  # KEY snapshots again after two updates; OTHER never does
    records += shard.initialize(InitializeShareGroupStateRequest(OTHER, 1, 0))[1]
    for n in range(3):
        records += shard.write(_write(2, first=n, count=n + 1))[1]
    start = shard.prune_offset()
    assert start > 0 and getattr(records[start], "key", None) == OTHER  # OTHER's one snapshot: the oldest latest
    monitor.on_share_state_pruning(7, 0, records[:start], 0)
    monitor.on_share_coordinator_loaded(7, _load_from(records, start), records[start:], [], 1, log_start_offset=start)
    assert sink.violations == []
    # One record more deletes OTHER's only snapshot.
    monitor.on_share_state_pruning(7, start, records[start:start + 1], 2)
    monitor.on_share_coordinator_loaded(7, _load_from(records, start + 1), records[start + 1:], [], 3,
                                        log_start_offset=start + 1)
    assert _ids(sink) == ["coordinator-replay-equal"]
    assert sink.violations[0].state["key"] == str(OTHER)


# -- stored-start-offset-monotonic (SP-6, SC-4) -----------------------------------------------------------


def _snapshot(start: int, state_epoch: int = 1, snapshot_epoch: int = 0,
              key: SharePartitionKey = KEY) -> ShareSnapshot:
    return ShareSnapshot(key=key, snapshot_epoch=snapshot_epoch, state_epoch=state_epoch, leader_epoch=2,
                         start_offset=start, state_batches=())


def _update(start: int, snapshot_epoch: int = 0) -> ShareUpdate:
    return ShareUpdate(key=KEY, snapshot_epoch=snapshot_epoch, leader_epoch=2, start_offset=start, state_batches=())


def test_the_committed_start_offset_never_goes_back_within_a_state_epoch() -> None:
    sink = ViolationSink(1)
    monitor = StoredStartOffsetMonitor(sink)
    commit = monitor.on_share_state_committed
    commit(0, [_snapshot(-1), _update(10), _update(-1), _update(10), _update(25)], 1)  # -1: unchanged
    commit(0, [_snapshot(0, key=OTHER)], 2)  # another key: its own start
    commit(0, [_update(5, snapshot_epoch=7)], 3)  # not of the latest snapshot (SC-2): not the state
    commit(0, [_snapshot(25, snapshot_epoch=1), _update(30, snapshot_epoch=1)], 4)
    commit(0, [_snapshot(3, state_epoch=2, snapshot_epoch=2)], 5)  # a new state epoch starts afresh (SP-12)
    commit(0, [ShareTombstone(KEY), _snapshot(0, state_epoch=1)], 6)  # deleted, a new life at any epoch
    assert sink.violations == []
    commit(0, [_update(40), _update(12)], 7)
    assert _ids(sink) == ["stored-start-offset-monotonic"]
    violation = sink.violations[0]
    assert violation.state["previous_start_offset"] == 40 and violation.state["start_offset"] == 12
    assert violation.spec == ("SP-6", "SC-4") and violation.time_ms == 7


def test_a_snapshot_of_the_same_state_epoch_with_a_lower_start_offset_is_a_regression() -> None:
    sink = ViolationSink(1)
    monitor = StoredStartOffsetMonitor(sink)
    monitor.on_share_state_committed(2, [_snapshot(-1), _update(50)], 1)
    monitor.on_share_state_committed(2, [_snapshot(-1, snapshot_epoch=1)], 2)  # e.g. initialize again, same epoch
    assert _ids(sink) == ["stored-start-offset-monotonic"]
    assert sink.violations[0].state["record"] == "ShareSnapshot"


def _replayed_write(shard: ShareCoordinatorShard, sink: ViolationSink) -> None:
    """KEY's start offset moves to 20, then a replay of the write that moved it to 10 lands."""
    monitor = StoredStartOffsetMonitor(sink)
    _, records = _shard()
    monitor.on_share_state_committed(0, records, 0)
    for start in (10, 20, 10):
        request = WriteShareGroupStateRequest(KEY, 1, 2, start, ())
        response, written = shard.write(request)
        assert response.error_code == Errors.NONE
        monitor.on_share_state_committed(0, written, start)


def test_the_check_sees_a_coordinator_that_stores_a_lower_start_offset() -> None:
    sink = ViolationSink(1)
    shard, _ = _shard()
    _replayed_write(shard, sink)  # trunk keeps the higher one
    assert sink.violations == [] and shard.state(KEY).start_offset == 20  # type: ignore[union-attr]
    sink = ViolationSink(1)
    shard, _ = _shard()
    with mutants.injected("start-offset-regression"):
        _replayed_write(shard, sink)
    assert _ids(sink) == ["stored-start-offset-monotonic"]


# -- negative-epoch-changes-nothing (SC-5) ----------------------------------------------------------------


def _serve(shard: ShareCoordinatorShard, monitor: NegativeEpochMonitor, request: object) -> None:
    response, records = shard.handle(request)
    monitor.on_share_state_request(1, request, response, records, 0, 5)


def test_a_request_with_a_negative_epoch_must_be_refused_and_write_nothing() -> None:
    sink = ViolationSink(1)
    monitor = NegativeEpochMonitor(sink)
    shard, _ = _shard()
    for request in (ReadShareGroupStateRequest(KEY, -1), _write(-1), _write(2, state_epoch=-1),
                    InitializeShareGroupStateRequest(KEY, -1, 0),
                    ReadShareGroupStateSummaryRequest(KEY, -1),  # the group coordinator's: no epoch
                    DeleteShareGroupStateRequest(KEY, -1),  # -1: not given
                    _write(2), ReadShareGroupStateRequest(KEY, 2)):
        _serve(shard, monitor, request)
    assert sink.violations == []


def test_an_accepted_negative_epoch_is_caught_by_its_answer_or_its_records() -> None:
    sink = ViolationSink(1)
    monitor = NegativeEpochMonitor(sink)
    # A read answered NONE that wrote nothing, and a write refused that appended a record anyway.
    monitor.on_share_state_request(0, ReadShareGroupStateRequest(KEY, -1), ReadShareGroupStateResponse(KEY), [], 0, 1)
    monitor.on_share_state_request(0, _write(-1), WriteShareGroupStateResponse(KEY, Errors.INVALID_REQUEST),
                                   [_update(3)], 0, 2)
    monitor.on_share_state_request(0, _write(1, state_epoch=-1), WriteShareGroupStateResponse(KEY), [], 0, 3)
    assert _ids(sink) == ["negative-epoch-changes-nothing"] * 3
    assert [v.state["epoch"] for v in sink.violations] == ["leader epoch -1", "leader epoch -1", "state epoch -1"]
    assert sink.violations[1].state["records"] == 1 and sink.violations[0].state["error"] == "NONE"


def test_the_check_sees_a_coordinator_that_takes_epoch_minus_one_for_not_given() -> None:
    sink = ViolationSink(1)
    monitor = NegativeEpochMonitor(sink)
    shard, _ = _shard()
    with mutants.injected("negative-epoch-accepted"):
        for request in (ReadShareGroupStateRequest(KEY, -1), _write(-1), _write(2, state_epoch=-1)):
            _serve(shard, monitor, request)
    assert _ids(sink) == ["negative-epoch-changes-nothing"] * 3
    assert [v.state["records"] for v in sink.violations] == [0, 1, 1]


# -- stored-delivery-complete-count (SC-4, KIP-1226) ---------------------------------------------------------


def test_the_stored_delivery_complete_count_never_drops_at_an_unmoved_start_offset() -> None:
    sink = ViolationSink(1)
    monitor = StoredCompleteCountMonitor(sink)
    monitor.on_share_state_committed(0, [
        ShareSnapshot(KEY, 0, 1, 2, 0, (), 0),
        ShareUpdate(KEY, 0, 2, -1, (), 5),  # -1: the start offset stays; the count rises
        ShareUpdate(KEY, 0, 2, 10, (), 1),  # the start offset moved: a count from there
        ShareUpdate(KEY, 7, 2, 10, (), 0),  # of another snapshot epoch: not applied (SC-2)
        ShareSnapshot(KEY, 1, 2, 2, 10, (), 0),  # a new state epoch starts afresh
        ShareTombstone(KEY),
        ShareSnapshot(KEY, 0, 3, -1, 0, (), 4),
    ], 0)
    assert sink.violations == []
    monitor.on_share_state_committed(0, [ShareUpdate(KEY, 0, 2, 0, (), 3)], 1)  # 4 -> 3 at start offset 0
    monitor.on_share_state_committed(0, [ShareSnapshot(KEY, 1, 3, 2, 0, (), 2)], 2)  # a snapshot, same epoch
    assert _ids(sink) == ["stored-delivery-complete-count"] * 2
    assert sink.violations[0].state["previous_count"] == 4 and sink.violations[0].spec == ("SC-4",)


# -- delivery-complete-count (SP-1, KIP-1226) ---------------------------------------------------------------


def test_a_leader_counts_no_more_complete_offsets_than_the_ledger_holds_durable() -> None:
    def leader(key: SharePartitionKey) -> SharePartition:
        log = PartitionLog(0)
        log.append(20)
        log.advance_high_watermark()
        sp = SharePartition(key, log, leader_epoch=0)
        sp.read_request()
        sp.recover(ReadShareGroupStateResponse(key, state_epoch=1, start_offset=0, state_batches=(
            StateBatch(0, 4, RecordState.AVAILABLE, 1), StateBatch(5, 9, RecordState.ACKNOWLEDGED, 1))), 0)
        assert sp.ready and sp.delivery_complete_count == 5 and not sp.pending_write_ids()
        return sp

    sink = ViolationSink(1)
    ledger = Ledger(sink)
    monitors = Monitors((CompleteCountMonitor(sink, ledger), ledger), sink)
    for key, last in ((KEY, 9), (OTHER, 7)):  # OTHER's ledger holds 5-7 durable, the leader counts 5-9
        monitors.on_write_accepted(WriteShareGroupStateRequest(
            key, 1, 0, 0, (StateBatch(5, last, RecordState.ACKNOWLEDGED, 1),), 5), 0)
    monitors.on_share_partition_step(leader(KEY), 20, 1)
    assert sink.violations == []
    monitors.on_share_partition_step(leader(OTHER), 20, 2)
    assert _ids(sink) == ["delivery-complete-count"]
    assert (sink.violations[0].state["delivery_complete_count"], sink.violations[0].state["durable"]) == (5, 3)
    # A leader of a life before the key's latest one (re-created at state epoch 2) is not judged.
    monitors.on_share_state_created(OTHER, 2, 3)
    monitors.on_share_partition_step(leader(OTHER), 20, 4)
    assert len(sink.violations) == 1
