"""Sweeps: key paths and values, the plan (run ids, derived seeds), the local executor, the two output files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from model.sim.runner import RunResult
from model.sim.runner import run as real_run
from reports.rows import COLUMNS
from scenarios import library
from scenarios.campaign.plan import RunTask
from scenarios.sweep import (
    MAIN_METRICS,
    SweepError,
    apply_params,
    key_text,
    mean_interval,
    parse_key,
    parse_param,
    parse_value,
    plan_sweep,
    run_sweep,
    sweep_seed,
    t975,
    write_sweep,
)

LOCK = 'groups[0].config."group.share.record.lock.duration.ms"'


@pytest.mark.parametrize(("text", "path"), [
    ("duration_ms", ("duration_ms",)),
    ("consumers.0.processing.value_ms", ("consumers", 0, "processing", "value_ms")),
    ("consumers[0].processing.value_ms", ("consumers", 0, "processing", "value_ms")),
    (LOCK, ("groups", 0, "config", "group.share.record.lock.duration.ms")),
    ("groups.0.config.group.share.record.lock.duration.ms",
     ("groups", 0, "config", "group.share.record.lock.duration.ms")),
    ("faults.plan[1].params.offset", ("faults", "plan", 1, "params", "offset")),
    ("faults.swarm.rates.broker_crash", ("faults", "swarm", "rates", "broker_crash")),
])
def test_parse_key_reads_both_spellings(text: str, path: tuple[str | int, ...]) -> None:
    assert parse_key(text) == path


def test_key_text_is_the_canonical_spelling_of_the_validation_messages() -> None:
    assert key_text(parse_key("groups.0.config.group.share.record.lock.duration.ms")) == LOCK
    assert key_text(parse_key("consumers.0.count")) == "consumers[0].count"


@pytest.mark.parametrize("text", ["", "a..b", "a.[0]", "a b", 'a."b'])
def test_parse_key_rejects_what_is_not_a_key_path(text: str) -> None:
    with pytest.raises(SweepError, match="--param key"):
        parse_key(text)


def test_values_are_toml_or_bare_strings() -> None:
    assert [parse_value(v) for v in ("1000", "0.5", "true", '"x"', "earliest")] == [1000, 0.5, True, "x", "earliest"]
    param = parse_param("consumers.0.count=1,2,4")
    assert (param.key, param.values) == ("consumers[0].count", (1, 2, 4))


@pytest.mark.parametrize(("text", "message"), [
    ("consumers.0.count", "must be KEY=V1,V2"),
    ("=1,2", "must be KEY=V1,V2"),
    ("consumers.0.count=", "needs one or more comma-separated values"),
    ("consumers.0.count=1,,2", "none empty"),
])
def test_bad_params_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_param(text)


@pytest.mark.parametrize(("param", "message"), [
    ("consumers.3.count=1", r"consumers\[3\] does not exist \(consumers has 1 item\(s\)\)"),
    ("consumers.0.cont=1", r'consumers\[0\].cont: unknown key \(did you mean "count"\?\)'),
    ("consumers.count=1", r"consumers is a list; give an index, e.g. consumers\[0\]"),
    ("duration_ms.0=1", "duration_ms is not a list"),
    (f"{LOCK}=500", r"= 500: must be an integer in \[1000, 3600000\]"),
    ("consumers.0.count=-1", r"consumers\[0\].count = -1: must be an integer in \[0, 1000\]"),
    ("consumers.0.ack_mode=auto", r"consumers\[0\].ack_mode = 'auto'"),
])
def test_a_key_the_scenario_lacks_or_a_value_it_refuses_fails_before_any_run(param: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        plan_sweep(library.get("small"), [parse_param(param)], 2)


def test_apply_params_changes_only_the_swept_keys_and_creates_absent_tables() -> None:
    base = library.get("small")
    changed = apply_params(base, {("producers", 0, "transactions", "abort_rate"): 0.5,
                                  ("groups", 0, "config", "group.share.isolation.level"): "read_committed"})
    assert changed.producers[0].transactions is not None and changed.producers[0].transactions.abort_rate == 0.5
    assert changed.groups[0].config["group.share.isolation.level"] == "read_committed"
    assert changed.cluster == base.cluster and changed.consumers == base.consumers


def test_plan_is_the_grid_times_seeds_with_run_ids_in_order_and_stable_derived_seeds() -> None:
    base = library.get("small")
    params = [parse_param(f"{LOCK}=1000,3000"), parse_param("consumers.0.count=1,2,3")]
    tasks = plan_sweep(base, params, 2)
    assert [t.run_id for t in tasks] == list(range(12))
    assert [t.params for t in tasks[:4]] == [{LOCK: 1000, "consumers[0].count": 1}] * 2 + [
        {LOCK: 1000, "consumers[0].count": 2}] * 2
    lock = "group.share.record.lock.duration.ms"
    assert tasks[5].scenario.consumers[0].count == 3 and tasks[5].scenario.groups[0].config[lock] == 1000
    assert tasks[6].scenario.groups[0].config[lock] == 3000
    assert len({t.seed for t in tasks}) == 12 and all(0 <= t.seed < 2**63 for t in tasks)
    assert tasks[0].seed == sweep_seed("small", {LOCK: 1000, "consumers[0].count": 1}, 0)
    # A point's seeds do not depend on the rest of the grid.
    smaller = plan_sweep(base, [parse_param(f"{LOCK}=3000"), parse_param("consumers.0.count=1")], 2)
    assert [t.seed for t in smaller] == [t.seed for t in tasks[6:8]]
    assert plan_sweep(base, params, 2) == tasks


@pytest.mark.parametrize(("seeds", "params", "message"), [
    (0, ["consumers.0.count=1"], "--seeds 0: must be an integer >= 1"),
    (1, [], "needs at least one --param"),
    (1, ["consumers.0.count=1", "consumers[0].count=2"], "given twice"),
])
def test_plan_refuses_bad_seeds_empty_grids_and_repeated_keys(seeds: int, params: list[str], message: str) -> None:
    with pytest.raises(SweepError, match=message):
        plan_sweep(library.get("small"), [parse_param(p) for p in params], seeds)


def test_t_quantiles_and_the_interval() -> None:
    assert t975(1) == 12.706 and t975(30) == 2.042
    assert abs(t975(60) - 2.000) < 1e-3 and abs(t975(10_000) - 1.960) < 1e-3
    assert mean_interval([]) == {"n": 0, "mean": None, "low": None, "high": None}
    assert mean_interval([2.0]) == {"n": 1, "mean": 2.0, "low": None, "high": None}
    got = mean_interval([1.0, 2.0, 3.0])
    half = 4.303 * 1.0 / math.sqrt(3)
    assert got["mean"] == 2.0 and math.isclose(got["low"], 2 - half) and math.isclose(got["high"], 2 + half)


def _sweep(tmp_path: Path, simulate_fn: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    scenario = library.get("small")
    params = [parse_param(f"{LOCK}=1000,3000"), parse_param("consumers.0.processing.value_ms=2,30")]
    tasks = plan_sweep(scenario, params, 3)
    options = {"simulate_fn": simulate_fn} if simulate_fn else {}
    rows = run_sweep(tasks, "sweep:small", **options)
    summary = write_sweep(tmp_path, "small", params, 3, rows)
    return pq.read_table(tmp_path / "runs.parquet").to_pylist(), summary


def test_a_sweep_of_2_params_by_3_seeds_writes_the_documented_parquet_and_summary(tmp_path: Path) -> None:
    rows, summary = _sweep(tmp_path)
    assert len(rows) == 12 and list(rows[0]) == list(COLUMNS)
    assert [r["run_id"] for r in rows] == list(range(12))
    assert {r["campaign_id"] for r in rows} == {"sweep:small"} and {r["scenario"] for r in rows} == {"small"}
    assert {r["verdict"] for r in rows} == {"ok"}
    assert dict(rows[11]["params"]) == {LOCK: "3000", "consumers[0].processing.value_ms": "30"}
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["kind"] == "sweep" and summary["scenario"] == "small" and summary["campaign_id"] == "sweep:small"
    assert summary["params"] == {LOCK: [1000, 3000], "consumers[0].processing.value_ms": [2, 30]}
    counts = (summary["seeds"], summary["runs"], summary["ok"], summary["violated"], summary["errors"])
    assert counts == (3, 12, 12, 0, 0)
    assert summary["violations"] == {} and summary["metrics"] == list(MAIN_METRICS)
    assert len(summary["points"]) == 4
    slow_short_lock = summary["points"][1]
    assert slow_short_lock["params"] == {LOCK: 1000, "consumers[0].processing.value_ms": 30}
    assert slow_short_lock["run_ids"] == [3, 4, 5] and slow_short_lock["runs"] == 3
    for point in summary["points"]:
        assert set(point["metrics"]) == set(MAIN_METRICS)
        stat = point["metrics"]["redelivery_rate"]
        assert stat["n"] == 3 and stat["low"] <= stat["mean"] <= stat["high"]
    # 30 ms a record, 50 records a fetch: 1.5 s of work under a 1 s lock is redelivered; under 3 s it is not.
    assert slow_short_lock["metrics"]["redelivery_rate"]["mean"] > 0
    assert summary["points"][3]["metrics"]["redelivery_rate"]["mean"] == 0
    # The situations the runs reached (model/situations.py), per sweep and per point: runs that reached each.
    assert summary["situations"]["ack-accept"] == 12 and all(0 < n <= 12 for n in summary["situations"].values())
    assert summary["points"][1]["situations"]["lock-timeout"] == 3  # the 1 s lock under 1.5 s of work expires
    assert summary["points"][3]["situations"].get("lock-timeout", 0) == 0
    assert all(dict(r["situations"]) for r in rows)


def test_a_run_that_raises_is_an_error_row_and_the_sweep_goes_on(tmp_path: Path) -> None:
    def flaky(task: RunTask) -> RunResult:
        if task.run_id == 4:
            raise RuntimeError("boom")
        result = real_run(task.scenario, task.seed)
        if task.run_id == 7:
            from invariants.violation import Violation

            result.violations.append(Violation("E-2", 5, task.seed, "delivered again", {}))
            result.verdict = "violated"
        return result

    rows, summary = _sweep(tmp_path, flaky)
    assert [r["verdict"] for r in rows].count("error") == 1 and "boom" in rows[4]["error"]
    assert rows[4]["seed"] != 0 and dict(rows[4]["params"])[LOCK] == "1000"
    assert (summary["runs"], summary["ok"], summary["violated"], summary["errors"]) == (12, 10, 1, 1)
    assert summary["violations"] == {"E-2": 1}
    assert summary["points"][1]["errors"] == 1 and summary["points"][1]["metrics"]["sim_time_ms"]["n"] == 2
    assert summary["points"][2]["violations"] == {"E-2": 1}
