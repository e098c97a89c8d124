"""Checks of the share coordinator (SC-3, SC-5, SC-6, SC-8).

* ``ZombieWriteMonitor`` (zombie-write-fenced, SC-5): once a leader has read
  a share-partition's state with leader epoch e (the ledger's ``read_epoch``),
  no write with a lower leader epoch is accepted.
* ``EarlierLifeMonitor`` (earlier-life-write-fenced, SC-5, GC-8, and
  earlier-life-delete-fenced, SC-8, GC-8): a share-partition's state deleted
  with its group and initialized again is a new life; no write sent before
  that initialize is accepted into it, and no delete sent before it deletes
  it. The anomalies: a leader of the deleted group had a write on the wire (a
  lock timeout, a release) when the group was deleted; it lands after the
  group was re-created, and, if the new life's state epoch is no higher than
  the old one's, moves the new life's start offset or hands its records a
  delivery count from the old life. And a group coordinator deleting the
  group had a DeleteShareGroupState on the wire when it lost the group to a
  failover; the new coordinator deleted the state again, the group was
  re-created and initialized, and then the stale delete landed: the group
  coordinator assigns a share-partition whose state no longer exists, whose
  leaders fail every read from then on (found by the first 100 000-run
  ``swarm_config`` campaign; Kafka's delete carries no epoch). A life begins
  when its initialize is sent, not when it lands: an initialize held on the
  wire can land after a deletion of that same life was sent (the second
  campaign's seven false alarms, when the monitor used the landing time).
* ``StoredEpochMonitor`` (stored-epoch-sources, SC-5): comparing the stored
  state before and after each request that wrote records: only an initialize
  changes the state epoch, only a read changes the leader epoch, and neither
  ever goes down.
* ``StoredStartOffsetMonitor`` (stored-start-offset-monotonic, SP-6, SC-4):
  the start offset of each key's durable state, worked out from the records
  the share coordinators commit and nothing else (a ShareSnapshot sets it with
  its state epoch; a ShareUpdate of the same snapshot epoch moves it unless it
  says -1; a tombstone ends the key, SC-2), never goes down within one state
  epoch. It never asks a coordinator for its state: the committed log is what
  a failover replays, so it is the state that matters. A write that lands
  after a later one (a retry, a replay of a request captured on the wire)
  must not uncover offsets the later one moved past; Kafka 4.3 and earlier
  stored what they were sent.
* ``NegativeEpochMonitor`` (negative-epoch-changes-nothing, SC-5): a read or
  write with a negative leader epoch, a write or initialize with a negative
  state epoch, is answered with an error and the coordinator appends no record
  for it (KAFKA-20743). Judged from the request, the coordinator's answer and
  the records it appended for that request, at the boundary.
* ``SnapshotLimitMonitor`` (snapshot-update-limit, SC-3): per key, the
  ShareUpdate records committed since its latest committed ShareSnapshot,
  counted from the log, are at most the limit (never the coordinator's count).
* ``StoredCompleteCountMonitor`` (stored-delivery-complete-count, SC-4,
  KIP-1226): the DeliveryCompleteCount of each key's committed state, worked
  out from the committed records as ``StoredStartOffsetMonitor`` does, never
  goes down while the start offset it counts from stays (within one state
  epoch). A write that lands after a later one (a retry, a replay) must not
  take back completions the later one counted; Kafka before apache/kafka
  2225a16c7e stored whichever count landed last.
* ``CompleteCountMonitor`` (delivery-complete-count, SP-1, KIP-1226): a
  share-partition leader with no write in flight counts as delivery-complete
  no more offsets of its window than the ghost ledger holds durably terminal
  there (from the writes the share coordinators accepted: the ledger's own
  count, not the leader's bookkeeping). With no write in flight, a terminal
  record of the leader's is one a write made durable; the ledger may hold
  more (a write applied whose answer was lost; a newer leader's writes), never
  fewer. Skipped while the ledger's view of the key is another life or state
  epoch than the leader's.
* ``ReplayEqualMonitor`` (coordinator-replay-equal, SC-6): an independent
  reference of the log's semantics per ``__share_group_state`` partition
  (``invariants/state_log_reference.py``, not the coordinator's ``apply``)
  replays the committed records once each; at every load the loading
  coordinator's replayed state must equal it for every key the uncommitted
  tail does not touch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from invariants.intervals import IntervalSet
from invariants.share_checks import LedgerMonitor
from invariants.sink import Monitor, ViolationSink
from invariants.state_log_reference import ReferenceState, StateLogReference, normal_batches
from model.core.errors import Errors
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_records import ShareSnapshot, ShareTombstone, ShareUpdate
from model.core.share_state import (
    UNKNOWN_OFFSET,
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    SharePartitionKey,
    WriteShareGroupStateRequest,
)

if TYPE_CHECKING:
    from invariants.ledger import Ledger
    from model.core.share_coordinator import ShareGroupState
    from model.core.share_partition import SharePartition


class ZombieWriteMonitor(LedgerMonitor):
    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        durable = self.ledger.durable.get(request.key)
        if durable is not None and 0 <= request.leader_epoch < durable.read_epoch:
            self.sink.report("zombie-write-fenced", now_ms, event="write accepted",
                             message=f"{request.key}: a write with leader epoch {request.leader_epoch} was accepted "
                             f"after a leader read the state with leader epoch {durable.read_epoch}",
                             key=str(request.key), leader_epoch=request.leader_epoch, read_epoch=durable.read_epoch,
                             state_epoch=request.state_epoch)


class EarlierLifeMonitor(Monitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._created_ms: dict[SharePartitionKey, int] = {}  # key -> when its current life began
        self._initialize_sent_ms: dict[SharePartitionKey, int] = {}  # key -> when the group coordinator sent it

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        self._created_ms[key] = now_ms

    def on_share_state_handled(self, shard: ShareCoordinatorShard, request: object,
                               previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        if isinstance(request, DeleteShareGroupStateRequest):
            self._delete_handled(shard, request, previous, sent_ms, now_ms)
        elif isinstance(request, InitializeShareGroupStateRequest) and previous is None:
            # A life begins when the group coordinator decides it: the initialize's send, not its arrival.
            self._initialize_sent_ms[request.key] = sent_ms
        if not isinstance(request, WriteShareGroupStateRequest):
            return
        created_ms = self._created_ms.get(request.key)
        # Strictly before: a write sent in the same millisecond as the initialize is given the benefit.
        if created_ms is not None and sent_ms < created_ms:
            self.sink.report("earlier-life-write-fenced", now_ms, event="write accepted",
                             message=f"{request.key}: a write sent at {sent_ms} ms was accepted into the state "
                             f"initialized at {created_ms} ms (state epoch {request.state_epoch}, leader epoch "
                             f"{request.leader_epoch}): it belongs to the life before the group's deletion",
                             key=str(request.key), sent_ms=sent_ms, created_ms=created_ms,
                             state_epoch=request.state_epoch, leader_epoch=request.leader_epoch,
                             batches=len(request.state_batches), start_offset=request.start_offset)

    def _delete_handled(self, shard: ShareCoordinatorShard, request: DeleteShareGroupStateRequest,
                        previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        # Judged by send times: an initialize held on the wire may land after a delete was sent; the
        # state it creates is the life that delete was sent for (found by a swarm_config campaign).
        decided_ms = self._initialize_sent_ms.get(request.key)
        if previous is None or decided_ms is None or sent_ms >= decided_ms or shard.state(request.key) is not None:
            return
        self.sink.report("earlier-life-delete-fenced", now_ms, event="delete handled",
                         message=f"{request.key}: a delete sent at {sent_ms} ms deleted the state whose initialize "
                         f"was sent at {decided_ms} ms (state epoch {previous.state_epoch}): it was sent for the "
                         f"life before", key=str(request.key), sent_ms=sent_ms, initialize_sent_ms=decided_ms,
                         created_ms=self._created_ms.get(request.key), state_epoch=previous.state_epoch,
                         delete_epoch=request.state_epoch)


class StoredEpochMonitor(Monitor):
    def on_share_state_handled(self, shard: ShareCoordinatorShard, request: object,
                               previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        key = getattr(request, "key", None)
        if previous is None or key is None:
            return
        current = shard.state(key)
        if current is None:
            return  # deleted (SC-8)
        kind = type(request).__name__.removesuffix("Request")
        excerpt = {"key": str(key), "request": kind, "state_epoch": current.state_epoch,
                   "previous_state_epoch": previous.state_epoch, "leader_epoch": current.leader_epoch,
                   "previous_leader_epoch": previous.leader_epoch}
        initialize = isinstance(request, InitializeShareGroupStateRequest)
        if current.state_epoch != previous.state_epoch and (
                current.state_epoch < previous.state_epoch or not initialize):
            self.sink.report("stored-epoch-sources", now_ms, event=kind,
                             message=f"{key}: {kind} changed the stored state epoch from {previous.state_epoch} "
                             f"to {current.state_epoch} (only an initialize raises it)", **excerpt)
        elif current.leader_epoch != previous.leader_epoch and (
                current.leader_epoch < previous.leader_epoch or not isinstance(request, ReadShareGroupStateRequest)):
            self.sink.report("stored-epoch-sources", now_ms, event=kind,
                             message=f"{key}: {kind} changed the stored leader epoch from {previous.leader_epoch} "
                             f"to {current.leader_epoch} (only a read raises it)", **excerpt)


class StoredStartOffsetMonitor(Monitor):
    """SP-6 on the coordinator's side: the committed records' start offset per key and state epoch."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        # key -> (state epoch, snapshot epoch, start offset) of its committed state
        self._stored: dict[SharePartitionKey, tuple[int, int, int]] = {}

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for record in records:
            if isinstance(record, ShareSnapshot):
                self._moved(partition, record.key, record.state_epoch, record.snapshot_epoch, record.start_offset,
                            "ShareSnapshot", now_ms)
            elif isinstance(record, ShareUpdate):
                stored = self._stored.get(record.key)
                # SC-2: an update belongs to the latest snapshot of its snapshot epoch; -1 leaves the start.
                if stored is not None and record.snapshot_epoch == stored[1] and record.start_offset != UNKNOWN_OFFSET:
                    self._moved(partition, record.key, stored[0], stored[1], record.start_offset, "ShareUpdate",
                                now_ms)
            elif isinstance(record, ShareTombstone):
                self._stored.pop(record.key, None)

    def _moved(self, partition: int, key: SharePartitionKey, state_epoch: int, snapshot_epoch: int, start: int,
               kind: str, now_ms: int) -> None:
        stored = self._stored.get(key)
        self._stored[key] = (state_epoch, snapshot_epoch, start)
        if stored is None or stored[0] != state_epoch or start >= stored[2]:
            return
        self.sink.report("stored-start-offset-monotonic", now_ms, event=f"{kind} committed",
                         message=f"{key}: a {kind} committed to __share_group_state-{partition} moved the stored "
                         f"start offset back from {stored[2]} to {start} within state epoch {state_epoch}",
                         key=str(key), partition=partition, state_epoch=state_epoch, start_offset=start,
                         previous_start_offset=stored[2], record=kind)


class StoredCompleteCountMonitor(Monitor):
    """KIP-1226 on the coordinator's side: the committed records' delivery complete count per key, start
    offset and state epoch."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        # key -> (state epoch, snapshot epoch, start offset, delivery complete count) of its committed state
        self._stored: dict[SharePartitionKey, tuple[int, int, int, int]] = {}

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for record in records:
            if isinstance(record, ShareSnapshot):
                self._counted(partition, record.key, record.state_epoch, record.snapshot_epoch, record.start_offset,
                              record.delivery_complete_count, "ShareSnapshot", now_ms)
            elif isinstance(record, ShareUpdate):
                stored = self._stored.get(record.key)
                if stored is not None and record.snapshot_epoch == stored[1]:  # SC-2: of the latest snapshot
                    start = stored[2] if record.start_offset == UNKNOWN_OFFSET else record.start_offset
                    self._counted(partition, record.key, stored[0], stored[1], start, record.delivery_complete_count,
                                  "ShareUpdate", now_ms)
            elif isinstance(record, ShareTombstone):
                self._stored.pop(record.key, None)

    def _counted(self, partition: int, key: SharePartitionKey, state_epoch: int, snapshot_epoch: int, start: int,
                 count: int, kind: str, now_ms: int) -> None:
        stored = self._stored.get(key)
        self._stored[key] = (state_epoch, snapshot_epoch, start, count)
        if stored is None or stored[0] != state_epoch or stored[2] != start or count >= stored[3]:
            return
        self.sink.report("stored-delivery-complete-count", now_ms, event=f"{kind} committed",
                         message=f"{key}: a {kind} committed to __share_group_state-{partition} lowered the stored "
                         f"delivery complete count from {stored[3]} to {count} at start offset {start} within "
                         f"state epoch {state_epoch}", key=str(key), partition=partition, state_epoch=state_epoch,
                         start_offset=start, delivery_complete_count=count, previous_count=stored[3], record=kind)


class CompleteCountMonitor(LedgerMonitor):
    """KIP-1226 on the leader's side, judged against the ghost ledger's durably terminal offsets."""

    def __init__(self, sink: ViolationSink, ledger: Ledger) -> None:
        super().__init__(sink, ledger)
        self._life: dict[SharePartitionKey, int] = {}  # key -> the state epoch its latest life began with

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        self._life[key] = state_epoch

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        if not partition.ready or partition.speo <= partition.spso or partition.pending_write_ids():
            return
        key = partition.key
        durable = self.ledger.durable.get(key)
        if (durable is None or durable.state_epoch != partition.state_epoch
                or partition.state_epoch < self._life.get(key, -1)):
            return
        count = partition.delivery_complete_count
        # Offsets below what the ledger still knows of (its start, its trim) get the benefit of the doubt.
        low = max(partition.spso, durable.start, durable.trimmed)
        allowed = max(0, min(low, partition.speo) - partition.spso) + _count_in(durable.terminal, low,
                                                                               partition.speo - 1)
        if count <= allowed:
            return
        self.sink.report("delivery-complete-count", now_ms, event="share-partition step",
                         message=f"{key}: the leader (leader epoch {partition.leader_epoch}) counts {count} offsets "
                         f"of [{partition.spso}, {partition.speo}) as delivery-complete with no write in flight, "
                         f"but only {allowed} are durably Acknowledged or Archived there",
                         key=str(key), leader_epoch=partition.leader_epoch, state_epoch=partition.state_epoch,
                         spso=partition.spso, speo=partition.speo, delivery_complete_count=count, durable=allowed)


def _count_in(ranges: IntervalSet, first: int, last: int) -> int:
    """How many offsets of ``first..last`` the set holds."""
    total = 0
    for lo, hi in ranges:
        if hi < first:
            continue
        if lo > last:
            break
        total += min(hi, last) - max(lo, first) + 1
    return total


class NegativeEpochMonitor(Monitor):
    """SC-5 (KAFKA-20743): no epoch a leader or a group coordinator sends is negative; such a request
    is refused and leaves no record behind."""

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        negative = _negative_epoch(request)
        if negative is None:
            return
        error = getattr(response, "error_code", Errors.NONE)
        if error == Errors.NONE or records:
            kind = type(request).__name__.removesuffix("Request")
            outcome = f"answered {Errors(error).name}" + (f" and appended {len(records)} record(s)" if records else "")
            self.sink.report("negative-epoch-changes-nothing", now_ms, event=kind,
                             message=f"{getattr(request, 'key', '?')}: a {kind} with {negative} was {outcome} "
                             f"(sent at {sent_ms} ms)",
                             key=str(getattr(request, "key", "")), partition=partition, request=kind,
                             epoch=negative, error=Errors(error).name, records=len(records), sent_ms=sent_ms)


def _negative_epoch(request: object) -> str | None:
    """Which negative epoch ``request`` carries, if it is one the coordinator must refuse. A read-summary
    (leader epoch -1 from the group coordinator: no epoch) and a delete (-1: not given) are not."""
    if isinstance(request, ReadShareGroupStateRequest | WriteShareGroupStateRequest) and request.leader_epoch < 0:
        return f"leader epoch {request.leader_epoch}"
    if isinstance(request, WriteShareGroupStateRequest | InitializeShareGroupStateRequest) and request.state_epoch < 0:
        return f"state epoch {request.state_epoch}"
    return None


class SnapshotLimitMonitor(Monitor):
    """SC-3 from the log: per key, the ShareUpdate records committed since its latest committed
    ShareSnapshot, counted here, never above the limit. It never asks the coordinator for its count
    of updates (a coordinator that counts wrongly, say one that forgets the updates it replayed at a
    load, would answer with its wrong count); the limit is the coordinator's configuration."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._limits: dict[int, int] = {}  # state partition -> share.coordinator.snapshot.update.records.per.snapshot
        self._updates: dict[SharePartitionKey, int] = {}  # key -> updates committed since its latest snapshot

    def on_share_coordinator_loaded(self, partition: int, shard: ShareCoordinatorShard,
                                    committed: Sequence[object], uncommitted: Sequence[object], now_ms: int,
                                    *, log_start_offset: int = 0) -> None:
        self._limits[partition] = shard.snapshot_update_records_per_snapshot

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        updates = self._updates
        for record in records:
            if isinstance(record, ShareUpdate):
                count = updates[record.key] = updates.get(record.key, 0) + 1
                limit = self._limits.get(partition)
                if limit is not None and count == limit + 1:  # once per run of updates
                    self.sink.report("snapshot-update-limit", now_ms, event="ShareUpdate committed",
                                     message=f"{record.key}: {count} ShareUpdate records committed to "
                                     f"__share_group_state-{partition} since the key's last ShareSnapshot, above "
                                     f"the limit {limit}", key=str(record.key), partition=partition,
                                     updates_since_snapshot=count, limit=limit,
                                     snapshot_epoch=record.snapshot_epoch)
            elif isinstance(record, ShareSnapshot | ShareTombstone):
                updates.pop(record.key, None)


class ReplayEqualMonitor(Monitor):
    """SC-6 and SC-8: a loaded share coordinator holds the state of every committed record ever
    written, although the records before its log start offset were pruned. The reference
    (``invariants/state_log_reference.py``, written apart from the coordinator's ``apply``) replays
    the whole history, catching up on records before they are deleted."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._reference: dict[int, StateLogReference] = {}  # state partition -> committed records replayed
        self._applied: dict[int, int] = {}  # state partition -> the log offset the reference has reached

    def on_share_state_pruning(self, partition: int, first_offset: int, records: Sequence[object],
                               now_ms: int) -> None:
        self._catch_up(partition, first_offset, records)

    def on_share_coordinator_loaded(self, partition: int, shard: ShareCoordinatorShard,
                                    committed: Sequence[object], uncommitted: Sequence[object], now_ms: int,
                                    *, log_start_offset: int = 0) -> None:
        reference = self._catch_up(partition, log_start_offset, committed).states
        in_tail = {getattr(record, "key", None) for record in uncommitted}
        for key in sorted(set(reference) | set(shard.keys())):
            if key in in_tail:
                continue
            expected, replayed = reference.get(key), shard.state(key)
            if not _same(expected, replayed):
                self.sink.report("coordinator-replay-equal", now_ms, event=f"load __share_group_state-{partition}",
                                 message=f"{key}: the share coordinator of partition {partition} replayed "
                                 f"{_brief(replayed)}, but the committed records say "
                                 f"{'no state' if expected is None else expected.describe()}",
                                 key=str(key), partition=partition, replayed=_brief(replayed),
                                 committed="no state" if expected is None else expected.describe())
                return

    def _catch_up(self, partition: int, first_offset: int, records: Sequence[object]) -> StateLogReference:
        """Replay the records of the log from ``first_offset`` the reference has not seen yet."""
        reference = self._reference.get(partition)
        if reference is None:
            reference = self._reference[partition] = StateLogReference()
        applied = self._applied.get(partition, 0)
        assert first_offset <= applied, f"records {applied}..{first_offset - 1} were pruned unseen"
        for record in records[applied - first_offset:]:
            reference.replay(record)
        self._applied[partition] = max(applied, first_offset + len(records))
        return reference


def _same(expected: ReferenceState | None, state: ShareGroupState | None) -> bool:
    if expected is None or state is None:
        return expected is None and state is None
    return (expected.state_epoch == state.state_epoch and expected.leader_epoch == state.leader_epoch
            and expected.snapshot_epoch == state.snapshot_epoch and expected.start_offset == state.start_offset
            and expected.delivery_complete_count == state.delivery_complete_count
            and expected.create_timestamp_ms == state.create_timestamp_ms
            and expected.write_timestamp_ms == state.write_timestamp_ms
            and expected.batches == normal_batches(state.state_batches))


def _brief(state: ShareGroupState | None) -> str:
    if state is None:
        return "no state"
    return (f"state epoch {state.state_epoch}, leader epoch {state.leader_epoch}, snapshot epoch "
            f"{state.snapshot_epoch}, start {state.start_offset}, {len(state.state_batches)} batch(es)")
