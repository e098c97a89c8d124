"""The share-partition leaders on one broker: ShareFetch and ShareAcknowledge (SP-*, CL-1, CL-2).

For every (share group, data partition) this broker leads there is one
``SharePartitionSlot``: a pure ``SharePartition`` created at the partition's
current leader epoch on the first ShareFetch that names it, plus what the
simulation adds around it:

* **state on the network.** On creation it sends ReadShareGroupState with its
  leader epoch to the share coordinator and ``recover``s from the answer
  (SP-10); every durable change (``take_writes``) goes out as a
  WriteShareGroupState and comes back through ``complete_write`` (SP-9).
  Like Kafka's persister, retriable answers (no coordinator, loading, not
  enough replicas, timeout) are retried with backoff before the
  ``SharePartition`` hears of a failure; a failed read is retried until it
  succeeds (the group coordinator may not have initialized the state yet).
* **one lock-expiry timer** per slot, re-armed to ``next_lock_deadline_ms()``
  after every change (SP-4);
* **answers that wait.** A ShareFetch/ShareAcknowledge carrying
  acknowledgements is answered as soon as their writes complete (SP-9), and
  not later, so a confirmation is never held back past a redelivery.
* **the fetch path as Kafka runs it** (trunk's KafkaApis.handleShareFetchRequest,
  SharePartitionManager, DelayedShareFetch). Requests are jobs on the broker's
  ``num.io.threads`` request-handler threads (``model.sim.handlers``), in steps
  that take simulated time: a ShareFetch handles its session and
  acknowledgements, then (a step later) its fetch; a ShareAcknowledge its
  session, then its acknowledgements. The fetch is a *delayed share fetch*:
  it takes the fetch lock (``SharePartition.maybe_acquire_fetch_lock``, keyed
  to the fetch's id) of each of its share-partitions not locked by another
  fetch, reads the log (a step: the locks are held meanwhile), and completes
  (acquires, releases the locks, answers) if it read at least MinBytes -- the
  model counts bytes as records (``readable_count``) -- else releases the
  locks and waits in the purgatory, watched on each share-partition. It tries
  again (tryComplete, in one event) when new data commits, a state write or
  read is answered (acknowledgements, releases and lock timeouts make records
  AVAILABLE only then), or a completed fetch releases a lock it found taken
  (Kafka's action queue); at MaxWaitMs it is forced: it takes what locks it
  can, acquires, and answers, even empty. A fetch that carried
  acknowledgements, closes its session, or has no MaxWaitMs does not wait.
  Lock-expiry timers and the share coordinator's answers run in their own
  events (Kafka's timer and persister threads), so they interleave with the
  requests' steps on the same share-partition.
* **zombies.** When the broker stops leading the partition (or the epoch
  moves on) the slot stops serving and its lock timer stops, but it stays
  alive until its writes in flight are answered: a newer leader's read has
  raised the stored leader epoch, so they come back FENCED_LEADER_EPOCH.
* **deleted groups.** When a share group's deletion commits (GC-8) the broker
  forgets the group's share sessions and drops its slots, zombies too, for
  good: they send nothing more. Kafka's SharePartitionManager drops a group's
  share-partitions whenever a connection that carried one of its share
  sessions closes and none is left on the broker
  (ShareGroupListener.onGroupEmpty), deleted or not, and only marks them
  fenced; the mutant ``orphan-on-group-empty`` does that, and shows what it
  costs. Nothing of the old life may write into a re-created group's state;
  SC-5 fences what was already on the wire (the re-created group's state
  epoch is higher: its group epoch carries on across the deletion, GC-7), and
  a later fetch reads the state afresh (SP-10).

Share sessions (CL-1) are one ``ShareSessionCache`` per broker; a session
closed (epoch -1), evicted, or ended with the connection it was opened on
releases the member's acquired records on the session's partitions (SP-15;
Kafka's releaseSession). A session opened again (epoch 0) releases nothing.

Observer hooks: ``on_leader_start`` (slot created), ``on_acquire``,
``on_ack_confirmed`` (an acknowledgement whose write succeeded: reported when
the write's answer arrives, the moment its success is decided, before
anything it released can be acquired again; the consumer's answer follows at
once unless the same request waits for other writes), and
``on_share_partition_step`` (after every change of a serving slot).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from model import mutants as _mutants
from model import situations as _situations
from model.core.errors import ApiError, Errors
from model.core.produce_fetch import ProduceRequest, ProduceResponse
from model.core.share_fetch import (
    LeaderIdAndEpoch,
    ShareAcknowledgePartitionResponse,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchPartitionResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from model.core.share_partition import (
    AcknowledgementBatch,
    AcquiredRecords,
    DlqEnqueue,
    PartitionStatus,
    PendingWrite,
    SharePartition,
    ack_batches_problem,
)
from model.core.share_session import INITIAL_EPOCH, ShareSession, ShareSessionCache
from model.core.share_state import (
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    RecordState,
    SharePartitionKey,
    WriteShareGroupStateResponse,
)
from model.sim.network import Message
from model.sim.protocol import broker_node
from model.sim.timers import Timer
from model.sim.trace import SHARE_ACQUIRE

if TYPE_CHECKING:
    from model.sim.broker import Broker
    from model.sim.protocol import ClusterMetadata

# Answers the persister retries itself before the SharePartition hears of them.
RETRIABLE: Final = frozenset((
    Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR,
    Errors.NOT_ENOUGH_REPLICAS, Errors.REQUEST_TIMED_OUT, Errors.NOT_LEADER_OR_FOLLOWER,
))
_NO_LEADER: Final = LeaderIdAndEpoch()
# KIP-1191, trunk's ShareGroupDLQStateManager: at most 5 produce attempts, exponential backoff from
# 1 s to 30 s, retried only on NOT_LEADER_OR_FOLLOWER and on a lost or timed-out request.
DLQ_MAX_ATTEMPTS: Final = 5
DLQ_BACKOFF_MS: Final = 1_000
DLQ_BACKOFF_MAX_MS: Final = 30_000
_DLQ_RETRIABLE: Final = frozenset((Errors.NOT_LEADER_OR_FOLLOWER, Errors.REQUEST_TIMED_OUT))
_PARKED_SWEEP: Final = 32  # drop answered calls from a slot's parked list past this length


class SharePartitionSlot:
    __slots__ = ("dead", "group_id", "key", "key_text", "leader_epoch", "lock_timer", "orphan", "parked",
                 "partition", "read_failures", "serving", "sp", "topic", "topic_id", "waiters")

    def __init__(self, sp: SharePartition, topic: str, partition: int, leader_epoch: int) -> None:
        self.sp = sp
        self.key = sp.key
        self.key_text = str(sp.key)  # for trace fields
        self.group_id = sp.key.group_id
        self.topic_id = sp.key.topic_id
        self.topic = topic
        self.partition = partition
        self.leader_epoch = leader_epoch
        self.lock_timer: Timer | None = None
        self.parked: list[_Call] = []
        self.waiters: dict[int, tuple[_Call, _Part]] = {}  # ACKNOWLEDGE write id -> who waits
        self.serving = True  # False once leadership is gone (a zombie until its writes return)
        self.dead = False  # the broker crashed, or the group was deleted: nothing of it acts again
        self.orphan = False  # mutant orphan-on-group-empty: out of the cache, its timers and writes go on
        self.read_failures = 0  # consecutive failed reads (backoff grows)


class _Part:
    """One partition of a request being answered."""

    __slots__ = ("ack_batches", "ack_error", "acquired", "error", "fetch", "gaps", "leader", "partition", "slot",
                 "topic_id")

    def __init__(self, topic_id: str, partition: int, slot: SharePartitionSlot | None,
                 error: Errors = Errors.NONE, leader: LeaderIdAndEpoch = _NO_LEADER) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.slot = slot
        self.error = error
        self.leader = leader
        self.ack_error = Errors.NONE
        self.ack_batches: tuple[AcknowledgementBatch, ...] = ()
        self.acquired: list[AcquiredRecords] = []
        self.gaps: list[tuple[int, int]] = []  # acquired offsets the fetched batches hold no record for
        self.fetch = False


class _Call:
    """One ShareFetch or ShareAcknowledge being answered."""

    __slots__ = ("acked", "acquire_mode", "budget", "checks", "closing", "done", "fetch", "fetch_id", "fetching",
                 "got", "group_id", "max_wait_ms", "member_id", "message", "min_bytes", "parts", "read_from", "timer",
                 "waiting", "watched")

    def __init__(self, message: Message, group_id: str, member_id: str, *, fetch: bool, closing: bool,
                 budget: int = 0, max_wait_ms: int = 0, min_bytes: int = 1, fetch_id: int = 0) -> None:
        self.message = message
        self.fetch_id = fetch_id  # the delayed share fetch's id: what its fetch locks are keyed to
        self.min_bytes = min_bytes  # MinBytes, counted in records (offsets) by the model
        self.fetching = False  # its fetch has not completed yet (in a handler's steps, or in the purgatory)
        self.read_from: dict[int, int] | None = None  # mutant fetch-without-lock: id(slot) -> SPEO it read at
        self.group_id = group_id
        self.member_id = member_id
        self.fetch = fetch  # a ShareFetch (else a ShareAcknowledge)
        self.closing = closing
        self.budget = budget
        self.acquire_mode = "batch_optimized"  # the ShareFetch's share.acquire.mode
        self.max_wait_ms = max_wait_ms
        self.parts: list[_Part] = []
        self.waiting = 0  # acknowledgement writes not answered yet
        self.checks = 0  # state-epoch checks (SP-12) not answered yet: nothing is acquired before
        self.acked = False  # it carried acknowledgements: answered as soon as they are durable
        self.got = 0
        self.timer: Timer | None = None
        self.done = False
        self.watched = False  # it has waited in the purgatory (the observer heard so)


class ShareLeaderHost:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        config = broker.config
        self.sessions = ShareSessionCache(config.share_max_groups * config.share_max_size,
                                          config.share_session_idle_eviction_ms)
        self.slots: dict[tuple[str, str, int], SharePartitionSlot] = {}  # (group, topic, partition)
        self._by_partition: dict[tuple[str, int], list[SharePartitionSlot]] = {}
        # Slots out of the cache that may still act: zombies until their writes are answered, and
        # (mutant orphan-on-group-empty) orphans while they also hold locks.
        self._retired: list[SharePartitionSlot] = []
        # Mutant orphan-on-group-empty: the group of the last share session opened on each connection.
        self._connection_groups: dict[tuple[str, int], str] = {}
        self._next_eviction_ms = 0
        self._next_fetch_id = 0
        self.stats = broker.fetch_stats  # counters kept across the broker's restarts (tests read them)

    # -- requests ----------------------------------------------------------------------------
    #
    # Each request is a job on the broker's request-handler threads (model/sim/handlers.py): a
    # generator whose ``yield``s are the points where its steps' simulated time passes, and where
    # other requests, lock timers and state-write answers on the same share-partitions run.

    def share_fetch(self, message: Message, req: ShareFetchRequest) -> Iterator[None]:
        """A ShareFetch, as Kafka's KafkaApis.handleShareFetchRequest: the share session, then the
        acknowledgements it carries (their writes go out), then the fetch, a delayed share fetch
        (``_fetch``) that completes at once or waits in the purgatory."""
        broker = self.broker
        now = broker.scheduler.now_ms
        self._maybe_evict(now)
        session_key = (req.group_id, req.member_id)
        opening = req.share_session_epoch == INITIAL_EPOCH
        try:
            ctx = self.sessions.share_fetch(
                session_key, req.share_session_epoch, now,
                [(p.topic_id, p.partition) for p in req.partitions], req.forgotten,
                (message.src, message.connection) if opening else ("", 0),
                opening and any(p.acknowledgement_batches for p in req.partitions),
            )
        except ApiError as e:
            broker.reply(message, ShareFetchResponse(e.error, e.message or None))
            return
        for evicted in ctx.evicted:
            self._evicted(evicted, now)
        if opening and _mutants.ACTIVE == "orphan-on-group-empty":
            self._connection_groups[ctx.session.connection] = req.group_id
        broker.observer.on_share_session(broker.broker_id, req.group_id, req.member_id, req.share_session_epoch, now)
        broker.observer.on_share_fetch_session(broker.broker_id, req.group_id, req.member_id, req.share_session_epoch,
                                               tuple((p.topic_id, p.partition) for p in req.partitions),
                                               req.forgotten, (message.src, message.connection), now)
        self._next_fetch_id += 1
        call = _Call(message, req.group_id, req.member_id, fetch=True, closing=ctx.closing,
                     budget=req.max_records, max_wait_ms=req.max_wait_ms, min_bytes=req.min_bytes,
                     fetch_id=self._next_fetch_id)
        call.acquire_mode = req.acquire_mode
        named: set[tuple[str, int]] = set()
        for p in req.partitions:
            named.add((p.topic_id, p.partition))
            part = self._part(call, p.topic_id, p.partition)
            if p.acknowledgement_batches:
                self._acknowledge(call, part, p.acknowledgement_batches, now)
            part.fetch = p.partition_max_bytes > 0
        if opening:
            for part in call.parts:
                if part.slot is not None and part.slot.sp.ready:
                    self._check_state_epoch(call, part.slot)
        if ctx.closing:
            self._release_session(ctx.session, now)  # SP-15, after its acknowledgements
            self._maybe_finish(call)
            return
        # An incremental fetch also reads the session's partitions it does not name (CL-1).
        for topic_id, partition in sorted(ctx.session.partitions - named):
            self._part(call, topic_id, partition).fetch = True
        call.fetching = True
        if call.checks:
            return  # the fetch goes on when the state-epoch checks are answered (_summary_answered)
        yield  # the acknowledgements are handled; the fetch is the next step
        yield from self._fetch(call)

    def share_acknowledge(self, message: Message, req: ShareAcknowledgeRequest) -> Iterator[None]:
        """A ShareAcknowledge: the share session, then (a step later) the acknowledgements."""
        broker = self.broker
        now = broker.scheduler.now_ms
        self._maybe_evict(now)
        session_key = (req.group_id, req.member_id)
        try:
            ctx = self.sessions.share_acknowledge(session_key, req.share_session_epoch, now)
        except ApiError as e:
            broker.reply(message, ShareAcknowledgeResponse(e.error, e.message or None))
            return
        broker.observer.on_share_session(broker.broker_id, req.group_id, req.member_id, req.share_session_epoch, now)
        call = _Call(message, req.group_id, req.member_id, fetch=False, closing=ctx.closing)
        yield  # validated; the acknowledgements are the next step
        if not broker.alive:
            return
        now = broker.scheduler.now_ms
        for p in req.partitions:
            part = self._part(call, p.topic_id, p.partition)
            self._acknowledge(call, part, p.acknowledgement_batches, now)
        if ctx.closing:
            self._release_session(ctx.session, now)
        self._maybe_finish(call)

    def _part(self, call: _Call, topic_id: str, partition: int) -> _Part:
        broker = self.broker
        topic = broker.topic_names.get(topic_id)
        if topic is None:
            part = _Part(topic_id, partition, None, Errors.UNKNOWN_TOPIC_ID)
        else:
            info = broker.metadata.partitions.get((topic, partition))
            if info is None:
                part = _Part(topic_id, partition, None, Errors.UNKNOWN_TOPIC_OR_PARTITION)
            elif info.leader != broker.broker_id:
                part = _Part(topic_id, partition, None, Errors.NOT_LEADER_OR_FOLLOWER,
                             LeaderIdAndEpoch(info.leader, info.leader_epoch))
            else:
                slot = self._slot(call.group_id, topic, topic_id, partition, info.leader_epoch)
                part = _Part(topic_id, partition, slot)
        call.parts.append(part)
        return part

    def _acknowledge(self, call: _Call, part: _Part, batches: tuple[AcknowledgementBatch, ...], now: int) -> None:
        call.acked = True
        slot = part.slot
        if slot is None:
            part.ack_error = part.error
            return
        if slot.sp.broker.kafka and ack_batches_problem(batches):
            part.ack_error = Errors.INVALID_REQUEST  # KafkaApis.validateAcknowledgementBatches, before the partition
            return
        result = slot.sp.acknowledge(call.member_id, batches, now)
        if result.error_code == Errors.NONE:
            self.broker.observer.on_acknowledge(slot.key, call.member_id, batches, slot.leader_epoch, now,
                                                (call.message.src, call.message.connection))
        if result.error_code != Errors.NONE:
            part.ack_error = result.error_code
        elif result.write_id is not None:
            part.ack_batches = batches
            call.waiting += 1
            slot.waiters[result.write_id] = (call, part)
        self._after(slot, now)

    # -- the delayed share fetch (Kafka: DelayedShareFetch, SharePartitionManager) ------------------------

    def _fetch(self, call: _Call) -> Iterator[None]:
        """The fetch of a ShareFetch on its handler thread, Kafka's first tryComplete
        (tryCompleteElseWatch): take the fetch locks of its share-partitions, read the log (a step: the
        locks are held meanwhile), then complete (acquire, release the locks, answer) if it read at
        least MinBytes, else release the locks and wait in the purgatory."""
        if call.done or not self.broker.alive:
            return
        locked = self._lock(call)
        if locked:
            yield  # the log read
            if call.done or not self.broker.alive:
                self._unlock(call, locked)
                return
        self._try_complete(call, locked, forced=False)

    def _lock(self, call: _Call) -> list[SharePartitionSlot]:
        """The share-partitions of ``call``'s fetch whose fetch lock it takes now (Kafka:
        DelayedShareFetch.acquirablePartitions); one held by another fetch is left out."""
        locked: list[SharePartitionSlot] = []
        for part in call.parts:
            slot = part.slot
            if slot is None or not part.fetch or not slot.serving or slot in locked:
                continue
            if _mutants.ACTIVE == "fetch-without-lock":
                if slot.sp.ready:
                    locked.append(slot)  # mutant: no lock taken, none respected
                    if call.read_from is None:
                        call.read_from = {}
                    call.read_from[id(slot)] = slot.sp.speo  # where its log read starts
            elif slot.sp.maybe_acquire_fetch_lock(call.fetch_id):
                locked.append(slot)
            elif slot.sp.fetch_lock is not None:
                self.stats["fetch_lock_busy"] += 1
                _situations.COUNTS["fetch-lock-contended"] += 1
            elif not slot.sp.ready:
                _situations.COUNTS["fetch-while-loading"] += 1
        return locked

    def _unlock(self, call: _Call, locked: list[SharePartitionSlot], recheck: bool = False) -> None:
        """Release the fetch locks ``call`` took. ``recheck``: after a completed fetch, the fetches waiting
        on those share-partitions try again (Kafka: releasePartitionLocksAndAddToActionQueue), since a
        fetch that found a lock taken could not complete."""
        if _mutants.ACTIVE == "fetch-without-lock":
            return
        for slot in locked:
            slot.sp.release_fetch_lock(call.fetch_id)
            if recheck and slot.parked and slot.serving:
                self.broker.scheduler.post(0, self._wake, slot)

    def _try_complete(self, call: _Call, locked: list[SharePartitionSlot], *, forced: bool) -> bool:
        """With the fetch locks ``locked`` held: complete ``call``'s fetch if it is ``forced`` (MaxWaitMs
        passed), may not wait (it carried acknowledgements, closes its session, or has no MaxWaitMs), or
        reads at least MinBytes (in records); else release the locks and wait in the purgatory. Kafka:
        DelayedShareFetch.tryComplete, isMinBytesSatisfied, onComplete."""
        if call.done:
            self._unlock(call, locked)
            return True
        if not (forced or call.acked or call.max_wait_ms <= 0):
            readable = 0
            for slot in locked:
                if slot.serving:
                    readable += slot.sp.readable_count()
            if readable < call.min_bytes or not locked:
                self._unlock(call, locked)
                self._park(call)
                return False
        now = self.broker.scheduler.now_ms
        done = self._acquire(call, locked, now)
        if _mutants.ACTIVE == "fetch-lock-leak":
            # Mutant: the share-partitions a fetch did not get to (its max records were reached first)
            # keep its fetch lock: an early return on that path skips their release.
            self._unlock(call, done, recheck=True)
        else:
            self._unlock(call, locked, recheck=True)
        call.fetching = False
        self._maybe_finish(call)
        return True

    def _acquire(self, call: _Call, locked: list[SharePartitionSlot], now: int) -> list[SharePartitionSlot]:
        """Acquire records on the share-partitions ``locked`` (in the request's order) up to the call's max
        records; returns those it got to before the budget ran out."""
        observer = self.broker.observer
        done: list[SharePartitionSlot] = []
        for slot in locked:
            if call.budget <= 0:
                break
            done.append(slot)
            if not slot.serving or not slot.sp.ready:
                continue
            part = next(p for p in call.parts if p.slot is slot and p.fetch)
            stale = self._stale_read(call, slot) if call.read_from is not None else []
            acquired = slot.sp.acquire(call.member_id, call.budget, now, acquire_mode=call.acquire_mode)
            if stale:
                acquired = stale + acquired
            if acquired:
                n = sum(a.last_offset - a.first_offset + 1 for a in acquired)
                call.budget -= n
                call.got += n
                part.acquired.extend(acquired)
                log = slot.sp.log
                if not log.all_records:
                    # What the fetched batches show the client (its ShareCompletedFetch finds no record
                    # at these acquired offsets and acknowledges them with GAP).
                    for a in acquired:
                        part.gaps.extend(log.gaps_in(a.first_offset, a.last_offset))
                observer.on_acquire(slot.key, call.member_id, acquired, slot.leader_epoch, now)
                trace = self.broker.trace
                if trace is not None:
                    trace.emit(SHARE_ACQUIRE, now, self.broker.node, n, acquired[0].first_offset, slot.key_text,
                               call.member_id)
            self._after(slot, now)
        return done

    def _stale_read(self, call: _Call, slot: SharePartitionSlot) -> list[AcquiredRecords]:
        """Mutant fetch-without-lock: the new records this fetch read (from the SPEO at its read) that
        another fetch acquired while it was reading are acquired again, as its read saw them: first
        delivery, for this member."""
        assert call.read_from is not None
        start = call.read_from.get(id(slot))
        speo = slot.sp.speo
        if start is None or start >= speo:
            return []
        last = min(speo, start + call.budget) - 1
        return [AcquiredRecords(start, last, 1)]

    def _park(self, call: _Call) -> None:
        """``call`` waits in the purgatory (watched on each of its share-partitions) until woken or its
        MaxWaitMs passes (Kafka: tryCompleteElseWatch)."""
        if call.timer is not None:
            return  # already watched: the waker keeps it on its list
        waitable = [p.slot for p in call.parts if p.fetch and p.slot is not None and p.slot.serving]
        if not waitable:
            self._try_complete(call, [], forced=True)
            return
        self.stats["fetch_parked"] += 1
        call.timer = self.broker.scheduler.timer(call.max_wait_ms, self._wait_over, call)
        call.watched = True
        self._purgatory(call, tuple(slot.sp for slot in waitable))
        for slot in waitable:
            parked = slot.parked
            if len(parked) > _PARKED_SWEEP:
                parked[:] = [c for c in parked if not c.done]
            if call not in parked:
                parked.append(call)

    # -- answering -----------------------------------------------------------------------------

    def _maybe_finish(self, call: _Call) -> None:
        """Answer ``call`` once its fetch (if any) has completed and its acknowledgements are durable: a
        fetch that carried acknowledgements does not wait in the purgatory, so their confirmation is
        not held back."""
        if call.done or call.waiting or call.checks or call.fetching:
            return
        self._respond(call)

    def _wait_over(self, call: _Call) -> None:
        """MaxWaitMs passed (Kafka: the purgatory's expiry forces onComplete): take what locks it can,
        acquire, answer."""
        call.timer = None
        if not call.done:
            self.stats["fetch_expired"] += 1
            _situations.COUNTS["fetch-expired-in-purgatory"] += 1
            self._try_complete(call, self._lock(call), forced=True)

    def _wake(self, slot: SharePartitionSlot) -> None:
        """Something may be acquirable on ``slot`` (new data, records made AVAILABLE, state loaded, a
        fetch lock released): the fetches waiting on it try to complete (Kafka:
        checkAndComplete on the DelayedShareFetch keys)."""
        parked = slot.parked
        if not parked:
            return
        slot.parked = []
        for call in parked:
            if call.done:
                continue
            if self._try_complete(call, self._lock(call), forced=False):
                if call.done:
                    self.stats["fetch_woken"] += 1
                    _situations.COUNTS["fetch-parked-woken"] += 1
            elif not call.done:
                slot.parked.append(call)

    def _purgatory(self, call: _Call, partitions: tuple[SharePartition, ...]) -> None:
        """Tell the observer ``call`` waits in the purgatory on ``partitions`` (none: it left it)."""
        broker = self.broker
        broker.observer.on_share_fetch_waiting(broker.broker_id, call.fetch_id, partitions, call.min_bytes,
                                               broker.scheduler.now_ms)

    def _respond(self, call: _Call) -> None:
        call.done = True
        if call.watched:
            self._purgatory(call, ())
        if call.timer is not None:
            call.timer.cancel()
            call.timer = None
        broker = self.broker
        if not broker.alive:
            return
        if call.fetch:
            broker.reply(call.message, ShareFetchResponse(responses=tuple(
                ShareFetchPartitionResponse(
                    p.topic_id, p.partition, p.error, None, p.ack_error, None, p.leader, tuple(p.acquired),
                    self._produce_times(p) if p.acquired else (), tuple(p.gaps),
                )
                for p in call.parts
            )))
        else:
            broker.reply(call.message, ShareAcknowledgeResponse(responses=tuple(
                ShareAcknowledgePartitionResponse(p.topic_id, p.partition, p.ack_error, None, p.leader)
                for p in call.parts
            )))

    def _produce_times(self, part: _Part) -> tuple[int, ...]:
        slot = part.slot
        assert slot is not None
        data = self.broker.controller.data(slot.topic, slot.partition)
        return data.produce_times_of([(a.first_offset, a.last_offset) for a in part.acquired])

    # -- the share-partitions ----------------------------------------------------------------------

    def _slot(self, group_id: str, topic: str, topic_id: str, partition: int, leader_epoch: int) -> SharePartitionSlot:
        slot = self.slots.get((group_id, topic, partition))
        if slot is not None:
            return slot
        broker = self.broker
        key = SharePartitionKey(group_id, topic_id, partition)
        sp = SharePartition(key, broker.controller.data(topic, partition).log, leader_epoch=leader_epoch,
                            broker=broker.config, group=broker.group_config(group_id))
        slot = SharePartitionSlot(sp, topic, partition, leader_epoch)
        self.slots[(group_id, topic, partition)] = slot
        self._by_partition.setdefault((topic, partition), []).append(slot)
        now = broker.scheduler.now_ms
        broker.observer.on_leader_start(key, broker.broker_id, leader_epoch, now)
        if broker.trace is not None:
            broker.trace.record(now, broker.node, "share.leader_start", key=str(key), leader_epoch=leader_epoch)
        self._read(slot)
        return slot

    def _after(self, slot: SharePartitionSlot, now: int, backoff_ms: int = 0) -> None:
        """After any change: send the writes it made (after ``backoff_ms`` when they re-issue a
        failed one), re-arm the lock timer, tell the observer."""
        sp = slot.sp
        for write in sp.take_writes():
            if backoff_ms:
                self.broker.scheduler.post(backoff_ms, self._retry_write, slot, write, 0)
            else:
                self._send_write(slot, write, 0)
        for enqueue in sp.take_dlq():
            self._dlq_produce(slot, enqueue, 0)
        if not slot.serving and not slot.orphan:
            return
        deadline = sp.next_lock_deadline_ms()
        timer = slot.lock_timer
        if deadline is None:
            if timer is not None and timer.active:
                timer.cancel()
        else:
            due = deadline if deadline > now else now
            if timer is None:
                slot.lock_timer = self.broker.scheduler.timer_at(due, self._expire_locks, slot)
            elif not timer.active or timer.due_ms != due:
                timer.reschedule_at(due)
        if slot.serving:
            self.broker.observer.on_share_partition_step(sp, sp.log.bound(sp.group.read_committed), now)

    def _expire_locks(self, slot: SharePartitionSlot) -> None:
        if (slot.serving or slot.orphan) and not slot.dead:
            now = self.broker.scheduler.now_ms
            slot.sp.expire_locks(now)
            self._after(slot, now)

    def _release_session(self, session: ShareSession, now: int) -> None:
        """SP-15: the member's acquired records on the session's partitions go back."""
        if _mutants.ACTIVE == "no-release-on-session-end":
            return  # mutant: the session is gone, its member's records stay ACQUIRED
        group_id, member_id = session.key
        topic_names = self.broker.topic_names
        for topic_id, partition in sorted(session.partitions):
            slot = self.slots.get((group_id, topic_names.get(topic_id, ""), partition))
            if slot is not None and slot.serving and slot.sp.release_member(member_id, now) is not None:
                self._after(slot, now)

    def _maybe_evict(self, now: int) -> None:
        if now < self._next_eviction_ms:
            return
        idle_ms = self.sessions.idle_eviction_ms
        self._next_eviction_ms = now + max(1, idle_ms // 4)
        for session in self.sessions.evict_idle(now):
            _situations.COUNTS["share-session-evicted-idle"] += 1
            self._evicted(session, now)

    def _evicted(self, session: ShareSession, now: int) -> None:
        """An idle session was evicted (or its connection closed): the member's acquired records go
        back (SP-15)."""
        self.broker.observer.on_share_session_evicted(self.broker.broker_id, *session.key, now)
        self._release_session(session, now)

    def on_client_disconnected(self, client: str, connection: int) -> None:
        """``client``'s connection number ``connection`` to this broker closed (the client closed it after
        a request timeout, or its process died and its host reset it): the share sessions opened on it
        (or on an earlier connection of the client's) end, and their members' acquired records go back
        at once, not when their locks time out (Kafka: ShareSessionCache's disconnect listener, then
        onMemberLeave). Sessions the client opened since, on a newer connection, stay."""
        now = self.broker.scheduler.now_ms
        gone = self.sessions.remove_connection(client, connection)
        for session in gone:
            self._evicted(session, now)
        if gone:
            _situations.COUNTS["share-sessions-disconnected"] += 1
            self.broker.observer.on_event("share.sessions_disconnected", now, broker=self.broker.broker_id,
                                          client=client, sessions=len(gone))
            if self.broker.trace is not None:
                self.broker.trace.record(now, self.broker.node, "share.sessions_disconnected", client=client,
                                         sessions=len(gone))
        if _mutants.ACTIVE == "orphan-on-group-empty":
            closed = [c for c in sorted(self._connection_groups) if c[0] == client and c[1] <= connection]
            for group_id in sorted({self._connection_groups.pop(c) for c in closed}):
                if not self.sessions.has_group(group_id):
                    self._orphan_group(group_id, now)

    def _orphan_group(self, group_id: str, now: int) -> None:
        """Mutant orphan-on-group-empty, Kafka trunk's ShareGroupListener.onGroupEmpty: a connection that
        carried a share session of the group closed (its session ended, or had ended with epoch -1), and
        the group has no share session left on this broker, so its share-partitions leave the cache (the
        next fetch builds new ones, which read the state again at the same leader epoch), but they are
        only marked fenced: they acquire nothing more, yet their lock timers run and their writes, in
        flight or to come, still go to the share coordinator, whose fence (stored epoch > request's)
        lets equal epochs by."""
        orphaned = [(key, slot) for key, slot in sorted(self.slots.items()) if key[0] == group_id]
        self._prune_retired()
        for key, slot in orphaned:
            self._unlist(key, slot)
            slot.orphan = True
            self._retired.append(slot)
            self._answer_parked(slot, None)
        if orphaned and self.broker.trace is not None:
            self.broker.trace.record(now, self.broker.node, "share.group_empty", group=group_id,
                                     share_partitions=len(orphaned))

    # -- state on the network (SP-9, SP-10) ---------------------------------------------------------

    def _read(self, slot: SharePartitionSlot) -> None:
        request = slot.sp.read_request()
        self.broker.send_share_state(request, lambda resp: self._read_answered(slot, resp))

    def _read_answered(self, slot: SharePartitionSlot, resp: object | None) -> None:
        if slot.dead or not slot.serving:
            return
        broker = self.broker
        now = broker.scheduler.now_ms
        if not isinstance(resp, ReadShareGroupStateResponse):
            resp = ReadShareGroupStateResponse(slot.key, Errors.REQUEST_TIMED_OUT)
        slot.sp.recover(resp, now)
        if resp.error_code != Errors.NONE and resp.error_code != Errors.FENCED_LEADER_EPOCH:
            # Not there yet (not initialized, coordinator moving, state deleted): read again later.
            settings = broker.settings
            backoff = min(settings.retry_backoff_ms << min(slot.read_failures, 16), settings.max_retry_backoff_ms)
            slot.read_failures += 1
            if _mutants.ACTIVE != "read-not-retried":
                broker.scheduler.post(backoff, self._reread, slot)
            return
        slot.read_failures = 0
        if resp.error_code == Errors.NONE:
            broker.observer.on_state_read(slot.key, slot.leader_epoch, now)
            archiving = [b for b in resp.state_batches if b.delivery_state == RecordState.ARCHIVING]
            if archiving:
                _situations.COUNTS["dlq-resumed-after-read"] += 1
            if archiving and broker.trace is not None:  # KIP-1191: phase 2 resumed by this leader
                broker.trace.record(now, broker.node, "share.dlq_resume", key=slot.key_text,
                                    offsets=sum(b.last_offset - b.first_offset + 1 for b in archiving))
        self._after(slot, now)
        self._wake(slot)

    def _check_state_epoch(self, call: _Call, slot: SharePartitionSlot) -> None:
        """SP-12: a session opens; if an admin reset re-initialized the state with a higher
        state epoch, drop what this leader holds and read again. The opening fetch acquires
        only once the check is answered."""
        call.checks += 1
        request = ReadShareGroupStateSummaryRequest(slot.key, slot.leader_epoch)
        self.broker.send_share_state(request, lambda resp: self._summary_answered(call, slot, resp))

    def _summary_answered(self, call: _Call, slot: SharePartitionSlot, resp: object | None) -> None:
        # A slot that stopped serving meanwhile (retired, its group deleted) checks nothing, but the
        # call is still answered. (A crash drops this callback with the broker's other requests.)
        if (slot.serving and isinstance(resp, ReadShareGroupStateSummaryResponse)
                and slot.sp.check_state_epoch(resp)):
            self._after(slot, self.broker.scheduler.now_ms)  # the dropped state: timers, observer
            self._read(slot)
        call.checks -= 1
        if not call.checks and not call.done:
            self._try_complete(call, self._lock(call), forced=False)

    def _reread(self, slot: SharePartitionSlot) -> None:
        if slot.serving and not slot.dead and slot.sp.status in (PartitionStatus.FAILED, PartitionStatus.STALE_STATE):
            self._read(slot)

    def _send_write(self, slot: SharePartitionSlot, write: PendingWrite, attempt: int) -> None:
        self.broker.send_share_state(write.request, lambda resp: self._write_answered(slot, write, attempt, resp))

    def _write_answered(self, slot: SharePartitionSlot, write: PendingWrite, attempt: int, resp: object | None) -> None:
        if slot.dead:
            return
        broker = self.broker
        settings = broker.settings
        if not isinstance(resp, WriteShareGroupStateResponse):
            resp = WriteShareGroupStateResponse(slot.key, Errors.REQUEST_TIMED_OUT)
        if resp.error_code in RETRIABLE and attempt + 1 < settings.state_request_attempts:
            backoff = min(settings.retry_backoff_ms << attempt, settings.max_retry_backoff_ms)
            broker.scheduler.post(backoff, self._retry_write, slot, write, attempt + 1)
            return
        now = broker.scheduler.now_ms
        if not slot.serving:
            _situations.COUNTS["zombie-write-answered"] += 1
        done = slot.sp.complete_write(write.write_id, resp, now)
        if done.error_code == Errors.NONE:
            broker.observer.on_write_completed(write.request, now)
        waiter = slot.waiters.pop(write.write_id, None)
        if waiter is not None:
            call, part = waiter
            if done.error_code != Errors.NONE:
                part.ack_error = done.error_code
            elif broker.alive:
                # Durable and decided: the answer will say so (reported now, before any
                # record it released can be acquired again).
                broker.observer.on_ack_confirmed(slot.key, call.member_id, part.ack_batches, slot.leader_epoch,
                                                 write.request.state_epoch, now)
            call.waiting -= 1
            self._maybe_finish(call)
        if broker.trace is not None and done.error_code != Errors.NONE:
            broker.trace.record(now, broker.node, "share.write_failed", error=int(done.error_code),
                                key=slot.key_text, reason=done.reason.value)
        if slot.orphan and broker.trace is not None:
            broker.trace.record(now, broker.node, "share.orphan_write", error=int(done.error_code),
                                key=slot.key_text, reason=done.reason.value,
                                start_offset=write.request.start_offset)
        self._after(slot, now, settings.retry_backoff_ms if done.error_code != Errors.NONE else 0)
        if slot.serving and slot.sp.status is PartitionStatus.STALE_STATE:
            self._read(slot)  # SP-12: the state was re-initialized; read it again
        if _mutants.ACTIVE != "fetch-not-woken-by-writes":
            self._wake(slot)

    def _retry_write(self, slot: SharePartitionSlot, write: PendingWrite, attempt: int) -> None:
        if not slot.dead:
            self._send_write(slot, write, attempt)

    # -- the dead-letter queue (KIP-1191) ---------------------------------------------------------------

    def _dlq_produce(self, slot: SharePartitionSlot, enqueue: DlqEnqueue, attempt: int) -> None:
        """Phase 2, step 1 (trunk's ``ShareGroupDLQManager.enqueue``): the leader's broker produces the
        records (acks=all) to the group's DLQ topic, the partition of the same number modulo its
        partitions; the outcome, success or not, goes back to ``SharePartition.complete_dlq``. A slot
        that stopped serving drops it: its successor reads the records back ARCHIVING and resumes."""
        if slot.dead or not slot.serving:
            return
        broker = self.broker
        now = broker.scheduler.now_ms
        topic = slot.sp.group.dlq_topic
        if _mutants.ACTIVE == "dlq-enqueue-lost":
            self._dlq_done(slot, enqueue, now)  # mutant: told it was written, but nothing was produced
            return
        partitions = sorted(p for t, p in broker.metadata.partitions if t == topic) if topic else []
        if not partitions:
            # No DLQ topic now (disabled since phase 1), or it does not exist: the enqueue fails and the
            # records are archived regardless. (Trunk's manager would create a missing DLQ topic with
            # CreateTopics; the model does not: a scenario declares its DLQ topic.)
            self._dlq_failed(slot, enqueue, "no DLQ topic" if not topic else f"no topic {topic}")
            return
        # Trunk: the source partition modulo the DLQ topic's partitions; no leader known fails the enqueue
        # (a ConfigException in ShareGroupDLQStateManager), it is not retried.
        partition = partitions[slot.partition % len(partitions)]
        info = broker.metadata.partitions.get((topic, partition))
        if info is None or info.leader < 0:
            self._dlq_failed(slot, enqueue, f"no leader for {topic}-{partition}")
            return
        request = ProduceRequest(topic, partition, enqueue.last_offset - enqueue.first_offset + 1,
                                 produce_time_ms=now,
                                 dlq_source=(slot.key, enqueue.first_offset, enqueue.last_offset))
        broker.request(broker_node(info.leader), "Produce", request,
                       lambda resp: self._dlq_answered(slot, enqueue, attempt, resp))

    def _dlq_answered(self, slot: SharePartitionSlot, enqueue: DlqEnqueue, attempt: int,
                      resp: object | None) -> None:
        if slot.dead or not slot.serving:
            return
        error = resp.error_code if isinstance(resp, ProduceResponse) else Errors.REQUEST_TIMED_OUT
        if error == Errors.NONE:
            self._dlq_done(slot, enqueue, self.broker.scheduler.now_ms)
        elif error in _DLQ_RETRIABLE and attempt + 1 < DLQ_MAX_ATTEMPTS:
            backoff = min(DLQ_BACKOFF_MS << attempt, DLQ_BACKOFF_MAX_MS)
            self.broker.scheduler.post(backoff, self._dlq_produce, slot, enqueue, attempt + 1)
        else:
            self._dlq_failed(slot, enqueue, f"produce failed ({error.name}) after {attempt + 1} attempt(s)")

    def _dlq_failed(self, slot: SharePartitionSlot, enqueue: DlqEnqueue, why: str) -> None:
        broker = self.broker
        now = broker.scheduler.now_ms
        _situations.COUNTS["dlq-enqueue-failed"] += 1
        broker.observer.on_dlq_given_up(slot.key, enqueue.first_offset, enqueue.last_offset, now)
        if broker.trace is not None:
            broker.trace.record(now, broker.node, "share.dlq_failed", key=slot.key_text,
                                first=enqueue.first_offset, last=enqueue.last_offset, why=why)
        self._dlq_done(slot, enqueue, now)

    def _dlq_done(self, slot: SharePartitionSlot, enqueue: DlqEnqueue, now: int) -> None:
        """Phase 2, step 2: ARCHIVING -> ARCHIVED, durably (``complete_dlq``)."""
        broker = self.broker
        if broker.trace is not None:
            broker.trace.record(now, broker.node, "share.dlq_archive", key=slot.key_text,
                                first=enqueue.first_offset, last=enqueue.last_offset, cause=enqueue.cause)
        slot.sp.complete_dlq(enqueue)
        self._after(slot, now)

    # -- the broker's events ----------------------------------------------------------------------------

    def on_data_committed(self, topic: str, partition: int) -> None:
        """The high-water mark of a data partition moved: waiting fetches may find records."""
        for slot in self._by_partition.get((topic, partition), ()):
            if slot.parked:
                self._wake(slot)

    def on_log_start_moved(self, topic: str, partition: int, now: int) -> None:
        """DeleteRecords moved the data partition's log start offset: each share-partition of it follows
        (``SharePartition.advance_log_start``; trunk's updateCacheAndOffsets, which trunk calls when a fetch
        finds the log start past its start offset; the next fetch or acknowledgement here would too)."""
        if _mutants.ACTIVE == "log-start-unheard":
            return
        for slot in self._by_partition.get((topic, partition), ()):
            if slot.serving and not slot.dead and slot.sp.ready:
                slot.sp.advance_log_start(now)
                self._after(slot, now)
                if slot.parked:
                    self._wake(slot)

    def on_metadata(self, metadata: ClusterMetadata) -> None:
        """Slots whose partition this broker no longer leads at their epoch stop serving."""
        me = self.broker.broker_id
        for key, slot in list(self.slots.items()):
            info = metadata.partitions.get((slot.topic, slot.partition))
            if info is None or info.leader != me or info.leader_epoch != slot.leader_epoch:
                self._retire(key, slot, LeaderIdAndEpoch(info.leader, info.leader_epoch) if info else _NO_LEADER)

    def on_group_deleted(self, group_id: str) -> None:
        """GC-8: the share group's deletion committed; its members are gone with it. Forget their
        share sessions (a member that comes back opens a new one) and drop the group's slots, with
        their acquisitions, timers and writes not yet answered. SPEC.md is silent on this (Kafka:
        ShareGroupListener, KAFKA-19116, drops them when a connection closes and no share session of
        the group is left)."""
        broker = self.broker
        now = broker.scheduler.now_ms
        forgotten = self.sessions.remove_group(group_id)
        for session in forgotten:
            broker.observer.on_share_session_evicted(broker.broker_id, *session.key, now)
        dropped = [(key, slot) for key, slot in sorted(self.slots.items()) if key[0] == group_id]
        if dropped:
            _situations.COUNTS["group-deleted-on-leader"] += 1
        for key, slot in dropped:
            self._retire(key, slot, None)
        # A retired leader's zombie, still retrying a write, goes too: its writes have no life left.
        for zombie in self._retired:
            if zombie.group_id == group_id:
                self._drop(zombie)
        self._prune_retired()
        if forgotten or dropped:
            # the monitors learn that this broker's leaders of the group are gone, with what they held
            broker.observer.on_event("share.group_deleted", now, broker=broker.broker_id, group=group_id,
                                     sessions=len(forgotten), share_partitions=len(dropped))
            if broker.trace is not None:
                broker.trace.record(now, broker.node, "share.group_deleted", group=group_id,
                                    sessions=len(forgotten), share_partitions=len(dropped))

    def _retire(self, key: tuple[str, str, int], slot: SharePartitionSlot, leader: LeaderIdAndEpoch | None) -> None:
        """The slot stops serving. ``leader`` None: its group was deleted, and the slot is dropped
        outright: not a zombie, since a write of it (a retry, a re-issue) landing after the group is
        created again would be fenced by its higher state epoch (SC-5), but need not be sent at all."""
        self._unlist(key, slot)
        if slot.lock_timer is not None:
            slot.lock_timer.cancel()
        self._prune_retired()
        if leader is None:
            self._drop(slot)
        elif slot.sp.pending_write_ids():
            self._retired.append(slot)
        self._answer_parked(slot, leader)

    def _prune_retired(self) -> None:
        """Forget retired slots that have nothing left to do."""
        self._retired = [r for r in self._retired if not r.dead and (
            r.sp.pending_write_ids() or (r.orphan and r.sp.next_lock_deadline_ms() is not None))]

    def _unlist(self, key: tuple[str, str, int], slot: SharePartitionSlot) -> None:
        """``slot`` leaves the cache: no request reaches it again, and it stops serving."""
        del self.slots[key]
        siblings = self._by_partition.get((slot.topic, slot.partition), [])
        if slot in siblings:
            siblings.remove(slot)
        slot.serving = False

    def _answer_parked(self, slot: SharePartitionSlot, leader: LeaderIdAndEpoch | None) -> None:
        """The fetches waiting on ``slot`` are answered now (with the new leader, if it moved)."""
        parked, slot.parked = slot.parked, []
        for call in parked:
            if call.done:
                continue
            if leader is not None:
                for part in call.parts:
                    if part.slot is slot:
                        part.error = Errors.NOT_LEADER_OR_FOLLOWER
                        part.leader = leader
            self._respond(call)

    def _drop(self, slot: SharePartitionSlot) -> None:
        """Nothing of ``slot`` acts again, not even on its writes' answers; the acknowledgements
        waiting on them fail now, as Kafka answers one for a share-partition it does not hold."""
        slot.dead = True
        if slot.lock_timer is not None:
            slot.lock_timer.cancel()
        waiters, slot.waiters = slot.waiters, {}
        for call, part in waiters.values():
            part.ack_error = Errors.UNKNOWN_TOPIC_OR_PARTITION
            call.waiting -= 1
            self._maybe_finish(call)

    def crash(self) -> None:
        """Everything in memory is gone; timers stop; answers in flight are never sent."""
        for slot in [*self.slots.values(), *self._retired]:
            slot.dead = True
            slot.serving = False
            if slot.lock_timer is not None:
                slot.lock_timer.cancel()
            for call in slot.parked:
                if call.watched and not call.done:
                    self._purgatory(call, ())
                call.done = True
                if call.timer is not None:
                    call.timer.cancel()
        self.slots.clear()
        self._by_partition.clear()
        self._retired.clear()
        self._connection_groups.clear()
