"""Checks of the share-partition leader against the ghost ledger (SP-1, SP-9, SP-11, SP-13, CL-1).

Each check reads the facts the ``Ledger`` holds from before the step it
judges (the ledger comes after the checks in the fan-out) and costs what the
step touched: the ranges of one acquisition or one accepted write.

* ``RecordTransitionMonitor`` (record-state-transition, SP-1): a write the
  share coordinator accepts never persists ACQUIRED and never moves a durably
  terminal offset back to AVAILABLE (unless it carries a lower delivery count:
  a late retry of an older write, which the SC-4 merge discards); no offset
  that is durably terminal is acquired.
* ``AckAfterDurableWriteMonitor`` (ack-after-durable-write, SP-9): a leader
  takes a write as done (and confirms the acknowledgements it carries) only
  once a share coordinator accepted that very write.
* ``DurableCountMonitor`` (counts-not-below-durable, SP-11): a delivery's count
  is above the highest count the share coordinator holds for its offsets.
* ``AbortedDeliveryMonitor`` (no-aborted-delivery, SP-13): a read_committed
  group is never delivered an offset of an aborted transaction.
* ``ShareSessionMonitor`` (share-session-epoch, CL-1): a broker's session
  cache accepts epoch 0 (open), -1 (close, of an open session), or exactly the
  next epoch of the open session; a session the broker evicted, or lost in a
  crash, is not open.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from invariants.intervals import IntervalSet
from invariants.ledger import Ledger, ack_runs
from invariants.sink import Monitor, ViolationSink
from model.core.share_session import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from model.core.share_state import PERSISTED_STATES, RecordState, SharePartitionKey

if TYPE_CHECKING:
    from model.core.log import PartitionLog
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import WriteShareGroupStateRequest


def _first_acquired_in(offsets: IntervalSet, acquired: list[AcquiredRecords]) -> tuple[int, int, int] | None:
    """The first acquired sub-range that lies in ``offsets``, with its delivery count."""
    for a in acquired:
        first, last, count = a.first_offset, a.last_offset, a.delivery_count
        hit = offsets.first_overlap(first, last)
        if hit is not None:
            return hit[0], hit[1], count
    return None


class LedgerMonitor(Monitor):
    """A monitor that judges against the run's ``Ledger``."""

    def __init__(self, sink: ViolationSink, ledger: Ledger) -> None:
        super().__init__(sink)
        self.ledger = ledger


class RecordTransitionMonitor(LedgerMonitor):
    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        key = request.key
        for batch in request.state_batches:
            if batch.delivery_state not in PERSISTED_STATES:
                self.sink.report("record-state-transition", now_ms, event="write accepted",
                                 message=f"{key}: offsets {batch.first_offset}-{batch.last_offset} persisted as "
                                 f"{RecordState(batch.delivery_state).name}, which is never persisted",
                                 key=str(key), first=batch.first_offset, last=batch.last_offset,
                                 state=int(batch.delivery_state), leader_epoch=request.leader_epoch)
                return
        durable = self.ledger.durable.get(key)
        if durable is None or request.state_epoch != durable.state_epoch:
            return
        for batch in request.state_batches:
            if batch.delivery_state != RecordState.AVAILABLE:
                continue
            archiving = durable.archiving
            for first, last, _ in archiving.overlapping(batch.first_offset, batch.last_offset) if archiving else ():
                # KIP-1191: ARCHIVING goes only to ARCHIVED (trunk's initiateDLQAndArchive).
                stored = max((count for _, _, count in durable.counts.overlapping(first, last)), default=0)
                if batch.delivery_count >= stored:
                    self.sink.report("record-state-transition", now_ms, event="write accepted",
                                     message=f"{key}: durably ARCHIVING offsets {max(first, batch.first_offset)}-"
                                     f"{min(last, batch.last_offset)} written back to AVAILABLE", key=str(key),
                                     first=first, last=last, delivery_count=batch.delivery_count,
                                     leader_epoch=request.leader_epoch)
                    return
            hit = durable.terminal.first_overlap(batch.first_offset, batch.last_offset)
            if hit is None:
                continue
            stored = max((count for _, _, count in durable.counts.overlapping(*hit)), default=0)
            if batch.delivery_count >= stored:
                self.sink.report("record-state-transition", now_ms, event="write accepted",
                                 message=f"{key}: durably terminal offsets {hit[0]}-{hit[1]} written back to "
                                 f"AVAILABLE (delivery count {batch.delivery_count})", key=str(key),
                                 first=hit[0], last=hit[1], delivery_count=batch.delivery_count,
                                 durable_count=stored, leader_epoch=request.leader_epoch)
                return

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        durable = self.ledger.durable.get(key)
        hit = None if durable is None else _first_acquired_in(durable.terminal, acquired)
        if hit is not None:
            first, last, count = hit
            self.sink.report("record-state-transition", now_ms, event=f"acquire {member_id}",
                             message=f"{key}: durably terminal offsets {first}-{last} acquired by {member_id} "
                             f"(delivery count {count})", key=str(key), first=first, last=last, member=member_id,
                             delivery_count=count, leader_epoch=leader_epoch)
            return
        if durable is not None and durable.archiving:
            for a in acquired:
                for first, last, _ in durable.archiving.overlapping(a.first_offset, a.last_offset):
                    self.sink.report("record-state-transition", now_ms, event=f"acquire {member_id}",
                                     message=f"{key}: durably ARCHIVING offsets {first}-{last} (bound for the DLQ) "
                                     f"acquired by {member_id}", key=str(key), first=first, last=last,
                                     member=member_id, delivery_count=a.delivery_count, leader_epoch=leader_epoch)
                    return


class AckAfterDurableWriteMonitor(LedgerMonitor):
    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        if not self.ledger.was_accepted(request):
            key = request.key
            self.sink.report("ack-after-durable-write", now_ms, event="write answered",
                             message=f"{key}: the leader took a write (leader epoch {request.leader_epoch}, "
                             f"{len(request.state_batches)} batch(es)) as durable before a share coordinator "
                             f"accepted it", key=str(key), leader_epoch=request.leader_epoch,
                             state_epoch=request.state_epoch, start_offset=request.start_offset,
                             batches=len(request.state_batches))


class DurableCountMonitor(LedgerMonitor):
    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        durable = self.ledger.durable.get(key)
        if durable is None or not len(durable.counts):
            return
        for a in acquired:
            first, last, count = a.first_offset, a.last_offset, a.delivery_count
            for lo, hi, stored in durable.counts.overlapping(first, last):
                if count <= stored:
                    self.sink.report("counts-not-below-durable", now_ms, event=f"acquire {member_id}",
                                     message=f"{key}: offsets {lo}-{hi} delivered with count {count}, but their "
                                     f"durable delivery count is already {stored}", key=str(key), first=lo,
                                     last=hi, member=member_id, delivery_count=count, durable_count=stored,
                                     leader_epoch=leader_epoch)
                    return


class AbortedDeliveryMonitor(LedgerMonitor):
    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        ledger = self.ledger
        aborted = ledger.aborted.get((key.topic_id, key.partition))
        if aborted is None or not ledger.read_committed.get(key.group_id, False):
            return
        hit = _first_acquired_in(aborted, acquired)
        if hit is not None:
            first, last, count = hit
            self.sink.report("no-aborted-delivery", now_ms, event=f"acquire {member_id}",
                             message=f"{key}: offsets {first}-{last} of an aborted transaction delivered to "
                             f"{member_id} under read_committed", key=str(key), first=first, last=last,
                             member=member_id, delivery_count=count, leader_epoch=leader_epoch)


class DeadLetterMonitor(LedgerMonitor):
    """KIP-1191, judged from outside (the DLQ partition leader's commits, the share coordinators' writes).

    Trunk promises neither exactly once nor at least once: ``initiateDLQAndArchive`` archives records
    whose enqueue failed (after ``ShareGroupDLQStateManager``'s attempts), and a leader that fails between
    the produce and the phase-2 write leaves them ARCHIVING, so its successor produces them again. What
    holds: a record's ARCHIVED state is made durable over its durable ARCHIVING only after it was committed
    to the DLQ topic or its enqueue was given up (at least once, unless given up), and the DLQ topic holds
    only records that were durably ARCHIVING (no other record), in this life of the state or an earlier
    one (a leader of the life before an admin reset may finish its enqueue after it: ``swarm_config``
    seed 7789094685951172101, one of 100 000 campaign runs, once judged that against the new life)."""

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        durable = self.ledger.durable.get(request.key)
        if durable is None or not durable.archiving or request.state_epoch != durable.state_epoch:
            return
        for batch in request.state_batches:
            if batch.delivery_state != RecordState.ARCHIVED:
                continue
            for first, last, _ in durable.archiving.overlapping(batch.first_offset, batch.last_offset):
                first, last = max(first, batch.first_offset), min(last, batch.last_offset)
                missing = _first_in_neither(first, last, durable.dlq_written, durable.dlq_given_up)
                if missing is not None:
                    self.sink.report("dead-letter-queue", now_ms, event="write accepted",
                                     message=f"{request.key}: offset {missing}, durably ARCHIVING, made ARCHIVED "
                                     "without being written to the DLQ topic (and its enqueue was not given up)",
                                     key=str(request.key), offset=missing, first=first, last=last,
                                     leader_epoch=request.leader_epoch)
                    return

    def on_dlq_committed(self, topic: str, partition: int, first_offset: int, source: tuple[object, int, int],
                         now_ms: int) -> None:
        key, first, last = source
        assert isinstance(key, SharePartitionKey)
        durable = self.ledger.durable.get(key)
        floor = max(durable.trimmed, durable.start) if durable is not None else 0
        first = max(first, floor)
        missing = None
        if durable is None:
            missing = first if first <= last else None
        else:
            missing = _first_in_neither(first, last, durable.dlq_owed, durable.dlq_owed_earlier)
        if missing is not None:
            self.sink.report("dead-letter-queue", now_ms, event=f"DLQ commit {topic}-{partition}",
                             message=f"{key}: offset {missing} written to the DLQ topic {topic} (at "
                             f"{first_offset}) but never durably ARCHIVING", key=str(key), offset=missing,
                             dlq_topic=topic, dlq_partition=partition, dlq_offset=first_offset)


def _first_in_neither(first: int, last: int, a: IntervalSet, b: IntervalSet) -> int | None:
    """The lowest offset of first..last in neither ``a`` nor ``b``."""
    cursor = first
    while cursor <= last:
        m = a.first_missing(cursor, last)
        if m is None:
            return None
        if b.first_missing(m, m) is not None:
            return m
        nxt = b.first_missing(m, last)
        if nxt is None:
            return None
        cursor = nxt
    return None
_GAP = 0  # AcknowledgeType.GAP


class GapAckMonitor(Monitor):
    """gap-only-without-record (SP-3, SP-14): an acknowledgement a leader takes acknowledges GAP only
    offsets the data partition's log holds no record at. Judged from the log itself (the one a leader of
    the share-partition reads, remembered from its steps), not from any leader's or client's bookkeeping:
    a GAP on an offset with a record would archive a record no application ever processed."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._logs: dict[SharePartitionKey, PartitionLog] = {}

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        self._logs[partition.key] = partition.log

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        log = None
        for batch in batches:
            types = batch.acknowledge_types
            if _GAP not in types:
                continue
            if log is None:
                log = self._logs.get(key)
                if log is None:
                    return
            for first, last in ack_runs(batch, lambda t: t == _GAP):
                for span in log.read(first, last + 1, read_committed=False):
                    if span.deliverable:
                        self.sink.report("gap-only-without-record", now_ms, event=f"acknowledge {member_id}",
                                         message=f"{key}: offsets {span.first}-{span.last} acknowledged GAP by "
                                         f"{member_id} but the log holds records there", key=str(key),
                                         first=span.first, last=span.last, member=member_id,
                                         leader_epoch=leader_epoch)
                        return


class ShareSessionMonitor(Monitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        # (broker, group, member) -> the epoch the open session expects next.
        self._expected: dict[tuple[int, str, str], int] = {}

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        session = (broker, group_id, member_id)
        if epoch == INITIAL_EPOCH:
            self._expected[session] = next_epoch(INITIAL_EPOCH)
            return
        expected = self._expected.pop(session, None) if epoch == FINAL_EPOCH else self._expected.get(session)
        if expected is None or (epoch != FINAL_EPOCH and epoch != expected):
            what = "no open session" if expected is None else f"the session expects epoch {expected}"
            self.sink.report("share-session-epoch", now_ms, event=f"share session b{broker} {member_id}",
                             message=f"broker {broker} accepted share-session epoch {epoch} from {member_id} "
                             f"of {group_id}, but {what}", broker=broker, group=group_id, member=member_id,
                             epoch=epoch, expected=expected)
        if epoch != FINAL_EPOCH:
            self._expected[session] = next_epoch(epoch)

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        self._expected.pop((broker, group_id, member_id), None)

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        if kind == "broker.crash":  # its session cache is gone with it
            broker = fields.get("broker")
            for session in [s for s in self._expected if s[0] == broker]:
                del self._expected[session]

