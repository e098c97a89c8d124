"""Rule coverage: every rule of SPEC.md (SP, SC, GC, CG, CL, E) and Kafka's documented share-group
guarantees, with the invariants of the catalogue that check it, or the reason none does.

``COVERAGE`` maps a rule id to a ``Coverage``: ``invariants`` (catalogue ids; every one exists,
``tests/invariants/test_rule_coverage.py``) and ``reason``: why no run-time invariant checks the rule,
or what part of it the listed ones leave out. A rule is covered when it lists an invariant; a rule
with none must give its reason. ``sharesim invariants --rules`` prints the table.

``SPEC_RULES`` is the list of SPEC.md's rule ids with their titles, in SPEC.md's order (SPEC.md lives
outside the repository; the test compares the two when it finds SPEC.md). The ``K-`` ids are Kafka's
documented share-group guarantees (the Apache Kafka documentation's "Share groups" section and KIP-932's
"Delivery semantics"), which SPEC.md words as rules of its own.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Coverage(NamedTuple):
    invariants: tuple[str, ...]
    reason: str = ""


SPEC_RULES: Final[tuple[tuple[str, str], ...]] = (
    ("SP-1", "States"), ("SP-2", "Acquire"), ("SP-3", "Acknowledge"), ("SP-4", "Lock timeout"),
    ("SP-5", "Delivery limit"), ("SP-6", "SPSO"), ("SP-7", "SPEO"), ("SP-8", "In-flight bound"),
    ("SP-9", "Persist before respond"), ("SP-10", "Recovery"), ("SP-11", "Approximate counts"),
    ("SP-12", "Admin reset"), ("SP-13", "Isolation"), ("SP-14", "Compaction gaps"), ("SP-15", "Session release"),
    ("SC-1", "Keying"), ("SC-2", "Records"), ("SC-3", "Snapshot policy"), ("SC-4", "Merge"), ("SC-5", "Fencing"),
    ("SC-6", "Load"), ("SC-7", "Durability"), ("SC-8", "Delete and prune"), ("SC-9", "Unknown"),
    ("GC-1", "Membership"), ("GC-2", "Group epoch"), ("GC-3", "Assignment epoch"),
    ("GC-4", "No revocation barrier"), ("GC-5", "SimpleAssignor"), ("GC-6", "Persistence and failover"),
    ("GC-7", "State initialization"), ("GC-8", "Admin"), ("GC-9", "Limits"),
    ("CG-1", "Epochs"), ("CG-2", "Reconciliation"), ("CG-3", "Exclusive ownership"), ("CG-4", "Fencing"),
    ("CG-5", "Static membership"), ("CG-6", "Timeouts"), ("CG-7", "Assignors"),
    ("CL-1", "Share sessions"), ("CL-2", "Piggybacked acks"), ("CL-3", "ShareConsumer"),
    ("E-1", "No loss"), ("E-2", "No redelivery after a confirmed ack"), ("E-3", "Exclusive acquisition"),
    ("E-4", "Bounded delivery"), ("E-5", "Convergence"),
)

KAFKA_GUARANTEES: Final[tuple[tuple[str, str], ...]] = (
    ("K-at-least-once", "a share group delivers every record at least once (records are redelivered, not lost)"),
    ("K-acquisition-lock", "a record handed to a consumer is locked to it for the acquisition lock duration"),
    ("K-delivery-attempts", "a record is delivered at most group.share.delivery.count.limit times, then archived"),
    ("K-isolation", "share.isolation.level=read_committed delivers only committed transactional records"),
    ("K-no-ordering", "share groups give no ordering guarantee across records of a partition"),
    ("K-session-release", "when a share consumer closes or its session ends, its acquired records are released"),
)

COVERAGE: Final[dict[str, Coverage]] = {
    # -- the share-partition leader ---------------------------------------------------------------
    "SP-1": Coverage(("record-state-transition", "archive-only-for-reason", "dead-letter-queue",
                      "delivery-complete-count")),
    "SP-2": Coverage(("record-state-transition", "exclusive-acquisition", "deliveries-within-failover-bound",
                      "fetch-woken-when-acquirable"),
                     "that acquiring writes nothing durable is structural (no write path starts at an acquisition)"),
    "SP-3": Coverage(("exclusive-acquisition", "ack-own-session-only", "gap-only-without-record",
                      "archive-only-for-reason", "dead-letter-queue", "refused-share-request-changes-nothing")),
    "SP-4": Coverage(("exclusive-acquisition", "eventual-resolution", "fetch-woken-when-acquirable")),
    "SP-5": Coverage(("delivery-count-limit", "last-delivery-alone", "archive-only-for-reason")),
    "SP-6": Coverage(("spso-monotonic", "stored-start-offset-monotonic")),
    "SP-7": Coverage(("window-bounds",)),
    "SP-8": Coverage(("window-size",)),
    "SP-9": Coverage(("ack-after-durable-write",)),
    "SP-10": Coverage(("counts-not-below-durable", "no-redelivery-after-accept", "subscribed-records-delivered")),
    "SP-11": Coverage(("counts-not-below-durable", "deliveries-within-failover-bound")),
    "SP-12": Coverage(("stored-epoch-sources", "spso-monotonic", "earlier-life-write-fenced")),
    "SP-13": Coverage(("no-aborted-delivery", "window-bounds", "archive-only-for-reason")),
    "SP-14": Coverage(("gap-only-without-record", "archive-only-for-reason")),
    "SP-15": Coverage(("release-on-session-end",),
                      "a member that leaves or is fenced by the group coordinator while its share session stays "
                      "open keeps its records until their locks expire, as in Kafka trunk (the broker releases "
                      "on session end, SharePartitionManager.releaseSession); exclusive-acquisition bounds that"),
    # -- the share coordinator ----------------------------------------------------------------------
    "SC-1": Coverage((), "routing, not a property of the state: a request sent to a broker that is not the key's "
                         "coordinator is answered NOT_COORDINATOR and changes nothing; the keying function is "
                         "checked by unit tests (tests/model/core/test_share_coordinator.py)"),
    "SC-2": Coverage(("coordinator-replay-equal", "snapshot-update-limit")),
    "SC-3": Coverage(("snapshot-update-limit",)),
    "SC-4": Coverage(("stored-start-offset-monotonic", "stored-delivery-complete-count", "counts-not-below-durable")),
    "SC-5": Coverage(("zombie-write-fenced", "stored-epoch-sources", "negative-epoch-changes-nothing",
                      "earlier-life-write-fenced")),
    "SC-6": Coverage(("coordinator-replay-equal",)),
    "SC-7": Coverage(("coordinator-replay-equal", "counts-not-below-durable", "ack-after-durable-write")),
    "SC-8": Coverage(("earlier-life-delete-fenced", "coordinator-replay-equal")),
    "SC-9": Coverage((), "an error code for one request (reading a key never initialized), with no state to "
                         "keep: unit tests check it; a leader that got it stays unready, which "
                         "assign-initialized-only and eventual-resolution would show"),
    # -- the group coordinator (share groups) --------------------------------------------------------
    "GC-1": Coverage(("member-convergence",),
                     "member ids and heartbeat timing are message format and configuration; removal after the "
                     "session timeout shows as member-convergence (a removed member rejoins)"),
    "GC-2": Coverage(("group-epoch-order",)),
    "GC-3": Coverage(("group-epoch-order",)),
    "GC-4": Coverage(("group-epoch-order", "member-convergence")),
    "GC-5": Coverage(("assign-initialized-only", "target-assignment-balanced")),
    "GC-6": Coverage(("group-epoch-order", "member-convergence")),
    "GC-7": Coverage(("assign-initialized-only", "earlier-life-write-fenced")),
    "GC-8": Coverage(("earlier-life-write-fenced", "earlier-life-delete-fenced")),
    "GC-9": Coverage((), "configured limits answered with an error code (GROUP_MAX_SIZE_REACHED): a rule about "
                         "configuration, checked by unit tests; no library scenario reaches the limits"),
    # -- the KIP-848 consumer group ---------------------------------------------------------------
    "CG-1": Coverage(("group-epoch-order",)),
    "CG-2": Coverage(("no-assign-and-revoke", "exclusive-ownership")),
    "CG-3": Coverage(("exclusive-ownership",)),
    "CG-4": Coverage(("member-convergence", "exclusive-ownership"),
                     "the error codes themselves (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH) are "
                     "checked by unit tests; a fenced member's rejoin shows as member-convergence"),
    "CG-5": Coverage(("exclusive-ownership", "member-convergence"),
                     "UNRELEASED_INSTANCE_ID is an error code checked by unit tests"),
    "CG-6": Coverage(("member-convergence",)),
    "CG-7": Coverage(("exclusive-ownership", "member-convergence"),
                     "that a target assigns every subscribed partition exactly once is checked by the assignor "
                     "unit and property tests (tests/model/core/group/test_assignors.py), not at run time"),
    # -- clients and sessions -----------------------------------------------------------------------
    "CL-1": Coverage(("share-session-epoch", "release-on-session-end", "refused-share-request-changes-nothing")),
    "CL-2": Coverage(("ack-own-session-only", "refused-share-request-changes-nothing")),
    "CL-3": Coverage(("eventual-resolution", "no-redelivery-after-accept", "subscribed-records-delivered"),
                     "poll, the acknowledgement modes and commitSync are the client's API; what they promise "
                     "shows in E-1 and E-2"),
    # -- end to end -------------------------------------------------------------------------------
    "E-1": Coverage(("eventual-resolution", "subscribed-records-delivered")),
    "E-2": Coverage(("no-redelivery-after-accept",)),
    "E-3": Coverage(("exclusive-acquisition", "ack-own-session-only")),
    "E-4": Coverage(("delivery-count-limit", "deliveries-within-failover-bound")),
    "E-5": Coverage(("member-convergence",)),
    # -- Kafka's documented guarantees --------------------------------------------------------------
    "K-at-least-once": Coverage(("eventual-resolution", "subscribed-records-delivered")),
    "K-acquisition-lock": Coverage(("exclusive-acquisition",)),
    "K-delivery-attempts": Coverage(("delivery-count-limit", "deliveries-within-failover-bound",
                                     "archive-only-for-reason")),
    "K-isolation": Coverage(("no-aborted-delivery",)),
    "K-no-ordering": Coverage((), "a guarantee Kafka does not give: there is nothing to check"),
    "K-session-release": Coverage(("release-on-session-end",)),
}


def rule_ids() -> list[str]:
    """SPEC.md's rule ids, then the Kafka guarantees, in order."""
    return [rule for rule, _ in SPEC_RULES] + [rule for rule, _ in KAFKA_GUARANTEES]


def title_of(rule: str) -> str:
    return dict(SPEC_RULES + KAFKA_GUARANTEES)[rule]


def by_invariant() -> dict[str, list[str]]:
    """Invariant id -> the rules that list it."""
    out: dict[str, list[str]] = {}
    for rule in rule_ids():
        for invariant in COVERAGE[rule].invariants:
            out.setdefault(invariant, []).append(rule)
    return out
