"""Stateful property test: SharePartition leaders + ShareCoordinatorShard + PartitionLog.

Hypothesis drives produce (plain and transactional), acquire, accept / release /
reject / gap, lock timeouts, write answers (success, failure, applied-but-lost,
in any order), leader failover with zombie leaders, coordinator failover, log
start moves, compaction and admin resets. After every step it checks:

* SP-1 legal transitions only (within one leader's state);
* SP-5 delivery counts ≤ limit, and deliveries per offset ≤ limit per leader
  tenure (≤ limit + failovers overall, SP-11 / E-4);
* SP-6 offsets that leave the window below the SPSO were terminal, and the SPSO
  never decreases within a state epoch, across failovers too;
* SP-7 SPSO ≤ SPEO ≤ HWM (LSO for read_committed); SP-8 window ≤ max locks;
* SP-11 in-memory counts never below the durable ones;
* E-2 a record whose acceptance was confirmed is never acquired again;
* E-3 never two live acquisitions of one offset;
* SP-6 the durable start offset never moves back within a state epoch;
* SP-12 a leader whose write is fenced by the state epoch stops serving;
* zombie leaders' late writes are fenced.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model import mutants
from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import ApiError, Errors
from model.core.log import PartitionLog, SpanKind
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_partition import (
    AcknowledgementBatch,
    AcknowledgeResult,
    PartitionStatus,
    PendingWrite,
    SharePartition,
    WriteReason,
)
from model.core.share_state import (
    UNKNOWN_OFFSET,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    RecordState,
    SharePartitionKey,
    WriteShareGroupStateResponse,
)

KEY = SharePartitionKey("g", "t", 0)
LIMIT = 3
MAX_LOCKS = 8  # below the config's minimum on purpose: a small window reaches its bound
LOCK_MS = 1_000
MEMBERS = ("m1", "m2", "m3")
AV, AQ, ACK, ARC = RecordState.AVAILABLE, RecordState.ACQUIRED, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
TERMINAL = (ACK, ARC)
ACCEPT = 1


# Kafka acquires these with the fetched batches (the client acknowledges GAP and MARKER with GAP).
_KAFKA_ACQUIRABLE = (SpanKind.RECORD, SpanKind.GAP, SpanKind.MARKER)


@dataclass
class InFlight:
    leader: SharePartition
    write: PendingWrite


@dataclass
class Snapshot:
    generation: int
    spso: int
    speo: int
    offsets: dict[int, tuple[RecordState, int, RecordState, bool]] = field(default_factory=dict)


def _skipped(sp: SharePartition, offset: int, result: AcknowledgeResult) -> bool:
    """Trunk (SharePartition.acknowledge) skips an acknowledgement of offsets below the log start: success,
    nothing written; protocol = "kip" refuses it."""
    if sp.broker.kafka and offset < sp.log.log_start_offset:
        assert result.error_code == Errors.NONE and result.write_id is None, result
        return True
    return False


class ShareStateMachine(RuleBasedStateMachine):
    # -- set-up --------------------------------------------------------------------------

    @initialize(earliest=st.booleans(), read_committed=st.booleans(), preload=st.integers(0, 6),
                protocol=st.sampled_from(["kafka", "kip"]))
    def setup(self, earliest: bool, read_committed: bool, preload: int, protocol: str) -> None:
        self.log = PartitionLog()
        if preload:
            self.log.append(preload)
            self.log.advance_high_watermark()
        self.broker = BrokerConfig(delivery_count_limit=LIMIT, partition_max_record_locks=MAX_LOCKS,
                                   record_lock_duration_ms=LOCK_MS, protocol=protocol)
        self.group = GroupConfig(auto_offset_reset="earliest" if earliest else "latest",
                                 isolation_level="read_committed" if read_committed else "read_uncommitted")
        self.coordinator = ShareCoordinatorShard(snapshot_update_records_per_snapshot=3)
        self.state_epoch = 1
        self.adopted_state_epoch = 1
        resp, _ = self.coordinator.initialize(InitializeShareGroupStateRequest(KEY, self.state_epoch))
        assert resp.error_code == Errors.NONE
        self.now = 0
        self.leader_epoch = 0
        self.zombies: list[SharePartition] = []
        self.in_flight: list[InFlight] = []
        self.accepts: dict[tuple[int, int], frozenset[int]] = {}  # (leader epoch, write id) -> accepted offsets
        self.acked: dict[tuple[int, int], frozenset[int]] = {}  # (leader epoch, write id) -> offsets it ends
        self.live: dict[int, tuple[str, int]] = {}  # offset -> (member, lock deadline), as the test saw it
        self.confirmed: set[int] = set()  # E-2
        self.deliveries_tenure: dict[int, int] = {}
        self.deliveries_total: dict[int, int] = {}
        self.failovers = 0
        self.max_spso: dict[int, int] = {}  # state epoch -> highest SPSO seen
        self.max_durable_start: dict[int, int] = {}  # state epoch -> highest stored start offset
        self.generation = 0
        self.previous: Snapshot | None = None
        self.leader: SharePartition = self._new_leader()
        # Start with the auto.offset.reset write answered (the INITIALIZING phase is also
        # reached by an admin reset to -1).
        while self.in_flight:
            self.answer_write(0, "ok")

    def _new_leader(self) -> SharePartition:
        self.leader_epoch += 1
        sp = SharePartition(KEY, self.log, leader_epoch=self.leader_epoch, broker=self.broker, group=self.group)
        self.leader = sp
        self._read(sp)
        return sp

    def _read(self, sp: SharePartition) -> None:
        resp, _ = self.coordinator.read(sp.read_request())
        sp.recover(resp, self.now)
        self.generation += 1
        self._drain(sp)
        if resp.error_code == Errors.NONE and resp.state_epoch != self.adopted_state_epoch:
            # The leader adopts the state an admin reset made: from here on the reset's
            # start offset rules, so earlier confirmations and delivery counts no longer bind.
            self.adopted_state_epoch = resp.state_epoch
            self.confirmed.clear()
            self.deliveries_total.clear()
            self.failovers = 0

    def _drain(self, sp: SharePartition) -> None:
        for w in sp.take_writes():
            self.in_flight.append(InFlight(sp, w))

    def _forget_acquisitions(self) -> None:
        self.live.clear()
        self.deliveries_tenure.clear()

    # -- the log -------------------------------------------------------------------------

    @precondition(lambda self: self.log.log_end_offset < 60)
    @rule(n=st.integers(1, 4), producer=st.sampled_from([None, None, 1, 2]), replicated=st.booleans())
    def produce(self, n: int, producer: int | None, replicated: bool) -> None:
        self.log.append(n, producer_id=producer, transactional=producer is not None)
        self.log.advance_high_watermark(None if replicated else self.log.high_watermark)

    @precondition(lambda self: self.log.open_transactions())
    @rule(pick=st.integers(0, 1), commit=st.booleans())
    def end_transaction(self, pick: int, commit: bool) -> None:
        producers = self.log.open_transactions()
        self.log.end_transaction(producers[pick % len(producers)], commit=commit)

    # -- consumers -----------------------------------------------------------------------

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 6))
    def acquire(self, member: str, max_records: int) -> None:
        self._acquire(member, max_records)

    def _acquire(self, member: str, max_records: int) -> list[int]:
        """A ShareFetch. Returns the offsets acquired."""
        sp = self.leader
        if not sp.ready:
            try:
                sp.acquire(member, max_records, self.now)
            except ApiError as e:
                assert e.error == sp.not_ready_error != Errors.NONE
            else:
                raise AssertionError("a fetch before the partition is ready must be refused")
            return []
        got = sp.acquire(member, max_records, self.now)
        self._drain(sp)
        if got:
            event("acquired records" + (" after a failover" if self.failovers else ""))
            if any(a.delivery_count > 1 for a in got):
                event("redelivered records")
        if self.broker.kafka and got:
            # Kafka acquires whole in-flight batches: max records is a soft limit that ends with the
            # batch holding the last offset acquired; whatever came before it stayed below the limit.
            starts = sp.in_flight_batch_starts()
            last_batch = starts[bisect_right(starts, got[-1].last_offset) - 1]
            before = sum(max(0, min(a.last_offset, last_batch - 1) - a.first_offset + 1) for a in got)
            assert before < max_records, (got, starts)
        else:
            assert sum(a.last_offset - a.first_offset + 1 for a in got) <= max_records
        deadline = self.now + LOCK_MS
        offsets = []
        for a in got:
            for o in range(a.first_offset, a.last_offset + 1):
                assert o not in self.confirmed, f"E-2: offset {o} was accepted and confirmed, yet delivered again"
                held = self.live.get(o)
                assert held is None or held[1] <= self.now, f"E-3: offset {o} is still acquired by {held}"
                kind = self.log.kind_of(o, read_committed=self.group.read_committed)
                # Kafka acquires whole batches, compacted offsets and markers too (the client
                # acknowledges those with GAP); never a read_committed group's aborted records.
                allowed = _KAFKA_ACQUIRABLE if self.broker.kafka else (SpanKind.RECORD,)
                assert kind in allowed, f"SP-7/SP-13/SP-14: offset {o} delivered but it is {kind}"
                self.live[o] = (member, deadline)
                self.deliveries_tenure[o] = self.deliveries_tenure.get(o, 0) + 1
                self.deliveries_total[o] = self.deliveries_total.get(o, 0) + 1
                assert self.deliveries_tenure[o] <= LIMIT, f"SP-5: offset {o} delivered > {LIMIT} times by one leader"
                assert self.deliveries_total[o] <= LIMIT + self.failovers, f"SP-11: offset {o} over-delivered"
                assert a.delivery_count >= self.deliveries_tenure[o]
                offsets.append(o)
        return offsets

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(1, 6), pick=st.integers(0, 5),
          types=st.lists(st.sampled_from([0, 1, 1, 1, 2, 3]), min_size=1, max_size=4))
    def poll_and_acknowledge(self, member: str, max_records: int, pick: int, types: list[int]) -> None:
        """A consumer's poll: fetch, then acknowledge some of what it got (CL-2)."""
        offsets = self._acquire(member, max_records)
        if offsets:
            self._acknowledge(member, offsets[pick % len(offsets)], types)

    def _acknowledgeable(self, member: str) -> list[int]:
        pending = {o for offsets in self.acked.values() for o in offsets}
        return sorted(o for o, (m, d) in self.live.items() if m == member and d > self.now and o not in pending)

    @rule(pick_member=st.integers(0, 2), pick=st.integers(0, 50),
          types=st.lists(st.sampled_from([0, 1, 1, 1, 2, 3]), min_size=1, max_size=4))
    def acknowledge(self, pick_member: int, pick: int, types: list[int]) -> None:
        holders = [m for m in MEMBERS if self._acknowledgeable(m)]
        if not self.leader.ready or not holders:
            return
        member = holders[pick_member % len(holders)]
        mine = self._acknowledgeable(member)
        self._acknowledge(member, mine[pick % len(mine)], types)

    def _acknowledge(self, member: str, first: int, types: list[int]) -> None:
        """Acknowledge the run of the member's offsets from ``first`` with ``types``."""
        sp = self.leader
        mine = self._acknowledgeable(member)
        if first not in mine:
            return
        last = first
        while last + 1 in mine and last - first + 1 < len(types):
            last += 1
        size = last - first + 1
        ack_types = (types[0],) if len(types) == 1 else tuple(types[:size])
        if len(ack_types) != 1 and len(ack_types) != size:
            ack_types = (types[0],)
        result = sp.acknowledge(member, [AcknowledgementBatch(first, last, ack_types)], self.now)
        # The test's own record says these offsets are the member's, under a live lock (SP-3).
        assert result.error_code == Errors.NONE, result
        assert result.write_id is not None
        offsets = range(first, last + 1)
        per = ack_types * size if len(ack_types) == 1 else ack_types
        self.accepts[(sp.leader_epoch, result.write_id)] = frozenset(
            o for o, t in zip(offsets, per) if t == ACCEPT)
        self.acked[(sp.leader_epoch, result.write_id)] = frozenset(offsets)
        self._drain(sp)

    @rule(member=st.sampled_from(MEMBERS), pick=st.integers(0, 50))
    def acknowledge_someone_elses(self, member: str, pick: int) -> None:
        sp = self.leader
        others = sorted(o for o, (m, d) in self.live.items() if m != member and d > self.now)
        if not sp.ready or not others:
            return
        o = others[pick % len(others)]
        result = sp.acknowledge(member, [AcknowledgementBatch(o, o, (ACCEPT,))], self.now)
        if _skipped(sp, o, result):
            return
        assert result.error_code == Errors.INVALID_RECORD_STATE, "E-3: an ack from another member is rejected"

    @rule(pick=st.integers(0, 50))
    def acknowledge_after_the_lock_expired(self, pick: int) -> None:
        """A consumer slower than its lock acknowledges anyway, perhaps before the lock timer fired."""
        sp = self.leader
        pending = {o for offsets in self.acked.values() for o in offsets}
        expired = sorted((o, m) for o, (m, d) in self.live.items() if d <= self.now and o not in pending)
        if not sp.ready or not expired:
            return
        o, member = expired[pick % len(expired)]
        result = sp.acknowledge(member, [AcknowledgementBatch(o, o, (ACCEPT,))], self.now)
        if _skipped(sp, o, result):
            event("an acknowledgement after the lock expired, below the log start, skipped")
            return
        assert result.error_code == Errors.INVALID_RECORD_STATE, "SP-3/SP-4: an ack after the lock expired is refused"
        event("an acknowledgement after the lock expired refused")

    # -- time ----------------------------------------------------------------------------

    @rule(ms=st.integers(1, 600))
    def advance_time(self, ms: int) -> None:
        self.now += ms

    @rule()
    def lock_timer_fires(self) -> None:
        """The simulator's one timer, armed at next_lock_deadline_ms (SP-4)."""
        deadline = self.leader.next_lock_deadline_ms()
        if deadline is None:
            return
        self.now = max(self.now, deadline)
        self.leader.expire_locks(self.now)
        self._drain(self.leader)
        later = self.leader.next_lock_deadline_ms()
        assert later is None or later > self.now

    # -- the share coordinator -----------------------------------------------------------

    @precondition(lambda self: self.in_flight)
    @rule(pick=st.integers(0, 50), outcome=st.sampled_from(["ok", "ok", "ok", "error", "lost"]))
    def answer_write(self, pick: int, outcome: str) -> None:
        """Any write in flight (reordering allowed) gets an answer: success, an error, or
        success whose answer is lost (the coordinator applied it; the leader sees an error)."""
        entry = self.in_flight.pop(pick % len(self.in_flight))
        sp, w = entry.leader, entry.write
        if outcome == "error":
            resp = WriteShareGroupStateResponse(KEY, Errors.COORDINATOR_NOT_AVAILABLE)
        else:
            resp, _ = self.coordinator.write(w.request)
            if outcome == "lost" and resp.error_code == Errors.NONE:
                resp = WriteShareGroupStateResponse(KEY, Errors.REQUEST_TIMED_OUT)
        current = sp.ready and w.request.state_epoch == sp.state_epoch  # not an orphan of an older state
        done = sp.complete_write(w.write_id, resp, self.now)
        if sp is not self.leader:
            assert done.error_code != Errors.NONE, "a zombie leader's late write must be fenced"
            event(f"zombie write answered {done.error_code.name}")
        ack_key = (sp.leader_epoch, w.write_id)
        accepted = self.accepts.pop(ack_key, frozenset())
        ended = self.acked.pop(ack_key, frozenset())
        if done.reason is WriteReason.ACKNOWLEDGE and done.error_code == Errors.NONE:
            self.confirmed |= accepted
            if accepted:
                event("acceptance confirmed")
            for o in ended:
                self.live.pop(o, None)
        if sp is self.leader and current and done.error_code == Errors.FENCED_STATE_EPOCH:
            assert not sp.ready, "SP-12: a leader fenced by the state epoch must drop its state and read again"
        if sp is self.leader and sp.status in (PartitionStatus.STALE_STATE, PartitionStatus.FENCED):
            self._forget_acquisitions()
            self.generation += 1
        self._drain(sp)

    @precondition(lambda self: self.in_flight)
    @rule()
    def answer_writes_in_order(self) -> None:
        """The common case: every write in flight succeeds, oldest first."""
        for _ in range(100):  # bounded: retried writes must not loop for ever
            if not self.in_flight:
                return
            self.answer_write(0, "ok")
        raise AssertionError("writes keep coming back: a retry loop")

    @precondition(lambda self: self.leader.status in (PartitionStatus.STALE_STATE, PartitionStatus.FAILED))
    @rule()
    def read_again(self) -> None:
        self._read(self.leader)

    # -- disruptions (one rule, so that they stay rarer than the steady work) -------------

    @rule(kind=st.sampled_from(["replicate", "replicate", "compact", "log start", "release", "release",
                                "leader failover", "leader failover", "zombie ack", "coordinator failover",
                                "admin reset", "first session"]),
          a=st.integers(-1, 60), b=st.integers(0, 60))
    def disruption(self, kind: str, a: int, b: int) -> None:
        event(f"disruption: {kind}")
        if kind == "replicate":
            self.log.advance_high_watermark()
        elif kind == "compact":
            self.log.compact([a, b])
        elif kind == "log start":
            self.move_log_start(1 + b % 4)
        elif kind == "release":
            self.release_member(MEMBERS[b % len(MEMBERS)])
        elif kind == "leader failover":
            self.leader_failover()
        elif kind == "zombie ack":
            self.zombie_acknowledges(b)
        elif kind == "coordinator failover":
            self.coordinator_failover()
        elif kind == "admin reset":
            self.admin_reset(a)
        else:
            self.first_session_opens()

    def move_log_start(self, k: int) -> None:
        """Retention or DeleteRecords moves the log start offset."""
        self.log.delete_records(min(self.log.high_watermark, self.log.log_start_offset + k))
        start = self.log.log_start_offset
        for o in [o for o in self.live if o < start]:
            del self.live[o]
        self.leader.advance_log_start(self.now)
        self._drain(self.leader)

    def release_member(self, member: str) -> None:
        """SP-15: the member's share session closed."""
        self.leader.release_member(member, self.now)
        self._drain(self.leader)
        for o in [o for o, (m, _) in self.live.items() if m == member]:
            del self.live[o]

    def leader_failover(self) -> None:
        """A new share-partition leader with a higher leader epoch; the old one lives on as a zombie."""
        self.zombies.append(self.leader)
        self.failovers += 1
        self._forget_acquisitions()
        self._new_leader()

    def zombie_acknowledges(self, pick: int) -> None:
        if not self.zombies:
            return
        zombie = self.zombies[pick % len(self.zombies)]
        for b in zombie.batches():
            if b.state == AQ and not b.in_transition and b.owner is not None:
                zombie.acknowledge(b.owner, [AcknowledgementBatch(b.first_offset, b.first_offset, (ACCEPT,))],
                                   self.now)
                self._drain(zombie)
                return

    def coordinator_failover(self) -> None:
        """SC-6: a new coordinator replays the log; the state must be the same."""
        before = self.coordinator.state(KEY)
        self.coordinator = ShareCoordinatorShard.replay(
            self.coordinator.records, 3, log_start_offset=self.coordinator.log_start_offset)
        assert self.coordinator.state(KEY) == before

    def admin_reset(self, start: int) -> None:
        """SP-12: AlterShareGroupOffsets on an empty group: every member leaves, then the
        state is re-initialized with a higher state epoch."""
        for member in MEMBERS:
            self.release_member(member)
        if start != UNKNOWN_OFFSET:
            start = min(max(start, self.log.log_start_offset), self.log.high_watermark)
        self.state_epoch += 1
        resp, _ = self.coordinator.initialize(InitializeShareGroupStateRequest(KEY, self.state_epoch, start))
        assert resp.error_code == Errors.NONE
        # The leader learns of the reset from a fenced write or the next session's check.

    def first_session_opens(self) -> None:
        """002: when the first share session opens the leader checks the state epoch."""
        summary, _ = self.coordinator.read_summary(ReadShareGroupStateSummaryRequest(KEY, self.leader.leader_epoch))
        if self.leader.check_state_epoch(summary):
            self._forget_acquisitions()
            self.generation += 1

    # -- the invariants ------------------------------------------------------------------

    @invariant()
    def durable_start_never_moves_back(self) -> None:
        """SP-6 on the coordinator: within a state epoch the stored start offset only grows,
        whatever order writes are answered in and even when an applied write's answer is lost."""
        stored = self.coordinator.state(KEY)
        if stored is None:
            return
        highest = self.max_durable_start.get(stored.state_epoch, UNKNOWN_OFFSET)
        assert stored.start_offset >= highest, f"SP-6: durable start went back from {highest} to {stored.start_offset}"
        self.max_durable_start[stored.state_epoch] = stored.start_offset

    @invariant()
    def window_is_sound(self) -> None:
        sp = self.leader
        if not sp.ready:
            self.previous = None
            return
        bound = self.log.bound(self.group.read_committed)
        # An admin reset may put the SPSO above the LSO (an open transaction); then the
        # window stays empty until the bound passes it.
        assert sp.spso <= sp.speo <= max(bound, sp.spso), f"SP-7: SPSO {sp.spso} SPEO {sp.speo} bound {bound}"
        # SP-8, soft to a batch end in Kafka (SharePartition.lastOffsetAndMaxRecordsToAcquire).
        assert sp.speo - sp.spso <= MAX_LOCKS or (
            self.broker.kafka and sp.speo - 1 <= self.log.batch_last(sp.spso + MAX_LOCKS - 1)), "SP-8"
        snap = Snapshot(self.generation, sp.spso, sp.speo)
        cursor = sp.spso
        complete = 0
        for b in sp.batches():
            assert b.first_offset == cursor, "the ranges tile the window"
            cursor = b.last_offset + 1
            if (b.target_state if b.in_transition else b.state) in TERMINAL:
                complete += b.last_offset - b.first_offset + 1
            assert b.delivery_count <= LIMIT, f"SP-5: count {b.delivery_count}"
            assert 0 <= b.durable_count <= b.delivery_count, "SP-11"
            assert (b.owner is not None) == (b.state == AQ)
            for o in range(b.first_offset, b.last_offset + 1):
                snap.offsets[o] = (b.state, b.delivery_count, b.target_state, b.in_transition)
        assert cursor == sp.speo
        # KIP-1226: the leader's running count is the window's terminal offsets (in transition: by target).
        count = sp.delivery_complete_count
        assert count == complete, f"deliveryCompleteCount {count}, the window {complete}"
        self._check_durable_counts(sp)
        self._check_spso(sp)
        self._check_transitions(snap)
        self.previous = snap

    def _check_durable_counts(self, sp: SharePartition) -> None:
        """SP-11: a leader's count is never below the count the coordinator holds."""
        stored = self.coordinator.state(KEY)
        if stored is None or stored.state_epoch != sp.state_epoch:
            return
        for batch in stored.state_batches:
            for o in range(max(batch.first_offset, stored.start_offset, sp.spso),
                           min(batch.last_offset + 1, sp.speo)):
                state = sp.state_of(o)
                assert state is not None
                assert state.delivery_count >= batch.delivery_count, (
                    f"SP-11: offset {o} count {state.delivery_count} < durable {batch.delivery_count}")

    def _check_spso(self, sp: SharePartition) -> None:
        """SP-6: never back within a state epoch (across leader failovers too)."""
        highest = self.max_spso.get(sp.state_epoch, -1)
        if sp.spso > highest >= 0:
            event("SPSO moved" + (" after a failover" if self.failovers else ""))
        assert sp.spso >= highest, f"SP-6: SPSO went back from {highest} to {sp.spso}"
        self.max_spso[sp.state_epoch] = sp.spso

    def _check_transitions(self, snap: Snapshot) -> None:
        """SP-1 between two observations of the same leader state."""
        prev = self.previous
        if prev is None or prev.generation != snap.generation:
            return
        log_start = self.log.log_start_offset
        for o, (state, count, target, in_transition) in prev.offsets.items():
            now = snap.offsets.get(o)
            if now is None:
                # Left the window: below the SPSO, and terminal (or on its way there) or gone from the log.
                assert o < snap.spso
                assert o < log_start or state in TERMINAL or (in_transition and target in TERMINAL), (
                    f"SP-6: offset {o} passed by the SPSO while {state.name}")
                continue
            new_state, new_count = now[0], now[1]
            if new_state == state:
                assert new_count == count, f"offset {o}: count changed without a transition"
            elif (state, new_state) == (AV, AQ):
                assert new_count == count + 1, "SP-2: acquiring increments the count"
            elif state == AQ and new_state in (AV, ACK, ARC):
                assert new_count == count
            elif (state, new_state) == (AV, ARC):
                kind = self.log.kind_of(o, read_committed=self.group.read_committed)
                assert kind != SpanKind.RECORD or count >= LIMIT, f"SP-1: offset {o} archived while available"
            else:
                raise AssertionError(f"SP-1: offset {o} went {state.name} -> {new_state.name}")
        for o in snap.offsets:
            if o not in prev.offsets:
                assert o >= prev.speo, f"offset {o} appeared inside the old window"


ShareStateMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestShareState = ShareStateMachine.TestCase


class TestShareStateWithTheStartOffsetVariant(ShareStateMachine.TestCase):  # type: ignore[misc, valid-type]
    """The same machine with Kafka trunk's payload and a share coordinator that never lowers the start
    offset (the variant ``start-offset-every-write-max``, ``model/mutants.py``): every check holds,
    E-2 (no acquisition after a confirmed acceptance) included, where trunk's payload alone moves
    the durable start offset back (``pytest --mutant start-offset-every-write`` fails this machine).
    The coordinator's own rule makes that one check hold by construction; the others are what the
    variant has to earn."""

    settings = settings(ShareStateMachine.TestCase.settings, max_examples=500)

    def runTest(self) -> None:
        if mutants.ACTIVE is not None:
            pytest.skip(f"runs its own variant, not {mutants.ACTIVE}")
        with mutants.injected("start-offset-every-write-max"):
            super().runTest()

