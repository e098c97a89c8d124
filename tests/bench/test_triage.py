"""The triage (bench/_triage.py) tells each open finding it knows by what the run did, and calls anything else
unexplained. Seeds: the findings' reproducers and runs of issue 25's campaigns (findings.md)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from invariants.violation import Violation
from model.core.group.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
)
from model.core.metadata import TopicPartition
from model.core.share_records import ShareUpdate
from model.core.share_state import RecordState, SharePartitionKey, StateBatch, WriteShareGroupStateRequest
from model.sim.runner import run, run_cluster
from reports.rows import result_row, to_table
from scenarios import library
from scenarios.toml_format import dumps

triage = importlib.import_module("bench._triage")

LATE = "stored-start-offset-monotonic"
WRITE = "record-state-transition"


# -- a late duplicate initialize ------------------------------------------------------------------------------

def test_a_persister_resend_is_an_initialize_identical_to_one_handled_before() -> None:
    assert triage.classify(library.get("swarm_lifecycle"), 162754987593251843, LATE) == triage.IDENTICAL_INITIALIZE


def test_a_heartbeat_retry_at_zero_is_a_first_retry_at_zero() -> None:
    assert triage.classify(library.get("swarm_lifecycle"), 1942925957540923770, LATE) == triage.FIRST_RETRY_AT_ZERO


def test_a_clean_run_is_no_longer_violated() -> None:
    assert triage.classify(library.get("swarm_lifecycle"), 0, LATE) == triage.NO_LONGER


@pytest.mark.parametrize(("scenario", "mutant"), [
    ("hostile_state_requests", "start-offset-regression"),  # the coordinator moves the start offset back itself
    ("share_coordinator_pruning", "cold-snapshot-ignores-updates"),  # a snapshot built without the updates
])
def test_a_start_offset_moved_back_by_no_initialize_is_unexplained(scenario: str, mutant: str) -> None:
    assert triage.classify(library.get(scenario), 0, LATE, mutant) == triage.UNEXPLAINED


# -- a share-state write that failed but landed ---------------------------------------------------------------

@pytest.mark.parametrize(("scenario", "seed"), [
    ("swarm_failovers", 274),  # the record committed by the one replica left after the coordinator crashed
    ("swarm_coordinators", 5651570439703423834),  # appended by a coordinator deposed before it answered
    ("swarm_standard", 1230936916544694952),  # one of the 14 of its 10 000-run campaign
])
def test_a_rolled_back_acknowledgement_whose_write_had_landed_is_the_finding(scenario: str, seed: int) -> None:
    assert triage.classify(library.get(scenario), seed, WRITE) == triage.WRITE_LANDED


def test_another_record_state_transition_is_unexplained() -> None:
    # The mutant persists ACQUIRED: the invariant's other shape, no failed write behind it.
    assert triage.classify(library.get("all_slow_consumers"), 0, WRITE, "persist-acquired") == triage.UNEXPLAINED


KEY = SharePartitionKey("g1", "t", 0)


def _write(state: RecordState = RecordState.ACKNOWLEDGED, leader_epoch: int = 3) -> WriteShareGroupStateRequest:
    """An acknowledgement write of offsets 10-19."""
    return WriteShareGroupStateRequest(KEY, 1, leader_epoch, 10, (StateBatch(10, 19, state, 1),))


def test_a_write_lands_when_a_record_a_coordinator_appended_for_it_commits() -> None:
    write = _write()
    history = triage._History()
    update = ShareUpdate(KEY, 1, 3, 10, write.state_batches)
    history.on_share_state_request(0, write, None, [update], 0, 90)
    history.on_share_state_committed(0, [ShareUpdate(KEY, 1, 3, 10, ())], 95)  # another write's record
    assert history.landed == []
    history.on_share_state_committed(0, [ShareUpdate(KEY, 1, 3, 10, write.state_batches)], 100)  # equal by value
    assert history.landed == [(100, write)]


def _landed_case(*, taken: bool, leader_epoch: int, batch_state: RecordState) -> str:
    """The classifier on a hand-made history: one acknowledgement write of offsets 10-19 landed at 100 ms."""
    write = _write(batch_state)
    history = triage._History()
    history.landed.append((100, write))
    if taken:
        history.taken.append((150, write))
    violation = Violation(WRITE, 200, 0, f"{KEY}: durably terminal offsets 12-12 written back to AVAILABLE "
                          "(delivery count 1)", state={"key": str(KEY), "first": 12, "last": 12,
                                                       "leader_epoch": leader_epoch})
    return triage._failed_write_landed(violation, history)


def test_the_finding_needs_a_landed_terminal_write_of_the_same_leader_that_it_never_took() -> None:
    assert _landed_case(taken=False, leader_epoch=3, batch_state=RecordState.ACKNOWLEDGED) == triage.WRITE_LANDED
    assert _landed_case(taken=True, leader_epoch=3, batch_state=RecordState.ACKNOWLEDGED) == triage.UNEXPLAINED
    assert _landed_case(taken=False, leader_epoch=4, batch_state=RecordState.ACKNOWLEDGED) == triage.UNEXPLAINED
    assert _landed_case(taken=False, leader_epoch=3, batch_state=RecordState.AVAILABLE) == triage.UNEXPLAINED


# -- a held consumer-group heartbeat moves the assignment in an answer nobody takes -----------------------------

@pytest.mark.parametrize(("seed", "invariant"), [
    (8629248042826192429, "member-convergence"),  # the finding's reproducer: a partition given, never read
    (2198695899809056941, "member-convergence"),  # a partition revoked in the answer nobody took
    (6824209261468543854, "no-assign-and-revoke"),  # the same loss, seen at the next answer that revokes
    (4031033834550027080, "member-convergence"),  # an answer given before the held one, taken after it
])
def test_a_kip848_answer_the_consumer_never_took_is_the_finding(seed: int, invariant: str) -> None:
    assert triage.classify(library.get("swarm_wide"), seed, invariant) == triage.ANSWER_NOT_TAKEN


def test_the_same_loss_without_a_held_heartbeat_is_a_class_of_its_own() -> None:
    # The answer to a heartbeat handled at once never came; the next full heartbeat's answer assigned and revoked.
    assert (triage.classify(library.get("swarm_wide"), 1298389958813548730, "no-assign-and-revoke")
            == triage.LOST_ANSWER)


@pytest.mark.parametrize("seed", [
    0,  # an answer with an assignment lost, not held; the next full heartbeat repairs it
    24,  # a held join's answer nobody took moved the member to nothing, and the coordinator moved it back
])
def test_a_clean_run_whose_answers_went_astray_is_not_the_finding(seed: int) -> None:
    # Judged as if every KIP-848 consumer of the run had not converged at its end.
    history = triage._History()
    result, cluster = run_cluster(library.get("swarm_wide"), seed, extra_monitors=[history])
    clients = sorted({client for _, client, _ in history.heartbeats_sent})
    assert not result.violations and _untaken_assignments(history) > 0
    made_up = Violation("member-convergence", result.sim_time_ms + 1, seed, "made up", state={"members": clients})
    assert triage._answer_not_taken(made_up, history, triage.coordinator_holds(cluster, clients)) == triage.UNEXPLAINED


def _untaken_assignments(history: Any) -> int:
    """How many answers carrying an assignment their consumer never took."""
    taken = {id(response) for _, _, response in history.answers_taken}
    return sum(answer.assignment is not None and id(answer) not in taken for _, _, answer in history.answers)


def _answer_case(*, held: bool, held_taken: bool, given: frozenset[TopicPartition],
                 holds: frozenset[TopicPartition] | None, caught_up: bool,
                 owned: frozenset[TopicPartition] = frozenset(), owned_later: frozenset[TopicPartition] | None = None,
                 ) -> str:
    """The classifier on a hand-made history: c4, owning ``owned`` (from 60 ms on ``owned_later``, if given),
    sends a heartbeat at 10 ms and another at 20 ms; the coordinator answers the later one at 21 ms (taken at
    25 ms) and the earlier one at 30 ms (held) or 15 ms, with ``given``; at 100 ms c4 has not converged, the
    coordinator holding ``holds``."""
    first = ConsumerGroupHeartbeatRequest("readers", "m4", 3, client_id="c4")
    later = ConsumerGroupHeartbeatRequest("readers", "m4", 3, client_id="c4")
    first_answer = ConsumerGroupHeartbeatResponse(member_id="m4", member_epoch=4,
                                                  assignment=HeartbeatAssignment(given))
    later_answer = ConsumerGroupHeartbeatResponse(member_id="m4", member_epoch=4)
    history = triage._History()
    history.heartbeats_sent += [(10, "c4", first), (20, "c4", later)]
    history.answers += [(21, later, later_answer), (30 if held else 15, first, first_answer)]
    history.owned.append((5, "c4", owned))
    if owned_later is not None:
        history.owned.append((60, "c4", owned_later))
    history.answers_taken.append((25, "c4", later_answer))
    if held_taken:
        history.answers_taken.append((32, "c4", first_answer))
    if caught_up:  # a third heartbeat, answered with the assignment after the held one
        third = ConsumerGroupHeartbeatRequest("readers", "m4", 4, client_id="c4")
        third_answer = ConsumerGroupHeartbeatResponse(member_id="m4", member_epoch=4,
                                                      assignment=HeartbeatAssignment(given))
        history.heartbeats_sent.append((40, "c4", third))
        history.answers.append((41, third, third_answer))
        history.answers_taken.append((45, "c4", third_answer))
    violation = Violation("member-convergence", 100, 0, "1 live member(s) not stable", state={"members": ["c4"]})
    return triage._answer_not_taken(violation, history, {"c4": holds})


def test_the_finding_needs_a_held_answer_never_taken_that_parted_the_two_views_for_good() -> None:
    events_1 = frozenset({TopicPartition("events", 1)})
    case: dict[str, Any] = {"held": True, "held_taken": False, "given": events_1, "holds": events_1,
                            "caught_up": False}
    assert _answer_case(**case) == triage.ANSWER_NOT_TAKEN
    assert _answer_case(**{**case, "held": False}) == triage.LOST_ANSWER  # handled in order; its answer lost
    changes: list[dict[str, Any]] = [
        {"held_taken": True},  # the client took it after all
        {"holds": frozenset()},  # the coordinator moved on from what it said
        {"caught_up": True},  # a later answer the client took told it
        {"owned": events_1, "owned_later": frozenset()},  # it told the client what it owned; they parted later
    ]
    for change in changes:
        assert _answer_case(**{**case, **change}) == triage.UNEXPLAINED, change


# -- the rest -----------------------------------------------------------------------------------------------------

def test_a_run_violating_an_invariant_no_finding_here_is_told_by_is_not_triaged() -> None:
    # The open finding "a held heartbeat at the current epoch": one run, read by hand (findings.md).
    assert (triage.classify(library.get("swarm_clients"), 7434011851765007714, "eventual-resolution")
            == "not triaged here (eventual-resolution)")


def test_a_run_of_an_invariant_no_finding_here_is_told_by_that_holds_now_is_no_longer_violated() -> None:
    assert triage.classify(library.get("swarm_clients"), 0, "eventual-resolution") == triage.NO_LONGER


def test_a_run_that_now_first_violates_another_invariant_says_so() -> None:
    assert (triage.classify(library.get("swarm_lifecycle"), 162754987593251843, WRITE)
            == f"now first violates {LATE}")


# -- a campaign directory --------------------------------------------------------------------------------------

def test_main_runs_each_violated_run_again_with_the_campaigns_scenario_and_mutant(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = library.get("all_slow_consumers")
    rows = [result_row(run(scenario, seed, mutant="persist-acquired"), run_id=seed, mutant="persist-acquired")
            for seed in (0, 1)]
    assert [row["verdict"] for row in rows] == ["violated", "violated"]
    (tmp_path / "runs" / "batch=0").mkdir(parents=True)
    pq.write_table(to_table(rows), tmp_path / "runs" / "batch=0" / "part-0.parquet")
    (tmp_path / "campaign.json").write_text(json.dumps({"scenario_toml": dumps(scenario),
                                                        "mutant": "persist-acquired"}))
    assert triage.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [f"2 violated runs of {tmp_path}",
                                                    f"     2  {triage.UNEXPLAINED}, e.g. --seed 0"]


def test_main_without_a_campaign_prints_its_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert triage.main([str(tmp_path)]) == 2
    assert "python bench/_triage.py CAMPAIGN_DIR" in capsys.readouterr().out
