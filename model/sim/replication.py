"""Replicated partition logs: what survives a crash, and when a write is committed.

A ``ReplicatedLog`` stands for every replica of one partition at once (data
topics, ``__share_group_state``, ``__consumer_offsets``). It holds

* the COMMITTED records, which survive any crash (a record is committed once
  the in-sync replicas have it; we never lose a committed record, as Kafka
  with unclean leader election off), and
* the leader's uncommitted tail: appends waiting for replication.

``append(records, on_done)`` commits after a replication delay: a draw of the
link latency round trip to the slowest in-sync follower the leader can reach.
If fewer than ``min_insync_replicas`` replicas (leader included) are in sync and
reachable, it fails at once with NOT_ENOUGH_REPLICAS. Commits happen in append
order. A leader change (``set_leader`` with a new leader or epoch) fails the
callbacks of the uncommitted tail with NOT_LEADER_OR_FOLLOWER: the old leader's
callers never learn the outcome. By default the tail is gone with them. A log
built with ``keep_tail`` (the coordinators' internal topics) does what Kafka's
replicas do instead: the appends the new leader had already fetched (a prefix
of the tail: each append remembers when it reached each follower, the first
half of the round trip it was given) stay in its log ABOVE the high-water mark,
and commit one replication round trip later, when the followers have fetched
them from the new leader; the rest is truncated. A coordinator loading on the
new leader replays them (Kafka's ``CoordinatorLoaderImpl`` reads up to the log
end) and hears of their commit through ``tail_listener``
(``PartitionWriter.Listener.onHighWatermarkUpdated``); if leadership moves again
first, they are in turn kept or truncated by the same rule.

One timer per append, no SimPy process: a commit is a heap entry.

For data partitions ``DataLog`` is the committed state: a ``PartitionLog``
whose log end offset IS the high-water mark (batches enter it only when they
commit, so a lost tail never shows up in it), each offset's produce time and
key (the log cleaner of compacted topics reads them, ``model.sim.log_cleaner``), and
the producer state of idempotence: the base offset of each committed batch by
(producer id, base sequence). Kafka rebuilds that state from the batch headers
in the log, so it survives a crash and every new leader has it.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from typing import Final, NamedTuple

from model.core.errors import Errors
from model.core.log import LogError, PartitionLog
from model.core.message import Message
from model.core.produce_fetch import UNKNOWN_PRODUCE_TIME
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler

# on_done(error, offset): offset is what ``apply`` returned for the records (their
# first log offset unless the log's apply says otherwise); -1 on error.
CommitCallback = Callable[[Errors, int], None]
# Can the leader reach the follower (and back)? Supplied by the cluster (network partitions).
Reachable = Callable[[int, int], bool]


class _Pending:
    """An append waiting for replication; ``after_pending`` may chain onto ``on_done``."""

    __slots__ = ("arrivals", "due_ms", "on_done", "records")

    def __init__(self, due_ms: int, records: Sequence[object], on_done: CommitCallback,
                 arrivals: dict[int, int] | None = None) -> None:
        self.due_ms = due_ms
        self.records = records
        self.on_done = on_done
        # keep_tail logs: replica -> when it has these records (the leader: at once)
        self.arrivals = arrivals


class ReplicatedLog:
    __slots__ = (
        "_apply", "_generation", "_keep", "_keep_tail", "_last_due", "_limbo", "_pending", "_reachable", "_rng",
        "_sample", "_scheduler", "committed", "committed_count", "inherited_appends", "isr", "leader",
        "leader_epoch", "log_start_offset", "min_insync_replicas", "partition", "tail_listener", "topic",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        scheduler: Scheduler,
        streams: RandomStreams,
        latency: Distribution,
        *,
        min_insync_replicas: int = 1,
        keep_committed: bool = True,
        apply: Callable[[Sequence[object]], int] | None = None,
        reachable: Reachable | None = None,
        keep_tail: bool = False,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.min_insync_replicas = min_insync_replicas
        self.leader = -1
        self.leader_epoch = -1
        self.isr: tuple[int, ...] = ()
        # The committed records from ``log_start_offset`` on (kept when a coordinator must replay
        # them); ``committed_count`` is the committed end offset.
        self.committed: list[object] = []
        self.committed_count = 0
        self.log_start_offset = 0
        self._keep = keep_committed
        self._apply = apply
        self._reachable = reachable
        self._scheduler = scheduler
        self._rng = streams.get("replication", topic, partition)
        self._sample = latency.sampler()
        self._pending: deque[_Pending] = deque()
        self._last_due = 0
        self._generation = 0
        self._keep_tail = keep_tail
        # keep_tail: the tail of a leader that lost leadership while no replica was leader yet
        self._limbo: list[_Pending] = []
        # keep_tail: told (error, records) when an inherited append (one a new leader kept from
        # its predecessor's tail) commits or is truncated; the coordinator hosted here sets it.
        self.tail_listener: Callable[[Errors, Sequence[object]], None] | None = None
        self.inherited_appends = 0  # how many appends a new leader kept above its high-water mark

    # -- queries -------------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        """The leader's log end offset: committed records plus the uncommitted tail."""
        return self.committed_count + sum(len(p.records) for p in self._pending)

    @property
    def pending_count(self) -> int:
        """How many appends wait for replication."""
        return len(self._pending)

    def uncommitted(self) -> list[object]:
        """The records of the uncommitted tail, in order."""
        return [r for p in self._pending for r in p.records]

    # -- leadership ------------------------------------------------------------------------

    def set_leader(self, leader: int, leader_epoch: int, isr: tuple[int, ...]) -> None:
        """The controller's decision. A new leader or epoch drops the uncommitted tail."""
        self.isr = isr
        if leader == self.leader and leader_epoch == self.leader_epoch:
            return
        self.leader = leader
        self.leader_epoch = leader_epoch
        self._generation += 1
        self._last_due = 0
        lost, self._pending = self._pending, deque()
        for p in lost:
            p.on_done(Errors.NOT_LEADER_OR_FOLLOWER, -1)
        if self._keep_tail:
            self._inherit([*self._limbo, *lost], leader)

    def _inherit(self, tail: list[_Pending], leader: int) -> None:
        """What the new ``leader`` keeps of the old tail: the appends it had fetched, in order, up to
        the first it had not (a follower fetches in log order; Kafka truncates the rest when the
        follower becomes leader, KIP-101). They stay above its high-water mark and commit when the
        followers have fetched them from it: one round trip to the slowest reachable in-sync follower
        (Kafka's HWM does not wait for min.insync.replicas)."""
        if leader < 0:
            self._limbo = tail  # no leader yet: whoever is elected next decides
            return
        self._limbo = []
        now = self._scheduler._now
        kept: list[_Pending] = []
        for p in tail:
            arrived = None if p.arrivals is None else p.arrivals.get(leader)
            if arrived is None or arrived > now:
                break
            kept.append(p)
        for p in kept:
            self.inherited_appends += 1
            self._append(p.records, partial(self._inherited_done, p.records), minimum=False, fetched=p.arrivals)

    def _inherited_done(self, records: Sequence[object], error: Errors, offset: int) -> None:
        listener = self.tail_listener
        if listener is not None:
            listener(error, records)

    def after_pending(self, callback: Callable[[Errors], None]) -> None:
        """Call ``callback(error)`` once everything appended so far is committed (NONE) or lost; at once
        if nothing is waiting. Kafka's coordinators answer a request that wrote nothing this way, so that
        no client hears of state that a failover could still undo."""
        pending = self._pending
        if not pending:
            callback(Errors.NONE)
            return
        last = pending[-1]
        done = last.on_done

        def then(error: Errors, offset: int) -> None:
            done(error, offset)
            callback(error)

        last.on_done = then

    def delete_records(self, offset: int) -> list[object]:
        """``deleteRecords``: move the log start offset to ``offset`` (within the committed records)
        and return the records dropped. Every replica drops them: they are gone for good."""
        if not self.log_start_offset <= offset <= self.committed_count:
            raise ValueError(f"delete_records({offset}): must be within [{self.log_start_offset}, "
                             f"{self.committed_count}], the committed records")
        dropped = self.committed[: offset - self.log_start_offset]
        del self.committed[: offset - self.log_start_offset]
        self.log_start_offset = offset
        return dropped

    # -- writes --------------------------------------------------------------------------------

    def writable(self) -> Errors:
        """Whether ``append`` would accept records now (NONE), else its error."""
        leader = self.leader
        if leader < 0:
            return Errors.NOT_LEADER_OR_FOLLOWER
        reachable = self._reachable
        in_sync = 1
        for follower in self.isr:
            if follower != leader and (reachable is None or reachable(leader, follower)):
                in_sync += 1
        return Errors.NONE if in_sync >= self.min_insync_replicas else Errors.NOT_ENOUGH_REPLICAS

    def append(self, records: Sequence[object], on_done: CommitCallback) -> Errors:
        """Replicate ``records`` (the leader's append). Returns NONE if accepted (``on_done``
        runs at commit or loss), else the error (``on_done`` never runs)."""
        if self.leader < 0:
            return Errors.NOT_LEADER_OR_FOLLOWER
        return self._append(records, on_done)

    def _append(self, records: Sequence[object], on_done: CommitCallback, *, minimum: bool = True,
                fetched: dict[int, int] | None = None) -> Errors:
        """``append`` by the leader; ``minimum=False`` (an inherited append) ignores min.insync.replicas;
        ``fetched``: when each replica already had these records from an earlier leader."""
        leader = self.leader
        rng, sample, reachable = self._rng, self._sample, self._reachable
        scheduler = self._scheduler
        now = scheduler._now
        arrivals = {leader: now} if self._keep_tail else None
        in_sync = 1
        delay = 0
        for follower in self.isr:
            if follower == leader or (reachable is not None and not reachable(leader, follower)):
                continue
            in_sync += 1
            there = sample(rng)
            rtt = there + sample(rng)
            if arrivals is not None:
                earlier = None if fetched is None else fetched.get(follower)
                arrivals[follower] = now + there if earlier is None else min(earlier, now + there)
            if rtt > delay:
                delay = rtt
        if minimum and in_sync < self.min_insync_replicas:
            return Errors.NOT_ENOUGH_REPLICAS
        due = now + delay
        if due < self._last_due:
            due = self._last_due  # commits in append order
        self._last_due = due
        self._pending.append(_Pending(due, records, on_done, arrivals))
        scheduler.post_at(due, self._commit_due, self._generation)
        return Errors.NONE

    def _commit_due(self, generation: int) -> None:
        if generation != self._generation:
            return  # the tail it belonged to was dropped
        now = self._scheduler._now
        pending = self._pending
        while pending and pending[0].due_ms <= now:
            p = pending.popleft()
            offset = self._commit(p.records)
            p.on_done(Errors.NONE, offset)

    def _commit(self, records: Sequence[object]) -> int:
        offset = self.committed_count
        if self._apply is not None:
            offset = self._apply(records)
        if self._keep:
            self.committed.extend(records)
        self.committed_count += len(records)
        return offset


# -- data partitions --------------------------------------------------------------------------


class ProduceBatch(Message):
    """A producer's batch as the data log stores it (one per Produce: a plain compiled class)."""

    FIELDS = ("records", "producer_id", "transactional", "produce_time_ms", "base_sequence", "keys")
    __slots__ = FIELDS

    def __init__(self, records: int, producer_id: int | None, transactional: bool, produce_time_ms: int,
                 base_sequence: int = -1, keys: tuple[int, ...] = ()) -> None:
        self.records: Final = records
        self.producer_id: Final = producer_id
        self.transactional: Final = transactional
        self.produce_time_ms: Final = produce_time_ms
        self.base_sequence: Final = base_sequence  # -1: not idempotent
        self.keys: Final = keys  # one key per record; (): unkeyed


class TxnMarker(NamedTuple):
    producer_id: int
    commit: bool


NO_KEY = -1  # ``DataLog.keys`` of an unkeyed record or a marker

# What ``DataLog.apply`` returns when a batch cannot enter the log (e.g. a marker with
# no open transaction): the caller answers INVALID_REQUEST.
REJECTED = -2


class DataLog:
    """The committed data of one topic partition: offsets (``PartitionLog``) and produce times."""

    __slots__ = ("keys", "log", "produce_times", "sequences")

    def __init__(self) -> None:
        self.log = PartitionLog()
        # One int per offset (markers: UNKNOWN_PRODUCE_TIME), for end-to-end latency.
        self.produce_times = array("q")
        # (producer id, base sequence) -> base offset of every committed idempotent batch.
        self.sequences: dict[tuple[int, int], int] = {}
        # One key per offset (NO_KEY: unkeyed or a marker) once a keyed batch has come, for the
        # log cleaner of compacted topics; None while every batch was unkeyed (no memory spent).
        self.keys: array[int] | None = None

    def committed_base_offset(self, producer_id: int | None, base_sequence: int) -> int | None:
        """The base offset of the committed batch (producer_id, base_sequence), if there is one."""
        if producer_id is None or base_sequence < 0:
            return None
        return self.sequences.get((producer_id, base_sequence))

    def apply(self, entries: Sequence[object]) -> int:
        """Commit batches and markers: append them and move the high-water mark (committed
        = HWM). Returns the first offset written, or REJECTED."""
        log = self.log
        first = log.log_end_offset
        try:
            for entry in entries:
                if isinstance(entry, ProduceBatch):
                    if entry.producer_id is not None and entry.base_sequence >= 0:
                        self.sequences[(entry.producer_id, entry.base_sequence)] = log.log_end_offset
                    log.append(entry.records, producer_id=entry.producer_id, transactional=entry.transactional)
                    self._append_keys(entry.keys, entry.records)
                    self.produce_times.extend([entry.produce_time_ms] * entry.records)
                elif isinstance(entry, TxnMarker):
                    log.end_transaction(entry.producer_id, commit=entry.commit)
                    self._append_keys((), 1)
                    self.produce_times.append(UNKNOWN_PRODUCE_TIME)
                else:
                    raise TypeError(f"not a data-log entry: {entry!r}")
        except LogError:
            return REJECTED
        finally:
            log.advance_high_watermark()
        return first

    def _append_keys(self, keys: Sequence[int], count: int) -> None:
        """Keys of the ``count`` offsets just appended (before ``produce_times`` grows)."""
        if self.keys is None:
            if not keys:
                return
            self.keys = array("q", [NO_KEY]) * len(self.produce_times)
        self.keys.extend(keys if keys else [NO_KEY] * count)

    def produce_times_of(self, ranges: Sequence[tuple[int, int]]) -> tuple[int, ...]:
        """The produce times of inclusive offset ranges, flattened (model.core.produce_fetch)."""
        times = self.produce_times
        base = 0  # offsets start at 0: retention keeps the array whole
        out: list[int] = []
        for first, last in ranges:
            out.extend(times[first - base:last - base + 1])
        return tuple(out)
