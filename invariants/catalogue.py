"""The invariant catalogue: every rule of SPEC.md the runs check, by a fixed id.

An ``Invariant`` has its ``id`` (what a ``Violation`` names), the SPEC.md rule
ids it protects (``spec``), its ``kind`` ("state": checked after each step;
"transition": checked on each change; "liveness": checked once faults stop,
at the end of the healing phase), a one-line ``statement``, and ``checker``:
the dotted path of the monitor class that checks it (resolved by ``load``,
so listing the catalogue imports no simulation), and ``source``: where its
expectation comes from, in one sentence. An oracle never takes its
expectation from the code it checks: a source names facts the ghost ledger
observed at a boundary (producer acks, what clients were handed, acknowledged
or were confirmed, the records a state log committed, what a data log holds),
configuration, or a reference written apart from the model
(``invariants/state_log_reference.py``); never a component's own counters,
its ``apply``, or a leader's in-memory window. The ids, specs, kinds and
statements live in ``invariants/ids.py``; ``CATALOGUE`` keeps that order.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Final

from mypy_extensions import mypyc_attr

from invariants.ids import TABLE
from model.unknown_name import UnknownName

KINDS: Final = ("state", "transition", "liveness")

_CHECKERS: Final = {
    "record-state-transition": "invariants.share_checks.RecordTransitionMonitor",
    "delivery-count-limit": "invariants.monitors.DeliveryLimitMonitor",
    "spso-monotonic": "invariants.monitors.SpsoWindowMonitor",
    "window-bounds": "invariants.monitors.SpsoWindowMonitor",
    "window-size": "invariants.monitors.SpsoWindowMonitor",
    "ack-after-durable-write": "invariants.share_checks.AckAfterDurableWriteMonitor",
    "counts-not-below-durable": "invariants.share_checks.DurableCountMonitor",
    "deliveries-within-failover-bound": "invariants.monitors.DeliveryLimitMonitor",
    "no-aborted-delivery": "invariants.share_checks.AbortedDeliveryMonitor",
    "coordinator-replay-equal": "invariants.coordinator_checks.ReplayEqualMonitor",
    "zombie-write-fenced": "invariants.coordinator_checks.ZombieWriteMonitor",
    "earlier-life-write-fenced": "invariants.coordinator_checks.EarlierLifeMonitor",
    "earlier-life-delete-fenced": "invariants.coordinator_checks.EarlierLifeMonitor",
    "stored-epoch-sources": "invariants.coordinator_checks.StoredEpochMonitor",
    "stored-start-offset-monotonic": "invariants.coordinator_checks.StoredStartOffsetMonitor",
    "negative-epoch-changes-nothing": "invariants.coordinator_checks.NegativeEpochMonitor",
    "snapshot-update-limit": "invariants.coordinator_checks.SnapshotLimitMonitor",
    "group-epoch-order": "invariants.group_checks.GroupEpochMonitor",
    "assign-initialized-only": "invariants.group_checks.AssignInitializedMonitor",
    "exclusive-ownership": "invariants.group_checks.ExclusiveOwnershipMonitor",
    "no-assign-and-revoke": "invariants.group_checks.NoAssignAndRevokeMonitor",
    # The two liveness properties are judged by the cluster at its liveness deadline.
    "eventual-resolution": "model.sim.cluster.Cluster",
    "no-redelivery-after-accept": "invariants.monitors.NoRedeliveryMonitor",
    "exclusive-acquisition": "invariants.monitors.ExclusiveAcquisitionMonitor",
    "member-convergence": "model.sim.cluster.Cluster",
    "share-session-epoch": "invariants.share_checks.ShareSessionMonitor",
    "stored-delivery-complete-count": "invariants.coordinator_checks.StoredCompleteCountMonitor",
    "delivery-complete-count": "invariants.coordinator_checks.CompleteCountMonitor",
    "target-assignment-balanced": "invariants.group_checks.TargetBalanceMonitor",
    "last-delivery-alone": "invariants.monitors.DeliveryLimitMonitor",
    "dead-letter-queue": "invariants.share_checks.DeadLetterMonitor",
    "gap-only-without-record": "invariants.share_checks.GapAckMonitor",
    "refused-share-request-changes-nothing": "invariants.hostile_checks.RefusedShareRequestMonitor",
    "release-on-session-end": "invariants.session_checks.SessionReleaseMonitor",
    "archive-only-for-reason": "invariants.archive_checks.ArchiveReasonMonitor",
    "ack-own-session-only": "invariants.session_checks.AckDisciplineMonitor",
    "subscribed-records-delivered": "invariants.delivery_checks.SubscribedDeliveryMonitor",
    "fetch-woken-when-acquirable": "invariants.fetch_checks.PurgatoryWakeupMonitor",
}


# Where each invariant's expectation comes from (``Invariant.source``, the README's "source of truth"
# column). Every catalogue entry has one; tests/invariants/test_catalogue.py checks none reads the
# model's bookkeeping. A new invariant appends its line here.
_SOURCES: Final = {
    "record-state-transition":
        "The writes the share coordinators accepted (the ghost ledger's durable state), against each accepted "
        "write and each acquisition handed to a client.",
    "delivery-count-limit":
        "The delivery counts of the acquisitions handed to clients and the group's configured limit; at the end, "
        "a record handed out limit times must be terminal in the leader.",
    "spso-monotonic":
        "The ledger's justification of every offset an SPSO passes: acknowledged terminal by a client, handed out "
        "at the delivery limit, no committed record there (producer acks, aborted transactions, the data log), or "
        "below the data log's start offset; and the writes the coordinators accepted.",
    "window-bounds": "The data log's high-water mark (last stable offset under read_committed).",
    "window-size": "The group's configured group.share.partition.max.record.locks.",
    "ack-after-durable-write":
        "The writes the share coordinators accepted (ledger), matched by identity to each write a leader takes "
        "as done.",
    "counts-not-below-durable":
        "The highest delivery count of each offset in the writes the share coordinators accepted (ledger).",
    "deliveries-within-failover-bound":
        "The acquisitions handed to clients, counted per offset and leader tenure, and the configured limit.",
    "no-aborted-delivery": "The aborted transactions' offsets, from the producers' acks and transaction outcomes.",
    "coordinator-replay-equal":
        "An independent reference of the state-log semantics (invariants/state_log_reference.py) replaying the "
        "committed __share_group_state records; not the coordinator's apply.",
    "zombie-write-fenced": "The leader epochs of the reads the share coordinators answered (ledger).",
    "earlier-life-write-fenced":
        "When each life's initialize was sent and its state created, seen at the coordinator's boundary, "
        "against each accepted write's send time.",
    "earlier-life-delete-fenced":
        "When each life's initialize was sent, seen at the coordinator's boundary, against each delete's send "
        "time.",
    "stored-epoch-sources":
        "The kind of each request handled (only an initialize raises the state epoch, only a read the leader "
        "epoch), against the stored epochs before and after it.",
    "stored-start-offset-monotonic":
        "The committed ShareSnapshot and ShareUpdate records of __share_group_state, folded per key.",
    "negative-epoch-changes-nothing":
        "Each request's epochs, the answer sent and the records appended for it, at the coordinator's boundary.",
    "snapshot-update-limit":
        "The committed records of __share_group_state: ShareUpdates counted per key since its latest "
        "ShareSnapshot, and the configured limit.",
    "group-epoch-order": "The committed group metadata and target-assignment records of __consumer_offsets.",
    "assign-initialized-only":
        "The share-group state the share coordinators committed (ShareSnapshot records, tombstones), per key.",
    "exclusive-ownership":
        "The members' assignments and each consumer's reconciled ownership, compared across members.",
    "no-assign-and-revoke": "The heartbeat responses the consumers reconciled.",
    "eventual-resolution":
        "The records the producers had acknowledged (ledger), each resolved by a justified terminal fact (a "
        "client's acknowledgement, the delivery limit, no committed record, below the log start) or at or above "
        "the life's first start offset; plus the current leader's window.",
    "no-redelivery-after-accept": "The acknowledgements confirmed to clients, against later acquisitions.",
    "exclusive-acquisition":
        "The acquisitions handed to clients with their lock durations, the acknowledgements confirmed to clients "
        "and the writes the coordinators accepted.",
    "member-convergence":
        "Each live client's member epoch and assignment, against the group coordinator's assignment epoch and "
        "target.",
    "share-session-epoch": "The epochs each client sent and the broker's session events, by CL-1's rule.",
    "stored-delivery-complete-count":
        "The committed ShareSnapshot and ShareUpdate records of __share_group_state, folded per key.",
    "delivery-complete-count":
        "The offsets durably Acknowledged or Archived per the writes the coordinators accepted (ledger), not the "
        "leader's count.",
    "target-assignment-balanced":
        "The members' subscriptions and the topics' partitions (the SimpleAssignor's balance bound).",
    "last-delivery-alone": "The acquisitions handed to clients and the group's configured limit.",
    "dead-letter-queue":
        "The accepted writes' ARCHIVING and ARCHIVED batches (ledger) and the records committed to the "
        "dead-letter topic.",
    "gap-only-without-record": "What the data log holds at each acknowledged GAP offset (no record, a control marker).",
    "refused-share-request-changes-nothing":
        "The protocol's answers, written down per request by the hostile client; the acknowledgements, "
        "acquisitions and session epochs seen at the leaders' boundary; the data log's start offset.",
    "release-on-session-end":
        "The ledger's session facts: acquisitions handed to clients, share-session opens and ends, the partitions "
        "ShareFetch requests name, leader elections and state deletes.",
    "archive-only-for-reason":
        "The deliveries handed to clients, the durable counts of accepted writes, the REJECT and GAP "
        "acknowledgements leaders took, and what the data log holds.",
    "ack-own-session-only":
        "The ledger's session facts: each member's acquisitions per leader epoch and share session, against the "
        "acknowledgements leaders took.",
    "subscribed-records-delivered":
        "The records the producers had acknowledged, the acquisitions handed to clients, the accepted "
        "InitializeShareGroupState requests and the data log.",
    "fetch-woken-when-acquirable":
        "Each waiting ShareFetch's share-partitions and MinBytes and its answer, at the broker's boundary; the "
        "data log's high-water mark (or last stable offset), the configured in-flight bound and the leaders' "
        "AVAILABLE offsets, counted apart from the purgatory it judges.",
}


@dataclass(frozen=True)
class Invariant:
    id: str
    spec: tuple[str, ...]
    kind: str
    statement: str
    checker: str  # "module.Class"
    source: str = ""  # where its expectation comes from (``_SOURCES``)

    def load(self) -> Any:
        """The checker class itself."""
        module, _, name = self.checker.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "spec": list(self.spec), "kind": self.kind, "statement": self.statement,
                "source": self.source}


CATALOGUE: Final[tuple[Invariant, ...]] = tuple(
    Invariant(invariant, entry.spec, entry.kind, entry.statement, _CHECKERS[invariant], _SOURCES.get(invariant, ""))
    for invariant, entry in TABLE.items()
)
_BY_ID: Final = {invariant.id: invariant for invariant in CATALOGUE}


@mypyc_attr(native_class=False)  # mypyc: a builtin exception base (KeyError)
class UnknownInvariant(UnknownName):
    """An unknown invariant name; the message lists the known ones."""

    kind = "invariant"


def ids() -> list[str]:
    return [invariant.id for invariant in CATALOGUE]


def get(invariant: str) -> Invariant:
    found = _BY_ID.get(invariant)
    if found is None:
        raise UnknownInvariant(invariant, ids())
    return found
