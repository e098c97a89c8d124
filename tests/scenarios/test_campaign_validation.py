"""``sharesim campaign --validate K`` without Spark or TLC (``scenarios/campaign/validation.py``): which runs
are validated, the row of a validation (accepted, rejected, no verdict), the grouping of rejections with
their reproducers, the spec coverage, the planned validations on resume, and bad ``--validate`` values.
The Spark campaign with TLC is tests/scenarios/test_campaign_validate_spark.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from scenarios import library
from scenarios.campaign import Campaign, RunTask
from scenarios.campaign.validation import (
    ACCEPTED,
    ERROR,
    REJECTED,
    ValidationWorkload,
    coverage_table,
    group_rejections,
    planned_validations,
    sample,
    validation_row,
    validation_summary,
)
from scenarios.cli import main
from tla.run import ToolMissing
from tla.trace_project import SPEC_ACTIONS, Event, act, coverage


def test_the_sample_is_the_first_k_run_ids_whatever_else_changes() -> None:
    assert list(sample(100, 3)) == [0, 1, 2]
    assert list(sample(2, 5)) == [0, 1]  # never more than the runs
    assert list(sample(10, 0)) == []
    # The sampled runs' seeds are the campaign's own (a stable hash of campaign seed, scenario, run id):
    # another campaign seed samples other seeds, the same campaign the same ones.
    scenario = library.load("kip932_example")
    one, again, other = Campaign(scenario, 50, 1), Campaign(scenario, 80, 1), Campaign(scenario, 50, 2)
    seeds = [ValidationWorkload(one, 3).task(i).seed for i in sample(50, 3)]
    assert seeds == [ValidationWorkload(again, 3).task(i).seed for i in sample(80, 3)]
    assert seeds != [ValidationWorkload(other, 3).task(i).seed for i in sample(50, 3)]
    assert ValidationWorkload(one, 3).runs == 3


@dataclass
class FakeValidation:
    accepted: bool
    events: list[Event]
    key: str = "g:t-id:0"
    seconds: float = 1.5
    first_unmatched: int | None = None
    action: int | None = None
    message: str = "accepted"
    run: Any = None
    gaps: dict[str, str] = field(default_factory=dict)


def _events() -> list[Event]:
    return [
        Event(10, "state read", [act("Produce"), act("LeaderLoad")], 1, 1, 0, 0, []),
        Event(20, "acquire 0 by m", [act("Acquire", m="m", o=0)], 1, 1, 0, 1, [("ACQUIRED", 1, "NONE")]),
        Event(30, "acknowledge 0 by m", [act("Ack", m="m", o=0, e=1, t="ACCEPT")], 1, 1, 0, 1,
              [("ACQUIRED", 1, "ACKNOWLEDGED")]),
        Event(40, "locks of 0 expired", [act("ExpireLock", e=1, o=0)], 1, 1, 0, 1, [("ACQUIRED", 1, "ARCHIVED")]),
    ]


def _workload() -> ValidationWorkload:
    return ValidationWorkload(Campaign(library.load("kip932_example"), 10, 3), 4)


def test_coverage_counts_actions_and_their_cases() -> None:
    counts = coverage(_events())
    assert counts["Acquire"] == 1 and counts["Acquire: first delivery"] == 1
    assert counts["Ack: ACCEPT"] == 1 and counts["ExpireLock: to ARCHIVED"] == 1
    assert "Acquire: redelivery" not in counts and "ExpireLock: to AVAILABLE" not in counts


def test_an_accepted_validation_row_carries_its_coverage() -> None:
    row = validation_row(_workload(), 2, lambda task: FakeValidation(True, _events()))
    assert row["outcome"] == ACCEPTED and row["events"] == 4 and row["rejected_event"] is None
    assert row["seed"] == _workload().task(2).seed and row["run_id"] == 2
    assert json.loads(row["coverage"])["LeaderLoad"] == 1


def test_a_rejected_row_names_the_first_unmatched_event_and_counts_only_the_matched_ones() -> None:
    v = FakeValidation(False, _events(), first_unmatched=2, action=0, message="no spec step matches")
    row = validation_row(_workload(), 1, lambda task: v)
    assert row["outcome"] == REJECTED and row["rejected_event"] == 3 and row["rejected_action"] == 0
    assert row["rejected_step"] == "acknowledge 0 by m: Ack not enabled"
    assert "Ack" not in json.loads(row["coverage"])  # the rejected event is not coverage


@pytest.mark.parametrize("failure", [ToolMissing("java is not on PATH"), RuntimeError("TLC exited after 900 s")])
def test_no_verdict_is_an_error_row_never_an_accept(failure: Exception) -> None:
    def validate(task: RunTask) -> Any:
        raise failure

    row = validation_row(_workload(), 0, validate)
    assert row["outcome"] == ERROR and str(failure) in row["message"] and row["coverage"] == "{}"


def _row(outcome: str, run_id: int, step: str | None = None, message: str = "", cov: str = "{}") -> dict[str, Any]:
    return {"outcome": outcome, "run_id": run_id, "seed": 100 + run_id, "mutant": None, "rejected_step": step,
            "rejected_event": 7 if step else None, "message": message, "coverage": cov, "tlc_seconds": 1.0,
            "wall_time_s": 2.0}


def test_rejections_are_grouped_with_numbers_blanked_and_reproduced_by_their_first_run() -> None:
    rows = [_row(ACCEPTED, 0), _row(REJECTED, 1, "acquire 45..47 by m0.1.4: the observed state differs"),
            _row(REJECTED, 2, "acquire 3..9 by m0.1.2: the observed state differs"),
            _row(REJECTED, 3, "session of m1 closed: ReleaseMember not enabled"),
            _row(ERROR, 4, message="ToolMissing: java is not on PATH"),
            _row(ERROR, 5, message="ToolMissing: java is not on PATH")]
    groups = group_rejections(rows, "swarm")
    assert [(g["outcome"], g["runs"]) for g in groups] == [(ERROR, 2), (REJECTED, 2), (REJECTED, 1)]
    acquire = groups[1]
    assert acquire["run_id"] == 1 and acquire["command"] == "sharesim validate swarm --seed 101"
    assert acquire["signature"] == "acquire # by m#.#.#: the observed state differs"
    mutant = {**rows[3], "mutant": "spso-before-durable"}
    assert group_rejections([mutant], "x.toml")[0]["command"].endswith("--seed 103 --mutant spso-before-durable")


def test_coverage_aggregates_runs_and_times_and_lists_what_no_run_took() -> None:
    rows = [_row(ACCEPTED, 0, cov=json.dumps({"Acquire": 3, "Ack": 2})),
            _row(REJECTED, 1, "x", cov=json.dumps({"Acquire": 1})),
            _row(ERROR, 2, message="boom", cov=json.dumps({"Failover": 1}))]  # no verdict: not coverage
    table, never = coverage_table(rows)
    by = {r["action"]: r for r in table}
    assert (by["Acquire"]["runs"], by["Acquire"]["times"]) == (2, 4)
    assert (by["Ack"]["runs"], by["Ack"]["times"]) == (1, 2)
    assert by["Failover"]["runs"] == 0 and "Failover" in never and "Acquire" not in never
    assert set(SPEC_ACTIONS) <= set(by)
    summary = validation_summary(rows, 3, "swarm")
    assert (summary["accepted"], summary["rejected"], summary["errors"]) == (1, 1, 1)
    assert summary["acceptance_rate"] == 0.5  # of the validations with a verdict


def test_planned_validations_on_resume_and_their_bounds() -> None:
    assert planned_validations({}, None, 10) == 0
    assert planned_validations({}, 4, 10) == 4
    assert planned_validations({"validate": 4}, None, 10) == 4  # a resume without --validate: as planned
    assert planned_validations({"validate": 4}, 6, 10) == 6
    with pytest.raises(ValueError, match="fewer than the 4 validations"):
        planned_validations({"validate": 4}, 2, 10)
    with pytest.raises(ValueError, match="more than the campaign's 10 runs"):
        planned_validations({}, 11, 10)


@pytest.mark.parametrize(("args", "needle"), [
    (["kip932_example", "--runs", "3", "--validate", "5"], "--validate 5: more than --runs 3"),
    (["consumer_group", "--runs", "3", "--validate", "1"], "has no share group"),
    (["kip932_example", "--runs", "3", "--validate", "0"], "'--validate'"),
])
def test_bad_validate_values_get_one_clear_line_and_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    result = CliRunner().invoke(main, ["campaign", *args, "--out", str(tmp_path / "c")])
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
    assert not (tmp_path / "c").exists()  # refused before anything was written
