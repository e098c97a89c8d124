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
    "window-without-holes":
        "the in-flight window has no holes: offsets a fetch skipped because they hold no batch (a batch the "
        "cleaner emptied) are in it, ARCHIVED by the leader, where trunk's cache (SharePartition.cachedState) "
        "has no entry for them; so an acknowledgement that spans them is refused (INVALID_RECORD_STATE), "
        "while trunk's skips them. Offsets compacted away inside a fetched batch are delivered and "
        "acknowledged with GAP, as in trunk",
    "unknown-topic-write-drops-state":
        "any write answered UNKNOWN_TOPIC_OR_PARTITION drops the leader's state in the share-partition itself (the "
        "model's coordinator answers it only for a key deleted with its group or topic, SC-9); trunk's "
        "share-partition rolls an acknowledgement's records back to ACQUIRED and its SharePartitionManager then "
        "fences and drops the share-partition (fencedSharePartitionHandler): the same outcome for an "
        "acknowledgement, but after a lock-timeout or release write trunk only logs the error and serves on from "
        "state that no longer exists",
    "lock-timeout-waits-for-write":
        "records whose lock expired stay in transition until the lock timeout's write is accepted (SP-9), and a "
        "failed write is sent again; trunk (SharePartition.releaseAcquisitionLockOnTimeout at the pinned commit) "
        "makes them AVAILABLE or ARCHIVED at once and only logs a failed write, so they are delivered again while "
        "their delivery count is not durable and one failover can lose several increments: the mutant "
        "lock-timeout-before-write, which does what trunk does, violates deliveries-within-failover-bound (SP-11: "
        "at most one lost increment per failover) on lock_timeout_write_delayed seed 1 and swarm_locks seed 34",
    "ack-below-spso-confirmed":
        "an acknowledgement of offsets below the SPSO but at or above the log start offset (records another "
        "member's acknowledgement completed after the sender's lock expired) is INVALID_RECORD_STATE; trunk "
        "skips every batch below its start offset with success, so a late consumer is told its ACCEPT or "
        "REJECT took effect when another's did (E-3: acknowledgements from anyone else are rejected)",
}

# Mechanisms of the Kafka that ships that the model lacks (issue 24's list).
MISSING: Final[dict[str, str]] = {
    "archiving-dlq": "no ARCHIVING state, no dead-letter queue: trunk at the pinned commit has both (KIP-1191: "
                     "RecordState ARCHIVING = 3, persisted; with share.group DLQ enabled and a DLQ topic named, a "
                     "REJECT or the delivery limit moves records to ARCHIVING, written, then enqueued to the DLQ "
                     "topic and moved to ARCHIVED with a second write; a reader resumes ARCHIVING batches)",
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
