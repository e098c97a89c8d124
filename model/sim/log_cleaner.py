"""The log cleaner of compacted topics: it removes superseded records, leaving gaps (SP-14).

Every ``log.cleaner.backoff.ms`` one pass (a re-armed ``Scheduler`` timer, no
SimPy process) cleans each partition of each compacted topic that has a live
leader. On one partition (Kafka's rule):

* the cleanable part ends at the **dirty bound**: the last stable offset (an
  undecided transaction is never cleaned) or the first offset produced less
  than ``log.cleaner.min.compaction.lag.ms`` ago, whichever is lower;
* below it, a record whose key has a later record (below the bound too) is
  removed; the latest record of each key always stays. Offsets keep their
  numbers: a removed record becomes a gap (``PartitionLog.compact``) that the
  share-partition leader archives instead of delivering (SP-14) and that a
  KIP-848 Fetch steps over;
* unkeyed records, transaction markers and records of aborted transactions are
  left alone and are never a key's latest.

A pass is incremental, as Kafka's is: each partition keeps where its last
pass ended (the cleaner-offset checkpoint) and the latest offset of every key
below it (the offset map), so it reads only the offsets that became cleanable
since.

Replication: the committed ``DataLog`` stands for every replica of the
partition (``model.sim.replication``), so a removal is on every replica at
once and survives any leader failover. Kafka's replicas each run their own
cleaner over the same committed records and reach the same result; the model
runs it once, while the partition has a live leader (the leader's cleaner).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from model import situations as _situations
from model.core.produce_fetch import UNKNOWN_PRODUCE_TIME
from model.sim.controller import Controller
from model.sim.replication import NO_KEY, DataLog
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

CLEANER_NODE: Final = "log-cleaner"


def dirty_bound(data: DataLog, start: int, now_ms: int, min_compaction_lag_ms: int) -> int:
    """The end (exclusive) of what may be cleaned: the LSO, or the first offset at or after
    ``start`` produced less than ``min_compaction_lag_ms`` ago."""
    end = data.log.last_stable_offset
    if min_compaction_lag_ms <= 0:
        return end
    newest = now_ms - min_compaction_lag_ms
    times = data.produce_times
    offset = start
    while offset < end and (times[offset] == UNKNOWN_PRODUCE_TIME or times[offset] <= newest):
        offset += 1  # markers carry no time: they never hold the cleaner back
    return offset


class PartitionCleaner:
    """The cleaner state of one partition: its checkpoint and offset map."""

    __slots__ = ("checkpoint", "latest")

    def __init__(self) -> None:
        self.checkpoint = 0  # offsets below it have been read into ``latest``
        self.latest: dict[int, int] = {}  # key -> offset of its latest record below the checkpoint

    def clean(self, data: DataLog, now_ms: int, min_compaction_lag_ms: int = 0) -> list[int]:
        """Read the newly cleanable offsets and remove the records they supersede; returns the
        offsets removed (each one a new gap)."""
        keys = data.keys
        if keys is None:
            return []  # nothing keyed was ever written
        log = data.log
        start = max(self.checkpoint, log.log_start_offset)
        end = dirty_bound(data, start, now_ms, min_compaction_lag_ms)
        if end <= start:
            return []
        latest = self.latest
        superseded: list[int] = []
        for offset in range(start, end):
            key = keys[offset]
            if key == NO_KEY or log.is_aborted(offset):
                continue
            previous = latest.get(key)
            if previous is not None:
                superseded.append(previous)
            latest[key] = offset
        self.checkpoint = end
        # Retention or DeleteRecords may have deleted a superseded record already: not a gap.
        removed = [offset for offset in superseded if offset >= log.log_start_offset]
        log.compact(removed)
        return removed


class LogCleaner:
    """Cleans the compacted topics of a cluster every ``backoff_ms``."""

    def __init__(
        self,
        scheduler: Scheduler,
        controller: Controller,
        topics: Sequence[str],
        *,
        backoff_ms: int,
        min_compaction_lag_ms: int = 0,
        trace: Trace | None = None,
    ) -> None:
        if backoff_ms < 1 or min_compaction_lag_ms < 0:
            raise ValueError(f"log cleaner: backoff_ms = {backoff_ms} must be >= 1 and "
                             f"min_compaction_lag_ms = {min_compaction_lag_ms} >= 0")
        self.scheduler = scheduler
        self.controller = controller
        self.topics = tuple(sorted(topics))
        self.backoff_ms = backoff_ms
        self.min_compaction_lag_ms = min_compaction_lag_ms
        self.trace = trace
        self.records_compacted = 0  # offsets removed, over every pass
        self.partitions: dict[tuple[str, int], PartitionCleaner] = {}
        self._timer: Timer | None = None

    def start(self) -> None:
        if self.topics and self._timer is None:
            self._timer = self.scheduler.timer(self.backoff_ms, self.clean_all)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def clean_all(self) -> None:
        """One pass over every partition of every compacted topic with a live leader."""
        controller = self.controller
        now = self.scheduler.now_ms
        for topic in self.topics:
            for partition in range(controller.partition_count(topic)):
                if controller.partitions[(topic, partition)].leader not in controller.alive:
                    continue  # no leader to run the cleaner: the next pass catches up
                cleaner = self.partitions.get((topic, partition))
                if cleaner is None:
                    cleaner = self.partitions[(topic, partition)] = PartitionCleaner()
                removed = cleaner.clean(controller.data(topic, partition), now, self.min_compaction_lag_ms)
                if removed:
                    self.records_compacted += len(removed)
                    if self.trace is not None:
                        self.trace.record(now, CLEANER_NODE, "log.clean", topic=topic, partition=partition,
                                          removed=len(removed), checkpoint=cleaner.checkpoint)
        if self._timer is not None:
            self._timer.reschedule(self.backoff_ms)


# -- time-based retention (Kafka's LogManager.cleanupLogs) ----------------------------------------------------

RETENTION_NODE: Final = "log-retention"
# Kafka's default log.retention.ms (7 days): a topic retained that long or longer is never checked.
NEVER_RETAINED_MS: Final = 604_800_000


class LogRetention:
    """Deletes old segments of the data topics every ``log.retention.check.interval.ms``.

    Kafka's LogManager runs ``cleanupLogs`` on that interval; on each partition leader
    UnifiedLog.deleteRetentionMsBreachedSegments deletes the oldest segments whose largest timestamp is
    more than ``retention.ms`` old, never the active one, and moves the log start offset to the next
    segment's base offset. The model's segments are fixed runs of ``segment_records`` offsets
    ([k * n, (k + 1) * n)): a segment is closed once the high-water mark is past its end (a later
    record rolled a new one), its largest timestamp is its records' latest produce time (markers
    carry none), and the scan stops at the first segment it keeps (Kafka deletes a prefix). As
    DeleteRecords does, the committed ``DataLog`` stands for every replica, and the share-partition
    leaders on the leader's broker hear of the move (trunk: the fetch path's updateCacheAndOffsets).
    A topic whose retention is the 7-day default is never checked: no run lasts that long.
    """

    def __init__(self, scheduler: Scheduler, controller: Controller, retention_ms: dict[str, int], *,
                 interval_ms: int, segment_records: int, trace: Trace | None = None) -> None:
        if interval_ms < 1 or segment_records < 1 or any(r < 1 for r in retention_ms.values()):
            raise ValueError(f"log retention: interval_ms = {interval_ms}, segment_records = {segment_records} "
                             f"and every retention_ms ({retention_ms}) must be >= 1")
        self.scheduler = scheduler
        self.controller = controller
        self.retention_ms = dict(sorted(retention_ms.items()))
        self.interval_ms = interval_ms
        self.segment_records = segment_records
        self.trace = trace
        self.records_deleted = 0  # offsets below the log start offsets retention moved, over every pass
        self.segments_deleted = 0
        self._timer: Timer | None = None

    def start(self) -> None:
        if self.retention_ms and self._timer is None:
            self._timer = self.scheduler.timer(self.interval_ms, self.check_all)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def check_all(self) -> None:
        """One pass over every partition of every topic with a retention, that has a live leader."""
        controller = self.controller
        now = self.scheduler.now_ms
        for topic, retention_ms in self.retention_ms.items():
            for partition in range(controller.partition_count(topic)):
                leader = controller.partitions[(topic, partition)].leader
                if leader not in controller.alive:
                    continue  # no leader to delete segments: the next pass catches up
                data = controller.data(topic, partition)
                start = data.log.log_start_offset
                end = deletable_end(data, now - retention_ms, self.segment_records)
                if end <= start:
                    continue
                moved = data.log.delete_records(end)
                _situations.COUNTS["log-start-moved-by-retention"] += 1
                self.segments_deleted += moved // self.segment_records - start // self.segment_records
                self.records_deleted += moved - start
                if self.trace is not None:
                    self.trace.record(now, RETENTION_NODE, "log.retention", topic=topic, partition=partition,
                                      log_start_offset=moved, previous=start)
                broker = controller.brokers.get(leader)
                share_leader = getattr(broker, "share_leader", None)
                if share_leader is not None:
                    share_leader.on_log_start_moved(topic, partition, now)
        if self._timer is not None:
            self._timer.reschedule(self.interval_ms)


def deletable_end(data: DataLog, older_than_ms: int, segment_records: int) -> int:
    """The base offset of the first segment retention keeps: the closed segments (of ``segment_records``
    offsets) from the log start whose newest record was produced before ``older_than_ms`` go."""
    log = data.log
    times = data.produce_times
    n = segment_records
    hwm = log.high_watermark
    offset = log.log_start_offset
    while True:
        segment_end = (offset // n + 1) * n
        if segment_end >= hwm:
            return offset  # the active segment (the high-water mark is in it, or at its end) stays
        newest = max((t for t in times[offset:segment_end] if t != UNKNOWN_PRODUCE_TIME), default=None)
        if newest is not None and newest >= older_than_ms:
            return offset
        offset = segment_end
