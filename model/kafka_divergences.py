"""Where sharesim differs from the Kafka it follows, on purpose: the one list.

sharesim follows Apache Kafka trunk at ``model.core.config.KAFKA_TRUNK_COMMIT`` wherever the KIPs
leave a choice (``sharesim.protocol = "kafka"``, the default). Each entry here is a place where it
does not, with why, and the tests that show the difference (``tests/test_kafka_divergences.py``
checks that each named test exists). Two kinds:

* ``divergence``: Kafka's behaviour breaks a safety property the model checks (its mutant shows
  it), or the model keeps a protocol rule Kafka does not; sharesim keeps its own.
* ``abstraction``: a simplification of how Kafka runs that changes nothing the invariants judge.

The conformance suite's strict xfails (``tests/conformance/divergences.py``) name entries of this
list, so a translated Kafka test that fails for one of these reasons says which.

Plain data, no imports from the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Divergence:
    name: str
    kind: str  # "divergence" or "abstraction"
    sharesim: str  # what the model does
    kafka: str  # what Kafka trunk does at the pinned commit (its classes and methods)
    why: str
    tests: tuple[str, ...]  # "path::function" of the tests that show it
    mutant: str | None = None  # the mutant that does what trunk does, where there is one


DIVERGENCES: Final[tuple[Divergence, ...]] = (
    Divergence(
        "lock-timeout-waits-for-write", "divergence",
        "records whose acquisition lock expired stay in transition until the lock timeout's state write is "
        "accepted (SP-9), and a failed write is sent again",
        "SharePartition.releaseAcquisitionLockOnTimeout makes them AVAILABLE (or ARCHIVED at the limit) at once "
        "and only logs a failed write",
        "the records are delivered again while their delivery count is not durable, so one failover can lose "
        "several increments: the mutant violates deliveries-within-failover-bound (SP-11) on "
        "lock_timeout_write_delayed seed 1 and swarm_locks seed 34",
        ("tests/conformance/test_share_partition.py::test_acquisition_lock_on_batch_with_write_share_group_state_failure",
         "tests/model/sim/test_kafka_trunk_divergences.py::"
         "test_records_delivered_again_before_their_lock_timeout_write_lands_lose_two_increments_in_a_failover"),
        "lock-timeout-before-write"),
    Divergence(
        "unknown-topic-write-drops-state", "divergence",
        "any write answered UNKNOWN_TOPIC_OR_PARTITION drops the leader's state (the model's share coordinator "
        "answers it only for a key deleted with its group or topic, SC-9)",
        "an acknowledgement's records roll back to ACQUIRED and SharePartitionManager fences and drops the "
        "share-partition (fencedSharePartitionHandler), the same outcome; after a lock-timeout or release write "
        "trunk only logs the error",
        "after a lock-timeout or release write trunk serves on from state that no longer exists",
        ("tests/conformance/test_share_partition.py::test_acknowledge_batch_with_write_share_group_state_failure",),
    ),
    Divergence(
        "ack-below-spso-confirmed", "divergence",
        "an acknowledgement of offsets below the SPSO but at or above the log start offset is "
        "INVALID_RECORD_STATE",
        "SharePartition.acknowledge skips every batch below its start offset with success",
        "a consumer whose lock expired would be told its late ACCEPT or REJECT took effect after another "
        "member's acknowledgement completed the records (E-3: acknowledgements from anyone else are rejected)",
        ("tests/model/core/test_share_partition.py::test_late_ack_below_the_spso_is_refused_where_trunk_confirms_it",),
    ),
    Divergence(
        "share-partitions-live-with-the-leader", "divergence",
        "a broker keeps a group's share-partitions for as long as it leads them, and drops them only when the "
        "group is deleted",
        "ShareGroupListener.onGroupEmpty: when the group's last share session on a broker ends, "
        "SharePartitionManager removes its share-partitions (only marking them fenced) and builds new ones on "
        "the next fetch, at the same leader and state epochs",
        "the old share-partitions still send their writes beside the new ones: the mutant violates "
        "exclusive-acquisition (SPEC.md: a share-partition lives as long as its leader's tenure)",
        ("tests/model/sim/test_kafka_trunk_divergences.py::"
         "test_a_share_partition_rebuilt_after_its_group_emptied_hands_out_records_again",),
        "orphan-on-group-empty"),
    Divergence(
        "recreated-group-carries-epoch", "divergence",
        "a share group deleted and created again carries its group epoch on (GC-7), so its share-partitions are "
        "initialized above every earlier state epoch",
        "a new ShareGroup under the same id starts at epoch 1 (KAFKA-20268)",
        "a write of the deleted group's life still in flight would not be fenced (SC-5): the mutant shows it",
        ("tests/model/core/group/test_share_group.py::"
         "test_a_recreated_group_initializes_its_state_above_every_earlier_state_epoch",),
        "recreated-group-restarts-epoch"),
    Divergence(
        "delete-fenced-by-life", "divergence",
        "a share coordinator ignores a DeleteShareGroupState sent for an earlier life of the state (SC-8, GC-8); "
        "so that a later life always begins above such a delete, a group that outlives a deletion of its state "
        "takes a new group epoch before initializing it again",
        "ShareCoordinatorShard deletes on any DeleteShareGroupState (the request carries no epoch)",
        "a delete a deposed group coordinator left on the wire would delete the state of the group created "
        "since, which its leaders could never read again",
        ("tests/model/sim/test_kafka_trunk_divergences.py::"
         "test_a_delete_a_deposed_group_coordinator_left_on_the_wire_deletes_the_new_life",
         "tests/model/sim/test_kafka_trunk_divergences.py::"
         "test_a_group_that_outlives_its_state_deletion_initializes_the_next_life_above_every_delete"),
        "delete-unfenced"),
    Divergence(
        "previous-epoch-subscription-fenced", "divergence",
        "a share member's heartbeat at its previous member epoch whose subscription differs from the one the "
        "group coordinator holds is answered FENCED_MEMBER_EPOCH and changes nothing (GC-2)",
        "GroupMetadataManager accepts the previous epoch (the answer that moved the member may have been lost) "
        "and applies the heartbeat's subscribedTopicNames, whatever they are",
        "such a heartbeat may be older than the change the coordinator already applied (a full heartbeat held "
        "in the network): applied, it restores an old subscription that the client, which sends its "
        "subscription only when it changes, never sends again, and the new topic is never assigned (E-1); "
        "fenced, a held request fails harmlessly. The price: a lost-answer retry whose client changed its "
        "subscription in between is fenced too and rejoins with its whole subscription (its assignment "
        "dropped). A previous-epoch heartbeat that repeats the stored subscription (a lost answer, retried) is "
        "accepted as in trunk",
        ("tests/model/sim/test_kafka_trunk_divergences.py::"
         "test_a_held_full_heartbeat_at_the_previous_epoch_would_restore_the_old_subscription",
         "tests/model/core/group/test_share_group.py::"
         "test_a_previous_epoch_heartbeat_is_fenced_only_when_its_subscription_differs"),
        "previous-epoch-subscription-applied"),
    Divergence(
        "failed-ack-at-limit-to-dlq", "divergence",
        "an acknowledgement whose write fails after the records' lock expired releases them as a lock "
        "timeout does (SP-9, SP-4): at the delivery-count limit with a dead-letter queue they go to ARCHIVING, "
        "and on to the DLQ",
        "completeStateTransition rolls the records back and archives them at the limit directly (ARCHIVED, "
        "no DLQ enqueue)",
        "one rule for every record whose lock expired at the limit; the dead-letter queue receives every record "
        "the delivery limit archived, whichever path archived it",
        ("tests/model/core/test_share_partition.py::"
         "test_a_failed_acknowledgement_of_an_expired_record_at_the_limit_goes_to_archiving_with_a_dlq",),
    ),
    Divergence(
        "window-without-holes", "abstraction",
        "the in-flight window tiles [SPSO, SPEO) with no holes: offsets a fetch skipped because no batch holds "
        "them any more (a batch the log cleaner emptied) are in it, ARCHIVED by the leader",
        "SharePartition.cachedState has no entry for them, so an acknowledgement that spans them skips them",
        "one range per run of agreeing offsets keeps the window small and fast; offsets compacted away inside a "
        "fetched batch are delivered and acknowledged with GAP, as in trunk, and only an acknowledgement "
        "spanning a wholly emptied batch differs (INVALID_RECORD_STATE instead of skipped)",
        ("tests/conformance/test_share_partition.py::test_acquire_released_record_multiple_batches",),
    ),
    Divergence(
        "acknowledging-fetch-not-delayed", "abstraction",
        "a ShareFetch that carries acknowledgements, closes its share session, or has MaxWaitMs 0 is answered "
        "as soon as its acknowledgements are durable, without waiting in the purgatory",
        "KafkaApis.handleShareFetchRequest parks the fetch part in DelayedShareFetch and answers the "
        "acknowledgements with it",
        "a confirmation is never held back behind a wait for records, so the model's E-2 windows stay as short "
        "as the protocol allows; the fetch path is otherwise Kafka's",
        ("tests/model/sim/test_fetch_path.py::test_a_fetch_waits_for_min_bytes_records_and_is_forced_at_max_wait",),
    ),
    Divergence(
        "min-bytes-in-records", "abstraction",
        "a delayed share fetch's MinBytes is counted in records",
        "DelayedShareFetch.isMinBytesSatisfied counts bytes",
        "records carry no payload in the model",
        ("tests/model/sim/test_fetch_path.py::test_a_fetch_waits_for_min_bytes_records_and_is_forced_at_max_wait",),
    ),
    Divergence(
        "delete-records-at-once", "abstraction",
        "DeleteRecords moves the log start offset of the committed log, which stands for every replica, and is "
        "answered at once",
        "ReplicaManager.deleteRecords answers once the followers' low watermarks reach it (DelayedDeleteRecords)",
        "followers and later leaders agree on the log start at once; nothing the share group sees differs",
        ("tests/model/sim/test_delete_records.py::"
         "test_delete_records_passes_available_acquired_and_acknowledged_records_and_runs_clean",),
    ),
    Divergence(
        "initialize-resent-until-answered", "abstraction",
        "the group coordinator's InitializeShareGroupState is resent identical (its persister's retry) a request "
        "timeout after it went unanswered, 1 s after a retriable error, until an answer comes; one resend timer "
        "a partition, so a heartbeat's new initialize at offset 0 (a retry interval after the partition's stamp) "
        "replaces the resends of the earlier request",
        "PersisterStateManager.InitializeStateHandler gives up after its attempts (MAX_FIND_COORD_ATTEMPTS, "
        "backing off from 1 s to 30 s) and GroupCoordinatorService.uninitializeShareGroupState then drops the "
        "partition from initializing, so the next heartbeat starts it afresh (-1 if its topic is otherwise "
        "unknown); the earlier request's retries run on beside a heartbeat's new one",
        "either way a late initialize may land after the leader wrote (the open finding \"a late duplicate "
        "initialize\", docs/explanation/findings.md); the model keeps one request in flight a partition, which "
        "the group coordinator's soft state can name, where trunk may have two",
        ("tests/model/core/group/test_share_group.py::"
         "test_an_unanswered_initialize_is_resent_as_it_was_until_an_answer_comes",
         "tests/model/core/group/test_share_group.py::"
         "test_an_unanswered_initialize_is_resent_as_it_was_then_initialized_again_at_zero_by_a_heartbeat"),
    ),
    Divergence(
        "persister-retry-budget", "abstraction",
        "the persister (model/sim/share_leader.py) sends a WriteShareGroupState up to 10 times, backing off from "
        "100 ms doubling to 1 s (about 6.5 s in all), while the answer is retriable (COORDINATOR_NOT_AVAILABLE, "
        "COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, NOT_ENOUGH_REPLICAS, NOT_LEADER_OR_FOLLOWER) or none "
        "comes (REQUEST_TIMED_OUT); then the SharePartition hears of the failure",
        "PersisterStateManager.WriteStateHandler makes at most 5 attempts (MAX_FIND_COORD_ATTEMPTS), backing off "
        "with ExponentialBackoffManager from REQUEST_BACKOFF_MS 1 s, doubling, jitter 0.2, to at most 30 s "
        "(about 30 s in all), on COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR and "
        "UNKNOWN_TOPIC_OR_PARTITION answers and on NETWORK_EXCEPTION / REQUEST_TIMED_OUT; the share coordinator "
        "never answers NOT_ENOUGH_REPLICAS or NOT_LEADER_OR_FOLLOWER (CoordinatorOperationExceptionHelper maps "
        "them to COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR), so only the budget differs",
        "the same outcome (a write fails for good only when a state partition has no usable coordinator for "
        "longer than the budget; the leader then rolls back) in a time that fits the swarms' 10 s fault phases: "
        "the fault kind state_partition_under_min_isr (2 to 20 s in the swarms) outlasts the model's budget, "
        "as a longer outage outlasts trunk's",
        ("tests/model/sim/test_state_writes_fail.py::"
         "test_the_library_scenario_fails_acknowledgement_and_lock_timeout_writes_for_good_and_runs_clean",),
    ),
)

BY_NAME: Final[dict[str, Divergence]] = {d.name: d for d in DIVERGENCES}
