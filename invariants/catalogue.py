"""The invariant catalogue: every rule of SPEC.md the runs check, by a fixed id.

An ``Invariant`` has its ``id`` (what a ``Violation`` names), the SPEC.md rule
ids it protects (``spec``), its ``kind`` ("state": checked after each step;
"transition": checked on each change; "liveness": checked once faults stop,
at the end of the healing phase), a one-line ``statement``, and ``checker``:
the dotted path of the monitor class that checks it (resolved by ``load``,
so listing the catalogue imports no simulation). The ids, specs, kinds and
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
    "release-on-session-end": "invariants.session_checks.SessionReleaseMonitor",
    "archive-only-for-reason": "invariants.archive_checks.ArchiveReasonMonitor",
    "ack-own-session-only": "invariants.session_checks.AckDisciplineMonitor",
    "subscribed-records-delivered": "invariants.delivery_checks.SubscribedDeliveryMonitor",
}


@dataclass(frozen=True)
class Invariant:
    id: str
    spec: tuple[str, ...]
    kind: str
    statement: str
    checker: str  # "module.Class"

    def load(self) -> Any:
        """The checker class itself."""
        module, _, name = self.checker.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "spec": list(self.spec), "kind": self.kind, "statement": self.statement}


CATALOGUE: Final[tuple[Invariant, ...]] = tuple(
    Invariant(invariant, entry.spec, entry.kind, entry.statement, _CHECKERS[invariant])
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
