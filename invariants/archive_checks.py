"""Archiving only for a reason the protocol gives (SP-1, SP-3, SP-5, SP-13, SP-14; KIP-1191's ARCHIVING).

``ArchiveReasonMonitor`` judges every WriteShareGroupState a share coordinator accepted: each offset it
makes durably ARCHIVED (or ARCHIVING, the dead-letter queue's first phase) must have a reason the
ghost facts show, never one a leader states about itself:

* the delivery limit: a client was handed the offset with a delivery count at or above the group's
  ``group.share.delivery.count.limit`` (``on_acquire``), or a coordinator accepted such a count for it
  earlier (a failover may lose the increment in flight, SP-11);
* the client's REJECT, or its GAP, which a leader took (``on_acknowledge``);
* no record at the offset: the data log holds a compacted gap, a control marker, or (read_committed) a
  record of an aborted transaction there (SP-13, SP-14);
* the offset is below the data partition's log start offset (retention, DeleteRecords).

An offset justified once stays justified in that life of the share-partition (writes carry terminal
batches again), so each offset is judged about once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from invariants.intervals import IntervalSet, RangeMap
from invariants.ledger import Ledger
from invariants.sink import Monitor, ViolationSink
from model.core.share_state import UNKNOWN_OFFSET, AcknowledgeType, RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import WriteShareGroupStateRequest

_ARCHIVED_STATES: Final = frozenset((int(RecordState.ARCHIVED), int(RecordState.ARCHIVING)))
_ENDING: Final = frozenset((int(AcknowledgeType.REJECT), int(AcknowledgeType.GAP)))
_TRIM_EVERY: Final = 1_024


class ArchiveReasonMonitor(Monitor):
    def __init__(self, sink: ViolationSink, ledger: Ledger) -> None:
        super().__init__(sink)
        self.ledger = ledger
        self._partitions: dict[SharePartitionKey, SharePartition] = {}
        self._limit: dict[str, int] = {}  # group -> the lowest delivery-count limit its leaders applied
        self._delivered: dict[SharePartitionKey, RangeMap[int]] = {}  # offset -> highest count handed out
        self._ended: dict[SharePartitionKey, IntervalSet] = {}  # offsets a leader took REJECT / GAP for
        self._justified: dict[SharePartitionKey, IntervalSet] = {}
        self._trimmed: dict[SharePartitionKey, int] = {}

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        if self._partitions.get(key) is not partition:  # a new leader (its config is read once)
            self._partitions[key] = partition
            limit = partition.delivery_count_limit
            group = key.group_id
            if limit < self._limit.get(group, limit + 1):
                self._limit[group] = limit
        spso = partition.spso
        if spso >= self._trimmed.get(key, 0) + _TRIM_EVERY:
            self._trimmed[key] = spso
            for facts in (self._delivered.get(key), self._ended.get(key), self._justified.get(key)):
                if facts is not None:
                    facts.discard_below(spso)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        for facts in (self._delivered, self._ended, self._justified, self._trimmed):
            facts.pop(key, None)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        delivered = self._delivered.get(key)
        if delivered is None:
            delivered = self._delivered[key] = RangeMap()
        for a in acquired:
            count = a.delivery_count
            at = a.first_offset
            for lo, hi, before in delivered.overlapping(a.first_offset, a.last_offset):
                if at < lo:
                    delivered.assign(at, lo - 1, count)
                if before < count:  # never lower: SP-11 lets a failover lose an increment
                    delivered.assign(lo, hi, count)
                at = hi + 1
            if at <= a.last_offset:
                delivered.assign(at, a.last_offset, count)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        for batch in batches:
            types = batch.acknowledge_types
            if len(types) == 1:
                if types[0] in _ENDING:
                    self._ended_of(key).add(batch.first_offset, batch.last_offset)
                continue
            for i, ack_type in enumerate(types):
                if ack_type in _ENDING:
                    offset = batch.first_offset + i
                    self._ended_of(key).add(offset, offset)

    def _ended_of(self, key: SharePartitionKey) -> IntervalSet:
        ended = self._ended.get(key)
        if ended is None:
            ended = self._ended[key] = IntervalSet()
        return ended

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        archived = [b for b in request.state_batches if b.delivery_state in _ARCHIVED_STATES]
        if not archived:
            return
        key = request.key
        justified = self._justified.get(key)
        if justified is None:
            justified = self._justified[key] = IntervalSet()
        start = request.start_offset if request.start_offset != UNKNOWN_OFFSET else -1
        for batch in archived:
            first = max(batch.first_offset, start)
            last = batch.last_offset
            for missing, end in justified.missing_runs(first, last):
                offset = self._unjustified(key, missing, end)
                if offset is not None:
                    self.sink.report("archive-only-for-reason", now_ms, event=f"write {key}",
                                     message=f"{key}: a share coordinator accepted offset {offset} as "
                                     f"{RecordState(batch.delivery_state).name} (delivery count "
                                     f"{batch.delivery_count}), but no client was handed it at the delivery-count "
                                     f"limit ({self._limit.get(key.group_id)}), none rejected it, and the log "
                                     f"holds a record there above its start", key=str(key), offset=offset,
                                     delivery_count=batch.delivery_count, leader_epoch=request.leader_epoch)
                    return
            justified.add(first, last)

    def _unjustified(self, key: SharePartitionKey, first: int, last: int) -> int | None:
        """The lowest offset of first..last with no reason to be archived, or None."""
        partition = self._partitions.get(key)
        if partition is None:
            return None  # no leader step seen: nothing known of its log (cannot happen before a write)
        log = partition.log
        first = max(first, log.log_start_offset)
        if first > last:
            return None
        limit = self._limit.get(key.group_id, 0)
        reasons = IntervalSet()
        delivered = self._delivered.get(key)
        if delivered is not None:
            for lo, hi, count in delivered.overlapping(first, last):
                if count >= limit:
                    reasons.add(lo, hi)
        durable = self.ledger.durable.get(key)
        if durable is not None:
            for lo, hi, count in durable.counts.overlapping(first, last):
                if count >= limit:
                    reasons.add(lo, hi)
        ended = self._ended.get(key)
        if ended is not None:
            at = first
            while at <= last:
                hit = ended.first_overlap(at, last)
                if hit is None:
                    break
                reasons.add(*hit)
                at = hit[1] + 1
        covered = 0
        for span in log.read(first, last + 1, read_committed=partition.group.read_committed):
            covered = span.last + 1
            if not span.deliverable:
                reasons.add(span.first, span.last)
        if covered <= last:
            reasons.add(max(covered, first), last)  # past the log's bound: not a record it can deliver yet
        return reasons.first_missing(first, last)
