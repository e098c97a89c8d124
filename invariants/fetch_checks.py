"""The share-fetch purgatory: a waiting ShareFetch is completed once it has records to acquire.

Kafka parks a ShareFetch that cannot complete at once (fewer acquirable records than its MinBytes) in the
share-fetch purgatory (``DelayedShareFetch``), watched on its share-partitions, and completes it as soon
as one of them can give it records: SharePartitionManager checks the purgatory after new data, after an
acknowledgement or a release is written, and after an acquisition lock times out (KAFKA-17400,
apache/kafka#16969). Waiting out MaxWaitMs with records to hand is a stall no safety invariant sees.

``PurgatoryWakeupMonitor`` takes its expectation from outside the purgatory: which fetch waits, on which
share-partitions and with which MinBytes (the request, at the broker's boundary: ``on_share_fetch_waiting``,
again when it is answered); what the share-partition can give (its AVAILABLE offsets not in a write, and
the offsets past its SPEO up to the data log's high-water mark or last stable offset and the configured
in-flight bound, SP-8, counted here, not by the leader's ``readable_count``). It never asks the purgatory
which fetch it holds or which it woke.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from invariants.sink import Monitor, ViolationSink
from model.core.share_state import RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.share_partition import SharePartition

_NEVER: Final = 2**62
WAKE_BOUND_MS: Final = 20
"""How long a waiting ShareFetch may stay in the purgatory after a change of one of its share-partitions
left it records to acquire (at least its MinBytes). Kafka completes it in the same call (the change's
``checkAndComplete``), and so does the model: the bound only covers a handler step
(``sharesim.handler.step.max.ms``, at most 20 in the library) of a fetch holding the lock at that moment."""


class _Waiting:
    __slots__ = ("broker", "fetch_id", "min_bytes", "partitions", "since_ms")

    def __init__(self, broker: int, fetch_id: int, partitions: tuple[SharePartition, ...], min_bytes: int) -> None:
        self.broker = broker
        self.fetch_id = fetch_id
        self.partitions = partitions
        self.min_bytes = min_bytes
        self.since_ms: int | None = None  # when a change left it records to acquire


class PurgatoryWakeupMonitor(Monitor):
    """fetch-woken-when-acquirable (SP-2, SP-4): a ShareFetch waiting in a leader's purgatory is answered
    at most ``WAKE_BOUND_MS`` after a change of one of its share-partitions (an acknowledgement, release or
    lock timeout made durable, the state read, the log start moved) made more records acquirable there and
    left the fetch at least its MinBytes of acquirable records over its share-partitions, with none of
    their fetch locks held (a fetch holding one acquires them itself, then hands the lock on). Judged at
    the fetch's answer and at any share-partition's step past the bound; a fetch gone with its broker's
    crash is forgotten."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._waiting: dict[tuple[int, int], _Waiting] = {}
        self._by_key: dict[SharePartitionKey, list[_Waiting]] = {}
        # Each share-partition at its last step: (the leader, its AVAILABLE offsets not in a write, SPSO, SPEO).
        self._last: dict[SharePartitionKey, tuple[SharePartition, int, int, int]] = {}
        self._next_ms = _NEVER  # the earliest deadline of a fetch due

    def on_share_fetch_waiting(self, broker: int, fetch_id: int, partitions: tuple[SharePartition, ...],
                               min_bytes: int, now_ms: int) -> None:
        ident = (broker, fetch_id)
        if partitions:
            if ident not in self._waiting:
                waiting = self._waiting[ident] = _Waiting(broker, fetch_id, partitions, min_bytes)
                for partition in partitions:
                    self._by_key.setdefault(partition.key, []).append(waiting)
            return
        gone = self._waiting.pop(ident, None)
        if gone is None:
            return
        for partition in gone.partitions:
            watchers = self._by_key.get(partition.key)
            if watchers is not None and gone in watchers:
                watchers.remove(gone)
                if not watchers:
                    del self._by_key[partition.key]
        self._judge(gone, now_ms)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        before = self._last.get(key)
        available = _available(partition)
        self._last[key] = (partition, available, partition.spso, partition.speo)
        watchers = self._by_key.get(key)
        if watchers:
            # What the share-partition could give before this step, under today's bound: more now means
            # this change made records acquirable (new data alone wakes through its own path).
            room = partition.max_record_locks
            was = 0
            if before is not None and before[0] is partition:
                was = before[1] + max(0, min(bound, before[2] + room) - before[3])
            grew = partition.ready and available + max(0, min(bound, partition.spso + room) - partition.speo) > was
            for waiting in watchers:
                if partition not in waiting.partitions:
                    continue  # a fetch waiting on an earlier leader of the key
                if waiting.since_ms is not None:
                    if _acquirable(waiting) < waiting.min_bytes:
                        waiting.since_ms = None  # another fetch took them: nothing left to wake it for
                elif (grew and all(p.fetch_lock is None for p in waiting.partitions)
                      and _acquirable(waiting) >= waiting.min_bytes):
                    waiting.since_ms = now_ms
                    self._next_ms = min(self._next_ms, now_ms + WAKE_BOUND_MS + 1)
        if now_ms >= self._next_ms:
            self._sweep(now_ms)

    def _sweep(self, now_ms: int) -> None:
        next_ms = _NEVER
        for ident in sorted(self._waiting):
            waiting = self._waiting[ident]
            if waiting.since_ms is None:
                continue
            if self._judge(waiting, now_ms):
                waiting.since_ms = None  # reported once
            else:
                next_ms = min(next_ms, waiting.since_ms + WAKE_BOUND_MS + 1)
        self._next_ms = next_ms

    def _judge(self, waiting: _Waiting, now_ms: int) -> bool:
        since = waiting.since_ms
        if since is None or now_ms - since <= WAKE_BOUND_MS:
            return False
        keys = ", ".join(str(p.key) for p in waiting.partitions)
        self.sink.report("fetch-woken-when-acquirable", now_ms, event=f"share fetch {waiting.fetch_id}",
                         message=f"broker {waiting.broker}'s ShareFetch {waiting.fetch_id} waited in the purgatory "
                         f"{now_ms - since} ms after a change at {since} left it {_acquirable(waiting)} records to "
                         f"acquire on {keys} (MinBytes {waiting.min_bytes})",
                         broker=waiting.broker, fetch_id=waiting.fetch_id, since_ms=since, keys=keys,
                         min_bytes=waiting.min_bytes)
        return True


def _available(partition: SharePartition) -> int:
    """The offsets of the window a fetch could acquire again: AVAILABLE, no write under way."""
    return sum(b.last_offset - b.first_offset + 1 for b in partition.batches()
               if b.state == RecordState.AVAILABLE and not b.in_transition)


def _acquirable(waiting: _Waiting) -> int:
    """What the fetch's share-partitions could give it now: their AVAILABLE offsets, and the new ones past
    each SPEO up to the data log's bound and the in-flight bound (SP-7, SP-8)."""
    total = 0
    for partition in waiting.partitions:
        if not partition.ready:
            continue
        bound = partition.log.bound(partition.group.read_committed)
        upper = min(bound, partition.spso + partition.max_record_locks)
        total += _available(partition) + max(0, upper - partition.speo)
    return total
