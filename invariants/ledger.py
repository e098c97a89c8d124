"""The ghost ledger: the client-visible facts of a run, as the checks of the catalogue need them.

It is an ``Observer`` fed by the same hooks as the monitors and holds, kept as
ranges (``invariants/intervals.py``), never one object per offset:

* **committed records** per data partition: the end of what the produce acks
  showed committed (``high_watermark``, by topic name), the ranges of aborted
  transactions (``aborted``, by topic id as share-partition keys name it);
* **durable state** per share-partition, from every write a share coordinator
  accepted: the state epoch, the highest start offset, the durably terminal
  offsets and the highest durable delivery count of each offset, and the
  highest leader epoch a leader read the state with (``DurableState``);
* **deliveries** per share-partition: the last delivery of each offset
  (member, delivery count, leader epoch, time);
* **accepted writes** a leader has not yet taken as done (SP-9);
* **justified offsets** per share-partition and life of its state: every
  offset a protocol reason lets a leader leave behind, from facts seen at the
  boundaries and nothing a leader or coordinator says: acknowledged
  ACCEPT / REJECT / GAP by a client (an acknowledgement a leader took), or
  handed to a client at the group's delivery limit (``justified``); with the
  data log (no deliverable record there, or below its log start offset,
  ``unjustified``) that is why an SPSO may pass an offset (``spso-monotonic``)
  and why a record produced into a live group may stay unconsumed
  (``eventual-resolution``). ``first_spso`` is where the life began (the first
  SPSO a ready leader showed in it: the reset policy or an admin reset).

The runner puts the ledger AFTER the checks in the fan-out, so a check sees
the facts from before the step it is judging.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from invariants.intervals import IntervalSet, RangeMap
from invariants.sink import Monitor, ViolationSink
from model.core.message import Message
from model.core.share_state import UNKNOWN_OFFSET, AcknowledgeType, RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.log import PartitionLog
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import WriteShareGroupStateRequest

TERMINAL_ACKS: Final = frozenset((int(AcknowledgeType.ACCEPT), int(AcknowledgeType.REJECT), int(AcknowledgeType.GAP)))
TERMINAL_STATES: Final = frozenset((RecordState.ACKNOWLEDGED, RecordState.ARCHIVED))

DataPartition = tuple[str, int]  # (topic id, partition): how a SharePartitionKey names its data
_TRIM_EVERY: Final = 1_024  # offsets the SPSO moves between two trims of a share-partition's ranges


def topic_id_of(topic: str) -> str:
    """The controller's topic id (``model.sim.controller.topic_id_for``), without importing the simulation."""
    return f"{topic}-id"


def ack_runs(batch: AcknowledgementBatch, wanted: Callable[[int], bool]) -> Iterator[tuple[int, int]]:
    """The maximal (first, last) runs of an acknowledgement batch whose acknowledge type is ``wanted``."""
    types = batch.acknowledge_types
    if len(types) <= 1:
        if types and wanted(types[0]):
            yield batch.first_offset, batch.last_offset
        return
    start = -1
    for i, ack_type in enumerate(types):
        offset = batch.first_offset + i
        if wanted(ack_type):
            if start < 0:
                start = offset
        elif start >= 0:
            yield start, offset - 1
            start = -1
    if start >= 0:
        yield start, batch.first_offset + len(types) - 1


def terminal_runs(batch: AcknowledgementBatch) -> Iterator[tuple[int, int]]:
    """The sub-ranges of an acknowledgement batch whose type ends the record (accept, reject, gap)."""
    return ack_runs(batch, TERMINAL_ACKS.__contains__)


class Delivery(Message):
    FIELDS = ("member_id", "delivery_count", "leader_epoch", "time_ms")
    __slots__ = FIELDS

    def __init__(self, member_id: str, delivery_count: int, leader_epoch: int, time_ms: int) -> None:
        self.member_id: Final = member_id
        self.delivery_count: Final = delivery_count
        self.leader_epoch: Final = leader_epoch
        self.time_ms: Final = time_ms


@dataclass
class DurableState:
    """What the share coordinators accepted for one share-partition, within its latest state epoch."""

    state_epoch: int = -1
    start: int = -1  # the highest start offset accepted
    terminal: IntervalSet = field(default_factory=IntervalSet)
    counts: RangeMap[int] = field(default_factory=RangeMap)  # offset -> highest durable delivery count
    read_epoch: int = -1  # the highest leader epoch a leader read this state with (any state epoch)
    # KIP-1191: offsets durably ARCHIVING now (phase 1 of the dead-letter flow written, phase 2 not) ...
    archiving: RangeMap[int] = field(default_factory=RangeMap)
    # ... ever durably ARCHIVING in this life (owed to the DLQ), committed to the DLQ topic, given up.
    dlq_owed: IntervalSet = field(default_factory=IntervalSet)
    dlq_written: IntervalSet = field(default_factory=IntervalSet)
    dlq_given_up: IntervalSet = field(default_factory=IntervalSet)
    # Owed to the DLQ in an earlier life: a leader of that life may still finish its enqueue (KIP-1191
    # promises at least once) after an admin reset or a re-creation began the next life.
    dlq_owed_earlier: IntervalSet = field(default_factory=IntervalSet)
    trimmed: int = 0  # ranges below this offset are forgotten (below a leader's SPSO)
    # Issue 25: offsets a client acknowledged terminal or was handed at the delivery limit (never trimmed;
    # ranges, so it grows with the runs of released records, not with the records).
    justified: IntervalSet = field(default_factory=IntervalSet)
    first_spso: int = -1  # the first SPSO a ready leader showed in this life / state epoch
    verified: int = -1  # eventual-resolution: every offset from first_spso below this was found justified

    def restart(self, state_epoch: int) -> None:
        """SP-12: a new state epoch starts the durable state afresh."""
        self.state_epoch = state_epoch
        self.start = -1
        self.trimmed = 0
        self.terminal.clear()
        self.counts.clear()
        self.archiving.clear()
        for first, last in self.dlq_owed:
            self.dlq_owed_earlier.add(first, last)
        self.dlq_owed.clear()
        self.dlq_written.clear()
        self.dlq_given_up.clear()
        self.justified.clear()
        self.first_spso = -1
        self.verified = -1

    def raise_counts(self, first: int, last: int, count: int) -> None:
        """SC-4: where ranges overlap the higher delivery count wins."""
        cursor = first
        for lo, hi, before in self.counts.overlapping(first, last):
            if before >= count:
                self.counts.assign(cursor, lo - 1, count)
                cursor = hi + 1
        self.counts.assign(cursor, last, count)


class Ledger(Monitor):
    def __init__(self, sink: ViolationSink, delivery_count_limit: int = 5,
                 limits: dict[str, int] | None = None) -> None:
        super().__init__(sink)
        # group.share.delivery.count.limit: the broker's, and each group's own (configuration)
        self.delivery_count_limit = delivery_count_limit
        self.limits = dict(limits or {})
        self.durable: dict[SharePartitionKey, DurableState] = {}
        self.deliveries: dict[SharePartitionKey, RangeMap[Delivery]] = {}
        self.high_watermark: dict[tuple[str, int], int] = {}  # (topic name, partition) -> end of the committed
        self.aborted: dict[DataPartition, IntervalSet] = {}
        self.read_committed: dict[str, bool] = {}  # group id -> its isolation, as its leaders read
        self._open: dict[tuple[str, int, int], list[tuple[int, int]]] = {}  # (topic id, partition, pid) -> ranges
        # id(request) -> request: accepted writes whose answer no leader has taken yet.
        self._accepted: dict[int, WriteShareGroupStateRequest] = {}

    # -- queries ----------------------------------------------------------------------------------

    def durable_of(self, key: SharePartitionKey) -> DurableState:
        state = self.durable.get(key)
        if state is None:
            state = self.durable[key] = DurableState()
        return state

    def was_accepted(self, request: WriteShareGroupStateRequest) -> bool:
        return self._accepted.get(id(request)) is request

    def unjustified(self, key: SharePartitionKey, first: int, last: int, log: PartitionLog,
                    read_committed: bool) -> tuple[int, int]:
        """(how many, the lowest) offsets of ``first..last`` no protocol reason lets a leader leave behind:
        not acknowledged terminal by a client, not handed out at the delivery limit, at or above the data
        log's start offset and holding a deliverable record there. (0, -1) when every one is justified."""
        state = self.durable.get(key)
        justified = state.justified if state is not None else IntervalSet()
        cursor = max(first, log.log_start_offset)
        count, lowest = 0, -1
        for missing, end in justified.missing_runs(cursor, last):
            for span in log.read(missing, end + 1, read_committed=read_committed):
                if span.deliverable:
                    count += span.last - span.first + 1
                    lowest = span.first if lowest < 0 else lowest
        return count, lowest

    def unresolved(self, key: SharePartitionKey, topic: str, partition: SharePartition, bound: int,
                   read_committed: bool) -> tuple[int, int]:
        """E-1 from the facts: (how many, the lowest) records a live group should have consumed that it
        has not, and the leader's window does not show: below the leader's SPSO, from the life's first
        SPSO, offsets ``unjustified`` (records lost to a wrong start offset); at or above the group's
        bound, records the producers had acknowledged (committed) that the group cannot read (lost from
        the data log, or held back by a wrong last stable offset). (0, -1) when there are none."""
        state = self.durable.get(key)
        log = partition.log
        count, lowest = 0, -1
        if state is not None and state.state_epoch == partition.state_epoch and state.first_spso >= 0:
            start = max(state.first_spso, state.verified)
            count, lowest = self.unjustified(key, start, partition.spso - 1, log, read_committed)
            if not count:
                state.verified = max(state.verified, partition.spso)  # justification only grows
        acked_end = self.high_watermark.get((topic, key.partition), 0)
        first = max(partition.spso, bound, log.log_start_offset)
        if acked_end <= first:
            return count, lowest
        data = (key.topic_id, key.partition)
        skipped = IntervalSet()  # acknowledged but not to be read: aborted (read_committed), still open
        if read_committed:
            for lo, hi in self.aborted.get(data, ()):
                skipped.add(lo, hi)
        for (topic_id, number, _), ranges in self._open.items():
            if (topic_id, number) == data:
                for lo, hi in ranges:
                    skipped.add(lo, hi)
        end = min(acked_end, log.high_watermark)
        invisible: list[tuple[int, int]] = [(log.high_watermark, acked_end - 1)] if acked_end > end else []
        for span in log.read(first, end, read_committed=False):
            if span.deliverable:
                invisible.append((span.first, span.last))
        for lo, hi in invisible:
            for missing, run_end in skipped.missing_runs(max(lo, first), hi):
                count += run_end - missing + 1
                lowest = missing if lowest < 0 else min(lowest, missing)
        return count, lowest

    # -- share-partition facts ------------------------------------------------------------------------

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        if partition.ready:
            key = partition.key
            state = self.durable_of(key)
            if key.group_id not in self.read_committed:
                self.read_committed[key.group_id] = partition.group.read_committed
            if partition.state_epoch > state.state_epoch:
                state.restart(partition.state_epoch)
            if state.first_spso < 0 and partition.state_epoch == state.state_epoch:
                state.first_spso = partition.spso
            if partition.state_epoch == state.state_epoch and partition.spso >= state.trimmed + _TRIM_EVERY:
                self._trim(key, state, partition.spso)

    def _trim(self, key: SharePartitionKey, state: DurableState, spso: int) -> None:
        """Forget the ranges below the SPSO (all terminal, SP-6), so memory follows the window, not the run."""
        state.trimmed = spso
        state.terminal.discard_below(spso)
        state.counts.discard_below(spso)
        state.archiving.discard_below(spso)
        for dlq in (state.dlq_owed, state.dlq_written, state.dlq_given_up):
            dlq.discard_below(spso)
        deliveries = self.deliveries.get(key)
        if deliveries is not None:
            deliveries.discard_below(spso)

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self._accepted[id(request)] = request
        state = self.durable_of(request.key)
        if request.state_epoch > state.state_epoch:
            state.restart(request.state_epoch)
        elif request.state_epoch < state.state_epoch:
            return
        if request.start_offset != UNKNOWN_OFFSET and request.start_offset > state.start:
            state.start = request.start_offset
            state.terminal.discard_below(state.start)
            state.counts.discard_below(state.start)
            deliveries = self.deliveries.get(request.key)
            if deliveries is not None:
                deliveries.discard_below(state.start)
        for batch in request.state_batches:
            first = max(batch.first_offset, state.start)
            if batch.delivery_state in TERMINAL_STATES:
                state.terminal.add(first, batch.last_offset)
            if batch.delivery_state == RecordState.ARCHIVING:
                state.archiving.assign(first, batch.last_offset, 1)
                state.dlq_owed.add(first, batch.last_offset)
            elif state.archiving:
                state.archiving.remove(first, batch.last_offset)
            state.raise_counts(first, batch.last_offset, batch.delivery_count)

    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self._accepted.pop(id(request), None)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life of the share-partition: its history no longer binds; keep only the leader epoch fence.
        self.durable_of(key).restart(-1)
        self.deliveries.pop(key, None)

    def on_state_read(self, key: SharePartitionKey, leader_epoch: int, now_ms: int) -> None:
        state = self.durable_of(key)
        state.read_epoch = max(state.read_epoch, leader_epoch)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        deliveries = self.deliveries.get(key)
        if deliveries is None:
            deliveries = self.deliveries[key] = RangeMap()
        limit = self.limits.get(key.group_id, self.delivery_count_limit)
        justified = None
        for a in acquired:
            delivery = Delivery(member_id, a.delivery_count, leader_epoch, now_ms)
            deliveries.assign(a.first_offset, a.last_offset, delivery)
            if a.delivery_count >= limit:  # SP-5: at the limit, a release or a lock timeout archives it
                if justified is None:
                    justified = self.durable_of(key).justified
                justified.add(a.first_offset, a.last_offset)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        """A client's ACCEPT, REJECT or GAP that a leader took: the client's reason to end those records."""
        justified = self.durable_of(key).justified
        for batch in batches:
            for first, last in terminal_runs(batch):
                justified.add(first, last)

    # -- the dead-letter queue (KIP-1191) -------------------------------------------------------------

    def on_dlq_committed(self, topic: str, partition: int, first_offset: int, source: tuple[object, int, int],
                         now_ms: int) -> None:
        key, first, last = source
        assert isinstance(key, SharePartitionKey)
        self.durable_of(key).dlq_written.add(first, last)

    def on_dlq_given_up(self, key: SharePartitionKey, first: int, last: int, now_ms: int) -> None:
        self.durable_of(key).dlq_given_up.add(first, last)

    # -- data partitions ------------------------------------------------------------------------------

    def on_records_committed(self, topic: str, partition: int, first_offset: int, count: int,
                             producer_id: int | None, transactional: bool, now_ms: int) -> None:
        data = (topic, partition)  # by name here (every produce ack comes here: keep it cheap)
        end = first_offset + count
        if end > self.high_watermark.get(data, 0):
            self.high_watermark[data] = end
        if transactional and producer_id is not None:
            self._open.setdefault((topic_id_of(topic), partition, producer_id), []).append((first_offset, end - 1))

    def on_transaction_ended(self, topic: str, partition: int, producer_id: int, commit: bool, now_ms: int) -> None:
        data = (topic_id_of(topic), partition)
        ranges = self._open.pop((*data, producer_id), [])
        if commit or not ranges:
            return
        aborted = self.aborted.get(data)
        if aborted is None:
            aborted = self.aborted[data] = IntervalSet()
        for first, last in ranges:
            aborted.add(first, last)


# -- share sessions and holdings (issue 25, newinv): the facts of invariants/session_checks.py ----------

from model.core.errors import Errors  # noqa: E402 (imports of the session facts, kept with them)
from model.core.share_state import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse  # noqa: E402

SessionId = tuple[int, str, str]  # (broker, group id, member id)


class Holding(Message):
    """One acquisition of a range of offsets, as the leader handed it to a member (``on_acquire``):
    the leader epoch, the member's session incarnation at that leader's broker (``gen``), the delivery
    count, and whether the member has since acknowledged it (any type but RENEW) to that leader;
    ``earlier_gens``: the incarnations of the member's earlier acquisitions of the same offsets from the
    same leader that it had not acknowledged when they were acquired again for it (after a lock timeout or
    a session end released them), oldest first; a late request of such an incarnation may still carry their
    acknowledgement (``AckDisciplineMonitor``)."""

    FIELDS = ("member_id", "leader_epoch", "gen", "delivery_count", "acked", "earlier_gens")
    __slots__ = FIELDS

    def __init__(self, member_id: str, leader_epoch: int, gen: int, delivery_count: int, acked: bool,
                 earlier_gens: tuple[int, ...] = ()) -> None:
        self.member_id: Final = member_id
        self.leader_epoch: Final = leader_epoch
        self.gen: Final = gen
        self.delivery_count: Final = delivery_count
        self.acked: Final = acked
        self.earlier_gens: Final = earlier_gens



def _held_by(h: Holding, member_id: str, leader_epoch: int) -> bool:
    """``h`` is an acquisition of ``member_id`` from the leader of ``leader_epoch`` not yet acknowledged."""
    return h.member_id == member_id and h.leader_epoch == leader_epoch and not h.acked

class SessionFacts(Monitor):
    """What the boundaries showed of share sessions and acquisitions, kept apart from the leaders' and
    the session caches' own bookkeeping:

    * which broker led a share-partition at each leader epoch (``on_leader_start``);
    * per (broker, group, member): its session incarnation there (``gen``: raised by every epoch-0
      ShareFetch that opens one and by every end: a close with epoch -1, an eviction, a disconnect, the
      broker's crash), and the partitions its session holds, from the ShareFetch requests themselves
      (an epoch-0 request names them all, a later one adds its partitions and removes its forgotten
      ones: CL-1). An epoch-0 ShareFetch that comes on an older connection than the one the client
      opened its latest session there on is a request the client gave up on (it timed out and the
      client closed that connection) arriving late: it replaces the broker's session all the same, but
      not the client's, so it raises no ``gen`` (see ``on_share_fetch_session``). The same way a later
      request (epoch > 0) of a session the client gave up on, arriving late on its older connection, is of
      the session opened on that connection (``late_gen``);
    * per share-partition: the latest acquisition of each offset (``Holding``), with the incarnations of
      the same member's unacknowledged acquisitions of it before, from the same leader (``earlier_gens``),
      forgotten when its state is created or deleted (a new life), and the latest leader epoch the
      controller elected for its data.

    Like the ledger it runs after the checks in the fan-out: a check sees the facts from before the
    step it judges."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self.leader_broker: dict[tuple[SharePartitionKey, int], int] = {}
        self.gen: dict[SessionId, int] = {}
        self.session_parts: dict[SessionId, set[tuple[str, int]]] = {}
        self.holdings: dict[SharePartitionKey, RangeMap[Holding]] = {}
        self.member_keys: dict[tuple[str, str], set[SharePartitionKey]] = {}  # (group, member) -> keys held
        self._trimmed: dict[SharePartitionKey, int] = {}
        # sessions closed with epoch -1: (gen before the close, when); the closing request's own
        # acknowledgements belong to the session it closes
        self.closing: dict[SessionId, tuple[int, int]] = {}
        self.lives: dict[SharePartitionKey, int] = {}  # how many times its state was created or deleted
        self.elected: dict[DataPartition, int] = {}  # the latest leader epoch the controller elected
        # the newest connection (client, number) each session was opened on: a later opening on an older one
        # is a late request of a session the client has given up
        self.opened_on: dict[SessionId, tuple[str, int]] = {}
        # the session incarnation (gen) opened on each connection: a late request of an older connection's session
        self.gen_on: dict[tuple[SessionId, tuple[str, int]], int] = {}

    def session_of(self, key: SharePartitionKey, leader_epoch: int, member_id: str) -> SessionId | None:
        broker = self.leader_broker.get((key, leader_epoch))
        return None if broker is None else (broker, key.group_id, member_id)

    def late_gen(self, session: SessionId, connection: tuple[str, int]) -> int | None:
        """The session incarnation opened on ``connection`` when that is an older connection of the client than
        the one its latest session at that broker was opened on (a request on it is one the client gave up on,
        arriving late, and belongs to that incarnation); None otherwise."""
        if not self._late(session, connection):
            return None
        return self.gen_on.get((session, connection))

    def _late(self, session: SessionId, connection: tuple[str, int]) -> bool:
        """Whether ``connection`` is older than the one the client's latest session at that broker was opened on
        (a request on it is one the client gave up on, arriving late)."""
        newest = self.opened_on.get(session)
        return newest is not None and newest[0] == connection[0] and connection[1] < newest[1]

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        self.leader_broker[(key, leader_epoch)] = broker

    def on_share_fetch_session(self, broker: int, group_id: str, member_id: str, epoch: int,
                               partitions: tuple[tuple[str, int], ...], forgotten: tuple[tuple[str, int], ...],
                               connection: tuple[str, int], now_ms: int) -> None:
        session = (broker, group_id, member_id)
        if epoch == 0:
            if not self._late(session, connection):
                self.gen[session] = self.gen.get(session, 0) + 1  # a new session: acknowledgements start afresh
                self.opened_on[session] = connection
                self.gen_on[(session, connection)] = self.gen[session]
            # else a late opening the client gave up on: Kafka's SharePartitionManager.newContext replaces the
            # member's session with it (keeping its acquired records), but the client never hears of it and goes
            # on in the session it opened last; when its next epoch is the replacement's, trunk takes its
            # acknowledgements of that session's records (SharePartition.acknowledge checks the member id only).
            self.session_parts[session] = set(partitions)
        elif epoch > 0:
            parts = self.session_parts.setdefault(session, set())
            parts.update(partitions)
            parts.difference_update(forgotten)

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        if epoch == -1:
            session = (broker, group_id, member_id)
            self.closing[session] = (self.gen.get(session, 0), now_ms)
            self._ended(session)

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        self.closing.pop((broker, group_id, member_id), None)
        self._ended((broker, group_id, member_id))

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: object, sent_ms: int, now_ms: int) -> None:
        # A share coordinator deleted a share-partition's state (its group or topic deleted, GC-8): that life
        # is over, and what its leaders held with it.
        if (isinstance(request, DeleteShareGroupStateRequest) and isinstance(response, DeleteShareGroupStateResponse)
                and response.error_code == Errors.NONE):
            self.holdings.pop(request.key, None)
            self.lives[request.key] = self.lives.get(request.key, 0) + 1

    def on_event(self, kind: str, now_ms: int, **fields: object) -> None:
        if kind == "leader.elect":  # the controller's election: a leader of an earlier epoch leads no more
            topic, partition, epoch = fields.get("topic"), fields.get("partition"), fields.get("leader_epoch")
            if isinstance(topic, str) and isinstance(partition, int) and isinstance(epoch, int):
                data = (topic_id_of(topic), partition)
                if epoch > self.elected.get(data, -1):
                    self.elected[data] = epoch
        if kind == "broker.crash":  # its session cache is gone with it
            broker = fields.get("broker")
            for session in sorted(s for s in self.session_parts if s[0] == broker):
                self._ended(session)

    def _ended(self, session: SessionId) -> None:
        self.gen[session] = self.gen.get(session, 0) + 1
        self.session_parts.pop(session, None)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        session = self.session_of(key, leader_epoch, member_id)
        gen = 0 if session is None else self.gen.get(session, 0)
        holdings = self.holdings.get(key)
        if holdings is None:
            holdings = self.holdings[key] = RangeMap()
        for a in acquired:
            fresh = Holding(member_id, leader_epoch, gen, a.delivery_count, False)
            if not any(_held_by(h, member_id, leader_epoch) for _, _, h in holdings.overlapping(a.first_offset,
                                                                                              a.last_offset)):
                holdings.assign(a.first_offset, a.last_offset, fresh)  # one part: nothing earlier to keep
                continue

            def acquisition(h: Holding | None, fresh: Holding = fresh) -> Holding:
                # acquired again for the same member from the same leader, unacknowledged: keep the earlier
                # incarnations (a late request of one may carry its acknowledgement, and trunk takes it)
                if h is None or not _held_by(h, member_id, leader_epoch):
                    return fresh
                earlier = h.earlier_gens if h.gen == gen else (*h.earlier_gens, h.gen)
                return Holding(member_id, leader_epoch, gen, fresh.delivery_count, False, earlier)

            holdings.update(a.first_offset, a.last_offset, acquisition)
        keys = self.member_keys.get((key.group_id, member_id))
        if keys is None:
            keys = self.member_keys[(key.group_id, member_id)] = set()
        keys.add(key)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        holdings = self.holdings.get(key)
        if holdings is None:
            return
        for batch in batches:
            for first, last in settling_runs(batch):
                for lo, hi, h in holdings.overlapping(first, last):
                    if h.member_id == member_id and not h.acked:
                        # acknowledged: no earlier incarnation may acknowledge it again (trunk: no longer ACQUIRED)
                        holdings.assign(lo, hi, Holding(h.member_id, h.leader_epoch, h.gen, h.delivery_count, True))

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        spso = partition.spso
        if spso >= self._trimmed.get(key, 0) + _TRIM_EVERY:
            self._trimmed[key] = spso
            holdings = self.holdings.get(key)
            if holdings is not None:
                holdings.discard_below(spso)



    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life of the share-partition: its offsets are acquired afresh, counts from 0.
        self.holdings.pop(key, None)
        self._trimmed.pop(key, None)
        self.lives[key] = self.lives.get(key, 0) + 1


_RENEW_TYPE: Final = int(AcknowledgeType.RENEW)


def settling_runs(batch: AcknowledgementBatch) -> Iterator[tuple[int, int]]:
    """The sub-ranges of an acknowledgement batch of any type but RENEW (KIP-1222), which keeps the lock.
    An empty types tuple settles the whole batch (as before)."""
    if not batch.acknowledge_types:
        return iter(((batch.first_offset, batch.last_offset),))
    return ack_runs(batch, lambda t: t != _RENEW_TYPE)
