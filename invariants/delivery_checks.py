"""Delivery of every record produced after a group started consuming (E-1, SP-10, KIP-932's
``share.auto.offset.reset``), judged from the ghost facts: the records producers saw committed, the
records clients were handed, and the data log itself.

``SubscribedDeliveryMonitor`` checks, at the end of a run, each share-partition's latest life (since its
state was created, or re-initialized by an admin reset, SP-12): every committed record from the
group's start there up to the SPSO its leader last reached was handed to some member of the group at
least once, unless there is no record to hand at that offset any more (removed by the cleaner, a
control marker, or an aborted transaction under read_committed) or it fell below the log start offset
(retention, DeleteRecords). The group's start is the offset ``share.auto.offset.reset`` names when its
leaders first serve it: ``earliest``: the beginning of the log; ``latest``: the end of what producers
had seen committed by then (a conservative cut: the leader's own choice is at or below it); a state
epoch an admin reset initialized (AlterShareGroupOffsets): the start offset its InitializeShareGroupState
named, as the share coordinator accepted it.

E-1 (``eventual-resolution``) then makes this liveness: once faults stop every offset falls below the
SPSO, so every such record is delivered. Together they see what E-1 alone, counted from a leader's
SPSO, cannot: records a wrong start offset or a wrong SPSO jump skipped without ever handing them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from invariants.intervals import IntervalSet
from invariants.ledger import topic_id_of
from invariants.sink import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.share_state import (
    UNKNOWN_OFFSET,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    SharePartitionKey,
)

if TYPE_CHECKING:
    from model.core.share_partition import AcquiredRecords, SharePartition


class SubscribedDeliveryMonitor(Monitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._committed: dict[tuple[str, int], IntervalSet] = {}  # (topic id, partition) -> record offsets
        self._by_name: dict[tuple[str, int], IntervalSet] = {}  # the same sets by (topic name, partition)
        self._delivered: dict[SharePartitionKey, IntervalSet] = {}
        self._partitions: dict[SharePartitionKey, SharePartition] = {}
        self._cut: dict[SharePartitionKey, int] = {}
        self._state_epoch: dict[SharePartitionKey, int] = {}
        self._init_start: dict[tuple[SharePartitionKey, int], int] = {}  # (key, state epoch) -> its start offset
        self._life_epoch: dict[SharePartitionKey, int] = {}  # the state epoch the key's latest life began at

    def on_records_committed(self, topic: str, partition: int, first_offset: int, count: int,
                             producer_id: int | None, transactional: bool, now_ms: int) -> None:
        committed = self._by_name.get((topic, partition))
        if committed is None:
            committed = self._by_name[(topic, partition)] = self._committed[(topic_id_of(topic), partition)] = (
                IntervalSet())
        committed.add(first_offset, first_offset + count - 1)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        delivered = self._delivered.get(key)
        if delivered is None:
            delivered = self._delivered[key] = IntervalSet()
        for a in acquired:
            delivered.add(a.first_offset, a.last_offset)

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        # An initialize a share coordinator accepted names the start offset of that state epoch: -1 (the
        # group's reset policy decides) or, for an admin reset (AlterShareGroupOffsets), the offset it chose.
        if (isinstance(request, InitializeShareGroupStateRequest)
                and isinstance(response, InitializeShareGroupStateResponse) and response.error_code == Errors.NONE):
            self._init_start[(request.key, request.state_epoch)] = request.start_offset

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        # A new life (a group deleted and created again): it reads from its reset offset again.
        self._cut.pop(key, None)
        self._state_epoch.pop(key, None)
        self._delivered.pop(key, None)
        self._life_epoch[key] = state_epoch  # a leader still serving an earlier state epoch serves the old life

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        epoch = self._state_epoch.get(key)
        state_epoch = partition.state_epoch
        if epoch == state_epoch and self._partitions.get(key) is partition:
            return  # the common step: nothing new
        if state_epoch < self._life_epoch.get(key, -1):
            return  # a leader of an earlier life
        self._partitions[key] = partition
        if not partition.ready or epoch == state_epoch:
            return
        self._state_epoch[key] = partition.state_epoch
        start = self._init_start.get((key, partition.state_epoch), UNKNOWN_OFFSET)
        if start != UNKNOWN_OFFSET:
            # SP-12: an admin reset initialized this state epoch at an offset of its choice.
            self._cut[key] = start
        elif epoch is not None:
            # A new state epoch whose initialize this run did not see answered (a lost answer): its leader's start.
            self._cut[key] = partition.spso
        elif partition.group.auto_offset_reset == "earliest":
            self._cut[key] = 0
        else:
            committed = self._committed.get((key.topic_id, key.partition))
            ranges = list(committed) if committed is not None else []
            self._cut[key] = ranges[-1][1] + 1 if ranges else 0

    def finish(self, now_ms: int) -> None:
        for key in sorted(self._cut):
            partition = self._partitions[key]
            committed = self._committed.get((key.topic_id, key.partition))
            if committed is None:
                continue
            log = partition.log
            low = max(self._cut[key], log.log_start_offset)
            high = partition.spso - 1
            if high < low:
                continue
            delivered = self._delivered.get(key) or IntervalSet()
            missing = self._first_missed(committed, delivered, low, high, partition)
            if missing is not None:
                self.sink.report("subscribed-records-delivered", now_ms, event="end of run",
                                 message=f"{key}: offset {missing} holds a record committed after the group "
                                 f"started at offset {self._cut[key]}, its SPSO is past it ({partition.spso}), "
                                 "yet no member was ever handed it", key=str(key), offset=missing,
                                 start=self._cut[key], spso=partition.spso)
                return

    @staticmethod
    def _first_missed(committed: IntervalSet, delivered: IntervalSet, low: int, high: int,
                      partition: SharePartition) -> int | None:
        read_committed = partition.group.read_committed
        for first, last in committed:
            first, last = max(first, low), min(last, high)
            for missing, end in delivered.missing_runs(first, last):
                for span in partition.log.read(missing, end + 1, read_committed=read_committed):
                    if span.deliverable:
                        return span.first
        return None
