"""Swarm seeds that once found a bug run clean: ``swarm_standard`` (the standard cluster under a
swarm) on fixed seeds, ``swarm_locks`` on the seed that found reads answered before commit,
``swarm_config`` on the seed that found a late confirmation taken for the wrong life, and
``swarm_lifecycle`` on the seeds that found a clogged connection and a monitor judging across lives.

Seeds 5, 7 and 17 of ``swarm_standard`` once failed E-1: a ``slow_processing`` fault with a
per-record extra of about the lock duration fixed the time of a whole 200-record batch when it
started (about an hour of simulated time), so the slow spell outlasted its fault and the
consumer's only partition stayed unresolved past the liveness deadline. The others cover every
other fault kind the swarm draws (broker and consumer crashes, pauses, partitions, loss, delays,
coordinator failovers, admin operations). The full scenario runs (20 000 records): the seeds are
picked among the quick ones.
"""

from __future__ import annotations

import pytest

from model.sim.runner import run
from scenarios import library

SLOW_PROCESSING_SEEDS = (5, 7, 17)
OTHER_SEEDS = (2, 8, 10, 11, 15, 16, 19, 35)


@pytest.mark.parametrize("seed", SLOW_PROCESSING_SEEDS + OTHER_SEEDS)
def test_swarm_seed_runs_clean(seed: int) -> None:
    result = run(library.get("swarm_standard"), seed)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.ok
    assert result.metrics["records_unresolved"] == 0
    assert result.metrics["quiescent_at_ms"] is not None
    assert result.metrics["records_produced"] == 20_000
    if seed in SLOW_PROCESSING_SEEDS:
        assert result.faults_fired.get("slow_processing", 0) >= 1


def test_the_seeds_cover_the_fault_kinds_of_the_swarm() -> None:
    # Guard against a change of swarm_plan silently turning these seeds into fault-free runs.
    from model.sim.cluster import Cluster

    kinds: set[str] = set()
    for seed in SLOW_PROCESSING_SEEDS + OTHER_SEEDS:
        kinds.update(event.kind for event in Cluster(library.get("swarm_standard"), seed).plan.events)
    assert {"slow_processing", "leadership_move", "broker_crash", "consumer_crash", "consumer_pause",
            "network_partition", "message_loss", "message_delay", "group_coordinator_failover",
            "share_coordinator_failover", "admin_add_partitions", "admin_alter_offsets"} <= kinds


def test_the_swarm_locks_seed_that_found_reads_answered_before_commit_runs_clean() -> None:
    """swarm_locks seed 1493 violated zombie-write-fenced while the share coordinator answered a read
    that wrote nothing at once, from state two uncommitted records had changed (docs, choices: "Coordinators
    answer only what is durable"; tests/model/sim/test_broker.py has the unit cases)."""
    result = run(library.get("swarm_locks"), 1493)
    assert result.ok, [v.describe() for v in result.violations]
    assert {"broker_crash", "leadership_move", "message_delay"} <= set(result.faults_fired)


def test_the_swarm_config_seed_that_found_a_late_confirmation_across_lives_runs_clean() -> None:
    """swarm_config seed 8419788145601910512 (one of 100 000 campaign runs) violated
    no-redelivery-after-accept: the accept of offset 33, durable before the group was deleted, was
    confirmed after the group was created again, and the monitor took it for the new life's, whose
    reading from the earliest offset then delivered 33 again (tests/invariants/test_monitors.py)."""
    result = run(library.get("swarm_config"), 8419788145601910512)
    assert result.ok, [v.describe() for v in result.violations]
    assert {"admin_delete_group", "message_delay", "broker_crash"} <= set(result.faults_fired)
    assert result.metrics["records_delivered"] > result.metrics["records_produced"]  # the new life read again


# The six runs of the correct model that the first 100 000-run swarm_lifecycle campaign (--campaign-seed 7)
# reported. One violated E-1: nine overlapping delays held a response about 25 s on one link and, by FIFO,
# everything behind it, so the group coordinator's retry of an initialize was answered only after the
# liveness deadline; a request timeout now closes the connection, and the next one starts empty. Five
# violated spso-monotonic: a leader still on the life before its group's deletion moved its SPSO past
# records durable in its own life, judged by the new life's (tests/invariants/test_monitors.py).
LIFECYCLE_SEEDS = (4039617843346012080, 2044339682494899374, 5366134833660802352, 4882951657792704728,
                   7182693671550652239, 1095146193265247596)


@pytest.mark.parametrize("seed", LIFECYCLE_SEEDS)
def test_the_swarm_lifecycle_seeds_that_found_a_clogged_connection_and_a_monitor_across_lives_run_clean(
        seed: int) -> None:
    result = run(library.get("swarm_lifecycle"), seed, stop_on_first_violation=False)
    violated = [v for v in result.violations if (seed, v.invariant) not in FINDINGS]
    assert not violated, [v.describe() for v in violated]
    assert result.faults_fired.get("admin_delete_group", 0) + result.faults_fired.get("admin_add_partitions", 0) >= 1
    assert result.metrics["records_unresolved"] == 0


# A protocol finding, not a defect of the model (docs/explanation/findings.md): one of the
# seeds above, re-checked by the later invariant stored-start-offset-monotonic. The group coordinator sent
# InitializeShareGroupState for state epoch 6 twice (the second 30 s later: the persister's identical resend of a
# request that got no answer); between the two, the share-partition's leader wrote its start offset 0. Kafka
# trunk's ShareCoordinatorShard.initializeState (06d492d8) treats an initialize as a duplicate only when the
# state epoch AND the start offset equal the stored ones, so, like the model, it writes a fresh snapshot: start
# offset -1, no batches, within state epoch 6. Any leader that reads the state in that window starts again from
# the reset policy.
FINDINGS = {(4882951657792704728, "stored-start-offset-monotonic")}


def test_a_late_duplicate_initialize_resets_the_stored_start_offset_within_a_state_epoch() -> None:
    result = run(library.get("swarm_lifecycle"), 4882951657792704728, stop_on_first_violation=False)
    (finding,) = result.violations
    assert finding.invariant == "stored-start-offset-monotonic" and finding.time_ms == 45052
    assert "a ShareSnapshot committed" in finding.message and "from 0 to -1 within state epoch 6" in finding.message


# The same finding by two more paths, from issue 25's 100 000-run swarm_lifecycle campaign (the findings page
# has the counts). 8730643676008410563: the initialize for state epoch 6 landed at 9 399 ms and its answer was
# lost; the identical request, resent a request timeout later (as trunk's persister does after
# REQUEST_TIMED_OUT), moved back the start offset the leader had written. 1942925957540923770: the answers came,
# but the group coordinator failed over before recording them, and a heartbeat a retry interval after the new
# one's load initialized the partitions again at start offset 0, as trunk's does.
@pytest.mark.parametrize(("seed", "expected"), [
    (8730643676008410563, [(39404, "g1:events-id:0", "from 0 to -1 within state epoch 6")]),
    (1942925957540923770, [(40544, "g2:events-id:1", "from 181 to 0 within state epoch 6"),
                           (40545, "g2:events-id:0", "from 190 to 0 within state epoch 6")]),
])
def test_an_initialize_resent_after_the_leader_wrote_resets_the_stored_start_offset(
        seed: int, expected: list[tuple[int, str, str]]) -> None:
    result = run(library.get("swarm_lifecycle"), seed, stop_on_first_violation=False)
    assert [(v.invariant, v.time_ms) for v in result.violations] == [
        ("stored-start-offset-monotonic", t) for t, _, _ in expected]
    for v, (_, key, moved) in zip(result.violations, expected, strict=True):
        assert v.message.startswith(key) and moved in v.message


# A protocol finding, not a defect of the model (docs/explanation/findings.md, "A share-state write that
# failed but landed"): swarm_failovers seed 274. A WriteShareGroupState acknowledging offset 138 was appended
# to __share_group_state by its coordinator on b3, which crashed at 1420 ms; b1, the one replica left, had
# it, and committed it. The persister's retries of the same write were refused (COORDINATOR_NOT_AVAILABLE:
# fewer in-sync replicas than min.insync.replicas until 10 000 ms), so the leader was told the write failed
# for good and rolled the acknowledgement back, as trunk's SharePartition does; the lock expired and the
# leader wrote offset 138 AVAILABLE over its durable ACKNOWLEDGED state (SP-1). Kafka trunk (06d492d8) takes
# the same path: a failed write is not a write that did not happen.
def test_a_failed_share_state_write_that_landed_is_written_back_to_available() -> None:
    result = run(library.get("swarm_failovers"), 274, stop_on_first_violation=False)
    written, acquired = result.violations  # the write, then the record delivered again
    assert {written.invariant, acquired.invariant} == {"record-state-transition"}
    assert written.time_ms == 10587 and "durably terminal offsets 138-138 written back to AVAILABLE" in written.message
    assert "durably terminal offsets 138-138 acquired by" in acquired.message


@pytest.mark.parametrize("seed", [4653957166046748105, 1905615377217015989])
def test_the_swarm_seeds_that_found_an_initialize_re_sent_at_load_run_clean(seed: int) -> None:
    """Two runs of a 100 000-run swarm campaign violated stored-start-offset-monotonic: a group coordinator
    that loaded re-sent the initializations in progress at once, beside the deposed one's still on the wire,
    and the later of the two landed after the leader's first write (start offset 0 back to -1). Trunk retries
    them one retry interval after the load; so does the model now (docs/explanation/findings.md)."""
    result = run(library.get("swarm"), seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired.get("group_coordinator_failover", 0) >= 1
    assert result.metrics["records_unresolved"] == 0


def test_the_swarm_config_seed_that_found_a_dlq_write_judged_across_lives_runs_clean() -> None:
    """swarm_config seed 7789094685951172101 (one of 100 000 campaign runs) violated dead-letter-queue:
    offset 13 was durably ARCHIVING in the life an admin reset then ended, and the old life's leader
    finished its enqueue after it; the monitor judged that DLQ write against the new life
    (invariants/share_checks.py, DeadLetterMonitor)."""
    result = run(library.get("swarm_config"), 7789094685951172101)
    assert result.ok, [v.describe() for v in result.violations]
    assert {"admin_alter_offsets", "share_coordinator_failover"} <= set(result.faults_fired)
    assert result.situations.get("dlq-enqueue", 0) >= 1


@pytest.mark.parametrize(("name", "seed"), [("swarm_lifecycle", 18), ("swarm_lifecycle", 136), ("swarm_clients", 130)])
def test_an_initialize_retried_by_a_heartbeat_resolves_within_the_swarms_heal(name: str, seed: int) -> None:
    """Trunk's group coordinator retries an initialize it inherited (or never heard answered) only on a
    heartbeat, a retry interval (30 s) after the partition's last stamp, and a member may rejoin a request
    timeout after the faults stop: these runs resolve 50 to 53 s after the faults stop, past the 45 s the swarms
    healed for before (eventual-resolution), within the 75 s they heal for now."""
    scenario = library.get(name)
    result = run(scenario, seed, stop_on_first_violation=False)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.situations.get("share-initialize-retried-by-heartbeat", 0) >= 1
    assert scenario.duration_ms + 45_000 < result.sim_time_ms <= scenario.duration_ms + scenario.heal_ms
