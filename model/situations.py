"""Situation coverage (issue 25): protocol situations worth reaching, and how often a run reached them.

FoundationDB's code probes and Antithesis's "sometimes" assertions, for sharesim: a swarm that never
reaches a situation cannot find the bugs that live there, whatever its invariants. Each ``Situation``
names one (``id``, kebab-case), says it in the protocol's words, names the module and function whose
hook counts it, and the SPEC.md rules it concerns. The hook is one line at the exact place::

    _situations.COUNTS["lock-timeout-at-limit"] += 1

``COUNTS`` is plain module state, as ``model.mutants.ACTIVE`` is: a dict with every id of the
catalogue, which the runner zeroes in place before a run (``reset``) and reads after it (``reached``);
a hook costs one dict increment (a typo is a KeyError, and ``tests/model/test_situations.py`` checks
every hook against the catalogue). A run in a Spark Python worker counts in its own process. Counting
changes nothing a run does: no trace event, no random draw, so trace hashes are the same.

``swarms`` names the library swarms that reach the situation within ``SWARM_RUNS`` runs (seeds
0..SWARM_RUNS-1, measured: ``python -m bench situations``); the test fails when one stops doing so. A
situation no swarm reaches that soon says why in ``rare`` (what was measured), for tuning the swarms.

This module imports nothing from ``model`` (the pure core imports it) and no SimPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

SWARM_RUNS: Final = 100
"""The seeds (0..SWARM_RUNS-1) within which each situation's ``swarms`` reach it (the test's budget)."""


@dataclass(frozen=True)
class Situation:
    id: str
    statement: str  # what happened, in the protocol's words
    where: str  # "module path: function(s)" whose hook counts it
    rules: tuple[str, ...]  # SPEC.md rule ids it concerns
    swarms: tuple[str, ...] = ()  # library swarms that reach it within SWARM_RUNS seeds (tested)
    # When no library swarm reaches it within SWARM_RUNS seeds: what was measured, and why (issue 25 asks
    # every situation to be reached within 10 000 runs: these are the ones to tune a swarm for).
    rare: str = ""

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "statement": self.statement, "where": self.where, "rules": list(self.rules),
                "swarms": list(self.swarms), "rare": self.rare}


_SP = "model/core/share_partition.py"
_SL = "model/sim/share_leader.py"
_SC = "model/core/share_coordinator.py"
_CH = "model/sim/coordinator_host.py"
_SG = "model/core/group/share_group.py"
_CG = "model/core/group/consumer_group.py"

SITUATIONS: Final[tuple[Situation, ...]] = (
    # -- the share-partition leader: acknowledgements and their writes ----------------------------------
    Situation("ack-write-failed",
              "an acknowledgement's state write failed for good (after the persister's retries): its records "
              "leave the acknowledgement and go back to their member, or to AVAILABLE if their lock expired",
              f"{_SP}: _write_failed", ("SP-9",),
              swarms=("swarm_failovers",)),
    Situation("ack-write-failed-lock-expired",
              "an acknowledgement's state write failed for good after the acquisition lock of its records "
              "expired while the write was in flight: they are released by the lock timeout instead",
              f"{_SP}: _write_failed", ("SP-9", "SP-4"),
              swarms=("swarm_failovers",)),
    Situation("ack-write-failed-lock-expired-at-limit",
              "an acknowledgement's state write failed for good after the lock of its records expired, and "
              "the records were on their last delivery: they are archived (or go to the DLQ), not redelivered",
              f"{_SP}: _write_failed", ("SP-9", "SP-4", "SP-5"),
              swarms=("swarm_state_writes",)),
    Situation("state-write-reissued",
              "a leader-side state write (lock timeout, release, archive, start offset) failed for good and "
              "was written again under a new id",
              f"{_SP}: _write_failed", ("SP-9",),
              swarms=("swarm_failovers",)),
    Situation("ack-accept", "a client accepted records (ACCEPT: acknowledged, durably)",
              f"{_SP}: _apply_acknowledgement", ("SP-3",),
              swarms=("swarm",)),
    Situation("ack-gap", "a client acknowledged offsets with GAP (no record at them: compaction or a marker)",
              f"{_SP}: _apply_acknowledgement", ("SP-3", "SP-14"),
              swarms=("swarm_compacted",)),
    Situation("ack-reject", "a client rejected records (REJECT: archived, or to the DLQ)",
              f"{_SP}: _apply_acknowledgement", ("SP-3",),
              swarms=("swarm",)),
    Situation("ack-release", "a client released records (RELEASE: back to AVAILABLE, or archived at the limit)",
              f"{_SP}: _apply_acknowledgement", ("SP-3", "SP-5"),
              swarms=("swarm",)),
    Situation("ack-release-at-limit",
              "a client released records that were on their last delivery: they are archived, not made AVAILABLE",
              f"{_SP}: _apply_acknowledgement", ("SP-3", "SP-5"),
              swarms=("swarm",)),
    Situation("renew-accepted", "a client renewed the acquisition lock of records it holds (RENEW, KIP-1222)",
              f"{_SP}: _apply_acknowledgement", ("SP-3", "SP-4"),
              swarms=("swarm_renew",)),
    Situation("ack-after-lock-expired",
              "a client acknowledged records it no longer held under a live lock (the lock expired, or the records "
              "were released): refused with INVALID_RECORD_STATE",
              f"{_SP}: _not_acknowledgeable", ("SP-3", "SP-4", "E-3"),
              swarms=("swarm_locks",)),
    Situation("ack-not-owner",
              "a client acknowledged records another member holds now: refused with INVALID_RECORD_STATE",
              f"{_SP}: _not_acknowledgeable", ("SP-3", "E-3"),
              swarms=("swarm_renew",)),
    Situation("ack-in-transition",
              "a client acknowledged records whose state change was still being written: refused",
              f"{_SP}: _not_acknowledgeable", ("SP-3", "SP-9"),
              swarms=("swarm_failovers",)),
    Situation("ack-below-log-start",
              "an acknowledgement batch lay wholly below the data partition's log start offset: skipped",
              f"{_SP}: _kafka_spans", ("SP-3", "SP-6"),
              swarms=("swarm_failovers",)),
    # -- lock timeouts and releases -------------------------------------------------------------------
    Situation("lock-timeout", "acquisition locks expired: the records go back to AVAILABLE, durably",
              f"{_SP}: _release", ("SP-4",),
              swarms=("swarm_lifecycle",)),
    Situation("lock-timeout-at-limit",
              "an acquisition lock expired on a record's last delivery: archived (or to the DLQ), durably",
              f"{_SP}: _release", ("SP-4", "SP-5"),
              swarms=("swarm_renew",)),
    Situation("release-on-session-end",
              "a member's share session ended (closed, evicted, disconnected, group gone) while it held records: "
              "they are released",
              f"{_SP}: release_member", ("SP-15",),
              swarms=("swarm_clients",)),
    Situation("release-at-limit",
              "a member's share session ended while it held records on their last delivery: they are archived",
              f"{_SP}: _release", ("SP-15", "SP-5"),
              swarms=("swarm_renew",)),
    Situation("release-while-other-holds-earlier",
              "a member's share session ended while another member held earlier records of the same "
              "share-partition",
              f"{_SP}: release_member", ("SP-15", "SP-6", "E-3"),
              swarms=("swarm",)),
    # -- acquisition ---------------------------------------------------------------------------------
    Situation("acquire-throttled",
              "an acquisition was throttled: records at the throttle delivery count went out in a smaller batch",
              f"{_SP}: _acquire_offsets", ("SP-2", "SP-5"),
              swarms=("swarm",)),
    Situation("acquire-last-delivery-alone", "a record on its last delivery attempt was acquired alone",
              f"{_SP}: _acquire_offsets", ("SP-2", "SP-5"),
              swarms=("swarm",)),
    Situation("acquire-split-batch",
              "an in-flight batch whose offsets diverged (partly acknowledged or released) was acquired offset "
              "by offset", f"{_SP}: _acquire_in_window", ("SP-2",),
              swarms=("swarm",)),
    Situation("acquire-compacted-hole",
              "an acquisition met a hole the log cleaner left between the window's end and the next batch: "
              "archived", f"{_SP}: _acquire_new_batches", ("SP-14", "SP-7"),
              swarms=("swarm_compacted",)),
    Situation("acquire-aborted-archived",
              "a read_committed acquisition met records of an aborted transaction: archived, not delivered",
              f"{_SP}: _acquire_span, _acquire_new_batches", ("SP-13",),
              swarms=("swarm_wide",)),
    Situation("acquire-record-limit-partial",
              "a record_limit acquisition took part of a log batch and left the rest AVAILABLE",
              f"{_SP}: _acquire_new_batches", ("SP-2", "SP-7"),
              swarms=("swarm",)),
    Situation("in-flight-limit-reached",
              "a fetch found the window at its in-flight bound (max record locks): no new records acquired",
              f"{_SP}: _acquire_batches", ("SP-8",),
              swarms=("swarm_compacted",)),
    # -- the log start offset, the DLQ, recovery, fencing ---------------------------------------------
    Situation("log-start-past-spso",
              "the data partition's log start offset moved past the SPSO (retention, DeleteRecords): the "
              "window follows it", f"{_SP}: _follow_log_start", ("SP-6", "SP-14"),
              swarms=("swarm_failovers",)),
    Situation("acquired-below-log-start",
              "the log start offset moved past records a member still held: they stay with it until "
              "acknowledged or their lock expires", f"{_SP}: _keep_below", ("SP-6", "SP-4"),
              swarms=("swarm_failovers",)),
    Situation("dlq-enqueue",
              "records reached ARCHIVING durably (rejected, or at the delivery limit with a DLQ): queued for the "
              "dead-letter topic (KIP-1191)", f"{_SP}: _enqueue_archiving", ("SP-5", "SP-9"),
              swarms=("swarm_config",)),
    Situation("dlq-enqueue-failed",
              "a dead-letter produce failed (no DLQ topic, no leader, retries spent): the records are archived "
              "regardless", f"{_SL}: _dlq_failed", ("SP-5",),
              swarms=("swarm_config",)),  # its DLQ topic has one replica: a crash of that broker leaves no leader
    Situation("dlq-resumed-after-read",
              "a new leader read records back ARCHIVING (phase 1 durable, phase 2 not): it resumes the DLQ",
              f"{_SL}: _read_answered", ("SP-10",),
              rare="swarm_config (the one swarm with a DLQ) reaches it at run 128 (62 before issue 25's merges): it "
                   "needs a leader failover between a DLQ's two phases"),
    Situation("read-uninitialized-start",
              "a leader read state whose start offset was not yet known (-1): it resolved it by "
              "share.auto.offset.reset and wrote it before serving", f"{_SP}: recover", ("SP-10", "GC-7"),
              swarms=("swarm",)),
    Situation("read-failed",
              "a leader's state read failed (coordinator loading or moving, state not initialized): read again "
              "later", f"{_SP}: recover", ("SP-10", "SC-9"),
              swarms=("swarm_locks",)),
    Situation("fetch-while-loading",
              "a fetch reached a share-partition whose state was still being read or initialized",
              f"{_SL}: _lock", ("SP-10",),
              swarms=("swarm",)),
    Situation("write-fenced-leader-epoch",
              "a leader's state write was fenced by a newer leader epoch (FENCED_LEADER_EPOCH): a zombie stops",
              f"{_SP}: complete_write", ("SC-5", "SP-10"),
              swarms=("swarm_locks",)),
    Situation("write-fenced-state-epoch",
              "a leader's state write found the state re-initialized or deleted (FENCED_STATE_EPOCH, "
              "UNKNOWN_TOPIC_OR_PARTITION): it drops its state and reads again", f"{_SP}: complete_write",
              ("SP-12", "SC-5", "SC-9"),
              swarms=("swarm_lifecycle",)),
    Situation("state-epoch-reset-on-session-open",
              "a share session opened on a leader whose state an admin reset made stale: dropped and read again",
              f"{_SP}: check_state_epoch", ("SP-12",),
              swarms=("swarm_lifecycle",)),
    Situation("zombie-write-answered",
              "a state write of a leader that no longer serves (leadership moved) was answered",
              f"{_SL}: _write_answered", ("SC-5", "SP-10"),
              swarms=("swarm_lifecycle",)),
    # -- the fetch path and share sessions ------------------------------------------------------------
    Situation("fetch-lock-contended", "a fetch found a share-partition's fetch lock held by another fetch",
              f"{_SL}: _lock", ("SP-2", "E-3"),
              swarms=("swarm_fetch_path",)),
    Situation("fetch-parked-woken", "a fetch that waited in the purgatory was woken and completed",
              f"{_SL}: _wake", ("CL-1",),
              swarms=("swarm",)),
    Situation("fetch-expired-in-purgatory", "a fetch waited in the purgatory until its MaxWaitMs passed",
              f"{_SL}: _wait_over", ("CL-1",),
              swarms=("swarm",)),
    Situation("share-session-evicted-idle", "an idle share session was evicted: its member's records released",
              f"{_SL}: _maybe_evict", ("CL-1", "SP-15"),
              swarms=("swarm",)),
    Situation("share-sessions-disconnected",
              "a client's connection closed and the share sessions opened on it ended",
              f"{_SL}: on_client_disconnected", ("CL-1", "SP-15"),
              swarms=("swarm_lifecycle",)),
    Situation("group-deleted-on-leader",
              "a share group was deleted while a leader held share-partitions of it: dropped",
              f"{_SL}: on_group_deleted", ("GC-8", "SC-8"),
              swarms=("swarm_lifecycle",)),
    # -- the share coordinator -----------------------------------------------------------------------
    Situation("write-behind-stored-start",
              "a state write landed after a later one: its start offset was behind the stored one, which stays",
              f"{_SC}: write", ("SC-4",),
              swarms=("swarm_failovers",)),
    Situation("share-coordinator-loading",
              "the share coordinator answered COORDINATOR_LOAD_IN_PROGRESS while loading its partition",
              f"{_SC}: _load_error", ("SC-6",),
              swarms=("swarm",)),
    Situation("snapshot-by-update-count",
              "the share coordinator wrote a snapshot because the updates since the last one reached the limit",
              f"{_SC}: _state_record", ("SC-3",),
              swarms=("swarm_config",)),
    Situation("cold-snapshot", "the share coordinator snapshotted cold keys (trunk's snapshotColdPartitions)",
              f"{_SC}: snapshot_cold", ("SC-3", "SC-8"),
              swarms=("swarm",)),
    Situation("initialize-duplicate",
              "an InitializeShareGroupState repeated the stored state epoch and start offset: answered, nothing "
              "written", f"{_SC}: initialize", ("GC-7", "SC-5"),
              swarms=("swarm_at_rest",)),
    Situation("state-deleted", "share-partition state was deleted (a tombstone written)",
              f"{_SC}: delete", ("SC-8", "GC-8"),
              swarms=("swarm_lifecycle",)),
    Situation("state-write-inherited",
              "a state write the old share coordinator appended, whose client was told it failed, committed under "
              "the new coordinator (durable after all)", f"{_CH}: _inherited_committed", ("SC-7", "SC-6"),
              swarms=("swarm_failovers",)),
    Situation("coordinator-tail-lost",
              "a coordinator's uncommitted tail was dropped in a failover: it stops serving", f"{_CH}: _lost_tail",
              ("SC-7", "GC-6"),
              swarms=("swarm_failovers",)),
    Situation("coordinator-catching-up",
              "a coordinator served a request while the tail it loaded was not yet committed",
              f"{_CH}: _note_request", ("SC-7", "SC-6"),
              swarms=("swarm_coordinators",)),
    Situation("share-state-pruned", "the share coordinator deleted records replay no longer needs",
              f"{_CH}: _prune", ("SC-8",),
              swarms=("swarm",)),
    # -- the group coordinator and the members -------------------------------------------------------
    Situation("group-coordinator-loading",
              "the group coordinator answered COORDINATOR_LOAD_IN_PROGRESS while loading",
              "model/core/group/coordinator.py: handle", ("GC-6",),
              swarms=("swarm",)),
    Situation("share-member-fenced",
              "a share member heartbeated with a stale member epoch: FENCED_MEMBER_EPOCH",
              f"{_SG}: _check_member_epoch", ("GC-1", "CG-4"),
              swarms=("swarm_clients",)),
    Situation("share-previous-epoch-subscription-fenced",
              "a share heartbeat at the member's previous epoch carried a subscription other than the one the "
              "coordinator holds (a full heartbeat held in the network, or a lost answer's retry after a "
              "subscription change): FENCED_MEMBER_EPOCH, nothing changed (divergence "
              "previous-epoch-subscription-fenced)",
              f"{_SG}: _check_member_epoch", ("GC-2", "CG-4"),
              swarms=("swarm_clients",)),
    Situation("share-member-rejoined-after-fence",
              "a share consumer told it was fenced or unknown (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, "
              "GROUP_ID_NOT_FOUND, e.g. after its session timed out) rejoined the group",
              "model/sim/share_consumer.py: _on_heartbeat_response", ("GC-1", "CG-4"),
              swarms=("swarm",)),
    Situation("share-member-session-expired", "a share member's session timed out: removed from the group",
              f"{_SG}: expire", ("GC-1", "GC-2"),
              swarms=("swarm",)),
    Situation("share-assignment-pending-initialized",
              "partitions initialized after the target assignment was computed made it stale: a new group epoch",
              f"{_SG}: _heartbeat", ("GC-2", "GC-7"),
              swarms=("swarm",)),
    Situation("share-initialize-retried-by-heartbeat",
              "a heartbeat found a subscribed partition still initializing a retry interval after it was stamped "
              "(its initialize unanswered, or a new coordinator's load) and initialized it again, at start offset 0",
              f"{_SG}: _reinitialize_stale", ("GC-7",),
              swarms=("swarm_coordinators",)),
    Situation("share-partitions-added",
              "a subscribed topic's partitions changed: the share group's epoch bumped", f"{_SG}: _reconcile_metadata",
              ("GC-2", "GC-7"),
              swarms=("swarm_lifecycle",)),
    Situation("consumer-member-fenced",
              "a consumer-group member heartbeated with a wrong member epoch: FENCED_MEMBER_EPOCH",
              f"{_CG}: _Fenced", ("CG-4",),
              swarms=("swarm_wide",)),
    Situation("consumer-member-rejoined-after-fence",
              "a consumer told it was fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID) gave up its partitions and "
              "rejoined", "model/sim/consumer.py: _on_heartbeat_response", ("CG-4", "CG-3"),
              swarms=("swarm_wide",)),
    Situation("consumer-revocation",
              "a consumer-group member had to revoke partitions before getting new ones (UNREVOKED_PARTITIONS)",
              f"{_CG}: _next_assignment", ("CG-2", "CG-3"),
              swarms=("swarm_wide",)),
    # -- issue 25's client behaviours and broker-side faults ------------------------------------------
    Situation("consumer-closed",
              "a share consumer called close(): final acknowledgements on every share session (epoch -1), then "
              "the leave heartbeat (epoch -1)", "model/sim/share_consumer.py: close", ("CL-3", "SP-15"),
              swarms=("swarm",)),
    Situation("share-subscription-changed",
              "a share member changed its subscribed topics: the group epoch moves and the assignment follows",
              f"{_SG}: _heartbeat", ("GC-2",),
              swarms=("swarm_clients",)),
    Situation("state-partition-below-min-isr",
              "a __share_group_state partition lost its followers from the ISR: state writes there fail until "
              "they return (for good once the persister's retries run out)",
              "model/sim/controller.py: shrink_isr", ("SC-2", "SP-9"),
              swarms=("swarm_failovers",)),
    Situation("hostile-share-request-answered",
              "a buggy or hostile client's ShareFetch or ShareAcknowledge (acks on a fresh session, a stale or "
              "negative session epoch, never-acquired or duplicated acks) was answered by a leader",
              "model/sim/hostile.py: _answered", ("CL-1", "CL-2"),
              swarms=("swarm_failovers",)),
    Situation("log-start-moved-by-retention",
              "time-based retention deleted closed segments of a data partition and moved its log start offset",
              "model/sim/log_cleaner.py: check_all", ("SP-6",),
              swarms=("swarm_failovers",)),
    Situation("coordinator-load-abandoned",
              "a coordinator lost its partition while still loading it: the load is abandoned and the next "
              "leader loads from the log again", f"{_CH}: retire", ("SC-6", "GC-6"),
              swarms=("swarm_failovers",)),
    Situation("consumer-member-expired",
              "a consumer-group member was removed by its session or rebalance timeout", f"{_CG}: expire",
              ("CG-6",),
              swarms=("swarm_wide",)),
)

_BY_ID: Final = {s.id: s for s in SITUATIONS}

COUNTS: dict[str, int] = dict.fromkeys(_BY_ID, 0)
"""How often each situation was reached in the current run (every id, zeroed by ``reset``)."""


def reset() -> None:
    """Zero every counter, in place (hooks in compiled modules hold this very dict)."""
    for key in COUNTS:
        COUNTS[key] = 0


def reached() -> dict[str, int]:
    """The situations reached since ``reset``: id -> count, only nonzero, sorted by id."""
    return {key: COUNTS[key] for key in sorted(COUNTS) if COUNTS[key]}


def get(situation_id: str) -> Situation | None:
    return _BY_ID.get(situation_id)
