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
from model.core.share_state import RecordState, SharePartitionKey, StateBatch, WriteShareGroupStateRequest
from model.sim.runner import run
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


def _landed_case(*, taken: bool, leader_epoch: int, batch_state: RecordState) -> str:
    """The classifier on a hand-made history: one acknowledgement write of offsets 10-19 landed at 100 ms."""
    key = SharePartitionKey("g1", "t", 0)
    write = WriteShareGroupStateRequest(key, 1, 3, 10, (StateBatch(10, 19, batch_state, 1),))
    requests = triage._Requests()
    requests.landed.append((100, write))
    if taken:
        requests.taken.append((150, write))
    violation = Violation(WRITE, 200, 0, f"{key}: durably terminal offsets 12-12 written back to AVAILABLE "
                          "(delivery count 1)", state={"key": str(key), "first": 12, "last": 12,
                                                       "leader_epoch": leader_epoch})
    return triage._failed_write_landed(violation, requests)


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
])
def test_a_kip848_answer_the_consumer_never_took_is_the_finding(seed: int, invariant: str) -> None:
    assert triage.classify(library.get("swarm_wide"), seed, invariant) == triage.ANSWER_NOT_TAKEN


def test_a_share_member_that_never_converges_is_unexplained() -> None:
    assert triage.classify(library.get("consumer_pause"), 0, "member-convergence",
                           "rejoin-with-old-epoch") == triage.UNEXPLAINED


def _answer_case(*, held_taken: bool, later_taken: bool, assignment: bool, client: str) -> str:
    """The classifier on a hand-made history: c4 sends a heartbeat at 10 ms (held) and another at 20 ms; the
    coordinator answers both, the held one with an assignment."""
    held = ConsumerGroupHeartbeatRequest("readers", "m4", 3, client_id="c4")
    later = ConsumerGroupHeartbeatRequest("readers", "m4", 3, client_id="c4")
    held_answer = ConsumerGroupHeartbeatResponse(
        member_id="m4", member_epoch=4, assignment=HeartbeatAssignment() if assignment else None)
    later_answer = ConsumerGroupHeartbeatResponse(member_id="m4", member_epoch=4)
    requests = triage._Requests()
    requests.heartbeats_sent += [(10, "c4", held), (20, "c4", later)]
    requests.answers += [(later, later_answer), (held, held_answer)]
    requests.answers_taken += [(25, later_answer)] if later_taken else []
    requests.answers_taken += [(30, held_answer)] if held_taken else []
    violation = Violation("member-convergence", 100, 0, "1 live member(s) not stable",
                          state={"members": [client]})
    return triage._answer_not_taken(violation, requests)


def test_the_finding_needs_an_assignment_its_consumer_never_took_after_taking_a_later_answer() -> None:
    case: dict[str, Any] = {"held_taken": False, "later_taken": True, "assignment": True, "client": "c4"}
    assert _answer_case(**case) == triage.ANSWER_NOT_TAKEN
    for change in ({"held_taken": True}, {"later_taken": False}, {"assignment": False}, {"client": "c3"}):
        assert _answer_case(**{**case, **change}) == triage.UNEXPLAINED, change


# -- the rest -----------------------------------------------------------------------------------------------------

def test_a_run_violating_an_invariant_no_finding_here_is_told_by_is_not_triaged() -> None:
    # The open finding "a held heartbeat at the current epoch": one run, read by hand (findings.md).
    assert (triage.classify(library.get("swarm_clients"), 7434011851765007714, "eventual-resolution")
            == "not triaged here (eventual-resolution)")


def test_a_run_of_an_invariant_no_finding_here_is_told_by_that_holds_now_is_no_longer_violated() -> None:
    assert triage.classify(library.get("swarm_clients"), 0, "eventual-resolution") == triage.NO_LONGER


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
