"""What a share-partition leader does with requests the protocol refuses (issue 25).

``RefusedShareRequestMonitor`` (refused-share-request-changes-nothing, CL-1, CL-2, SP-3): the hostile
client of the ``hostile_share_request`` fault (``model.sim.hostile.HostileShareClient``) sends
ShareFetch and ShareAcknowledge requests that Kafka trunk refuses. The expectation comes from the
protocol's rules, written down by the client for each request before it is sent, not from the leader's
code: a ShareFetch opening a session (epoch 0) with acknowledgements is INVALID_REQUEST; a
ShareAcknowledge with no session SHARE_SESSION_NOT_FOUND; an epoch that is not the session's (a stale
one, -2) INVALID_SHARE_SESSION_EPOCH; acknowledgements of records the member never acquired, or its
batches malformed, are refused for the partition (INVALID_RECORD_STATE, INVALID_REQUEST). And a
refused request changes nothing, which the monitor sees at the leaders' boundary: no acknowledgement
of a hostile member is ever taken into a share-partition's state (``on_acknowledge``), no record is
ever acquired for one (it never asks: its fetches name the partition with no bytes), and no share
session accepts an epoch below -1 (``on_share_session``).
"""

from __future__ import annotations

from typing import Any

from invariants.sink import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords
from model.core.share_state import SharePartitionKey

INVARIANT = "refused-share-request-changes-nothing"
_HOSTILE = "hostile-"  # model.sim.hostile.HOSTILE_MEMBER_PREFIX (invariants import no simulation)


class RefusedShareRequestMonitor(Monitor):
    """Acknowledgements wholly below the data partition's log start offset are the one exception: their
    records are gone, and trunk's SharePartition.acknowledge skips them and answers NONE, a no-op."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        # hostile acknowledgements a leader took, until its next step
        self._pending: dict[SharePartitionKey, list[tuple[str, tuple[AcknowledgementBatch, ...], int, int]]] = {}
        self._skipped: set[str] = set()  # hostile members whose last acknowledgement was wholly below it

    def on_share_partition_step(self, partition: Any, bound: int, now_ms: int) -> None:
        # ``partition``: a SharePartition (Any: the tests give a stand-in, which a compiled build accepts)
        pending = self._pending.pop(partition.key, None) if self._pending else None
        if pending is None:
            return
        gone = partition.log.log_start_offset  # the data log's start: a boundary fact, not the leader's state
        for member_id, batches, leader_epoch, at_ms in pending:
            if all(b.last_offset < gone for b in batches):
                self._skipped.add(member_id)  # the records are gone: skipped, nothing changes
                continue
            self.sink.report(INVARIANT, at_ms, event=f"acknowledge {partition.key}",
                             message=f"{partition.key}: the leader (leader epoch {leader_epoch}) took "
                             f"acknowledgements of {member_id}, which acquired nothing, into its state: "
                             + ", ".join(f"{b.first_offset}..{b.last_offset}" for b in batches),
                             key=str(partition.key), member=member_id, leader_epoch=leader_epoch)

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        if kind != "hostile.share_answer":
            return
        result = fields["result"]
        skipped = result.member_id in self._skipped
        self._skipped.discard(result.member_id)
        if result.refused_as_expected() or (skipped and not result.expected and result.error == Errors.NONE
                                            and all(e == Errors.NONE for e in result.partition_errors)):
            return
        allowed = ", ".join(e.name for e in result.expected) or (
            "NONE with every partition refused (" + ", ".join(e.name for e in result.partition_expected) + ")")
        parts = ", ".join(e.name for e in result.partition_errors) or "none"
        self.sink.report(INVARIANT, now_ms, event=f"hostile {result.request}",
                         message=f"broker {result.broker} answered a hostile {result.request} (member "
                         f"{result.member_id} of {result.group_id}, session epoch {result.epoch}) with "
                         f"{result.error.name} (partitions: {parts}); the protocol refuses it: {allowed}",
                         request=result.request, member=result.member_id, epoch=result.epoch,
                         broker=result.broker, error=result.error.name)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        # Judged at the share-partition's next step (the same event: the leader steps right after taking
        # acknowledgements), against the log start offset the leader's data log has then.
        if member_id.startswith(_HOSTILE) and batches:
            self._pending.setdefault(key, []).append((member_id, batches, leader_epoch, now_ms))

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        if member_id.startswith(_HOSTILE) and acquired:
            self.sink.report(INVARIANT, now_ms, event=f"acquire {key}",
                             message=f"{key}: the leader acquired records for {member_id}, whose fetches ask "
                             "for none", key=str(key), member=member_id, leader_epoch=leader_epoch)

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        if epoch < -1:
            self.sink.report(INVARIANT, now_ms, event=f"share session b{broker} {member_id}",
                             message=f"broker {broker} accepted share-session epoch {epoch} from {member_id} of "
                             f"{group_id}: only -1 (close) and 0 (open) are special; a negative epoch matches no "
                             "session", broker=broker, member=member_id, epoch=epoch)
