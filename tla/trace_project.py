"""The projection of a simulated run onto ``ShareGroup.tla``: one share-partition's behaviour as a
sequence of the spec's own actions, each event carrying the spec variables the simulator can
observe after it (issue 27).

Where it reads from. The NDJSON trace (``model/sim/trace.py``) does not carry record states,
delivery counts or the share coordinator's state, and every event a run records enters its trace
hash (a run that does not keep its trace hashes every event too), so adding them would change the
hash of every run. The projection is instead a ``Monitor`` on the observer hooks the invariant
monitors already get (``model/sim/protocol.py``): it is given to ``run_cluster`` as an extra
monitor, reads the share-partition leader and the share coordinator after each of their steps,
and changes nothing the run does or hashes (a validated run has the trace hash of the same seed
run without validation).

Mapping, simulator step -> spec actions (the atomicity differences are the trace spec's to handle,
``tla/ShareGroupTrace.tla``: an event lists its spec actions, which are taken one by one, and the
observed values are compared once all of them are taken):

- records committed (the leader's ``bound`` moved): ``Produce`` once per offset, before the event;
- a later leader epoch's share-partition starts (``on_leader_start``): ``Failover``;
- its ReadShareGroupState answered (``on_state_read``): ``LeaderLoad``;
- ``SharePartition.acquire`` (``on_acquire``): ``Acquire(m, o)`` per offset, ascending;
- ``SharePartition.acknowledge`` (``on_acknowledge``): ``Ack(m, o, e, t)`` per offset, ascending
  (one spec write each);
- ``SharePartition.expire_locks`` (no hook: records newly in a release): ``ExpireLock(e, o)`` per
  offset;
- a share session evicted or disconnected, ``release_member`` (``on_share_session_evicted``):
  ``ConsumerCrash(m)``, ``ReleaseMember(e, m)``, ``ConsumerRestart(m)`` (the spec releases only a
  member that is down; the simulator also the session of a live, paused one);
- a write answered with success at its leader (``on_write_completed``): ``CoordWrite(e)`` once per
  spec write the simulator's write stands for;
- a write answered with an error (no hook: its write id leaves the leader's pending writes without a
  successful answer): ``WriteError(e)`` per spec write;
- the spec's writes of a leader are applied (``CoordWrite``, at the answers) in the order the share
  coordinator committed them (SC-7), not the order of their answers: a write committed before older ones
  (these sent again after a retriable error or a timeout) takes ``WriteRetry(e)`` for each older spec write
  not yet committed, bringing it to the head of the spec's FIFO queue; a write answered before an older one
  that committed first (that answer held up, from a coordinator that moved) takes the older one's
  ``CoordWrite`` first, and the leader's memory, which has not had that answer yet, is not observed until
  it arrives (its arrival is no spec action);
- a deposed leader's write whose records committed (``on_share_state_committed``): ``CoordWrite(e)``;
  at a failover, the old leader's writes committed but not yet answered, before the ``Failover``. A
  write the share coordinator handled but whose records never committed (its append refused, its tail
  truncated) never became durable (SC-7): it stays in the spec's queue;
- a leader's read of a state at a higher state epoch than the current life's (the group deleted and
  re-created, an admin reset: ``Life``): a new life of the state, validated as a trace of its own from
  Init (``trace_validate.split_lives``); a share-partition rebuilt at the leader epoch of an earlier one
  is a new leader with no Failover, faithful when its read starts a new life;
- a leader that dropped its state (fenced by a later state epoch, its key unknown): its memory is not
  observed in that step, the last of its life;
- an acquisition that archived offsets instead of delivering them (a read_committed group's aborted
  records, SP-13: AVAILABLE with a pending ARCHIVED, ``SharePartition._tag_archived``):
  ``ArchiveAborted(o)`` per offset, in offset order among the acquisitions; the ARCHIVE write stands
  for one spec write per offset.

read_committed (SP-13): the leader's bound, which the projection takes as the spec's ``hwm``, is the
last stable offset (``PartitionLog.bound``); the spec's ``Aborted`` is the log's aborted offsets, and
its ``Gaps`` the transaction markers, which the leader acquires with their batch and the client
acknowledges with GAP (``aborted_and_markers``).

A simulator write carries several offsets (one acknowledgement request, one lock-timeout sweep);
the spec writes one per acknowledged offset and one per expired lock, so the simulator's write
stands for a FIFO run of spec writes, all answered at once. The share coordinator applies a write
before its leader hears the answer; the spec does both in one step (``CoordWrite``), placed at the
answer (or at an overtaking later answer, above), and the durable state it is compared with is the
coordinator's right after it applied that write (recorded at ``on_share_state_handled``), when every write
of the leader it had applied before committed before it (``on_share_state_committed``).

Observed after each event: the high-water mark; at the current leader its SPSO, SPEO and, per
offset of the window, (state, delivery count, pending target state or NONE); the durable start
offset and batches (after a write's answer, a load); the stored leader epoch after a load.
Offsets are the log's own (0..LogSize-1, LogSize the final high-water mark of the partition); leader
epochs are renumbered 1, 2, ... in the order the share-partition's leaders started; members are their
ids as strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from invariants.sink import Monitor, ViolationSink
from model.core.share_partition import (
    AcknowledgementBatch,
    AcquiredRecords,
    PartitionStatus,
    SharePartition,
    WriteReason,
)
from model.core.share_state import (
    InitializeShareGroupStateRequest,
    RecordState,
    SharePartitionKey,
    WriteShareGroupStateRequest,
)

_STATE = {RecordState.AVAILABLE: "AVAILABLE", RecordState.ACQUIRED: "ACQUIRED",
          RecordState.ACKNOWLEDGED: "ACKNOWLEDGED", RecordState.ARCHIVED: "ARCHIVED"}
_ACK = {0: "GAP", 1: "ACCEPT", 2: "RELEASE", 3: "REJECT"}
NONE = "NONE"


def act(name: str, *, m: str = "", o: int = -1, e: int = 0, t: str = "") -> dict[str, Any]:
    """One spec action with its parameters (every field present: TLC compares records of one shape)."""
    return {"a": name, "m": m, "o": o, "e": e, "t": t}


@dataclass
class Event:
    """One simulator step of the share-partition: the spec actions it stands for and what was observed."""

    time_ms: int
    what: str  # the simulator step, for the report
    acts: list[dict[str, Any]]
    hwm: int
    e: int = 0  # the spec leader epoch whose memory is observed (0: none)
    spso: int = 0
    speo: int = 0
    mem: list[tuple[str, int, str]] = field(default_factory=list)  # offsets spso..speo-1
    durable: bool = False
    dspso: int = -1
    dbatch: list[tuple[int, str, int]] = field(default_factory=list)  # (offset, state, count), offset >= dspso
    dle: int = 0  # stored leader epoch after a load (0: not observed)
    life: int = 0  # the life of the share-partition's state it belongs to (an index into Projection.lives[key])
    hidden: bool = False  # the current leader's memory not observed: an answer it has not had, the spec has

    def observed(self) -> dict[str, Any]:
        out: dict[str, Any] = {"hwm": self.hwm}
        if self.e:
            out.update(leader=self.e, spso=self.spso, speo=self.speo,
                       window=[f"{o}:{s}/{c}" + ("" if p == NONE else f"->{p}")
                               for o, (s, c, p) in enumerate(self.mem, self.spso)])
        if self.durable:
            out.update(durable_spso=self.dspso, durable=[f"{o}:{s}/{c}" for o, s, c in self.dbatch])
        if self.dle:
            out["stored_leader_epoch"] = self.dle
        return out


@dataclass
class Life:
    """One life of a share-partition's state: from its (re-)initialization (the group created or re-created,
    GC-7; an admin reset, SP-12) to the next. Each life is validated as a trace of its own, from
    ShareGroup's Init with the start offset its initialization wrote (-1: not yet known); its leaders are
    numbered 1, 2, ... from the first that read it (``base`` is the projection's number of the leader
    before that one)."""

    state_epoch: int
    start_offset: int  # what InitializeShareGroupState wrote (-1: auto.offset.reset decides)
    first: int  # index of its first event in Projection.events[key]
    base: int = 0


class UnprojectedStep(Exception):
    """A simulator step the projection cannot map onto spec actions (an abstraction gap)."""


class _Leader:
    """What the projection knows of one leader epoch's share-partition."""

    def __init__(self, spec_epoch: int, broker: int) -> None:
        self.e = spec_epoch
        self.broker = broker  # the broker it runs on: a share session there holds its records
        self.pending: list[dict[str, Any]] = []  # spec actions of the step in progress
        self.what: list[str] = []
        self.loaded = False
        self.prev: dict[int, tuple[str, int, str]] = {}
        self.speo = -1  # the SPEO after the last step (-1: not loaded yet)
        self.owners: dict[int, str | None] = {}  # offset -> owner, as of the last step
        # The simulator's writes in flight (SharePartition write ids): how many spec writes each stands
        # for, and its request (to tell a success, on_write_completed, from a failure).
        self.counts: dict[int, int] = {}
        self.requests: dict[int, int] = {}  # write id -> id(request)
        self.succeeded: set[int] = set()  # id(request) of the writes answered with success
        self.applied: list[int] = []  # id(request) of writes the coordinator applied, not yet answered
        # Writes the spec applied (CoordWrite) before their answer reached the leader: the coordinator had
        # committed them before a write answered first (write id -> id(request)). The spec's memory of the
        # leader has their answers, the simulator's not yet: its memory is not observed until they arrive.
        self.early: dict[int, int] = {}
        self.queue: list[int] = []  # the spec's wq of this leader: the simulator write id of each spec write
        self.acks = 0  # spec writes of this step's acknowledgement
        self.completed = 0  # successful answers taken in the step in progress
        self.acked: set[int] = set()  # offsets whose transition this step's acknowledgement started
        self.released: set[int] = set()
        self.ack_offsets: dict[int, set[int]] = {}  # write id of an acknowledgement -> its offsets
        self.state_epoch = -1  # the state epoch it loaded (-1: none yet)
        self.rebuilt_at = -1  # when it was built at the leader epoch of an earlier share-partition (-1: not)

    def new_life(self, pending: Any) -> None:
        """The leader read a state of a later life: the writes it still has in flight (``pending``: its write
        ids) belong to the life that is over (the coordinator fences them, FENCED_STATE_EPOCH or
        UNKNOWN_TOPIC_OR_PARTITION): they stand for no spec write of the new life."""
        self.counts = {wid: 0 for wid in pending}
        self.requests, self.applied, self.queue, self.early = {}, [], [], {}


    def take(self, rid: int, action: str = "CoordWrite") -> list[dict[str, Any]]:
        """The spec actions that answer the write whose request is ``rid``, which is forgotten."""
        wid = next((w for w, r in self.requests.items() if r == rid), None)
        if wid is None:
            return []
        del self.requests[wid]
        return self.answer(wid, action)

    def answer(self, wid: int, action: str) -> list[dict[str, Any]]:
        """``action`` (CoordWrite or WriteError) for each spec write simulator write ``wid`` stands for.
        The spec answers the head of the leader's FIFO queue; a write that reaches the coordinator before
        older ones (these sent again after a retriable error or a timeout, behind later ones) is brought
        to the head by WriteRetry, which moves the head to the back, as the persister's resend does."""
        count = self.counts.pop(wid, 0)
        acts = []
        if count:
            while self.queue[0] != wid:
                self.queue.append(self.queue.pop(0))
                acts.append(act("WriteRetry", e=self.e))
            del self.queue[:count]
        return acts + [act(action, e=self.e)] * count

    def in_commit_order(self, wid: int, rid: int | None, committed: dict[int, int]) -> list[dict[str, Any]]:
        """CoordWrite for the successful answer of write ``wid``, in the order the coordinator committed the
        leader's writes (SC-7), the order the spec's queue must hand them to ``CoordWrite``: first every
        write of the leader still unanswered that committed before it (its answer overtaken: it came from a
        coordinator that moved, or over a slower connection), taken now and answered later (``early``),
        each brought to the head by WriteRetry of the writes before it that did not commit first, then
        ``wid`` itself. (A write applied twice, resent after a timeout, is ordered by its first commit.)"""
        mine = committed.get(rid if rid is not None else -1, len(committed))
        first = sorted((committed[rid], w) for w, rid in self.requests.items()
                       if w != wid and self.counts.get(w) and committed.get(rid, mine) < mine)
        acts = []
        for _, w in first:
            acts += self.answer(w, "CoordWrite")
            self.counts[w] = 0  # still pending at the leader: its answer, when it comes, stands for nothing
            self.early[w] = self.requests[w]
        return acts + self.answer(wid, "CoordWrite")


class Projection(Monitor):
    """Records, per share-partition key, the events of its leaders (``events[key]``)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.events: dict[SharePartitionKey, list[Event]] = {}
        self.leaders: dict[tuple[SharePartitionKey, int], _Leader] = {}
        self.numbers: dict[SharePartitionKey, int] = {}  # key -> how many leaders (share-partitions) started
        self.lives: dict[SharePartitionKey, list[Life]] = {}
        # key -> state epoch -> the start offset its InitializeShareGroupState wrote
        self.inits: dict[SharePartitionKey, dict[int, int]] = {}
        self.current: dict[SharePartitionKey, int] = {}  # key -> simulator leader epoch of the current leader
        self.epochs: dict[SharePartitionKey, list[int]] = {}
        self.hwm: dict[SharePartitionKey, int] = {}
        # id(request) -> the durable state right after the coordinator applied it, and the leader's writes
        # it had applied before, unanswered then
        self.durable_after: dict[int, tuple[tuple[int, list[tuple[int, str, int]]], list[int]]] = {}
        self.members: set[str] = set()
        self.limits: dict[SharePartitionKey, tuple[int, int]] = {}
        self.logs: dict[SharePartitionKey, Any] = {}  # key -> the current leader's log (its batches)
        # Keys of read_committed share groups: their leaders archive aborted records as they fetch them
        # (SP-13, the spec's ArchiveAborted; its Aborted constant is the log's aborted offsets).
        self.read_committed: set[SharePartitionKey] = set()
        self.gaps: dict[SharePartitionKey, str] = {}  # key -> why it cannot be projected (first problem)
        # Every write request seen, kept alive: the projection keys requests by id(), which Python
        # reuses once an object is freed (a stale durable state was once read that way).
        self.alive: list[object] = []
        # A write is applied, in the spec's sense, once its records commit on __share_group_state (SC-7): a
        # coordinator may handle a write whose append is refused or whose tail is truncated, and such a write
        # never becomes durable. id(record) -> the write request it carries and the durable state right after
        # the coordinator applied it; id(request) -> the order in which the writes committed.
        self.records: dict[int, tuple[WriteShareGroupStateRequest, tuple[int, list[tuple[int, str, int]]]]] = {}
        self.committed: dict[int, int] = {}
        self._handling: tuple[object, Any] = (None, ())  # the request a coordinator is handling, its records

    # -- helpers ---------------------------------------------------------------------------------

    def _leader(self, key: SharePartitionKey, leader_epoch: int) -> _Leader | None:
        return self.leaders.get((key, leader_epoch))

    def _durable_at_answer(self, answered: list[dict[str, Any]],
                           late: set[int]) -> tuple[int, list[tuple[int, str, int]]] | None:
        """The durable state to observe after a step that took successful answers (``answered``: each its
        state right after the coordinator applied it, ``after`` the leader's writes applied before it, still
        unanswered then): the one of the write committed last, if every write applied before it had
        committed before it (the spec has taken them all); none for a write whose CoordWrite was taken
        before its answer (``late``: the spec applied later writes since)."""
        if not answered:
            return None
        last = max(answered, key=lambda a: self.committed.get(a["rid"], -1))
        mine = self.committed.get(last["rid"])
        if last["rid"] in late or (last["after"] and (mine is None or any(
                self.committed.get(rid, mine) >= mine for rid in last["after"]))):
            return None
        durable: tuple[int, list[tuple[int, str, int]]] = last["durable"]
        return durable

    def _emit(self, key: SharePartitionKey, event: Event) -> None:
        event.life = max(len(self.lives.get(key, ())) - 1, 0)
        self.events.setdefault(key, []).append(event)

    def _life_begins(self, key: SharePartitionKey, leader: _Leader, partition: SharePartition, pending: Any,
                     now_ms: int) -> None:
        """``leader`` read its state: whether that starts a new life (a state epoch above the current life's:
        the state was re-initialized, the group re-created or an admin reset); the first read starts the first."""
        lives = self.lives.setdefault(key, [])
        epoch, again = partition.state_epoch, leader.state_epoch >= 0 or leader.rebuilt_at >= 0
        leader.state_epoch = epoch
        start = self.inits.get(key, {}).get(epoch, -1)
        if not lives:
            lives.append(Life(epoch, start, 0))
        elif epoch > lives[-1].state_epoch:
            leader.new_life(pending)
            lives.append(Life(epoch, start, len(self.events.get(key, ())), leader.e - 1))
        elif again:
            self._gap(key, f"leader epoch {partition.leader_epoch} read its state again at {now_ms} ms, in the same "
                           f"life (state epoch {epoch}): " + ("a share-partition rebuilt at the same leader epoch"
                           if leader.rebuilt_at >= 0 else "LeaderReload"))

    def _gap(self, key: SharePartitionKey, why: str) -> None:
        self.gaps.setdefault(key, why)

    # -- hooks -----------------------------------------------------------------------------------

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        epochs = self.epochs.setdefault(key, [])
        number = self.numbers[key] = self.numbers.get(key, 0) + 1
        if leader_epoch in epochs:
            # A share-partition rebuilt at the same leader epoch (its group deleted and re-created): a new
            # leader with no memory, no Failover. Faithful only if what it reads is a new life of the state
            # (the step of its LeaderLoad checks that).
            rebuilt = _Leader(number, broker)
            rebuilt.rebuilt_at = now_ms
            self.leaders[(key, leader_epoch)] = rebuilt
            return
        epochs.append(leader_epoch)
        leader = _Leader(number, broker)
        self.leaders[(key, leader_epoch)] = leader
        previous = self.current.get(key)
        self.current[key] = leader_epoch
        if previous is not None:
            # The old leader's writes the coordinator applied but whose answers it has not taken: the
            # spec's CoordWrite applies and answers at once, so they are taken before the Failover
            # (their answers change no memory the spec keeps once the leader is deposed). The
            # simulator's leader stops serving when the partition's leadership moves; its successor's
            # share-partition starts (this hook) at the first fetch there.
            old = self._leader(key, previous)
            acts = []
            if old is not None:
                # ... and those answered after it stopped serving (no step of it reports them). Only writes
                # whose records committed: one the coordinator handled but never made durable (its append
                # refused, its tail truncated) stays in the spec's queue, a write that never lands.
                done = [rid for rid in old.requests.values() if rid in self.committed or rid in old.succeeded]
                for rid in sorted(done, key=lambda r: self.committed.get(r, len(self.committed))):
                    acts += old.take(rid)
                old.applied, old.pending, old.what, old.completed = [], [], [], 0
            self._emit(key, Event(now_ms, f"leader epoch {leader_epoch} starts", [*acts, act("Failover")],
                                  self.hwm.get(key, 0)))

    def on_state_read(self, key: SharePartitionKey, leader_epoch: int, now_ms: int) -> None:
        leader = self._leader(key, leader_epoch)
        if leader is None:
            return
        leader.loaded = True
        leader.pending.append(act("LeaderLoad"))
        leader.what.append("state read")

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        leader = self._leader(key, leader_epoch)
        if leader is None:
            return
        self.members.add(member_id)
        offsets = sorted(o for a in acquired for o in range(a.first_offset, a.last_offset + 1))
        leader.pending += [act("Acquire", m=member_id, o=o) for o in offsets]
        leader.what.append(f"acquire {_ranges(offsets)} by {member_id}")

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        leader = self._leader(key, leader_epoch)
        if leader is None:
            return
        acts = []
        for batch in batches:
            types = batch.acknowledge_types
            for i, o in enumerate(range(batch.first_offset, batch.last_offset + 1)):
                t = int(types[0] if len(types) == 1 else types[i])
                acts.append(act("Ack", m=member_id, o=o, e=leader.e, t=_ACK.get(t, str(t))))
                leader.acked.add(o)
        acts.sort(key=lambda a: a["o"])
        leader.pending += acts
        leader.acks += len(acts)
        leader.what.append(f"acknowledge {_ranges([a['o'] for a in acts])} by {member_id}")

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        for key, epoch in self.current.items():
            leader = self._leader(key, epoch)
            if key.group_id != group_id or leader is None or leader.broker != broker:
                continue  # a session on another broker holds none of this leader's records
            mine = [o for o, (s, _, p) in leader.prev.items()
                    if s == "ACQUIRED" and p == NONE and leader.owners.get(o) == member_id]
            if not mine or any(a.get("a") == "ReleaseMember" and a["m"] == member_id for a in leader.pending):
                continue  # nothing of the member's to release, or a session of it already closed in this step
            leader.pending += [act("ConsumerCrash", m=member_id), act("ReleaseMember", m=member_id, e=leader.e),
                               act("ConsumerRestart", m=member_id)]
            leader.released.add(-1)  # marks: this step's new releases are the member's
            leader.what.append(f"session of {member_id} closed")

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        self._handling = (request, records)
        if isinstance(request, InitializeShareGroupStateRequest) and records:
            self.inits.setdefault(request.key, {})[request.state_epoch] = request.start_offset

    def on_share_state_handled(self, shard: Any, request: object, previous: Any, sent_ms: int,
                               now_ms: int) -> None:
        if not isinstance(request, WriteShareGroupStateRequest):
            return
        self.alive.append(request)
        key = request.key
        leader = self._leader(key, request.leader_epoch)
        state = shard.state(key)
        if leader is None or state is None:
            return
        if self._handling[0] is request:
            self.alive.append(self._handling[1])
            for record in self._handling[1]:
                self.records[id(record)] = (request, _durable(state))
        if self.current.get(key) == request.leader_epoch:
            # The spec applies a write at its answer, in the order the coordinator committed the leader's
            # writes. The state right after this one holds the leader's writes applied before it and not
            # yet answered: it is observed at this write's answer if they all committed before it (the
            # spec has taken them then, ``_Leader.in_commit_order``; ``_durable_at_answer``).
            # (A write resent after a timeout is the same request, applied again: the latest counts.)
            self.durable_after[id(request)] = (_durable(state), [rid for rid in leader.applied if rid != id(request)])
            if id(request) not in leader.applied:
                leader.applied.append(id(request))
            return
        # A deposed leader's late write: CoordWrite once its records commit (on_share_state_committed).

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for record in records:
            found = self.records.pop(id(record), None)
            if found is None:
                continue
            request, durable = found
            self.committed.setdefault(id(request), len(self.committed))
            key = request.key
            leader = self._leader(key, request.leader_epoch)
            if leader is None or self.current.get(key) == request.leader_epoch:
                continue  # the current leader's write: CoordWrite at its answer
            # A deposed leader's late write became durable: CoordWrite here (the spec answers it at once,
            # and keeps no memory of a deposed leader); only the durable state is observed, as the
            # coordinator had it right after applying this write (the writes before it in the log
            # committed first).
            acts = leader.take(id(request))
            if acts:
                event = Event(now_ms, f"late write of leader epoch {request.leader_epoch} applied", acts,
                              self.hwm.get(key, 0))
                event.durable, (event.dspso, event.dbatch) = True, durable
                self._emit(key, event)

    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self.alive.append(request)
        key = request.key
        leader = self._leader(key, request.leader_epoch)
        if leader is None:
            return
        durable = self.durable_after.pop(id(request), None)
        leader.succeeded.add(id(request))
        if id(request) in leader.applied:
            leader.applied.remove(id(request))
        if self.current.get(key) == request.leader_epoch:
            leader.completed += 1
            leader.what.append("write answered")
            if durable is not None:
                leader.pending.append({"durable": durable[0], "after": durable[1], "rid": id(request)})
            return

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        leader = self._leader(key, partition.leader_epoch)
        if leader is None or self.current.get(key) != partition.leader_epoch:
            return
        self.limits[key] = (partition.delivery_count_limit, partition.max_record_locks)
        self.logs[key] = partition.log
        if partition.group.read_committed:
            self.read_committed.add(key)
        hwm_before = self.hwm.get(key, 0)
        self.hwm[key] = max(hwm_before, bound)
        mem = _memory(partition)
        acts: list[dict[str, Any]] = [act("Produce")] * (self.hwm[key] - hwm_before)
        steps = [a for a in leader.pending if "durable" not in a]
        answered = [a for a in leader.pending if "durable" in a]
        pending = partition._pending  # write id -> _WriteInfo (read only: an observer)
        if any(a["a"] == "LeaderLoad" for a in steps):
            self._life_begins(key, leader, partition, pending, now_ms)
        # Offsets an acquisition archived instead of delivering (SP-13: a read_committed group's aborted
        # records): AVAILABLE now with a pending ARCHIVED, and not so before.
        archived = sorted(o for o, (s, _, p) in mem.items()
                          if s == "AVAILABLE" and p == "ARCHIVED" and leader.prev.get(o, ("", 0, NONE))[2] == NONE)
        acts += _with_batch_rest(_with_archives(steps, archived), leader.speo, partition.speo, mem)
        what = list(leader.what)
        if archived:
            what.append(f"{_ranges(archived)} archived (aborted)")
        # The simulator's writes answered in this step (gone from the leader's pending writes): each its
        # run of spec writes, CoordWrite if it succeeded, WriteError if not. A write the spec does not
        # make (the start offset resolved from -1 after a load) stands for none.
        failures = 0
        lapsed: list[int] = []
        late: set[int] = set()  # id(request) of the writes answered here whose CoordWrite was taken before
        for wid in sorted(set(leader.counts) - set(pending)):
            count = leader.counts.get(wid, 0)
            rid = leader.requests.pop(wid, None)
            acked = leader.ack_offsets.pop(wid, None)
            if wid in leader.early:
                # Its CoordWrite was taken when a write committed after it was answered first; now the
                # leader's memory has its answer too. (A failure here: the noted gap below.)
                late.add(leader.early.pop(wid))
                leader.counts.pop(wid, None)
                if rid in leader.applied:
                    leader.applied.remove(rid)
                if rid not in leader.succeeded and rid in self.committed:
                    self._gap(key, f"a write answered with an error at {now_ms} ms had been made durable by the "
                                   "share coordinator (its answer lost); the spec's WriteError applies nothing")
            elif rid in leader.succeeded:
                acts += leader.in_commit_order(wid, rid, self.committed)
            else:
                if rid in leader.applied:
                    leader.applied.remove(rid)
                if rid in self.committed:
                    self._gap(key, f"a write answered with an error at {now_ms} ms had been made durable by the "
                                   "share coordinator (its answer lost); the spec's WriteError applies nothing")
                acts += leader.answer(wid, "WriteError")
                if acked is None:
                    failures += count  # a release: written again whole
                else:  # an acknowledgement: its records whose lock lapsed meanwhile are released (SP-9)
                    lapsed += sorted(o for o in acked if mem.get(o, ("", 0, NONE))[2] != NONE)
                what.append("write failed")
        # Locks that lapsed while an acknowledgement of their record was being written show only when that
        # write fails: the record is then to be released (SP-9), not rolled back to ACQUIRED. The spec's
        # ExpireLock of a record in transition only takes its lock; it goes before the failure, and the
        # release is written again (the spec's FollowUp).
        durable = self._durable_at_answer(answered, late)
        if lapsed:
            i = next(i for i, a in enumerate(acts) if a["a"] == "WriteError")
            acts[i:i] = [act("ExpireLock", e=leader.e, o=o) for o in sorted(lapsed)]
            what.append(f"locks of {_ranges(sorted(lapsed))} lapsed during it")
            failures += len(lapsed)
        # Records newly in a release nobody asked for: lock expiries (or the member's session release).
        newly = sorted(o for o, (s, c, p) in mem.items()
                       if s == "ACQUIRED" and p != NONE and o not in leader.acked
                       and leader.prev.get(o, ("", 0, NONE))[2] == NONE and leader.prev.get(o) is not None)
        if newly and -1 not in leader.released:
            acts += [act("ExpireLock", e=leader.e, o=o) for o in newly]
            what.append(f"locks of {_ranges(newly)} expired")
        # The writes this step issued, and how many spec writes each stands for.
        for wid in sorted(set(pending) - set(leader.counts)):
            if archived and pending[wid].reason is WriteReason.ARCHIVE:
                count, archived = len(archived), []
            elif leader.acks:
                count, leader.acks = leader.acks, 0
                leader.ack_offsets[wid] = set(leader.acked)
            elif newly and -1 not in leader.released:
                count, newly = len(newly), []
            elif -1 in leader.released:
                count = 1
                leader.released.discard(-1)
            else:  # a release sent again after a failure (FollowUp), or a write the spec does not make
                count, failures = failures, 0
            leader.counts[wid] = count
            leader.queue += [wid] * count
            leader.requests[wid] = id(pending[wid].request)
            self.alive.append(pending[wid].request)
        leader.pending, leader.what, leader.completed, leader.acks = [], [], 0, 0
        leader.acked, leader.released = set(), set()
        spso, speo = partition.spso, partition.speo
        # A leader whose state is over (its write fenced by a later state epoch, or its key deleted with its
        # group: FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, divergence unknown-topic-write-drops-state)
        # drops its memory and reads again: the end of a life, where its memory is not observed.
        dropped = partition.status in (PartitionStatus.STALE_STATE, PartitionStatus.FENCED)
        if dropped:
            what.append("state dropped")
        # While the spec has answered a write whose answer the leader has not had (``early``), the spec's
        # memory of the leader is ahead of the simulator's: it is not observed (a partial observation).
        hidden = bool(leader.early) and not dropped
        if hidden and (acts or what):
            what.append("memory not observed: an earlier-committed write's answer is still on its way")
        event = Event(now_ms, "; ".join(what) or "no change", acts, self.hwm[key],
                      0 if dropped or hidden else leader.e, spso, speo,
                      [] if dropped or hidden else [mem.get(o, ("AVAILABLE", 0, NONE)) for o in range(spso, speo)])
        event.hidden = hidden
        if durable is not None:
            event.durable, (event.dspso, event.dbatch) = True, durable
        if any(a["a"] == "LeaderLoad" for a in acts):
            event.dle = leader.e
        leader.prev = mem
        leader.speo = partition.speo
        leader.owners = {o: b.owner for b in partition.batches() for o in range(b.first_offset, b.last_offset + 1)}
        if acts or what:
            self._emit(key, event)


def batch_lasts(log: Any, log_size: int) -> list[int]:
    """``BatchLast`` of the spec for offsets 0..log_size-1: the last offset of the log batch holding
    each, cut at log_size - 1 (the window never passes the high-water mark); one-record batches where
    the log no longer knows (below its start)."""
    if log is None:
        return list(range(log_size))
    first = log.log_start_offset
    return [min(log.batch_last(o), log_size - 1) if o >= first else o for o in range(log_size)]


def aborted_and_markers(log: Any, log_size: int, read_committed: bool) -> tuple[list[int], list[int]]:
    """The spec's ``Aborted`` and ``Gaps`` for offsets 0..log_size-1: the offsets of aborted transactional
    records a read_committed leader archives instead of delivering (SP-13; compacted ones too,
    ``PartitionLog.share_spans``), none under read_uncommitted; and the transaction markers, which the
    leader acquires with their batch and the client acknowledges with GAP (SP-14's Gap type)."""
    if log is None:
        return [], []
    first = log.log_start_offset
    aborted = []
    if read_committed:
        aborted = [o for f, last, take in log.share_spans(first, log_size, read_committed=True) if not take
                   for o in range(f, last + 1)]
    markers = [o for o in range(first, log_size) if log.is_transaction_marker(o)]
    return aborted, markers


def _with_archives(steps: list[dict[str, Any]], archived: list[int]) -> list[dict[str, Any]]:
    """``steps`` with ``ArchiveAborted(o)`` for each offset of ``archived``, in offset order among the
    acquisitions (a new offset enters the window only at its end), else after them all."""
    out = list(steps)
    for o in archived:
        at = next((i for i, a in enumerate(out) if a["a"] in ("Acquire", "CacheBatchRest", "ArchiveAborted")
                   and a["o"] > o), len(out))
        out.insert(at, act("ArchiveAborted", o=o))
    return out


def _with_batch_rest(steps: list[dict[str, Any]], speo_before: int, speo: int,
                     mem: dict[int, tuple[str, int, str]]) -> list[dict[str, Any]]:
    """``steps`` with ``CacheBatchRest(o)`` after the acquisition of the offset before each new
    offset of the window that no one acquired: the rest of a log batch a fetch brought into the window
    AVAILABLE with count 0 (KIP-1206 record_limit; Kafka's acquireNewBatchRecords)."""
    if speo_before < 0 or speo <= speo_before or any(a["a"] == "LeaderLoad" for a in steps):
        return steps
    new = range(speo_before, speo)
    taken = {a["o"] for a in steps if a["a"] in ("Acquire", "ArchiveAborted") and a["o"] in new}
    rest = {o for o in new if o not in taken and mem.get(o) == ("AVAILABLE", 0, NONE)}
    if not rest:
        return steps
    out = []
    for a in steps:
        out.append(a)
        if a["a"] in ("Acquire", "ArchiveAborted") and a["o"] in new:
            o = a["o"] + 1
            while o in rest:
                out.append(act("CacheBatchRest", o=o))
                o += 1
    return out


def _memory(partition: SharePartition) -> dict[int, tuple[str, int, str]]:
    out: dict[int, tuple[str, int, str]] = {}
    for b in partition.batches():
        pend = _STATE.get(b.target_state, str(b.target_state)) if b.in_transition else NONE
        for o in range(b.first_offset, b.last_offset + 1):
            out[o] = (_STATE.get(b.state, str(b.state)), b.delivery_count, pend)
    return out


def _durable(state: Any) -> tuple[int, list[tuple[int, str, int]]]:
    """The durable state as a recovering leader reads it (SP-10; the spec's ``Recovered``): the start
    offset (-1 read as 0) advanced past the terminal batches at its head, and the batches at or above
    it. Two writes that say the same to a reader (a start offset S, or -1 and terminal batches up to
    S: ``SharePartition._payload``) are observed alike."""
    start = max(state.start_offset, 0)
    batches = {o: (_STATE.get(b.delivery_state, str(b.delivery_state)), b.delivery_count)
               for b in state.state_batches for o in range(b.first_offset, b.last_offset + 1) if o >= start}
    while start in batches and batches[start][0] in ("ACKNOWLEDGED", "ARCHIVED"):
        start += 1
    return start, [(o, s, c) for o, (s, c) in sorted(batches.items()) if o >= start]


def _ranges(offsets: list[int]) -> str:
    if not offsets:
        return "-"
    out, first, last = [], offsets[0], offsets[0]
    for o in offsets[1:]:
        if o == last + 1:
            last = o
            continue
        out.append(f"{first}" if first == last else f"{first}..{last}")
        first = last = o
    out.append(f"{first}" if first == last else f"{first}..{last}")
    return ",".join(out)


# ShareGroup.tla's actions (Next's disjuncts), for spec coverage; the projection never produces the last
# two (admin resets and reloads are not projected, tla/README.md "Abstraction gaps").
SPEC_ACTIONS = ("Produce", "LeaderLoad", "Failover", "Acquire", "CacheBatchRest", "ArchiveAborted", "Ack", "ExpireLock",
                "ConsumerCrash", "ReleaseMember", "ConsumerRestart", "CoordWrite", "WriteError", "WriteRetry",
                "LeaderReload", "AdminReset")
# The disjuncts that matter, as coverage keys: "Action" or "Action: case".
SPEC_CASES = ("Acquire: first delivery", "Acquire: redelivery", "Ack: ACCEPT", "Ack: RELEASE", "Ack: REJECT",
              "Ack: GAP", "ExpireLock: to AVAILABLE", "ExpireLock: to ARCHIVED", "CoordWrite: current leader",
              "CoordWrite: deposed leader")


def coverage(events: list[Event]) -> dict[str, int]:
    """How often ``events`` take each spec action, and each case of ``SPEC_CASES`` (read from what the
    event observed: the delivery count an acquisition left, the state a lock expiry releases to)."""
    counts: dict[str, int] = {}

    def add(key: str) -> None:
        counts[key] = counts.get(key, 0) + 1

    for ev in events:
        for a in ev.acts:
            name = a["a"]
            add(name)
            i = a["o"] - ev.spso
            rec = ev.mem[i] if ev.e and 0 <= i < len(ev.mem) else None
            if name == "Acquire" and rec is not None:
                add("Acquire: first delivery" if rec[1] <= 1 else "Acquire: redelivery")
            elif name == "Ack":
                add(f"Ack: {a['t']}")
            elif name == "ExpireLock" and rec is not None and rec[2] != NONE:
                add(f"ExpireLock: to {rec[2]}")
            elif name == "CoordWrite":
                add("CoordWrite: deposed leader" if ev.what.startswith("late write") or not (ev.e or ev.hidden)
                    else "CoordWrite: current leader")
    return counts
