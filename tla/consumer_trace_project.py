"""The projection of a simulated run onto ``ConsumerGroup.tla``: one KIP-848 consumer group's behaviour
as a sequence of the spec's own actions, each event carrying the spec variables the simulator can
observe after it (issue 27, the consumer-group half of ``tla/trace_project.py``).

Like the share-partition projection it is a ``Monitor`` on the observer hooks (``model/sim/protocol.py``:
``on_consumer_heartbeat`` at the client, ``on_group_request`` and ``on_group_coordinator_step`` at the
group coordinator), given to ``run_cluster`` as an extra monitor: it reads the coordinator's group
and each client's ``ConsumerMember`` and changes nothing the run does or hashes.

Mapping, simulator step -> spec actions (``tla/README.md``, "Trace validation of a consumer group"):

- a client sends a heartbeat: ``SendHeartbeat(m)``; a first join (no member id yet) is placed just
  before its handling, when the coordinator has named the member (it touches only m's variables);
- the coordinator handles it: ``HandleHeartbeat(m)`` (accepted, or rejected with UNKNOWN_MEMBER_ID /
  FENCED_MEMBER_EPOCH); ``ComputeTarget`` first when the group epoch was ahead; a new member's join,
  which bumps the group epoch and computes the target in the same step, ``JoinAssign(m, f)``;
- the client applies the answer: ``ReceiveResponse(m)``; an answer that revokes partitions is taken
  when the client has committed and let go of them ("revoked"), since the spec's client revokes as it
  receives the answer and the simulator's reports them owned until then; a heartbeat the client sends
  meanwhile (still reporting them, at the same epoch) is no spec step, as long as neither its handling
  nor its answer changes anything;
- a heartbeat timed out at the client: ``LoseResponse(m)`` if the coordinator handled it, else
  ``LoseRequest(m)``; a retriable error the coordinator's shard never saw (NOT_COORDINATOR, ...):
  ``LoseRequest(m)``;
- a client crashes, or leaves (close: epoch -1): ``Crash(m)`` (a restarted client is a new member id,
  a new spec member); the coordinator removes a member (session expiry, or the leave): ``Expire(m)``.

The assignor is fixed from the simulator's: ``ComputeTarget`` and ``JoinAssign`` carry the target
the coordinator computed, as the function f : partition -> member (``ComputeTargetTo(f)``).

Observed after each event: at the coordinator (events of its steps) the group epoch, the assignment
epoch, the members and per member its epoch, assigned and pending-revocation partitions and target;
at a client (events of its steps) whether it runs, its member epoch and what it owns (assigned and
still revoking). Epochs are shifted by the group's initial epoch (1 under ``protocol = "kafka"``,
where a new group starts at epoch 1, 0 in the KIP's numbering); member ids are the simulator's,
partitions are "topic-N". The previous member epoch is not compared (the simulator keeps it across a
rejoin, the spec resets it).

What the spec does not express stops the projection there (``gap``: the events before it are
validated, and ``sharesim validate`` says so): static membership's temporary leave (epoch -2) and
replacement, a group epoch bumped by a subscription or metadata change, members subscribed to different
topics or a regex, a session expiry while the client still owns partitions (a paused client: the
spec's timing assumption), a heartbeat sent while a revocation is being committed that changes
something (an error, a new target), a heartbeat handled
after its sender gave up on it, a coordinator failover that changed the group's state, fatal errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from invariants.sink import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.group.consumer_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

FENCING = (Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH)


def act(name: str, m: str = "", f: frozenset[tuple[str, str]] = frozenset()) -> dict[str, Any]:
    """One spec action (every field present: TLC compares records of one shape); ``f`` the target as
    (partition, member) pairs."""
    return {"a": name, "m": m, "f": f}


@dataclass
class CEvent:
    """One simulator step of the group: the spec actions it stands for and what was observed after it."""

    time_ms: int
    what: str
    acts: list[dict[str, Any]]
    coord: bool = False  # the coordinator's state was observed
    ge: int = 0
    ae: int = 0
    mem: frozenset[tuple[str, int, frozenset[str], frozenset[str], frozenset[str]]] = frozenset()
    cli: frozenset[tuple[str, bool, int, frozenset[str]]] = frozenset()  # (member, up, epoch, owns)

    def observed(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.coord:
            out.update(group_epoch=self.ge, assignment_epoch=self.ae,
                       members={m: {"epoch": e, "assigned": sorted(a), "revoking": sorted(r), "target": sorted(t)}
                                for m, e, a, r, t in sorted(self.mem)})
        for m, up, ep, own in sorted(self.cli):
            out[f"client {m}"] = {"up": up, "epoch": ep, "owns": sorted(own)} if up else {"up": False}
        return out


def _pname(tp: Any) -> str:
    return f"{tp.topic}-{tp.partition}"


# (group epoch, assignment epoch, member -> (epoch, assigned, pending revocation, target)), spec-numbered.
_Snapshot = tuple[int, int, dict[str, tuple[int, frozenset[str], frozenset[str], frozenset[str]]]]


def _partitions(group: Any) -> frozenset[str]:
    """The partitions of the topics the group subscribes to, as the spec names them."""
    return frozenset(f"{t.topic}-{i}" for t in group.subscription_metadata.values() for i in range(t.num_partitions))


@dataclass
class _Group:
    """What the projection knows of one consumer group."""

    base: int | None = None  # the group's initial epoch (spec epoch = simulator epoch - base)
    events: list[CEvent] = field(default_factory=list)
    gap: str = ""  # why the projection stopped ("" : it did not)
    gap_ms: int = -1
    after_gap: int = 0  # the group's steps after the gap (not projected)
    partitions: frozenset[str] | None = None
    topics: tuple[str, ...] | None = None
    client_mid: dict[str, str] = field(default_factory=dict)  # client -> its current member id ("" unknown)
    members: dict[str, Any] = field(default_factory=dict)  # member id -> its client's ConsumerMember
    down: set[str] = field(default_factory=set)  # members whose client crashed or left
    inflight: dict[str, int] = field(default_factory=dict)  # client -> id() of its heartbeat in flight
    joins: dict[int, str] = field(default_factory=dict)  # id(request) of unnamed first joins -> client
    dead_joins: set[int] = field(default_factory=set)  # first joins whose client crashed or gave up
    handled: dict[int, str] = field(default_factory=dict)  # id(request) handled -> member id
    abandoned: set[int] = field(default_factory=set)  # requests their sender gave up on (LoseRequest taken)
    deferred: set[str] = field(default_factory=set)  # members whose revoking answer is taken at "revoked"
    # Heartbeats sent while a revocation is committed: no spec step, as long as they change nothing.
    stutters: set[int] = field(default_factory=set)
    last_cli: dict[str, tuple[str, bool, int, frozenset[str]]] = field(default_factory=dict)  # last observed
    snapshot: _Snapshot | None = None
    coordinator: tuple[int, int] | None = None  # (partition, leader epoch) of the last step seen
    notes: list[str] = field(default_factory=list)  # what was projected although the spec does not name it


class ConsumerProjection(Monitor):
    """Records, per KIP-848 consumer group, the events of its members and coordinator (``groups[id]``)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.groups: dict[str, _Group] = {}
        self.alive: list[object] = []  # requests keyed by id(): kept alive so no id is reused

    # -- helpers ---------------------------------------------------------------------------------

    def _group(self, group_id: str) -> _Group:
        return self.groups.setdefault(group_id, _Group())

    def _stop(self, g: _Group, why: str, now_ms: int) -> None:
        if not g.gap:
            g.gap, g.gap_ms = why, now_ms

    def _epoch(self, g: _Group, epoch: int) -> int:
        return 0 if epoch <= 0 else epoch - (g.base or 0)

    def _client_obs(self, g: _Group, m: str) -> tuple[str, bool, int, frozenset[str]]:
        member = g.members.get(m)
        if m in g.down or member is None:
            return (m, False, 0, frozenset())
        return (m, True, self._epoch(g, member.member_epoch),
                frozenset(_pname(tp) for tp in member.owned | member.revoking))

    def _coord_state(self, g: _Group, group: Any) -> _Snapshot:
        members = {}
        for mid, mb in group.members.items():
            members[mid] = (self._epoch(g, mb.member_epoch), frozenset(_pname(p) for p in mb.assigned_partitions),
                            frozenset(_pname(p) for p in mb.partitions_pending_revocation),
                            frozenset(_pname(p) for p in group.target(mid)))
        return (group.group_epoch - (g.base or 0), group.assignment_epoch - (g.base or 0), members)

    def _emit(self, g: _Group, now_ms: int, what: str, acts: list[dict[str, Any]], *, group: Any = None,
              clients: tuple[str, ...] = ()) -> None:
        ev = CEvent(now_ms, what, acts)
        if group is not None:
            ge, ae, members = g.snapshot = self._coord_state(g, group)
            ev.coord, ev.ge, ev.ae = True, ge, ae
            ev.mem = frozenset((m, *v) for m, v in members.items())
        ev.cli = frozenset(self._client_obs(g, m) for m in clients)
        g.last_cli.update((x[0], x) for x in ev.cli)
        g.events.append(ev)

    def _target(self, g: _Group, group: Any, now_ms: int) -> frozenset[tuple[str, str]] | None:
        """The target as (partition, member) pairs, every partition once; None (and a gap) if it is not."""
        pairs = {(_pname(p), mid) for mid in group.members for p in group.target(mid)}
        if g.partitions is None or {p for p, _ in pairs} != g.partitions or len(pairs) != len(g.partitions):
            self._stop(g, f"the target computed at {now_ms} ms does not assign every subscribed partition "
                          "exactly once to a member (CG-7 with one subscription for all)", now_ms)
            return None
        return frozenset(pairs)

    def _check_subscriptions(self, g: _Group, group: Any, now_ms: int) -> bool:
        subs = {(tuple(m.subscribed_topic_names), m.subscribed_topic_regex) for m in group.members.values()}
        if len(subs) > 1 or any(regex for _, regex in subs):
            self._stop(g, f"at {now_ms} ms the members subscribe to different topics or by a regex (the spec: "
                          "one subscription for all)", now_ms)
            return False
        topics = next(iter(subs))[0] if subs else g.topics
        parts = _partitions(group)
        if g.topics is not None and (topics != g.topics or parts != g.partitions):
            self._stop(g, f"at {now_ms} ms the subscription or the subscribed partitions changed (not in the spec)",
                       now_ms)
            return False
        if topics is not None and parts:
            g.topics, g.partitions = topics, parts
        return True

    # -- the client ------------------------------------------------------------------------------

    def on_consumer_heartbeat(self, client: str, group_id: str, kind: str, member: Any, request: Any,
                              response: Any, now_ms: int) -> None:
        g = self._group(group_id)
        if g.gap:
            g.after_gap += 1
            return
        m = g.client_mid.get(client, "")
        if kind == "started":
            g.client_mid[client] = ""
            return
        if kind == "crashed":
            if m:
                g.down.add(m)
                g.deferred.discard(m)
                self._emit(g, now_ms, f"client {client} ({m}) crashed", [act("Crash", m)], clients=(m,))
            rid = g.inflight.pop(client, None)
            if rid is not None and rid in g.joins:
                g.dead_joins.add(rid)
            return
        if kind == "sent":
            assert isinstance(request, ConsumerGroupHeartbeatRequest)
            self.alive.append(request)
            if request.member_epoch == -2:
                self._stop(g, f"{client} left temporarily (epoch -2, static membership, CG-5) at {now_ms} ms", now_ms)
                return
            if request.member_epoch < 0:  # a leave: the client has let go of everything and stops
                if m:
                    g.down.add(m)
                    g.deferred.discard(m)
                    self._emit(g, now_ms, f"client {client} ({m}) closes and leaves", [act("Crash", m)], clients=(m,))
                g.inflight.pop(client, None)
                return
            g.inflight[client] = id(request)
            if m in g.deferred:
                # It still reports the partitions it revokes, with the same epoch: to the spec, whose client has
                # not taken the answer yet, a heartbeat that changes nothing (checked at its handling and answer).
                g.stutters.add(id(request))
                g.members[m] = member
                return
            if not request.member_id:
                g.joins[id(request)] = client
                return
            if not m:
                g.client_mid[client] = m = request.member_id
            g.members[m] = member
            self._emit(g, now_ms, f"{m} sends a heartbeat (epoch {request.member_epoch})",
                       [act("SendHeartbeat", m)], clients=(m,))
            return
        rid = g.inflight.pop(client, None)
        if rid is not None and rid in g.stutters and kind in ("lost", "answered"):
            # A retriable error from a broker whose shard never saw it: a lost stutter, nothing to take.
            error = response.error_code if kind == "answered" else Errors.NONE
            refused = error not in FENCING and rid not in g.handled
            if kind == "answered" and ((error != Errors.NONE and not refused)
                                       or self._client_obs(g, m) != g.last_cli.get(m)):
                self._stop(g, f"{client} ({m}) heartbeated at {now_ms} ms while it committed a revocation, and the "
                              f"answer ({error.name}) changed it (the spec's client revokes as it "
                              "receives the answer)", now_ms)
            return
        if kind == "lost":
            if rid is None:
                return
            if rid in g.joins:  # an unnamed join: the spec's member never sent it, or its answer is lost
                g.dead_joins.add(rid)
                return
            g.abandoned.add(rid)
            name = "LoseResponse" if rid in g.handled else "LoseRequest"
            self._emit(g, now_ms, f"{m}'s heartbeat timed out", [act(name, m)], clients=(m,))
            return
        if kind == "answered":
            assert isinstance(response, ConsumerGroupHeartbeatResponse)
            error = response.error_code
            if rid is not None and rid not in g.handled:
                # Refused before the coordinator's shard saw it (NOT_COORDINATOR, ...): never handled.
                if error == Errors.NONE or error in FENCING:
                    self._stop(g, f"{client} got an answer at {now_ms} ms to a heartbeat no coordinator handled",
                               now_ms)
                    return
                if rid in g.joins:
                    del g.joins[rid]
                    return
                g.abandoned.add(rid)
                self._emit(g, now_ms, f"{m}'s heartbeat refused ({error.name})", [act("LoseRequest", m)],
                           clients=(m,))
                return
            if error != Errors.NONE and error not in FENCING:
                self._stop(g, f"{client} was answered {error.name} at {now_ms} ms by the coordinator", now_ms)
                return
            m = g.client_mid[client] = member.member_id or m
            g.members[m] = member
            if error == Errors.NONE and member.revoking:
                g.deferred.add(m)  # taken once the client has let go of them
                return
            if error == Errors.NONE and response.assignment is not None and member._preparing_leave:
                self._stop(g, f"{client} ignores an assignment while it closes at {now_ms} ms", now_ms)
                return
            self._emit(g, now_ms, f"{m} applies the answer" + ("" if error == Errors.NONE else f" ({error.name})"),
                       [act("ReceiveResponse", m)], clients=(m,))
            return
        if kind == "revoked" and m in g.deferred:
            g.deferred.discard(m)
            self._emit(g, now_ms, f"{m} has revoked and applies the answer", [act("ReceiveResponse", m)],
                       clients=(m,))

    # -- the coordinator -------------------------------------------------------------------------

    def on_group_request(self, partition: int, leader_epoch: int, shard: Any, request: object, response: object,
                         now_ms: int) -> None:
        if not isinstance(request, ConsumerGroupHeartbeatRequest):
            return
        g = self._group(request.group_id)
        if g.gap:
            g.after_gap += 1
            return
        group = shard.consumer.group(request.group_id)
        if group is None or response is None:
            return
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        if g.base is None:
            g.base = shard.consumer._initial_epoch()
        rid = id(request)
        if rid in g.abandoned:
            self._stop(g, f"a heartbeat of {request.member_id} was handled at {now_ms} ms after its sender gave up "
                          "on it (the spec's network holds one exchange per member)", now_ms)
            return
        error = response.error_code
        if rid in g.stutters:
            if error != Errors.NONE or self._coord_state(g, group) != g.snapshot:
                self._stop(g, f"a heartbeat {request.member_id} sent while it committed a revocation changed the "
                              f"group at {now_ms} ms ({error.name}; the spec's client revokes as it receives the "
                              "answer)", now_ms)
            g.handled[rid] = request.member_id
            return
        if request.member_epoch == -2:
            self._stop(g, f"{request.member_id} left temporarily (epoch -2, CG-5) at {now_ms} ms", now_ms)
            return
        if request.member_epoch == -1:
            if error == Errors.NONE:
                self._emit(g, now_ms, f"{request.member_id} left", [act("Expire", request.member_id)], group=group)
            return
        if error != Errors.NONE and error not in FENCING:
            self._stop(g, f"the coordinator answered {error.name} at {now_ms} ms", now_ms)
            return
        if not self._check_subscriptions(g, group, now_ms):
            return
        m = (response.member_id or "") if error == Errors.NONE else request.member_id
        g.handled[rid] = m
        acts: list[dict[str, Any]] = []
        joined = not request.member_id
        if joined:
            client = g.joins.pop(rid, "")
            if not m:
                return
            if client and rid not in g.dead_joins:
                g.client_mid[client] = m
            acts.append(act("SendHeartbeat", m))
        before = g.snapshot or (0, 0, {})
        ge, ae, members = self._coord_state(g, group)
        if set(before[2]) - set(members):
            self._stop(g, f"a heartbeat of {m} removed another member at {now_ms} ms (a static member replaced, "
                          "CG-5)", now_ms)
            return
        if error != Errors.NONE:
            acts.append(act("HandleHeartbeat", m))
        elif ge != before[0]:
            target = self._target(g, group, now_ms)
            if target is None:
                return
            if m in before[2] or ge != before[0] + 1 or ae != ge:
                self._stop(g, f"the group epoch was bumped at {now_ms} ms by a heartbeat of {m} that is no new "
                              "member's join (a subscription change)", now_ms)
                return
            acts.append(act("JoinAssign", m, target))
        elif ae != before[1]:
            target = self._target(g, group, now_ms)
            if target is None:
                return
            acts += [act("ComputeTarget", f=target), act("HandleHeartbeat", m)]
        else:
            acts.append(act("HandleHeartbeat", m))
        if joined and rid in g.dead_joins:
            # The client crashed or gave up before the answer: the member exists, its answer is lost.
            acts.append(act("LoseResponse", m))
        kind = "joins" if joined else f"heartbeat (epoch {request.member_epoch})"
        result = "accepted" if error == Errors.NONE else error.name
        self._emit(g, now_ms, f"coordinator handles {m}'s {kind}: {result}", acts, group=group)

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: Any, group_id: str | None,
                                  now_ms: int) -> None:
        for gid, g in self.groups.items():
            if g.gap or g.snapshot is None or (group_id is not None and group_id != gid):
                continue
            group = shard.consumer.group(gid)
            if group is None:
                if shard.consumer.group_ids() or g.coordinator == (partition, leader_epoch):
                    self._stop(g, f"the group is gone at {now_ms} ms", now_ms)
                continue
            where = (partition, leader_epoch)
            moved = g.coordinator is not None and g.coordinator != where
            g.coordinator = where
            ge, ae, members = self._coord_state(g, group)
            before = g.snapshot
            if (ge, ae, members) == before:
                if moved:
                    g.notes.append(f"a new group coordinator (partition {partition}, leader epoch {leader_epoch}) "
                                   f"at {now_ms} ms loaded the group as it was: no spec step (GC-6)")
                continue
            if moved:
                self._stop(g, f"a new group coordinator at {now_ms} ms (failover, GC-6) loaded a state other than "
                              "the one observed", now_ms)
                continue
            gone = sorted(set(before[2]) - set(members))
            parts = _partitions(group)
            if g.partitions is not None and parts != g.partitions:
                how = ("partitions added" if len(parts) > len(g.partitions)
                       else "the topic deleted" if not parts else "partitions changed")
                self._stop(g, f"the subscribed topics' partitions changed at {now_ms} ms ({len(g.partitions)} -> "
                              f"{len(parts)}: {how}; the spec's Partitions are fixed)", now_ms)
                continue
            if not gone or set(members) - set(before[2]) or ge != before[0] + len(gone) or ae != before[1]:
                self._stop(g, f"the group changed at {now_ms} ms outside a heartbeat and not by a session expiry "
                              "(a metadata change)", now_ms)
                continue
            for m in gone:
                member = g.members.get(m)
                if m not in g.down and member is not None and (member.owned or member.revoking):
                    self._stop(g, f"the session of {m} expired at {now_ms} ms while its client still owns "
                                  f"{sorted(_pname(p) for p in member.owned | member.revoking)} (its heartbeats did "
                                  "not arrive: a paused client, or lost messages; the spec's timing assumption expires "
                                  "only a member that owns nothing, CG-6)", now_ms)
                    break
                answered = [r for r, mid in g.handled.items() if mid == m and g.inflight.get(_client(g, m)) == r]
                if answered:
                    self._stop(g, f"the session of {m} expired at {now_ms} ms with an answer to it in flight", now_ms)
                    break
            else:
                self._emit(g, now_ms, f"session of {', '.join(gone)} expired", [act("Expire", m) for m in gone],
                           group=group)

    def projected(self, group_id: str) -> list[CEvent]:
        return self.groups[group_id].events if group_id in self.groups else []


def _client(g: _Group, m: str) -> str:
    return next((c for c, mid in g.client_mid.items() if mid == m), "")
