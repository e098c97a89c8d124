"""Share sessions: what ending one must do (SP-15), and what a client may acknowledge in one (CL-2, SP-3).

Both checks take their expectation from ``SessionFacts`` (``invariants/ledger.py``): which member was
handed which offsets by which leader (epoch and broker), in which of its session lineages there, and
the partitions its session held, as the ShareFetch requests named them; never from a session cache
or a share-partition leader's own record of owners.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from invariants.ledger import SessionFacts
from invariants.sink import Monitor, ViolationSink
from model.core.share_state import RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.share_partition import AcknowledgementBatch, SharePartition

_NEVER: Final = 2**62
RELEASE_BOUND_MS: Final = 100
"""How long after a share session ends its member's records may still be held (SP-15). Kafka releases
them at once, in the same request (``SharePartitionManager.releaseSession`` calls
``SharePartition.releaseAcquiredRecords`` for every partition of the session); the bound only covers
the request's remaining handler steps (``sharesim.handler.step.max.ms`` is at most 20 in the library)."""


class _Due:
    __slots__ = ("deadline_ms", "delivery_count", "ended_ms", "first", "gen", "last", "leader_epoch", "member_id")

    def __init__(self, first: int, last: int, member_id: str, leader_epoch: int, gen: int, delivery_count: int,
                 ended_ms: int) -> None:
        self.first = first
        self.last = last
        self.member_id = member_id
        self.leader_epoch = leader_epoch
        self.gen = gen  # the session incarnation that acquired them: with the delivery count, the acquisition
        self.delivery_count = delivery_count
        self.ended_ms = ended_ms
        self.deadline_ms = ended_ms + RELEASE_BOUND_MS


class SessionReleaseMonitor(Monitor):
    """release-on-session-end (SP-15): when a member's share session at a broker ends (closed with epoch
    -1, evicted, its connection closed, its group deleted), the records it acquired from that broker's
    share-partition leaders on the session's partitions, and has not acknowledged, are released: at the
    first step of any share-partition ``RELEASE_BOUND_MS`` or more after the end (judged on the last leader
    seen of theirs, if it is still the one that handed them out), none of them is still
    ACQUIRED by the member, under the same acquisition (acquired in the same session incarnation, at the same
    delivery count: a leader that read its state again, fenced by an admin reset, lost its acquisitions and may
    hand the records to the member's next session at the same count), with no state change under way. Records
    held by a leader dropped with its group's deletion (no later leader elected, and the state possibly deleted
    before it acquired them) are gone with it, not judged. Records on partitions the
    session had forgotten are not released (Kafka releases the session's cached partitions only), nor are
    records a member acknowledged (a failed acknowledgement write hands them back, SP-9, until their lock
    expires)."""

    def __init__(self, sink: ViolationSink, facts: SessionFacts) -> None:
        super().__init__(sink)
        self.facts = facts
        self._due: dict[SharePartitionKey, list[_Due]] = {}
        self._leaders: dict[SharePartitionKey, SharePartition] = {}  # the last leader seen of each key
        self._next_ms = _NEVER  # the earliest deadline due

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        if epoch == -1:
            self._ended(broker, group_id, member_id, now_ms)

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        self._ended(broker, group_id, member_id, now_ms)

    def _ended(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        facts = self.facts
        keys = facts.member_keys.get((group_id, member_id))
        if not keys:
            return
        session = (broker, group_id, member_id)
        parts = facts.session_parts.get(session, set())
        for key in sorted(keys):
            if (key.topic_id, key.partition) not in parts:
                continue
            holdings = facts.holdings.get(key)
            if holdings is None:
                continue
            for lo, hi, h in holdings:
                if (h.member_id == member_id and not h.acked
                        and facts.leader_broker.get((key, h.leader_epoch)) == broker):
                    self._due.setdefault(key, []).append(_Due(lo, hi, member_id, h.leader_epoch, h.gen,
                                                              h.delivery_count, now_ms))
                    self._next_ms = min(self._next_ms, now_ms + RELEASE_BOUND_MS)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        self._due.pop(key, None)  # a new life: what the old one held is gone with it

    def on_event(self, kind: str, now_ms: int, **fields: object) -> None:
        # The group's deletion committed (GC-8): this broker's leaders of its share-partitions are dropped with
        # their acquisitions (ShareLeader.on_group_deleted), though no later leader is elected and the state may
        # have been deleted before they acquired what they held. Nothing of theirs is left to release, and the
        # object last seen of each is no leader any more: forget both (a leader started again is seen afresh).
        if kind != "share.group_deleted":
            return
        broker, group_id = fields.get("broker"), fields.get("group")
        leader_broker = self.facts.leader_broker
        for key in sorted(k for k in self._due if k.group_id == group_id):
            kept = [d for d in self._due[key] if leader_broker.get((key, d.leader_epoch)) != broker]
            if kept:
                self._due[key] = kept
            else:
                del self._due[key]
        for key in sorted(k for k in self._leaders if k.group_id == group_id):
            if leader_broker.get((key, self._leaders[key].leader_epoch)) == broker:
                del self._leaders[key]

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        # Any step of any share-partition is a moment to judge what is due anywhere: a share-partition whose
        # member's session ended may see no step of its own until the records' locks expire.
        self._leaders[partition.key] = partition
        if now_ms < self._next_ms:
            return
        next_ms = _NEVER
        for due_key in sorted(self._due):
            leader = self._leaders.get(due_key)
            waiting = []
            elected = self.facts.elected.get((due_key.topic_id, due_key.partition), -1)
            for d in self._due[due_key]:
                if elected > d.leader_epoch or due_key not in self.facts.holdings:
                    continue  # a later leader was elected, or the state was deleted: gone with that leader
                if leader is None or leader.leader_epoch != d.leader_epoch:
                    if leader is None or leader.leader_epoch < d.leader_epoch:
                        waiting.append(d)  # its leader has not stepped since: wait for it
                    continue  # (a later leader epoch: the leader that held it is gone, and its records)
                if d.deadline_ms > now_ms:
                    waiting.append(d)
                elif leader.ready:
                    self._check(leader, d, now_ms)
            if waiting:
                self._due[due_key] = waiting
                next_ms = min(next_ms, min(d.deadline_ms for d in waiting))
            else:
                del self._due[due_key]
        self._next_ms = next_ms

    def _check(self, partition: SharePartition, d: _Due, now_ms: int) -> None:
        holdings = self.facts.holdings.get(partition.key)
        for offset in range(d.first, d.last + 1):
            if holdings is not None:
                # acknowledged since (by the closing request itself): a failed write may hand it back; or
                # acquired again in a later session, the leader having lost the old acquisition (its state
                # read again after a failed write) and so counting the same delivery again
                now_held = holdings.overlapping(offset, offset)
                if not now_held:
                    continue
                h = now_held[0][2]
                if h.acked or h.gen != d.gen or h.delivery_count != d.delivery_count:
                    continue
            state = partition.state_of(offset)
            if (state is not None and state.state == RecordState.ACQUIRED and state.owner == d.member_id
                    and not state.in_transition and state.delivery_count == d.delivery_count):
                self.sink.report("release-on-session-end", now_ms, event=f"share session end {d.member_id}",
                                 message=f"{partition.key}: offset {offset} is still ACQUIRED by {d.member_id} "
                                 f"(delivery {d.delivery_count}) {now_ms - d.ended_ms} ms after its share session "
                                 f"ended at {d.ended_ms}", key=str(partition.key), offset=offset,
                                 member=d.member_id, ended_ms=d.ended_ms, leader_epoch=d.leader_epoch)
                return


class AckDisciplineMonitor(Monitor):
    """ack-own-session-only (CL-2, SP-3, E-3): every offset of an acknowledgement a share-partition leader
    takes (its batches, except offsets below the log start offset, which trunk skips) was handed to that
    member by that leader (same leader epoch) in the member's current share session at that broker (none
    opened with epoch 0, closed, evicted, disconnected or crashed there since), and the latest acquisition
    of the offset is that one. A request that closes its session (epoch -1) acknowledges in the session it
    closes. Kafka's leader checks only the member id, and an epoch-0 ShareFetch that replaces an open
    session keeps the member's records (newContext): the client keeps this discipline (the Java consumer
    fails acknowledgements of an earlier session), so this judges client and broker together.

    The session is the client's, not the broker's cache entry: an epoch-0 ShareFetch the client gave up on
    (timed out, its connection closed) that arrives after the client opened a newer session on a newer
    connection replaces the broker's entry, but the client never hears of it and rightly goes on
    acknowledging what it acquired in its newer session; when its epochs meet the replacement's, trunk
    takes those acknowledgements. Such a late opening starts no session here (``SessionFacts``). Likewise a
    later request (epoch > 0) of the older session, given up on and arriving late on its connection after the
    client opened a newer session on a newer one, meets the newer session's epoch when they are equal, and
    trunk takes its acknowledgements of what the older session acquired (the newer opening kept them): they
    are judged in the session opened on the connection the request came on. If the older session's records
    were released meanwhile (their lock timed out, or a session end released them) and acquired again for the
    same member by that leader, trunk applies the late acknowledgement to the new acquisition
    (SharePartition.acknowledge checks the member id and the ACQUIRED state, not the delivery): the offset
    passes if the member acquired it in that session and has held it, unacknowledged, ever since (for
    instance acquired again by a ShareFetch the client had also given up on, after its session ended)."""

    def __init__(self, sink: ViolationSink, facts: SessionFacts) -> None:
        super().__init__(sink)
        self.facts = facts
        self._log_start: dict[SharePartitionKey, SharePartition] = {}

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        self._log_start[partition.key] = partition

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        facts = self.facts
        holdings = facts.holdings.get(key)
        partition = self._log_start.get(key)
        gone = partition.log.log_start_offset if partition is not None else 0
        session = facts.session_of(key, leader_epoch, member_id)
        gen = facts.gen.get(session, 0) if session is not None else 0  # as on_acquire counts it
        # A request that closes its session (epoch -1) carries acknowledgements of that session.
        closing = facts.closing.get(session) if session is not None else None
        closed_gen = closing[0] if closing is not None and now_ms - closing[1] <= RELEASE_BOUND_MS else gen
        # A request the client gave up on, arriving late on an older connection, carries acknowledgements of the
        # session it opened on that connection; the broker's session may have started over on the newer connection
        # and reached that request's epoch, and trunk takes them (SharePartition.acknowledge checks the member id).
        late_gen = facts.late_gen(session, connection) if session is not None else None
        for batch in batches:
            first = max(batch.first_offset, gone)
            last = batch.last_offset
            if last < first:
                continue
            at = first
            problem = ""
            for lo, hi, h in (holdings.overlapping(first, last) if holdings is not None else []):
                if lo > at:
                    break
                if h.member_id != member_id:
                    problem = f"its latest acquisition was by {h.member_id}"
                elif h.leader_epoch != leader_epoch:
                    problem = f"it was acquired from leader epoch {h.leader_epoch}"
                elif (h.gen != gen and h.gen != closed_gen and h.gen != late_gen
                      and (late_gen is None or late_gen not in h.earlier_gens)):
                    problem = f"it was acquired in an earlier share session of {member_id} at that broker"
                if problem:
                    at = lo
                    break
                at = hi + 1
            if not problem and at <= last and facts.lives.get(key, 0) <= 1:
                # (after a group was deleted and created again a leader of the old life may still take one)
                problem = "it was never acquired by anyone in this life of the share-partition"
            if problem:
                self.sink.report("ack-own-session-only", now_ms, event=f"acknowledge {member_id}",
                                 message=f"{key}: the leader of epoch {leader_epoch} took an acknowledgement of "
                                 f"offset {at} from {member_id}, but {problem}", key=str(key), offset=at,
                                 member=member_id, leader_epoch=leader_epoch)
                return
