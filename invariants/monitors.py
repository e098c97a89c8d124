"""The invariant monitors: ``Observer``s the simulated brokers call at each protocol step.

Each monitor checks one family of SPEC.md rules incrementally (its cost per
hook is proportional to the ranges the step touched, its memory to the runs of
offsets it must remember) and reports every breach to a shared
``ViolationSink`` as a ``Violation`` carrying the rule id, the simulated time,
the seed, a message and a compact state excerpt.

* ``SpsoWindowMonitor``: SP-6 (SPSO never decreases within a state epoch, and
  moves past an offset only once that offset is durably terminal — acknowledged
  or archived by a write the share coordinator accepted — or below a durable
  start offset, and only for a reason the ghost ledger saw: a client's
  acknowledgement, the delivery limit, no deliverable record in the data log,
  below its log start offset), SP-7 (SPSO ≤ SPEO ≤ bound), SP-8 (SPEO − SPSO ≤ max record locks).
* ``DeliveryLimitMonitor``: SP-5/E-4 (no acquisition with a delivery count above
  the limit; within one leader tenure an offset's count strictly increases
  from one delivery to the next; at the end of the run a record delivered
  limit times is terminal, never AVAILABLE) and SP-11's bound across tenures
  (in one life of the state a record is delivered at most limit times, plus
  one for each further leader tenure that delivered it).
* ``NoRedeliveryMonitor``: E-2 (an offset whose accept or reject was confirmed
  to a client is never acquired again within the same state epoch).
* ``ExclusiveAcquisitionMonitor``: E-3 (no acquisition of an offset while another
  acquisition of it is live; no confirmed acknowledgement from a member that
  does not hold the live acquisition).
* ``Monitors`` (``invariants/fan_out.py``): the one ``Observer`` the cluster is
  given; it fans each hook out to the monitors that override it.

Only states the leader calls ACTIVE are checked for SP-6..8 (a leader still
loading has SPSO 0), and a share-partition with a leader epoch lower than one
already seen (a zombie, SP-10) is ignored by the window checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from invariants.archive_checks import ArchiveReasonMonitor
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
from invariants.delivery_checks import SubscribedDeliveryMonitor
from invariants.fan_out import Monitors
from invariants.fetch_checks import PurgatoryWakeupMonitor
from invariants.group_checks import (
    AssignInitializedMonitor,
    ExclusiveOwnershipMonitor,
    GroupEpochMonitor,
    NoAssignAndRevokeMonitor,
    TargetBalanceMonitor,
)
from invariants.hostile_checks import RefusedShareRequestMonitor
from invariants.ids import TABLE
from invariants.intervals import IntervalSet, RangeMap
from invariants.ledger import TERMINAL_STATES, Ledger, SessionFacts, ack_runs, terminal_runs
from invariants.session_checks import AckDisciplineMonitor, SessionReleaseMonitor
from invariants.share_checks import (
    AbortedDeliveryMonitor,
    AckAfterDurableWriteMonitor,
    DeadLetterMonitor,
    DurableCountMonitor,
    GapAckMonitor,
    RecordTransitionMonitor,
    ShareSessionMonitor,
)
from invariants.sink import Monitor, ViolationSink
from invariants.violation import Violation
from model.core.message import Message
from model.core.share_state import UNKNOWN_OFFSET, AcknowledgeType, RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import WriteShareGroupStateRequest

INVARIANTS: Final = {invariant: entry.statement for invariant, entry in TABLE.items()}
"""Catalogue id → its statement (``invariants/ids.py``)."""



def _key_text(key: SharePartitionKey) -> str:
    return str(key)


# -- SP-6, SP-7, SP-8 -------------------------------------------------------------------------


@dataclass
class _WindowTrack:
    state_epoch: int = -1
    leader_epoch: int = -1
    spso: int | None = None  # the last SPSO an ACTIVE leader showed (None: no baseline yet)
    durable_start: int = -1  # the highest start offset the coordinator accepted
    durable_terminal: IntervalSet = field(default_factory=IntervalSet)


def _in_bounds(spso: int, speo: int, bound: int) -> bool:
    """SP-7: SPSO <= SPEO <= the bound, except that an admin reset (SP-12) may put the SPSO past the
    bound: Kafka accepts it, and until the log reaches the SPSO nothing is brought into the window."""
    return spso <= speo <= max(bound, spso)


class SpsoWindowMonitor(Monitor):
    """With a ``ledger``, every offset an SPSO moves past must also be justified by facts the ledger saw
    (``Ledger.unjustified``): a client acknowledged it terminal, it was handed out at the delivery limit,
    the data log holds no deliverable record there or it is below the log start offset. A write that
    made the move durable justifies nothing: the leader chose what it wrote."""

    def __init__(self, sink: ViolationSink, ledger: Ledger | None = None) -> None:
        super().__init__(sink)
        self._tracks: dict[SharePartitionKey, _WindowTrack] = {}
        self.ledger = ledger

    def _track(self, key: SharePartitionKey) -> _WindowTrack:
        track = self._tracks.get(key)
        if track is None:
            track = self._tracks[key] = _WindowTrack()
        return track

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life of the share-partition (its state was deleted): start afresh at its state epoch. A
        # leader still serving the life before (it learns of the deletion when its next write is
        # fenced) steps at a lower state epoch and is not checked against this life's durable state;
        # a leader older than one already seen is still a zombie.
        old = self._tracks.get(key)
        self._tracks[key] = _WindowTrack(state_epoch=state_epoch, leader_epoch=-1 if old is None else old.leader_epoch)

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        track = self._track(request.key)
        if request.state_epoch > track.state_epoch:
            # SP-12: a new state epoch starts the durable state afresh.
            track.state_epoch = request.state_epoch
            track.spso = None
            track.durable_start = -1
            track.durable_terminal.clear()
        elif request.state_epoch < track.state_epoch:
            return
        if request.start_offset != UNKNOWN_OFFSET and request.start_offset > track.durable_start:
            track.durable_start = request.start_offset
        for batch in request.state_batches:
            if batch.delivery_state in TERMINAL_STATES:
                track.durable_terminal.add(batch.first_offset, batch.last_offset)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        if not partition.ready:
            return
        key = partition.key
        track = self._track(key)
        if partition.leader_epoch < track.leader_epoch:
            return  # a zombie leader (SP-10): fenced at the coordinator, not checked here
        if partition.state_epoch > track.state_epoch:
            track.state_epoch = partition.state_epoch
            track.spso = None
            track.durable_start = -1
            track.durable_terminal.clear()
        elif partition.state_epoch < track.state_epoch:
            return
        track.leader_epoch = partition.leader_epoch
        spso, speo = partition.spso, partition.speo
        previous = track.spso
        if spso == previous and _in_bounds(spso, speo, bound) and partition.window_within_record_locks():
            head = partition.state_of(spso)
            if head is None or head.in_transition or head.state not in TERMINAL_STATES:
                return  # the common step: nothing moved at the SPSO and the window is in bounds
        self._check(partition, track, bound, now_ms)

    def _check(self, partition: SharePartition, track: _WindowTrack, bound: int, now_ms: int) -> None:
        key = partition.key
        spso, speo = partition.spso, partition.speo
        excerpt = {"key": _key_text(key), "spso": spso, "speo": speo, "bound": bound,
                   "leader_epoch": partition.leader_epoch, "state_epoch": partition.state_epoch}
        if not _in_bounds(spso, speo, bound):
            self.sink.report("window-bounds", now_ms, event="share-partition step",
                             message=f"{key}: SPSO {spso} <= SPEO {speo} <= max(bound {bound}, SPSO) does not hold",
                             **excerpt)
        if not partition.window_within_record_locks():
            self.sink.report("window-size", now_ms, event="share-partition step",
                             message=f"{key}: window SPEO - SPSO = {speo - spso} exceeds "
                             f"max record locks {partition.max_record_locks}", **excerpt)
        head = partition.state_of(spso)
        if head is not None and head.state in TERMINAL_STATES and not head.in_transition:
            self.sink.report("spso-monotonic", now_ms, event="share-partition step",
                             message=f"{key}: offset {spso} at the SPSO is durably "
                             f"{head.state.name}; the SPSO should have moved past it", **excerpt)
        previous = track.spso
        if previous is not None:
            if spso < previous:
                self.sink.report("spso-monotonic", now_ms, event="share-partition step",
                                 message=f"{key}: SPSO went back from {previous} to {spso} "
                                 f"within state epoch {partition.state_epoch}", previous_spso=previous, **excerpt)
            else:
                # Offsets below the data partition's log start were deleted (DeleteRecords, retention):
                # the SPSO follows the log start past them without a write (trunk's updateCacheAndOffsets).
                start = max(previous, track.durable_start, partition.log.log_start_offset)
                missing = track.durable_terminal.first_missing(start, spso - 1)
                if missing is not None:
                    self.sink.report("spso-monotonic", now_ms, event="share-partition step",
                                     message=f"{key}: SPSO moved from {previous} to {spso} past offset "
                                     f"{missing}, which is not durably terminal", previous_spso=previous,
                                     offset=missing, durable_start=track.durable_start, **excerpt)
                elif spso > previous and self.ledger is not None:
                    self._check_justified(partition, previous, now_ms, excerpt)
        if previous is None or spso > previous:
            track.spso = spso
            track.durable_terminal.discard_below(spso)


    def _check_justified(self, partition: SharePartition, previous: int, now_ms: int,
                         excerpt: dict[str, object]) -> None:
        ledger = self.ledger
        assert ledger is not None
        key = partition.key
        durable = ledger.durable.get(key)
        if durable is None or durable.state_epoch != partition.state_epoch:
            return  # the ledger's view is another state epoch or life: no facts to judge by
        count, offset = ledger.unjustified(key, previous, partition.spso - 1, partition.log,
                                           partition.group.read_committed)
        if count:
            self.sink.report("spso-monotonic", now_ms, event="share-partition step",
                             message=f"{key}: SPSO moved from {previous} to {partition.spso} past {count} "
                             f"offset(s) from {offset} that no client acknowledged, none handed out at the "
                             f"delivery limit, each holding a record at or above the log start offset "
                             f"{partition.log.log_start_offset}", previous_spso=previous, offset=offset,
                             unjustified=count, **excerpt)


# -- SP-5 / E-4, SP-11 -------------------------------------------------------------------------

# Per offset, over one life of the state: how many times it was acquired, and the leader epochs
# (tenures, zombies included) that acquired it.
_Deliveries = tuple[int, tuple[int, ...]]


class DeliveryLimitMonitor(Monitor):
    """``limit``: the group.share.delivery.count.limit of every group (``limits`` overrides per group).

    SP-11's bound: ACQUIRED is never persisted, so a leader failover may lose the increment of the
    one delivery of a record in flight, and no more: a release or lock timeout makes the record
    AVAILABLE only once its write is durable (SP-9), so at most one increment of a record is ever
    not durable. A record is then delivered at most limit + (tenures that delivered it - 1) times
    in one life of its state. A leader that makes a record AVAILABLE again before that write is
    accepted (Kafka trunk on lock timeout) can lose two or more increments in one failover."""

    def __init__(self, sink: ViolationSink, limit: int = 5, limits: dict[str, int] | None = None) -> None:
        super().__init__(sink)
        self.limit = limit
        self.limits = dict(limits or {})
        # Per key: the leader epoch of the tenure, and offset → the count of its last delivery in it.
        self._tenure: dict[SharePartitionKey, int] = {}
        self._counts: dict[SharePartitionKey, RangeMap[int]] = {}
        self._at_limit: dict[SharePartitionKey, IntervalSet] = {}
        self._latest: dict[SharePartitionKey, SharePartition] = {}
        self._state_epoch: dict[SharePartitionKey, int] = {}
        self._deliveries: dict[SharePartitionKey, RangeMap[_Deliveries]] = {}

    def limit_of(self, key: SharePartitionKey) -> int:
        return self.limits.get(key.group_id, self.limit)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life of the share-partition: its counts start afresh.
        self._forget_life(key)
        self._state_epoch.pop(key, None)

    def _forget_life(self, key: SharePartitionKey) -> None:
        self._counts.pop(key, None)
        self._at_limit.pop(key, None)
        self._deliveries.pop(key, None)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        limit = self.limit_of(key)
        counts = self._counts.get(key)
        if counts is None or self._tenure.get(key, -1) != leader_epoch:
            if counts is not None and leader_epoch < self._tenure[key]:
                counts = RangeMap()  # a zombie's tenure: judged on its own
            else:
                counts = self._counts[key] = RangeMap()
                self._tenure[key] = leader_epoch
        at_limit = self._at_limit.get(key)
        latest = self._latest.get(key)
        if limit > 2 and latest is not None and latest.broker.kafka:
            self._check_alone(key, member_id, acquired, limit, leader_epoch, now_ms)
        for record in acquired:
            first, last, count = record.first_offset, record.last_offset, record.delivery_count
            if count > limit:
                self.sink.report("delivery-count-limit", now_ms, event=f"acquire {member_id}",
                                 message=f"{key}: offsets {first}-{last} delivered to {member_id} with "
                                 f"delivery count {count} above the limit {limit}", key=_key_text(key),
                                 first=first, last=last, delivery_count=count, limit=limit,
                                 member=member_id, leader_epoch=leader_epoch)
            for lo, hi, before in counts.overlapping(first, last):
                if before >= count:
                    self.sink.report("delivery-count-limit", now_ms, event=f"acquire {member_id}",
                                     message=f"{key}: offsets {lo}-{hi} delivered again in leader epoch "
                                     f"{leader_epoch} with delivery count {count}, not above its previous "
                                     f"{before}", key=_key_text(key), first=lo, last=hi, delivery_count=count,
                                     previous_count=before, leader_epoch=leader_epoch)
                    break
            counts.assign(first, last, count)
            if count >= limit:
                if at_limit is None:
                    at_limit = self._at_limit[key] = IntervalSet()
                at_limit.add(first, last)
        self._count_deliveries(key, member_id, acquired, leader_epoch, limit, now_ms)

    def _check_alone(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords], limit: int,
                     leader_epoch: int, now_ms: int) -> None:
        """Kafka's throttling (SharePartition.acquireSubsetBatchRecords): a record on its last delivery
        attempt goes alone, so a poison record cannot take its batch's other records down with it."""
        for record in acquired:
            if record.delivery_count == limit and (len(acquired) > 1 or record.first_offset != record.last_offset):
                self.sink.report("last-delivery-alone", now_ms, event=f"acquire {member_id}",
                                 message=f"{key}: offsets {record.first_offset}-{record.last_offset} on their "
                                 f"last delivery attempt ({limit}) acquired together with "
                                 f"{sum(a.last_offset - a.first_offset + 1 for a in acquired) - 1} other record(s)",
                                 key=_key_text(key), first=record.first_offset, last=record.last_offset,
                                 delivery_count=limit, member=member_id, leader_epoch=leader_epoch)
                return

    def _count_deliveries(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                          leader_epoch: int, limit: int, now_ms: int) -> None:
        deliveries = self._deliveries.get(key)
        if deliveries is None:
            deliveries = self._deliveries[key] = RangeMap()

        def one_more(before: _Deliveries | None) -> _Deliveries:
            if before is None:
                return 1, (leader_epoch,)
            times, epochs = before
            return times + 1, epochs if leader_epoch in epochs else (*epochs, leader_epoch)

        reported = False
        for record in acquired:
            for lo, hi, (times, epochs) in deliveries.update(record.first_offset, record.last_offset, one_more):
                if not reported and times > limit + len(epochs) - 1:
                    reported = True
                    self.sink.report("deliveries-within-failover-bound", now_ms, event=f"acquire {member_id}",
                                     message=f"{key}: offsets {lo}-{hi} delivered {times} times in this life of "
                                     f"the state, by {len(epochs)} leader tenure(s) (epochs "
                                     f"{', '.join(map(str, epochs))}): more than the limit {limit} plus one "
                                     "per failover", key=_key_text(key), first=lo, last=hi, deliveries=times,
                                     tenures=len(epochs), limit=limit, member=member_id, leader_epoch=leader_epoch)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        latest = self._latest.get(key)
        if latest is None or partition.leader_epoch >= latest.leader_epoch:
            self._latest[key] = partition
        if partition.ready and partition.state_epoch != self._state_epoch.setdefault(key, partition.state_epoch):
            # SP-12: an admin reset starts the counts afresh (the leader epoch may not change).
            self._state_epoch[key] = partition.state_epoch
            self._forget_life(key)
        if partition.ready and partition.leader_epoch == self._tenure.get(key):
            counts = self._counts.get(key)
            if counts is not None:
                counts.discard_below(partition.spso)
            deliveries = self._deliveries.get(key)
            if deliveries is not None:
                deliveries.discard_below(partition.spso)

    def finish(self, now_ms: int) -> None:
        """E-4/SP-5: a record delivered limit times is, at the end, terminal (or still in someone's hands).

        SP-11: a failover may lose the increment of a delivery in flight, so a record delivered limit
        times by an earlier leader may rightly be AVAILABLE at limit - 1 under the latest one. It is
        judged by the latest leader's own count, or by the deliveries seen in the latest tenure."""
        for key in sorted(self._at_limit):
            partition = self._latest.get(key)
            if partition is None or not partition.ready:
                continue
            limit = self.limit_of(key)
            counts = self._counts.get(key) if self._tenure.get(key) == partition.leader_epoch else None
            for first, last in self._at_limit[key]:
                offset = max(first, partition.spso)
                while offset <= last and offset < partition.speo:
                    state = partition.state_of(offset)
                    if (state is not None and state.state == RecordState.AVAILABLE and not state.in_transition
                            and max(state.delivery_count, _last_delivery(counts, offset)) >= limit):
                        self.sink.report("delivery-count-limit", now_ms, event="end of run",
                                         message=f"{key}: offset {offset} was delivered "
                                         f"{limit} times and is AVAILABLE at the end, not ARCHIVED",
                                         key=_key_text(key), offset=offset, delivery_count=state.delivery_count,
                                         spso=partition.spso, speo=partition.speo)
                        break
                    offset += 1


def _last_delivery(counts: RangeMap[int] | None, offset: int) -> int:
    """The delivery count of ``offset``'s last acquisition in the tenure ``counts`` covers (0: none)."""
    hits = counts.overlapping(offset, offset) if counts is not None else []
    return hits[0][2] if hits else 0


# -- E-2 ----------------------------------------------------------------------------------------


class NoRedeliveryMonitor(Monitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._ended: dict[SharePartitionKey, IntervalSet] = {}
        self._state_epoch: dict[SharePartitionKey, int] = {}
        # Keys whose group was deleted and created again, and no leader of the new life is ready yet.
        self._between_lives: set[SharePartitionKey] = set()

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        if not partition.ready:
            return
        epoch = self._state_epoch.get(key)
        if epoch is None or partition.state_epoch > epoch:
            # SP-12: an admin reset re-delivers on purpose; a confirmed ack from before it no longer binds.
            if epoch is not None:
                self._ended.pop(key, None)
            self._state_epoch[key] = partition.state_epoch
            self._between_lives.discard(key)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life of the share-partition (its group was deleted): delivering its records again is due.
        self._ended.pop(key, None)
        if self._state_epoch.pop(key, None) is not None:
            self._between_lives.add(key)

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        if key in self._between_lives or state_epoch < self._state_epoch.get(key, state_epoch):
            # An earlier life's acknowledgement, confirmed late (its write was durable before the group was
            # deleted or its state reset, SP-12): it binds that life only. A new life's leader confirms
            # nothing before its first ready step.
            return
        ended = self._ended.get(key)
        if ended is None:
            ended = self._ended[key] = IntervalSet()
        for batch in batches:
            for first, last in terminal_runs(batch):
                ended.add(first, last)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        ended = self._ended.get(key)
        if ended is None:
            return
        for record in acquired:
            hit = ended.first_overlap(record.first_offset, record.last_offset)
            if hit is not None:
                self.sink.report("no-redelivery-after-accept", now_ms, event=f"acquire {member_id}",
                                 message=f"{key}: offsets {hit[0]}-{hit[1]} delivered to {member_id} "
                                 f"(count {record.delivery_count}) after their acknowledgement was confirmed",
                                 key=_key_text(key), first=hit[0], last=hit[1], member=member_id,
                                 delivery_count=record.delivery_count, leader_epoch=leader_epoch)
                return


# -- E-3 ----------------------------------------------------------------------------------------


class _Holder(Message):
    FIELDS = ("member_id", "lock_deadline_ms", "leader_epoch", "delivery_count")
    __slots__ = FIELDS

    def __init__(self, member_id: str, lock_deadline_ms: int, leader_epoch: int, delivery_count: int) -> None:
        self.member_id: Final = member_id
        self.lock_deadline_ms: Final = lock_deadline_ms
        self.leader_epoch: Final = leader_epoch
        self.delivery_count: Final = delivery_count


class ExclusiveAcquisitionMonitor(Monitor):
    """A live acquisition ends at its lock deadline, on its owner's confirmed acknowledgement, when
    the share coordinator accepts a write covering its offsets (a release, a lock timeout, SP-15)
    with at least its delivery count (a write with a lower one is about an earlier delivery: one a
    leader sent before the records were delivered again, which SP-9 rules out but the mutant
    lock-timeout-before-write does),
    when the leader adopts a higher state epoch (SP-12: it dropped every acquisition of the old state),
    or when the leader stops being ready in its tenure (it dropped its state: a higher state epoch,
    the state deleted (SC-9), fenced; a not-ready leader holds no acquisition).

    A RENEW acknowledgement (KIP-1222) the leader took restarts the member's lock: the acquisition
    lives a full lock duration from then on, and the leader's own state must say so at once (the
    records ACQUIRED by the member, lock deadline at least that late): a renewal answered but not
    applied lets the lock expire under a member that was told it holds the records."""

    def __init__(self, sink: ViolationSink, lock_duration_ms: int = 30_000,
                 lock_durations: dict[str, int] | None = None) -> None:
        super().__init__(sink)
        self.lock_duration_ms = lock_duration_ms
        self.lock_durations = dict(lock_durations or {})
        self._live: dict[SharePartitionKey, RangeMap[_Holder]] = {}
        self._state_epoch: dict[SharePartitionKey, int] = {}
        # Renewals taken, to check against the leader's next step: key -> (first, last, member, until).
        self._renewed: dict[SharePartitionKey, list[tuple[int, int, str, int]]] = {}
        # The latest leader seen per key: an acknowledgement below its log start is skipped, not taken (trunk).
        self._leaders: dict[SharePartitionKey, SharePartition] = {}

    def _map(self, key: SharePartitionKey) -> RangeMap[_Holder]:
        live = self._live.get(key)
        if live is None:
            live = self._live[key] = RangeMap()
        return live

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        live = self._map(key)
        deadline = now_ms + self.lock_durations.get(key.group_id, self.lock_duration_ms)
        for record in acquired:
            first, last = record.first_offset, record.last_offset
            holder = _Holder(member_id, deadline, leader_epoch, record.delivery_count)
            for lo, hi, other in live.overlapping(first, last):
                # An acquisition of an older leader tenure is void once a newer leader serves the record.
                if other.lock_deadline_ms > now_ms and other.leader_epoch >= leader_epoch:
                    self.sink.report("exclusive-acquisition", now_ms, event=f"acquire {member_id}",
                                     message=f"{key}: offsets {lo}-{hi} acquired by {member_id} while "
                                     f"{other.member_id} holds them until {other.lock_deadline_ms} ms",
                                     key=_key_text(key), first=lo, last=hi, member=member_id,
                                     holder=other.member_id, holder_deadline_ms=other.lock_deadline_ms,
                                     leader_epoch=leader_epoch, holder_leader_epoch=other.leader_epoch)
                    break
            live.assign(first, last, holder)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        """SP-3: a leader takes an acknowledgement only of offsets the member holds, lock unexpired."""
        live = self._map(key)
        self._check_taken(key, member_id, batches, leader_epoch, now_ms, live)
        for batch in batches:
            for first, last in ack_runs(batch, lambda t: t == _RENEW):
                until = now_ms + self.lock_durations.get(key.group_id, self.lock_duration_ms)
                for lo, hi, held in live.overlapping(first, last):
                    if held.member_id == member_id:
                        live.assign(lo, hi, _Holder(member_id, max(until, held.lock_deadline_ms),
                                                    held.leader_epoch, held.delivery_count))
                self._renewed.setdefault(key, []).append((first, last, member_id, until))

    def _check_taken(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                     leader_epoch: int, now_ms: int, live: RangeMap[_Holder]) -> None:
        leader = self._leaders.get(key)
        skipped_below = (leader.log.log_start_offset if leader is not None and leader.leader_epoch == leader_epoch
                         else 0)
        for batch in batches:
            cursor, last = max(batch.first_offset, skipped_below), batch.last_offset
            if cursor > last:
                continue
            for lo, hi, held in live.overlapping(cursor, last):
                if lo > cursor or held.member_id != member_id or held.lock_deadline_ms <= now_ms:
                    break
                cursor = hi + 1
            else:
                if cursor > last:
                    continue
            holder_at = live.overlapping(cursor, cursor)
            holder = holder_at[0][2] if holder_at else None
            what = ("no live acquisition" if holder is None else
                    f"{holder.member_id}'s acquisition, lock until {holder.lock_deadline_ms} ms")
            self.sink.report("exclusive-acquisition", now_ms, event=f"acknowledge {member_id}",
                             message=f"{key}: an acknowledgement of offset {cursor} by {member_id} was taken, "
                             f"but the offset has {what}", key=_key_text(key), offset=cursor, member=member_id,
                             holder=None if holder is None else holder.member_id,
                             holder_deadline_ms=None if holder is None else holder.lock_deadline_ms,
                             leader_epoch=leader_epoch)
            return

    def _check_renewed(self, partition: SharePartition, renewed: list[tuple[int, int, str, int]],
                       now_ms: int) -> None:
        ranges = list(partition.batches())
        for first, last, member_id, until in renewed:
            for b in ranges:
                if b.last_offset < first or b.first_offset > last:
                    continue
                deadline = b.lock_deadline_ms
                if (b.state is RecordState.ACQUIRED and b.owner == member_id and not b.in_transition
                        and deadline is not None and deadline < until):
                    key = partition.key
                    lo, hi = max(first, b.first_offset), min(last, b.last_offset)
                    self.sink.report("exclusive-acquisition", now_ms, event=f"renew {member_id}",
                                     message=f"{key}: a RENEW of offsets {lo}-{hi} by {member_id} was taken, "
                                     f"but their lock still ends at {deadline} ms, before {until} ms: the "
                                     f"member is told it holds records the leader will hand to another",
                                     key=_key_text(key), first=lo, last=hi, member=member_id,
                                     lock_deadline_ms=deadline, renewed_until_ms=until,
                                     leader_epoch=partition.leader_epoch)
                    return

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        # Only acquisitions of this leader's tenure or an older one: a leader that lost the partition
        # still confirms an acknowledgement whose write was durable, after a newer leader may have
        # delivered the record again (a release confirmed late); that acquisition is the newer one's.
        live = self._map(key)
        for batch in batches:
            first, last = batch.first_offset, batch.last_offset
            ended = [(lo, hi, other) for lo, hi, other in live.overlapping(first, last)
                     if other.leader_epoch <= leader_epoch]
            for lo, hi, other in ended:
                if other.member_id != member_id and other.lock_deadline_ms > now_ms:
                    self.sink.report("exclusive-acquisition", now_ms, event=f"ack confirmed {member_id}",
                                     message=f"{key}: an acknowledgement of offsets {lo}-{hi} by "
                                     f"{member_id} was confirmed while {other.member_id} holds them",
                                     key=_key_text(key), first=lo, last=hi, member=member_id,
                                     holder=other.member_id, holder_deadline_ms=other.lock_deadline_ms)
                    break
            for lo, hi, _ in ended:
                live.remove(lo, hi)

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        live = self._live.get(request.key)
        if live is None:
            return
        if request.start_offset != UNKNOWN_OFFSET:
            live.discard_below(request.start_offset)
        for batch in request.state_batches:
            for lo, hi, other in live.overlapping(batch.first_offset, batch.last_offset):
                # A write of an older tenure does not end a newer tenure's acquisition (-1: no epoch given).
                if ((request.leader_epoch < 0 or other.leader_epoch <= request.leader_epoch)
                        and other.delivery_count <= batch.delivery_count):
                    live.remove(lo, hi)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        self._leaders[partition.key] = partition
        renewed = self._renewed.pop(partition.key, None) if self._renewed else None
        if renewed is not None and partition.ready:
            self._check_renewed(partition, renewed, now_ms)
        if not partition.ready:
            live = self._live.get(partition.key)
            if live is not None:
                # Its acquisitions (not a newer tenure's) are gone; a re-read may adopt a state of the
                # same state epoch (a deleted group re-created, GC-7), so the epoch check misses it.
                for lo, hi, other in list(live):
                    if other.leader_epoch <= partition.leader_epoch:
                        live.remove(lo, hi)
            return
        key = partition.key
        epoch = self._state_epoch.get(key)
        if epoch is None or partition.state_epoch > epoch:
            # SP-12: an admin reset re-initialized the state; a leader serving the new state epoch
            # has dropped (Kafka: fenced and rebuilt) every acquisition made under the old one.
            if epoch is not None:
                self._live.pop(key, None)
            self._state_epoch[key] = partition.state_epoch
        live = self._live.get(key)
        if live is not None:
            live.discard_below(partition.spso)


_RENEW: Final = int(AcknowledgeType.RENEW)


def standard_monitors(seed: int, *, delivery_count_limit: int = 5, lock_duration_ms: int = 30_000,
                      limits: dict[str, int] | None = None, lock_durations: dict[str, int] | None = None,
                      on_violation: Callable[[Violation], None] | None = None) -> Monitors:
    """Every step monitor of the catalogue over one sink and one ghost ledger (last: the
    checks see the facts from before the step they judge)."""
    sink = ViolationSink(seed, on_violation)
    ledger = Ledger(sink, delivery_count_limit, limits)
    facts = SessionFacts(sink)  # issue 25's session facts: also after the checks
    return Monitors(
        (
            SpsoWindowMonitor(sink, ledger),
            DeliveryLimitMonitor(sink, delivery_count_limit, limits),
            NoRedeliveryMonitor(sink),
            ExclusiveAcquisitionMonitor(sink, lock_duration_ms, lock_durations),
            RecordTransitionMonitor(sink, ledger),
            DeadLetterMonitor(sink, ledger),
            AckAfterDurableWriteMonitor(sink, ledger),
            DurableCountMonitor(sink, ledger),
            AbortedDeliveryMonitor(sink, ledger),
            GapAckMonitor(sink),
            ShareSessionMonitor(sink),
            ZombieWriteMonitor(sink, ledger),
            EarlierLifeMonitor(sink),
            StoredEpochMonitor(sink),
            StoredStartOffsetMonitor(sink),
            NegativeEpochMonitor(sink),
            SnapshotLimitMonitor(sink),
            StoredCompleteCountMonitor(sink),
            CompleteCountMonitor(sink, ledger),
            ReplayEqualMonitor(sink),
            GroupEpochMonitor(sink),
            AssignInitializedMonitor(sink),
            TargetBalanceMonitor(sink),
            ExclusiveOwnershipMonitor(sink),
            NoAssignAndRevokeMonitor(sink),
            RefusedShareRequestMonitor(sink),
            SessionReleaseMonitor(sink, facts),
            AckDisciplineMonitor(sink, facts),
            ArchiveReasonMonitor(sink, ledger),
            SubscribedDeliveryMonitor(sink),
            PurgatoryWakeupMonitor(sink),
            ledger,
            facts,
        ),
        sink,
    )
