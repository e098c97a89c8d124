"""Mutants: named, documented bug injections that prove the invariants bite (issue 5).

Each ``Mutant`` names one realistic defect of the protocol, the invariant of
the catalogue (``invariants/``) expected to catch it, and the library scenario
in which it shows. The defect itself is a guarded hook at the exact place of
the bug in ``model/core`` or ``model/sim``::

    if _mutants.ACTIVE == "spso-before-durable":
        ...  # the broken behaviour

``ACTIVE`` is plain module state, ``None`` unless the runner has set it for a
run (``injected``): a hook costs one global load and one string comparison, and
a run in a Spark Python worker sees the mutant its own runner set. ``injected``
resets it in ``finally``, so no mutant leaks into the next run of the process,
even when a run raises.

A ``Variant`` is injected the same way but is no bug: a candidate fix, kept
beside a mutant that is Kafka trunk's behaviour. It keeps that mutant's hooks
and adds a change elsewhere. It is expected to hold every invariant, and the
tests run it on the seeds where its mutant is caught (TLA+ checks the same
variant, ``tla/``).

This module imports nothing from ``model`` (the pure core imports it) and no
SimPy.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Final

from model.unknown_name import UnknownName

ACTIVE: str | None = None
"""The name of the mutant injected into the current run, or None (the correct model)."""


@dataclass(frozen=True)
class Mutant:
    name: str
    description: str  # the defect, in the protocol's words
    expected_invariant: str  # a catalogue id (invariants/)
    scenario: str  # the library scenario in which it shows (or "swarm")
    where: str  # the module and function that carry its hook

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description,
                "expected_invariant": self.expected_invariant, "scenario": self.scenario}


MUTANTS: Final[tuple[Mutant, ...]] = (
    # -- the share-partition leader (SP-*) --------------------------------------------------------
    Mutant("spso-before-durable",
           "the SPSO advances past acknowledged records as soon as the acknowledgement is applied in memory, "
           "before its WriteShareGroupState is accepted (SP-6: only after the change is durable)",
           "spso-monotonic", "small", "model/core/share_partition.py: acknowledge, _advance_spso"),
    Mutant("read-past-lso",
           "a read_committed share-partition brings offsets into the window up to the high-water mark instead "
           "of the last stable offset, so the SPEO passes the LSO of an open transaction (SP-7, SP-13)",
           "window-bounds", "read_committed_transactions", "model/core/share_partition.py: _acquire_new"),
    Mutant("deliver-aborted",
           "a read_committed share-partition reads records as read_uncommitted (the bound is still the LSO): "
           "records of aborted transactions are delivered instead of archived (SP-13)",
           "no-aborted-delivery", "read_committed_transactions",
           "model/core/share_partition.py: _acquire_available, _acquire_new"),
    Mutant("inflight-limit-per-fetch",
           "the in-flight bound is enforced per fetch (SPEO + max record locks) instead of on the window "
           "(SPSO + max record locks), so a record stuck at the SPSO lets the window grow without bound (SP-8)",
           "window-size", "stuck_head", "model/core/share_partition.py: _acquire_new"),
    Mutant("no-limit-on-lock-timeout",
           "an expired acquisition lock returns the record to AVAILABLE without the delivery-count check, "
           "and nothing archives it later: it is delivered again above the limit (SP-4, SP-5)",
           "delivery-count-limit", "all_slow_consumers",
           "model/core/share_partition.py: _release"),
    Mutant("release-decrements-count",
           "releasing a member's acquired records when its share session ends decrements their delivery count, "
           "as if the delivery had not happened (SP-15: count unchanged; Kafka 4.2 and earlier did this, fixed "
           "by KAFKA-19972, apache/kafka 71299c229a)",
           "delivery-count-limit", "paused_session_evicted", "model/core/share_partition.py: _release"),
    Mutant("ack-from-non-owner",
           "an acknowledgement is accepted without checking that the acknowledging member owns the acquisition "
           "(SP-3): a member whose lock expired acknowledges records another member now holds",
           "exclusive-acquisition", "all_slow_consumers", "model/core/share_partition.py: _not_acknowledgeable"),
    Mutant("ack-after-lock-expired",
           "acquisition locks are swept only when the leader next acquires (no timer), and an acknowledgement "
           "does not check the lock deadline (SP-3, SP-4): an acknowledgement after the lock expired is accepted",
           "exclusive-acquisition", "all_slow_consumers",
           "model/core/share_partition.py: _not_acknowledgeable, acquire, next_lock_deadline_ms"),
    Mutant("recover-resets-counts",
           "a new leader restores the persisted batches with delivery count 0 instead of their durable count "
           "(SP-10, SP-11: counts never fall below their durable value)",
           "counts-not-below-durable", "slow_consumers_leader_moves", "model/core/share_partition.py: recover"),
    Mutant("recover-ignores-start-offset",
           "a new leader takes the stored start offset for \"not yet known\" (-1) and applies "
           "share.auto.offset.reset, so offsets below it, acknowledged and pruned from the state, are delivered "
           "again (SP-10)",
           "no-redelivery-after-accept", "leadership_move", "model/core/share_partition.py: recover"),
    Mutant("persist-acquired",
           "a lock-timeout or release write persists the records' current in-memory state (ACQUIRED) instead "
           "of the state they move to, and the share coordinator stores it without checking the delivery state "
           "(SP-1: ACQUIRED is never persisted; Kafka trunk's coordinator stores any state it is sent, so under "
           "protocol kafka only the leader's half is the mutant's)",
           "record-state-transition", "all_slow_consumers",
           "model/core/share_partition.py: _release; model/core/share_coordinator.py: _invalid_write"),
    Mutant("continue-unknown-session",
           "a broker that has no share session for a member (it restarted, or evicted it) accepts a ShareFetch "
           "continuing one with epoch N and creates the session on the fly, instead of SHARE_SESSION_NOT_FOUND "
           "(CL-1: only epoch 0 opens a session)",
           "share-session-epoch", "paused_session_evicted", "model/core/share_session.py: ShareSessionCache._continue"),
    Mutant("start-offset-every-write",
           "every WriteShareGroupState carries the leader's current SPSO, however many writes are in flight, "
           "and the share coordinator stores the start offset it is sent, so a write retried after a newer one "
           "landed moves the stored start offset back below records acknowledged since (SP-6, SP-9: the SPSO "
           "only if it moved; Kafka 4.3 and earlier; trunk's coordinator keeps the higher since apache/kafka "
           "b77567478f, 2026-08-04 (4.4), and still sends this payload: the variant start-offset-every-write-max)",
           "no-redelivery-after-accept", "late_start_offset_write",
           "model/core/share_partition.py: _payload; model/core/share_coordinator.py: write"),
    Mutant("start-offset-regression",
           "the share coordinator stores the start offset a WriteShareGroupState carries even when it is below "
           "the stored one, so a write that lands after a later one (a retry, or a client replaying a write it "
           "captured on the wire) moves the stored start offset back and uncovers offsets the later write moved "
           "past (SP-6; Kafka 4.3 and earlier, whose coordinator took the written start offset; trunk keeps the "
           "higher since apache/kafka b77567478f). The coordinator alone: the leaders' payload is the model's",
           "stored-start-offset-monotonic", "hostile_state_requests", "model/core/share_coordinator.py: write"),
    Mutant("orphan-on-group-empty",
           "when a share group's last share session on a broker ends with its connection, the broker drops the "
           "group's share-partitions and builds new ones on the next fetch, which read the state again at the "
           "same leader and state epochs, while the old ones, only marked fenced, still send their writes "
           "(SPEC.md: a share-partition lives as long as its leader's tenure; Kafka trunk does this: "
           "ShareGroupListener.onGroupEmpty, SharePartition.markFenced)",
           "exclusive-acquisition", "orphaned_share_partition",
           "model/sim/share_leader.py: ShareLeaderHost._orphan_group"),
    Mutant("lock-timeout-before-write",
           "an expired acquisition lock makes its records AVAILABLE (or ARCHIVED at the limit) in memory at once "
           "and only then writes the change, whose failure is only logged: the records are delivered again while "
           "their delivery count is not durable, so one failover can lose two or more increments (SP-4, SP-9: the "
           "write first; SP-11; Kafka trunk does this: SharePartition.releaseAcquisitionLockOnTimeout)",
           "deliveries-within-failover-bound", "lock_timeout_write_delayed",
           "model/core/share_partition.py: _release, _write_failed"),
    Mutant("read-not-retried",
           "a share-partition leader whose ReadShareGroupState failed (state not there yet, coordinator moving) "
           "never reads again, so it never serves the partition (SP-10)",
           "eventual-resolution", "lost_state_reads", "model/sim/share_leader.py: ShareLeaderHost._read_answered"),
    # -- the share coordinator (SC-*) ----------------------------------------------------------------
    Mutant("respond-before-commit",
           "the share coordinator answers a WriteShareGroupState as soon as it appended the record, before it "
           "is committed (SC-7): the leader confirms an acknowledgement whose write is not durable (SP-9)",
           "ack-after-durable-write", "small", "model/sim/coordinator_host.py: ShareCoordinatorHost.handle"),
    Mutant("read-keeps-leader-epoch",
           "ReadShareGroupState with a higher leader epoch answers the state without storing the new leader "
           "epoch, so the old leader's late writes are not fenced (SC-5, the zombie-leader rule)",
           "zombie-write-fenced", "zombie_leader_writes", "model/core/share_coordinator.py: read"),
    Mutant("reinit-drops-leader-epoch",
           "re-initializing a share-partition's state (admin reset, SP-12) stores leader epoch -1 instead of "
           "keeping the stored one, so a zombie leader is no longer fenced (SC-5)",
           "stored-epoch-sources", "admin_alter_and_delete", "model/core/share_coordinator.py: initialize"),
    Mutant("negative-epoch-accepted",
           "the share coordinator takes a leader or state epoch of -1 in a ReadShareGroupState or "
           "WriteShareGroupState for \"not given\": neither is checked, a write is applied and a read answered, "
           "instead of INVALID_REQUEST (SC-5; Kafka 4.3 and earlier; trunk refuses negative epochs since "
           "KAFKA-20743, apache/kafka cde0d5687d): a misbehaving client writes the state of a share-partition "
           "whose leader epoch it does not hold",
           "negative-epoch-changes-nothing", "hostile_state_requests",
           "model/core/share_coordinator.py: read, write, _stale_state_epoch"),
    Mutant("snapshot-after-limit-plus-one",
           "the share coordinator writes a ShareSnapshot only once the updates since the last one exceed the "
           "limit, one update too late (SC-3: <= limit)",
           "snapshot-update-limit", "share_coordinator_between_snapshots",
           "model/core/share_coordinator.py: _state_record"),
    Mutant("replay-skips-updates",
           "a newly elected share coordinator loads only the ShareSnapshot records and skips the ShareUpdates "
           "after them (SC-2, SC-6: replay equals the old coordinator's state)",
           "coordinator-replay-equal", "share_coordinator_failover",
           "model/sim/coordinator_host.py: ShareCoordinatorHost._replayed"),
    Mutant("prune-past-snapshot",
           "the share coordinator prunes up to the newest latest ShareSnapshot among live keys instead of the "
           "oldest, deleting the snapshots other keys still need: the next coordinator loads them without "
           "their state (SC-8)",
           "coordinator-replay-equal", "share_coordinator_pruning",
           "model/sim/coordinator_host.py: ShareCoordinatorHost._prune"),
    # -- the group coordinator (GC-*, CG-*) ------------------------------------------------------------
    Mutant("assign-uninitialized",
           "the SimpleAssignor is given partitions whose share-group state is still initializing (GC-5, GC-7)",
           "assign-initialized-only", "small", "model/core/group/share_group.py: _assignable"),
    Mutant("group-epoch-not-replayed",
           "a new group coordinator skips the ShareGroupMetadata records on load, so the group epoch restarts "
           "below the replayed assignment epoch (GC-2, GC-3, GC-6)",
           "group-epoch-order", "group_coordinator_failover",
           "model/sim/coordinator_host.py: GroupCoordinatorHost._replayed"),
    Mutant("reinitialize-on-load",
           "a newly elected group coordinator initializes again every share-partition it had already "
           "initialized (InitializeShareGroupState is not idempotent: the state is wiped to start offset -1 "
           "under a new state epoch) while members still hold those partitions (GC-6, GC-7)",
           "assign-initialized-only", "group_coordinator_failover",
           "model/core/group/share_group.py: ShareGroupManager.on_loaded"),
    Mutant("recreated-group-restarts-epoch",
           "a share group deleted and created again starts its group epoch from a new group's again, so its "
           "share-partitions are initialized at a state epoch the deleted state already had, and a write of the "
           "earlier life "
           "still in flight is not fenced (GC-7, GC-8, SC-5); Kafka trunk's behaviour (a new ShareGroup starts "
           "at epoch 1), kept as a divergence",
           "earlier-life-write-fenced", "deleted_group_late_write",
           "model/core/group/share_group.py: ShareGroupManager.replay"),
    Mutant("group-epoch-from-zero",
           "under protocol kafka a new share group starts at group epoch 0, as Kafka did before KAFKA-20268 "
           "(fixed by commit 5c8e3c58da, trunk 2026-03, which starts groups at epoch 1 with an empty target at "
           "epoch 1): its first member is reconciled to epoch 1, the initial assignment's epoch (GC-2, GC-3); "
           "consumer groups likewise (CG-1)",
           "group-epoch-order", "small", "model/core/group/share_group.py: ShareGroupManager._initial_epoch"),
    Mutant("initialized-never-assigned",
           "the group coordinator records share-partitions initialized but no heartbeat notices that the target "
           "assignment lacks them (trunk's initializedAssignmentPending), so they are assigned only when a member "
           "joins, leaves or changes its subscription (GC-2, GC-7)",
           "eventual-resolution", "small",
           "model/core/group/share_group.py: ShareGroupManager._initialized_assignment_pending"),
    Mutant("simple-assignor-unbalanced",
           "the SimpleAssignor (trunk's builders) skips the step that takes partitions back from members holding "
           "more than their desired count, so a member that joins a group whose members hold every partition "
           "gets none (GC-5; trunk revokes them)",
           "target-assignment-balanced", "lost_heartbeats",
           "model/core/group/simple_assignor.py: _Fill.run"),
    Mutant("delete-unfenced",
           "a share coordinator deletes a share-partition's state on any DeleteShareGroupState, whatever life it "
           "was sent for (Kafka's request carries no epoch): a delete a deposed group coordinator had on the wire "
           "deletes the state of the group created and initialized since, which its leaders can never read again "
           "(SC-8, GC-8)",
           "earlier-life-delete-fenced", "stale_state_delete", "model/core/share_coordinator.py: delete"),
    Mutant("delivery-complete-count-wrong",
           "a share-partition leader counts the records it has delivered (ACQUIRED) as delivery-complete in the "
           "DeliveryCompleteCount it writes with its state (KIP-1226: only Acknowledged and Archived records "
           "are), so the lag the group coordinator reports from it is too small",
           "delivery-complete-count", "small", "model/core/share_partition.py: _complete_from"),
    Mutant("delivery-complete-count-last-write",
           "the share coordinator stores the DeliveryCompleteCount of whichever WriteShareGroupState lands last, "
           "so a write that lands after a later one (a retry, a replayed request) takes back completions the "
           "later one counted at the same start offset (KIP-1226; Kafka 4.2 and later until apache/kafka "
           "2225a16c7e, 2026-08-07, which keeps the higher count at an equal start offset and the stored one "
           "behind it)",
           "stored-delivery-complete-count", "hostile_complete_count",
           "model/core/share_coordinator.py: _written_count"),
    Mutant("initialize-overwrites",
           "the share coordinator answers a duplicate InitializeShareGroupState (same state epoch and start "
           "offset) by writing a fresh snapshot that drops the state's batches and every start offset move since "
           "(Kafka trunk's initializeState answers it without writing)",
           "stored-delivery-complete-count", "duplicate_initialize",
           "model/core/share_coordinator.py: initialize"),
    Mutant("share-coordinator-stale-metadata",
           "a share coordinator keeps the metadata image it was loaded with and misses every later update (trunk's "
           "ShareCoordinatorShard.onMetadataUpdate), so it answers UNKNOWN_TOPIC_OR_PARTITION to the "
           "InitializeShareGroupState of a partition added since: the group coordinator retries for ever and "
           "the new partition is never assigned",
           "eventual-resolution", "share_coordinator_new_partition",
           "model/core/share_coordinator.py: on_metadata_update"),
    Mutant("cold-snapshot-ignores-updates",
           "the share coordinator's cold snapshot (trunk's snapshotColdPartitions) rewrites a key's latest "
           "snapshot as it was, without the updates written since: the start offset they moved and the batches "
           "they acknowledged are lost once the snapshot commits (SC-2, SC-8; Kafka's "
           "testSnapshotColdPartitionsSnapshotUpdateNotConsidered in ShareCoordinatorShardTest guards it)",
           "stored-start-offset-monotonic", "share_coordinator_pruning",
           "model/core/share_coordinator.py: snapshot_cold"),
    Mutant("rejoin-with-old-epoch",
           "a share member answered UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH rejoins with its last member epoch "
           "instead of epoch 0, is fenced again, and never gets back into the group (GC-1, KIP-848)",
           "member-convergence", "consumer_pause",
           "model/core/group/share_member.py: ShareMember._start_over, heartbeat"),
    Mutant("handover-before-revoke",
           "a consumer-group partition is handed to its new owner while the previous owner has not revoked it "
           "yet (CG-2 pending partitions, CG-3)",
           "exclusive-ownership", "kip848_fenced_member",
           "model/core/group/consumer_group.py: _next_assignment, ConsumerGroup.put_member"),
    Mutant("keep-partitions-after-fenced",
           "a KIP-848 consumer answered FENCED_MEMBER_EPOCH keeps consuming the partitions it owned while it "
           "rejoins (CG-4: it loses them all), so they are owned twice once reassigned (CG-3)",
           "exclusive-ownership", "kip848_fenced_member", "model/core/group/consumer_member.py: on_response"),
    # -- the fetch path (model/sim/share_leader.py, handlers.py) -------------------------------------------
    Mutant("fetch-lock-leak",
           "a delayed share fetch that reaches its max records before it gets to all of its share-partitions "
           "returns early without releasing their fetch locks: no later fetch takes the lock, so those "
           "share-partitions starve (the leak Kafka's DelayedShareFetch guards against on every exit path; "
           "trunk's KAFKA-20783 series, commits 45443a6a6f and 8fc539cb38, made the async read paths release "
           "in finally blocks; no released Kafka is known to leak this way)",
           "eventual-resolution", "fetch_lock_leak", "model/sim/share_leader.py: _try_complete"),
    Mutant("fetch-without-lock",
           "share fetches take no fetch lock, so two fetches read and acquire one share-partition at once: "
           "the new records one read are acquired by the other meanwhile and then acquired again from the "
           "stale read (the concurrent fetch of one share-partition the fetch lock exists to prevent, SP-2; "
           "before KAFKA-19215, commit 33abb655eb, first in Kafka 4.1, a fetch could release a lock another "
           "fetch held, letting a third in beside it)",
           "exclusive-acquisition", "swarm_fetch_path", "model/sim/share_leader.py: _lock, _unlock, _acquire"),
    Mutant("fetch-not-woken-by-writes",
           "a delayed share fetch is not woken when a state write is answered, so records an acknowledgement, "
           "a release or a lock timeout made AVAILABLE wait for new data, another fetch or its MaxWaitMs "
           "(Kafka checks the purgatory after each: SharePartitionManager's acknowledge and release, and the "
           "acquisition-lock timeout since KAFKA-17400, apache/kafka#16969)",
           "fetch-woken-when-acquirable", "purgatory_wakeup", "model/sim/share_leader.py: _write_answered"),
    # -- the coordinator runtime (SC-6, SC-7) --------------------------------------------------------
    Mutant("read-uncommitted-coordinator-state",
           "the share coordinator answers a ReadShareGroupState at once from its last written state, not once "
           "that state has committed (Kafka's CoordinatorRuntime defers it: scheduleWriteOperation, "
           "waitForPendingWrites, DeferredEventQueue until the high-water mark passes lastWrittenOffset): a "
           "new leader takes a leader epoch the coordinator has not made durable, a failover truncates it, "
           "and the old leader's late writes are accepted (SC-5, SC-7)",
           "zombie-write-fenced", "coordinator_read_truncated",
           "model/sim/coordinator_host.py: ShareCoordinatorHost.handle"),
    # -- acknowledgements (issue 24) -------------------------------------------------------------------
    Mutant("renew-ignored",
           "a RENEW acknowledgement (KIP-1222) is answered with success but the acquisition lock is not restarted: "
           "the lock expires at its old deadline under a member told it still holds the records, which go to "
           "another member (trunk restarts the lock, acknowledgeCompleteBatch / acknowledgePerOffsetBatchRecords)",
           "exclusive-acquisition", "renew_slow_processing",
           "model/core/share_partition.py: _apply_acknowledgement"),
    # -- the share-partition leader's batch-wise acquisition (Kafka trunk, issue 24) ----------------
    Mutant("ignore-batch-split",
           "an in-flight batch whose offsets diverged (some acknowledged, some released) is acquired whole, by "
           "the state of its first offset, instead of offset by offset (SharePartition.acquire's offsetState "
           "check): accepted records are delivered again",
           "no-redelivery-after-accept", "poison", "model/core/share_partition.py: _acquire_batches"),
    Mutant("ignore-fetch-offset",
           "every fetch reads from the end of the in-flight window instead of the next fetch offset "
           "(SharePartition.nextFetchOffset): released and timed-out records are never fetched again",
           "eventual-resolution", "poison", "model/core/share_partition.py: _acquire_batches"),
    Mutant("no-throttling",
           "no delivery-count throttling: records at max(2, ceil(limit/2)) deliveries are acquired with their "
           "whole batch and a record on its last attempt with others, so a poison record takes its batch to "
           "the limit (Kafka before KIP-1222's throttling)",
           "last-delivery-alone", "poison", "model/core/share_partition.py: _acquire_batches, _acquire_offsets"),
    Mutant("record-limit-rest-locked",
           "in record_limit mode the offsets of a new batch past max fetch records are kept ACQUIRED by no one and "
           "under no lock instead of AVAILABLE: they are never delivered (SharePartition.createBatches)",
           "eventual-resolution", "record_limit_acquire", "model/core/share_partition.py: _acquire_new_batches"),
    Mutant("group-limit-ignored",
           "the share-partition reads the broker's group.share.delivery.count.limit and ignores the group's own "
           "share.delivery.count.limit (GroupConfig, ShareGroupConfigProvider)",
           "delivery-count-limit", "group_delivery_limit", "model/core/share_partition.py: delivery_count_limit"),
    Mutant("serve-while-loading",
           "a share-partition leader whose state is still being read from the share coordinator serves ShareFetch "
           "and ShareAcknowledge instead of answering LEADER_NOT_AVAILABLE (trunk: "
           "SharePartition.initializedOrThrowException, maybeInitialize): it acquires from an empty window at the "
           "log's start, handing out records an earlier leader had seen accepted, then drops those acquisitions "
           "when the state arrives. Models no known Kafka defect",
           "no-redelivery-after-accept", "lost_state_reads", "model/core/share_partition.py: ready"),
    # -- the log start offset (DeleteRecords, issue 24) -----------------------------------------------
    Mutant("log-start-unheard",
           "the share-partition leader never follows its data partition's log start offset (neither when "
           "DeleteRecords moves it nor at its next fetch or acknowledgement): the SPSO stays below the records "
           "deleted before delivery, which no fetch can return, so the share-partition never gets past them "
           "(trunk: SharePartition.updateCacheAndOffsets, called from the fetch path once the log start passed "
           "the start offset, archives what is AVAILABLE below it and moves the start offset)",
           "eventual-resolution", "delete_records",
           "model/core/share_partition.py: _follow_log_start; model/sim/share_leader.py: on_log_start_moved"),
    # -- the dead-letter queue (KIP-1191, issue 24) ----------------------------------------------------
    Mutant("dlq-enqueue-lost",
           "the share-partition leader takes the DLQ enqueue of records durably ARCHIVING as done without "
           "producing them to the group's dead-letter topic, and makes them ARCHIVED: rejected and poison "
           "records vanish instead of reaching the DLQ (trunk produces them first, "
           "SharePartition.initiateDLQAndArchive via ShareGroupDLQManager.enqueue)",
           "dead-letter-queue", "dead_letter_queue", "model/sim/share_leader.py: ShareLeaderHost._dlq_produce"),
    Mutant("dlq-skips-phase-two",
           "records durably ARCHIVING are produced to the dead-letter topic but never moved to ARCHIVED (no "
           "phase-2 write): ARCHIVING is not terminal, so the SPSO stops at them and the share-partition never "
           "resolves (trunk archives them whatever the enqueue's outcome, initiateDLQAndArchive)",
           "eventual-resolution", "dead_letter_queue", "model/core/share_partition.py: complete_dlq"),
    # -- GAP acknowledgements of compacted offsets (issue 24) -------------------------------------------
    Mutant("gap-ack-for-records",
           "an off-by-one in the client's walk over the fetched batches (ShareCompletedFetch.fetchRecords): the "
           "record after each run of offsets with no record is acknowledged GAP too, so a record no application "
           "processed is archived as if compacted away. Models no known Kafka defect",
           "gap-only-without-record", "compacted_topic", "model/sim/share_consumer.py: _decide"),
    # -- client behaviours (issue 25: close, fence and rejoin, subscription changes) ---------------------
    Mutant("restart-after-close-stays-left",
           "a share consumer started again after close() keeps the membership that left the group (epoch -1) "
           "instead of joining as a new member with epoch 0: it never heartbeats, holds no assignment and "
           "reads nothing (CL-3, GC-1)",
           "member-convergence", "consumer_close", "model/sim/share_consumer.py: ShareConsumer.on_start"),
    Mutant("fenced-member-gives-up",
           "a share member answered FENCED_MEMBER_EPOCH (its epoch two or more behind the coordinator's, e.g. "
           "after two lost heartbeat responses) takes it for a fatal error and stops, instead of abandoning its "
           "assignment and rejoining with epoch 0 as Kafka's ShareMembershipManager does (GC-1; KIP-848)",
           "member-convergence", "member_fenced", "model/core/group/share_member.py: ShareMember.on_response"),
    Mutant("subscription-change-keeps-assignment",
           "the group coordinator records a share member's new subscription but does not bump the group epoch "
           "for it, so the target assignment is not recomputed: the member keeps the partitions of the topics it "
           "left and gets none of the topics it joined (GC-2; trunk's shareGroupHeartbeat bumps the epoch when "
           "the subscribed topic names change)",
           "eventual-resolution", "consumer_subscribe", "model/core/group/share_group.py: _heartbeat"),
    Mutant("previous-epoch-subscription-applied",
           "the group coordinator applies the subscription of a share member's heartbeat at its previous epoch "
           "even when it differs from the one it holds: a full heartbeat held in the network, handled after a "
           "newer one that changed the subscription, restores the old subscription, which the client (sending "
           "it only when it changes) never sends again, so the new topic is never assigned (GC-2, E-1; Kafka "
           "trunk does this: GroupMetadataManager accepts the previous epoch and applies subscribedTopicNames)",
           "eventual-resolution", "held_heartbeat_subscription",
           "model/core/group/share_group.py: _check_member_epoch"),
    # -- share-state writes failing for good (issue 25) --------------------------------------------------
    Mutant("failed-ack-write-kept",
           "an acknowledgement whose WriteShareGroupState failed for good (the persister's retries ran out) is "
           "not rolled back: the leader keeps its records ACKNOWLEDGED in memory and moves the SPSO past them, "
           "although the client is told the acknowledgement failed and the state never recorded it (trunk: "
           "SharePartition.acknowledge's write callback rolls the in-flight state back, "
           "rollbackOrProcessStateUpdates)",
           "spso-monotonic", "state_partition_under_min_isr", "model/core/share_partition.py: _write_failed"),
    # -- hostile requests to share-partition leaders (issue 25) ------------------------------------------
    Mutant("fresh-session-acks-accepted",
           "a ShareFetch that opens a share session (epoch 0) and carries acknowledgements is served: the session "
           "opens and the acknowledgements go to the share-partitions, instead of INVALID_REQUEST for the whole "
           "request (trunk: SharePartitionManager.newContext; the acknowledgements belong to an earlier session "
           "whose acquisitions the new one does not own)",
           "refused-share-request-changes-nothing", "hostile_share_request",
           "model/core/share_session.py: ShareSessionCache.share_fetch"),
    # -- issue 25: oracles that never trust the code they check -------------------------------------------
    Mutant("replay-forgets-update-count",
           "a newly elected share coordinator replays the ShareUpdate records after a key's last ShareSnapshot "
           "but does not count them (its count of updates since the snapshot restarts at 0 at every load), so "
           "it writes up to a whole limit of further updates before the next snapshot: the log holds more "
           "updates since the snapshot than the limit (SC-3; trunk's handleShareUpdate counts replayed "
           "updates). The coordinator's own count stays within the limit",
           "snapshot-update-limit", "share_coordinator_between_snapshots",
           "model/core/share_coordinator.py: ShareCoordinatorShard.apply"),
    Mutant("update-keeps-complete-count",
           "the share coordinator's apply keeps the stored DeliveryCompleteCount when it applies a ShareUpdate "
           "instead of taking the update's (KIP-1226; trunk's ShareCoordinatorShard.merge replaces it), live "
           "and at replay alike: the read-summary answers a stale count. A reference built with the same apply "
           "agrees with it",
           "coordinator-replay-equal", "share_coordinator_failover",
           "model/core/share_coordinator.py: ShareCoordinatorShard.apply"),
    Mutant("start-offset-skips-released",
           "a share-partition leader's WriteShareGroupState carries a start offset past the leading records "
           "that are terminal or were released back to AVAILABLE, as if those were done; its own SPSO stays, "
           "the share coordinator stores the start offset durably, and the next leader starts past records no "
           "client acknowledged (SP-6: the SPSO passes only records acknowledged or archived for a reason). "
           "The durable write hid it from the check before issue 25",
           "spso-monotonic", "slow_consumers_leader_moves",
           "model/core/share_partition.py: _payload, _mutant_start_past_released"),
    Mutant("aborted-transaction-holds-lso",
           "a data partition never takes an aborted transaction's marker as written, so the transaction holds "
           "the last stable offset back for good: a read_committed share group never reads the records "
           "produced after it (E-1; KIP-932 reads up to the LSO, which moves past an ended transaction). "
           "E-1 counted only up to the log's own bound before issue 25 and saw nothing",
           "eventual-resolution", "read_committed_transactions",
           "model/core/log.py: PartitionLog.end_transaction"),
    Mutant("initialized-when-sent",
           "the group coordinator records a share-partition initialized when it sends the "
           "InitializeShareGroupState, not when the share coordinator answers it, so a heartbeat may assign "
           "it before any share-group state exists (GC-5, GC-7). Its own initialized set agrees, so the check "
           "before issue 25 saw nothing; the state log shows no ShareSnapshot yet",
           "assign-initialized-only", "swarm",
           "model/core/group/share_group.py: ShareGroupManager._begin_initialize"),
    # -- issue 25's new invariants (newinv) -----------------------------------------------------------
    Mutant("no-release-on-session-end",
           "a share session that ends (closed with epoch -1, evicted, its connection closed) is removed from the "
           "cache but the member's acquired records are not released: they stay ACQUIRED until their locks "
           "expire (SP-15; trunk: SharePartitionManager.releaseSession calls SharePartition."
           "releaseAcquiredRecords for each of the session's partitions)",
           "release-on-session-end", "paused_session_evicted",
           "model/sim/share_leader.py: ShareLeaderHost._release_session"),
    Mutant("archive-below-limit",
           "an off-by-one in the delivery-count limit on a lock timeout or a session release: a record is "
           "archived when its count reaches limit - 1 instead of the limit, so it gets one delivery fewer "
           "than the group allows (SP-5; trunk: InFlightState.tryUpdateState compares with "
           "maxDeliveryCount)", "archive-only-for-reason", "all_slow_consumers",
           "model/core/share_partition.py: _release"),
    Mutant("ack-across-sessions",
           "the share consumer keeps the acknowledgements of records it acquired in a share session that has "
           "started over (a session error, a lost request) and sends them in the new session; a broker that did "
           "not hear the old session end still holds the records for the member and takes them (CL-2: an "
           "acknowledgement is for records acquired in the same session; the Java consumer fails them)",
           "ack-own-session-only", "ack_after_session_reset",
           "model/sim/share_consumer.py: _processed, _on_session_error"),
    Mutant("offset-reset-ignored",
           "a share-partition whose state has no start offset yet (-1) starts at the log's end whatever the "
           "group's share.auto.offset.reset says: an earliest group never sees the records produced before its "
           "leader first served (SP-10; trunk: SharePartition.maybeInitialize via offsetForEarliestTimestamp "
           "or offsetForLatestTimestamp as the group's config says)",
           "subscribed-records-delivered", "small", "model/core/share_partition.py: recover"),
)


@dataclass(frozen=True)
class Variant:
    """A candidate fix: mutant ``base`` (trunk's behaviour) and a change at ``where`` that makes it safe."""

    name: str
    base: str  # the mutant whose behaviour the variant keeps
    description: str  # the change, and why it should be enough
    where: str  # the module and function that carry its own hook


VARIANTS: Final[tuple[Variant, ...]] = (
    Variant("start-offset-every-write-max", "start-offset-every-write",
            "trunk's payload (every WriteShareGroupState carries the SPSO), and a share coordinator that never "
            "lowers the stored start offset within a state epoch: a write retried behind newer ones cannot move "
            "it back (TLA+: start_every_write_max). Kafka trunk since apache/kafka b77567478f; the coordinator "
            "is sharesim's own since then, so the variant differs from its mutant only there",
            "model/core/share_partition.py: _payload"),
)

_BY_NAME: Final = {m.name: m for m in MUTANTS}
_VARIANT_BY_NAME: Final = {v.name: v for v in VARIANTS}


class UnknownMutant(UnknownName):
    """An unknown mutant name; the message lists the known ones."""

    kind = "mutant"


def names() -> list[str]:
    return sorted(_BY_NAME)


def variant_names() -> list[str]:
    return sorted(_VARIANT_BY_NAME)


def injectable_names() -> list[str]:
    """What ``--mutant`` takes: the mutants, then the variants."""
    return names() + variant_names()


def get(name: str) -> Mutant:
    mutant = _BY_NAME.get(name)
    if mutant is None:
        raise UnknownMutant(name, names())
    return mutant


def injectable(name: str) -> Mutant | Variant:
    """The mutant or variant ``name``: what ``--mutant`` takes."""
    found = _BY_NAME.get(name) or _VARIANT_BY_NAME.get(name)
    if found is None:
        raise UnknownMutant(name, injectable_names())
    return found


@contextmanager
def injected(name: str | None) -> Iterator[Mutant | Variant | None]:
    """Inject mutant or variant ``name`` (None: none) for the body; always reset afterwards."""
    global ACTIVE
    mutant = None if name is None else injectable(name)
    if ACTIVE is not None:
        raise RuntimeError(f"mutant {ACTIVE!r} is already injected; runs with mutants do not nest")
    ACTIVE = name
    try:
        yield mutant
    finally:
        ACTIVE = None
