"""The invariant catalogue as data: id → (SPEC.md ids, kind, statement).

Plain data with no imports, so the violation sink, the reports and the
catalogue (``invariants/catalogue.py``, which adds each entry's checker) share
one table. The ids are fixed: mutants (``model/mutants.py``) name them.
Kinds: "state" (checked after each step), "transition" (checked on each
change), "liveness" (checked at the end of the healing phase).
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Entry(NamedTuple):
    spec: tuple[str, ...]
    kind: str
    statement: str


TABLE: Final[dict[str, Entry]] = {
    "record-state-transition": Entry(
        ("SP-1",), "transition",
        "records move only AVAILABLE→ACQUIRED→AVAILABLE|ACKNOWLEDGED|ARCHIVED; terminal states stay; "
        "ACQUIRED is never persisted"),
    "delivery-count-limit": Entry(
        ("SP-5", "E-4"), "transition",
        "delivery count never above the limit within one leader tenure; a record delivered limit times "
        "(by the latest leader's count, or within its tenure: SP-11) and not accepted ends ARCHIVED"),
    "spso-monotonic": Entry(
        ("SP-6",), "transition",
        "the SPSO never decreases; every offset below it is durably terminal or deleted from the log (below its "
        "log start offset; a group deleted and re-created "
        "starts afresh)"),
    "window-bounds": Entry(
        ("SP-7",), "state",
        "SPSO <= SPEO <= the high-water mark (or last stable offset); past it only an empty window (admin reset)"),
    "window-size": Entry(("SP-8",), "state",
                         "SPEO - SPSO <= group.share.partition.max.record.locks (Kafka: soft to a batch end)"),
    "ack-after-durable-write": Entry(
        ("SP-9",), "transition",
        "no acknowledgement is confirmed to a client before its durable write was accepted"),
    "counts-not-below-durable": Entry(
        ("SP-11",), "transition", "delivery counts never fall below their durable value"),
    "deliveries-within-failover-bound": Entry(
        ("SP-11",), "transition",
        "in one life of its state a record is delivered at most limit times, plus one for each further "
        "leader tenure that delivered it (a failover loses at most the increment of the delivery in flight)"),
    "no-aborted-delivery": Entry(
        ("SP-13",), "transition", "records of aborted transactions are never delivered under read_committed"),
    "coordinator-replay-equal": Entry(
        ("SC-6",), "transition",
        "a share coordinator's replayed state equals the committed state of the one it replaced"),
    "zombie-write-fenced": Entry(
        ("SC-5",), "transition",
        "after a leader reads state with leader epoch e, no write with a lower leader epoch is accepted"),
    "earlier-life-write-fenced": Entry(
        ("SC-5", "GC-8"), "transition",
        "no write sent before a share-partition's state was deleted and initialized again is accepted into "
        "the new state"),
    "earlier-life-delete-fenced": Entry(
        ("SC-8", "GC-8"), "transition",
        "no delete sent before a share-partition's state was deleted and initialized again deletes the new state"),
    "stored-epoch-sources": Entry(
        ("SC-5",), "transition",
        "the stored state epoch is raised only by initialize, the stored leader epoch only by read"),
    "stored-start-offset-monotonic": Entry(
        ("SP-6", "SC-4"), "transition",
        "within one state epoch of a share-partition, the start offset of the state the share coordinator "
        "committed (its ShareSnapshot and ShareUpdate records) never decreases"),
    "negative-epoch-changes-nothing": Entry(
        ("SC-5",), "transition",
        "a read or write with a negative leader epoch, or a write or initialize with a negative state epoch, "
        "is answered with an error (INVALID_REQUEST) and no share-state record is appended for it"),
    "snapshot-update-limit": Entry(
        ("SC-3",), "state",
        "updates since the last snapshot <= share.coordinator.snapshot.update.records.per.snapshot"),
    "group-epoch-order": Entry(
        ("GC-2", "GC-3", "GC-4", "CG-1"), "transition",
        "assignment epoch <= group epoch and member epochs <= assignment epoch; group and assignment epochs "
        "never fall below their committed values"),
    "assign-initialized-only": Entry(
        ("GC-5",), "state", "only share-partitions whose state is initialized are assigned"),
    "exclusive-ownership": Entry(
        ("CG-3",), "state", "no partition is owned by two consumer-group members at once"),
    "no-assign-and-revoke": Entry(
        ("CG-2",), "transition", "no heartbeat response both assigns and revokes partitions"),
    "eventual-resolution": Entry(
        ("E-1",), "liveness", "every committed record is eventually accepted or archived once faults stop"),
    "no-redelivery-after-accept": Entry(
        ("E-2",), "transition",
        "a record whose accept or reject was confirmed to a consumer is never delivered again (in that group's life)"),
    "exclusive-acquisition": Entry(
        ("E-3",), "transition",
        "at most one live acquisition per record; acknowledgements from anyone else are rejected"),
    "member-convergence": Entry(
        ("E-5",), "liveness", "every live member converges to the group's assignment epoch once faults stop"),
    "share-session-epoch": Entry(
        ("CL-1",), "transition",
        "a share session accepts epoch 0 to open, -1 to close, otherwise exactly one more than its last"),
    "stored-delivery-complete-count": Entry(
        ("SC-4",), "transition",
        "within one state epoch of a share-partition, the DeliveryCompleteCount of the state the share coordinator "
        "committed never decreases while its start offset stays (KIP-1226; apache/kafka 2225a16c7e)"),
    "delivery-complete-count": Entry(
        ("SP-1",), "state",
        "a share-partition leader with no write in flight counts as delivery-complete (KIP-1226) no more offsets "
        "of its window than the ghost ledger holds durably Acknowledged or Archived there"),
    "target-assignment-balanced": Entry(
        ("GC-5",), "state",
        "a share group's current target assignment is balanced as its SimpleAssignor balances: members' "
        "partition counts differ by at most one (all topics for same-subscription groups under Kafka trunk, "
        "else topic by topic)"),
    "last-delivery-alone": Entry(
        ("SP-5",), "transition",
        "Kafka (protocol kafka, limit > 2): a record on its last delivery attempt is acquired alone, "
        "the only record of its fetch from that share-partition (SharePartition throttling)"),
    "dead-letter-queue": Entry(
        ("SP-1", "SP-3"), "transition",
        "KIP-1191: a record durably ARCHIVING is made durably ARCHIVED only once it is committed to the group's "
        "dead-letter topic or its enqueue was given up (trunk archives regardless); the dead-letter topic holds "
        "only records that were durably ARCHIVING (at least once: a failover between the DLQ produce and the "
        "phase-2 write produces them again)"),
    "gap-only-without-record": Entry(
        ("SP-3", "SP-14"), "transition",
        "an acknowledgement a leader takes acknowledges GAP only offsets the data log holds no record at "
        "(removed by the cleaner, or a control marker), as ShareCompletedFetch does"),
    "refused-share-request-changes-nothing": Entry(
        ("CL-1", "CL-2", "SP-3"), "transition",
        "a ShareFetch or ShareAcknowledge the protocol refuses (acknowledgements on a fresh share session, an "
        "unknown session, a stale or negative session epoch, malformed, duplicated or never-acquired "
        "acknowledgements) gets the protocol's error and changes nothing: no acknowledgement taken, no record "
        "acquired, no session epoch accepted"),
    "release-on-session-end": Entry(
        ("SP-15", "CL-1"), "transition",
        "when a member's share session at a broker ends (closed with epoch -1, evicted, disconnected, its group "
        "deleted), the records it acquired there on the session's partitions and has not acknowledged are no "
        "longer ACQUIRED by it under that acquisition 100 ms later (Kafka: releaseSession, at once)"),
    "archive-only-for-reason": Entry(
        ("SP-1", "SP-3", "SP-5", "SP-13", "SP-14"), "transition",
        "a record is durably archived (ARCHIVED, or ARCHIVING for the DLQ) only if a client was handed it at "
        "the delivery-count limit, a leader took its REJECT or GAP, the log holds no record there (compacted, "
        "a control marker, aborted under read_committed) or it is below the log start offset"),
    "ack-own-session-only": Entry(
        ("CL-2", "SP-3", "E-3"), "transition",
        "a leader takes an acknowledgement only of offsets whose latest acquisition was by that member, from "
        "that leader epoch, in the member's current share session at that broker (or the one its request "
        "closes; an epoch-0 request the client gave up on, arriving late on an older connection, opens none, and "
        "a later one arriving so is of the session opened on that connection); offsets below the log start are "
        "skipped"),
    "subscribed-records-delivered": Entry(
        ("E-1", "SP-10"), "state",
        "judged at the end of a run: every record committed at or after the offset the group started a "
        "share-partition from (earliest: the log's beginning; latest: the end committed when its leader first "
        "served; an admin reset: its offset) that its SPSO passed was handed to a member, unless no longer a "
        "record or below the log start"),
    "fetch-woken-when-acquirable": Entry(
        ("SP-2", "SP-4"), "transition",
        "a ShareFetch waiting in a leader's purgatory is answered within 20 ms once a change of one of its "
        "share-partitions (an acknowledgement, release or lock timeout made durable, a state read) leaves it "
        "at least its MinBytes of acquirable records, no fetch lock held (Kafka: checkAndComplete, KAFKA-17400)"),
}


def spec_of(invariant: str) -> tuple[str, ...]:
    entry = TABLE.get(invariant)
    return entry.spec if entry is not None else ()
