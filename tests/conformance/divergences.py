"""Why a translated Kafka test does not pass against ``model/core``: the one vocabulary.

Every failing conformance test is marked ``@xfail(strict=True)`` through ``classified``, by way
of ``divergence(name)`` (sharesim does something else on purpose, or where Kafka's choice is
not the KIP's) or ``missing(name)`` (a mechanism of the Kafka that ships that the model does
not have yet, issue 24). A name not listed here is a collection error, and a marked test that
starts to pass fails the run (strict), so the lists stay true.
"""

from __future__ import annotations

from typing import Final

import pytest

# Deliberate or documented differences from Kafka trunk at the pinned commit.
DIVERGENCES: Final[dict[str, str]] = {
    "uninitialized-key-error":
        "a read or write of a key never initialized answers UNKNOWN_TOPIC_OR_PARTITION (SC-9); trunk "
        "answers INVALID_REQUEST",
    "acquired-state-persisted":
        "the share coordinator refuses a state batch in ACQUIRED (SP-1: never persisted); trunk stores it",
    "initialize-not-idempotent":
        "a duplicate InitializeShareGroupState (same state epoch and start offset) writes a new snapshot; "
        "trunk answers it without writing",
    "cold-snapshot-by-redundancy":
        "the coordinator re-snapshots a key when its old snapshot holds redundant records back from pruning "
        "(resnapshot_idle); trunk snapshots keys whose last snapshot is older than a time interval",
    "ack-across-log-start-rejected":
        "an acknowledgement that spans a moved log start offset is rejected whole; trunk skips the offsets "
        "below the start and applies the rest",
    "compacted-archived-at-acquire":
        "offsets with no record (compacted away) are archived by the leader at acquisition; trunk delivers "
        "the fetched batch and the client acknowledges the missing offsets with GAP",
    "ack-beyond-window-code":
        "acknowledging offsets beyond the in-flight window answers INVALID_RECORD_STATE; trunk answers "
        "INVALID_REQUEST (and INVALID_RECORD_STATE when nothing is in flight, as the model does)",
    "overlapping-ack-batches":
        "a request whose acknowledgement batches overlap is malformed (INVALID_REQUEST, nothing applied); "
        "trunk applies the batches in order and fails the repeated one with INVALID_RECORD_STATE, rolling "
        "back the rest",
    "unknown-topic-write-drops-state":
        "a write answered UNKNOWN_TOPIC_OR_PARTITION means the state was deleted (the model's coordinator "
        "answers it for deleted keys, SC-9): the leader drops its state; trunk treats it as a failed write",
    "log-start-drops-window":
        "when the log start offset moves past in-flight records the model drops them from the window, "
        "whatever their state; trunk archives the AVAILABLE ones and keeps ACQUIRED ones with their member "
        "until they are acknowledged or their lock expires",
    "lock-timeout-waits-for-write":
        "records whose lock expired stay in transition until the state write is accepted (SP-9); trunk makes "
        "them AVAILABLE at once and only logs a failed write (the mutant lock-timeout-before-write)",
    "group-epoch-starts-at-zero":
        "a new share group starts at group epoch 0 and its first member's heartbeat bumps it to 1 (then 2 "
        "once its partitions are initialized); trunk creates the group at epoch 1 (KAFKA-20268)",
    "target-assignment-on-next-heartbeat":
        "a member's session timing out bumps the group epoch; the model computes the new target assignment "
        "on the next heartbeat that needs it (GC-3), trunk at once with the expiry's records",
    "initialize-bumps-group-epoch":
        "when a topic's share-partitions are initialized the model records them and bumps the group epoch, "
        "so the next heartbeat assigns them (GC-7); trunk's initializeShareGroupState writes only the state "
        "metadata record",
    "load-bumps-group-epoch":
        "a coordinator that loads a group bumps its epoch (on_loaded, so the target is computed afresh); "
        "trunk's onLoaded only restarts the timers",
    "simple-assignor-placement":
        "the SimpleAssignor follows the worked table of 003 (members hashed to partitions, then keep, fill, "
        "balance); trunk's balances first and keeps what it can, without hashing: every partition is "
        "assigned either way, to different members",
    "reconcile-trusts-target":
        "a member moves to its target as it is; trunk's ShareGroupAssignmentBuilder also drops partitions "
        "of topics the member no longer subscribes to (the model's assignor never targets those, so the "
        "difference shows only with a target built by hand)",
    "assignor-ignores-unknown-topic":
        "assign() takes the topics that exist; a subscription to a missing topic gets nothing instead of "
        "trunk's PartitionAssignorException",
}

# Mechanisms of the Kafka that ships that the model lacks (issue 24's list).
MISSING: Final[dict[str, str]] = {
    "fetch-lock": "a fetch is one atomic event: no per-share-partition fetch lock",
    "delivery-complete-count": "no deliveryCompleteCount in the share-partition or the written state",
    "renew": "no RENEW acknowledge type",
    "archiving-dlq": "no ARCHIVING state, no dead-letter queue",
    "leader-not-available": "no LEADER_NOT_AVAILABLE while loading or fenced (the model answers others)",
    "coordinator-metadata-image": "the share coordinator has no metadata image: no UNKNOWN_TOPIC_OR_PARTITION "
                                  "for topics it does not know, no onTopicsDeleted",
}


def classified(kind: str, name: str) -> pytest.MarkDecorator:
    """The one marker: a strict xfail whose reason starts with the kind and the listed name."""
    table = DIVERGENCES if kind == "divergence" else MISSING
    if name not in table:
        raise KeyError(f"{kind} {name!r} is not listed in tests/conformance/divergences.py")
    return pytest.mark.xfail(strict=True, reason=f"{kind}:{name}: {table[name]}")


def divergence(name: str) -> pytest.MarkDecorator:
    return classified("divergence", name)


def missing(name: str) -> pytest.MarkDecorator:
    return classified("missing", name)
