"""Spark campaigns in ``local[2]``: one row per run id, independent of partitioning, resume, error rows,
the summary and the report, a mutant's violation and its reproducer.

One Spark session serves the module (it takes seconds to start); the runs are
of ``small_short``, the small cluster with 100 records in 2 s, about 10 ms a run.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from invariants.monitors import INVARIANTS
from model import mutants, situations
from reports.aggregate import one_row_per_run_id, read_run_table, read_runs, run_files, summarise, wilson_sql
from reports.rows import ARROW_SCHEMA
from scenarios import library
from scenarios.campaign import Campaign, Options, RunTask, run_campaign, run_seed, spark_session
from scenarios.campaign.execute import CampaignExists, run_batches
from scenarios.campaign.worker import simulate
from scenarios.cli import main

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

RUNS = 400


def small_short() -> Any:
    small = library.get("small")
    return replace(small, name="small_short", duration_ms=2_000, heal_ms=10_000,
                   producers=(replace(small.producers[0], records=100),)).validate()


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = spark_session("local[2]", app_name="sharesim tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    return Campaign(small_short(), RUNS, campaign_seed=7)


PROGRESS: list[tuple[int, int, float]] = []


@pytest.fixture(scope="module")
def baseline(spark: SparkSession, campaign: Campaign, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted campaign, 2 partitions per batch of 200 runs, aggregated and reported."""
    out = tmp_path_factory.mktemp("baseline")
    run_campaign(spark, campaign, out, options=Options(partitions=2, batch_runs=200),
                 on_progress=lambda *report: PROGRESS.append(report))
    return out


def rows(spark: SparkSession, runs_dir: Path) -> list[dict[str, Any]]:
    """The per-run rows by run id, without the wall time (the one field that is not reproducible)."""
    frame = read_runs(spark, runs_dir)
    assert frame is not None
    return [row.asDict(recursive=True) for row in frame.drop("wall_time_s").orderBy("run_id").collect()]


def test_the_parquet_has_one_row_per_run_id_with_the_documented_schema(baseline: Path) -> None:
    files = run_files(baseline / "runs")
    # Two whole batches, published under their run ids; nothing left of the staging or the progress files.
    assert sorted({f.parent.name.rsplit("-", 1)[0] for f in files}) == ["batch=0-200", "batch=200-400"]
    assert sorted(p.name for p in (baseline / "runs").iterdir()) == sorted({f.parent.name for f in files})
    table = read_run_table(baseline / "runs")
    assert sorted(table.column("run_id").to_pylist()) == list(range(RUNS))
    assert pq.read_schema(files[0]) == ARROW_SCHEMA.remove_metadata()
    first = table.filter(table.column("run_id").to_numpy() == 3).to_pylist()[0]
    assert first["seed"] == run_seed(7, "small_short", 3) and first["campaign_id"] == "small_short/seed=7"
    assert first["verdict"] == "ok" and first["trace_hash"] and first["metrics"]


def test_progress_reports_runs_done_of_the_total_and_a_rate(baseline: Path) -> None:
    done = [d for d, _, _ in PROGRESS]
    assert done == sorted(done) and PROGRESS[-1][:2] == (RUNS, RUNS) and PROGRESS[-1][2] > 0
    assert {total for _, total, _ in PROGRESS} == {RUNS}


def test_a_campaign_run_is_the_same_run_as_sharesim_run(baseline: Path, campaign: Campaign) -> None:
    table = read_run_table(baseline / "runs").to_pylist()
    row = next(r for r in table if r["run_id"] == 11)
    assert row["trace_hash"] == simulate(campaign.task(11)).trace_hash


def test_summary_json_has_runs_errors_violations_faults_and_rate(baseline: Path) -> None:
    data = json.loads((baseline / "summary.json").read_text())
    assert data["runs"] == RUNS and data["errors"] == 0 and data["duplicate_run_ids"] == 0
    assert data["missing_run_ids"] == 0 and data["inconsistent"] is False
    assert data["runs_per_second"] > 0 and data["faults_fired"] == {}
    # The workers' build, asked of a worker: the interpreted modules of this checkout here.
    assert data["build"] == "interpreted" and [a["build"] for a in data["attempts"]] == ["interpreted"]
    assert set(data["violations"]) == set(INVARIANTS)
    spso = data["violations"]["spso-monotonic"]
    assert spso["runs_violated"] == 0 and spso["ci_low"] == 0 and 0.009 < spso["ci_high"] < 0.0096
    assert {t["metric"] for t in data["tables"]["metric_percentiles"]} >= {"latency_p99_ms", "redeliveries",
                                                                          "quiescent_at_ms", "wall_time_s"}
    assert sorted(p.name for p in (baseline / "summary").iterdir()) == sorted(
        f"{name}.parquet" for name in [*data["tables"], "totals"])
    html = (baseline / "report.html").read_text()
    assert "small_short/seed=7" in html and "data:image/png;base64," in html and "Fault coverage" in html
    # Situation coverage: every situation of the catalogue, with its hit rate and 95% Wilson interval.
    coverage = data["situation_coverage"]
    assert set(coverage) == {s.id for s in situations.SITUATIONS} and "Situation coverage" in html
    accept = coverage["ack-accept"]
    assert accept["runs_reached"] == accept["runs_judged"] == RUNS and accept["rate"] == accept["ci_high"] == 1
    assert 0.99 < accept["ci_low"] < 1
    never = coverage["dlq-enqueue-failed"]
    assert never["runs_reached"] == 0 and never["ci_low"] == 0 and 0.009 < never["ci_high"] < 0.0096
    table = read_run_table(baseline / "runs").to_pylist()
    assert sum(1 for r in table if dict(r["situations"]).get("lock-timeout")) == next(
        row["runs_reached"] for row in data["tables"]["situation_coverage"] if row["situation"] == "lock-timeout")
    assert "<td>interpreted</td>" in html


def test_rows_are_identical_with_2_and_with_7_partitions(spark: SparkSession, campaign: Campaign, baseline: Path,
                                                         tmp_path: Path) -> None:
    run_batches(spark, campaign, tmp_path / "runs", partitions=7, batch_runs=RUNS)
    assert rows(spark, tmp_path / "runs") == rows(spark, baseline / "runs")


def test_resume_after_an_interruption_yields_the_uninterrupted_rows(spark: SparkSession, campaign: Campaign,
                                                                    baseline: Path, tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    first = run_batches(spark, campaign, runs_dir, partitions=3, batch_runs=100, stop_after_batches=2)
    assert first.runs_run == 200 and len(read_run_table(runs_dir)) == 200
    # What a killed attempt leaves: a batch's job committed but never published, a task's committed file
    # in Spark's _temporary, a stale runs/_temporary of an older sharesim. None of it is a run.
    published = run_files(runs_dir)
    dead = runs_dir / "_staging" / "deadbeef-2"
    (dead / "_temporary" / "0" / "task_0").mkdir(parents=True)
    shutil.copy(published[0], dead / "part-00000-dead.parquet")
    shutil.copy(published[-1], dead / "_temporary" / "0" / "task_0" / "part-00001-dead.parquet")
    (dead / "_SUCCESS").touch()
    (runs_dir / "_temporary" / "0" / "task_1").mkdir(parents=True)
    shutil.copy(published[1], runs_dir / "_temporary" / "0" / "task_1" / "part-00002-old.parquet")
    assert len(read_run_table(runs_dir)) == 200 and read_runs(spark, runs_dir).count() == 200  # type: ignore[union-attr]
    with pytest.raises(CampaignExists):
        run_batches(spark, campaign, runs_dir, partitions=3, batch_runs=100)
    # Another batch size: the batch of ids 150..299 is half done, its other half runs through the anti join.
    again = run_batches(spark, campaign, runs_dir, partitions=5, batch_runs=150, resume=True)
    assert again.runs_before == 200 and again.runs_run == 200 and not (runs_dir / "_staging").exists()
    assert rows(spark, runs_dir) == rows(spark, baseline / "runs")
    done = run_batches(spark, campaign, runs_dir, partitions=5, batch_runs=100, resume=True)
    assert done.runs_run == 0 and len(read_run_table(runs_dir)) == RUNS


def test_the_aggregation_counts_a_run_id_once_and_says_loudly_when_one_is_twice_or_missing(
        spark: SparkSession, baseline: Path, tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"
    shutil.copytree(baseline / "runs", runs_dir)
    first, second = sorted(p for p in runs_dir.iterdir())
    # A copy of the first batch (ids 0..199) with one row changed: 200 ids twice, one of them disagreeing.
    copy = runs_dir / "batch=0-200-copy"
    copy.mkdir()
    table = read_run_table(first)
    hashes = table.column("trace_hash").to_pylist()
    hashes[table.column("run_id").to_pylist().index(7)] = "not-the-same"
    pq.write_table(table.set_column(table.schema.get_field_index("trace_hash"), "trace_hash",
                                    pa.array(hashes)), copy / "part-0.parquet")
    shutil.rmtree(second)  # ids 200..399 missing
    frame = read_runs(spark, runs_dir)
    assert frame is not None
    summary = summarise(spark, frame, planned=RUNS)
    data = summary.to_json({})
    assert data["inconsistent"] is True and data["runs"] == 200  # counted once each
    assert (data["duplicate_run_ids"], data["duplicate_rows"], data["duplicate_rows_disagree"]) == (200, 200, 1)
    assert data["missing_run_ids"] == 200 and data["inconsistent_examples"]["missing"][:2] == [200, 201]
    assert "INCONSISTENT" in data["inconsistent_message"] and "DISAGREE" in data["inconsistent_message"]
    # The row kept of a run id is chosen by its content (the least trace hash), not by the order files are read.
    original = {r["run_id"]: r["trace_hash"] for r in read_run_table(first).to_pylist()}[7]
    kept = one_row_per_run_id(frame).where("run_id = 7").collect()
    assert [r["trace_hash"] for r in kept] == [min(original, "not-the-same")]
    # Nothing wrong: one aggregation, no dedupe, all zeros.
    whole = summarise(spark, read_runs(spark, baseline / "runs"), planned=RUNS).to_json({})  # type: ignore[arg-type]
    assert (whole["inconsistent"], whole["duplicate_run_ids"], whole["missing_run_ids"]) == (False, 0, 0)


def test_a_run_that_raises_becomes_an_error_row_and_the_campaign_goes_on(spark: SparkSession, tmp_path: Path) -> None:
    bad = {3, 17}

    def flaky(task: RunTask) -> Any:  # defined here: cloudpickle ships it to the workers by value
        if task.run_id in bad:
            raise RuntimeError(f"injected failure in run {task.run_id}")
        return simulate(task)

    data = run_campaign(spark, Campaign(small_short(), 20, campaign_seed=1), tmp_path, simulate_fn=flaky,
                        options=Options(partitions=2, report=False))
    assert data["runs"] == 20 and data["errors"] == 2 and data["ok"] == 18
    table = {r["run_id"]: r for r in read_run_table(tmp_path / "runs").to_pylist()}
    for run_id in bad:
        row = table[run_id]
        assert row["verdict"] == "error" and row["seed"] == run_seed(1, "small_short", run_id)
        assert "Traceback" in row["error"] and f"injected failure in run {run_id}" in row["error"]
    assert all(table[i]["error"] is None for i in set(table) - bad)
    groups = data["tables"]["failure_groups"]
    assert [(g["verdict"], g["runs"], g["run_ids"]) for g in groups] == [("error", 2, [3, 17])]
    assert groups[0]["signature"] == "RuntimeError: injected failure in run #"


def test_a_mutant_campaign_reports_its_violation_with_a_reproducer(spark: SparkSession, tmp_path: Path) -> None:
    mutant = "spso-before-durable"
    invariant = mutants.get(mutant).expected_invariant
    data = run_campaign(spark, Campaign(library.get("small"), 6, campaign_seed=3, mutant=mutant), tmp_path,
                        scenario_ref="small", options=Options(partitions=2, seeds_per_group=1, shrink_runs=50))
    assert data["violated"] == 6 and data["violations"][invariant]["runs_violated"] == 6
    assert data["violations"][invariant]["ci_low"] > 0.5
    reproducer = data["reproducers"][0]
    assert reproducer["invariant"] == invariant and reproducer["reproduced"]
    assert (tmp_path / reproducer["path"] / "report.html").exists()
    assert f'{reproducer["path"]}/report.html' in (tmp_path / "report.html").read_text()
    # The command line, run as given (without --out), violates the same invariant.
    words = reproducer["command"].split(" --out ")[0].split()
    assert words[:2] == ["sharesim", "run"] and "--mutant" in words
    result = CliRunner().invoke(main, [*words[1:], "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.output)["violations"][0]["invariant"] == invariant
    # --shrink: the group's first seed shrunk to a file whose command fails the same way, linked from the report.
    shrunk = reproducer["shrunk"]
    assert shrunk["path"] == f'{reproducer["path"]}/shrunk.toml' and (tmp_path / shrunk["path"]).exists()
    assert any(change.startswith("records 400 -> ") for change in shrunk["changes"])
    assert f'href="{shrunk["path"]}"' in (tmp_path / "report.html").read_text()
    replay = CliRunner().invoke(main, [*shrunk["command"].split()[1:], "--json"])
    assert replay.exit_code == 1 and json.loads(replay.output)["violations"][0]["invariant"] == invariant


def test_wilson_interval_matches_the_textbook_values(spark: SparkSession) -> None:
    low, high = wilson_sql("5D", "10D")
    row = spark.sql(f"SELECT {low} AS low, {high} AS high").collect()[0]
    assert row["low"] == pytest.approx(0.2366, abs=1e-4) and row["high"] == pytest.approx(0.7634, abs=1e-4)
    low, high = wilson_sql("0D", "0D")
    assert spark.sql(f"SELECT {low} AS low, {high} AS high").collect()[0].asDict() == {"low": None, "high": None}


def test_workers_run_with_a_fixed_pythonhashseed(spark: SparkSession) -> None:
    def env(batches: Iterator[Any]) -> Iterator[Any]:
        import os

        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_pylist([{"seed": os.environ.get("PYTHONHASHSEED")}])

    seeds = {r["seed"] for r in spark.range(0, 4, 1, 2).mapInArrow(env, "seed string").collect()}
    assert seeds == {"0"}


def test_the_cli_rejects_bad_input_with_exit_2(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["campaign", "no_such", "--runs", "3", "--out", str(tmp_path / "a")])
    assert result.exit_code == 2 and "unknown scenario 'no_such'" in result.output
    result = runner.invoke(main, ["campaign", "small", "--runs", "0", "--out", str(tmp_path / "a")])
    assert result.exit_code == 2 and "--runs" in result.output
    result = runner.invoke(main, ["campaign", "small", "--runs", "3", "--out", str(tmp_path / "a"),
                                  "--mutant", "nope"])
    assert result.exit_code == 2 and "unknown mutant 'nope'" in result.output


def test_the_cli_refuses_an_existing_campaign_without_resume(baseline: Path) -> None:
    result = CliRunner().invoke(main, ["campaign", "small", "--runs", "3", "--out", str(baseline)])
    assert result.exit_code == 2 and "--resume" in result.output


def test_a_sweep_on_spark_gives_the_rows_of_the_in_process_sweep(spark: SparkSession, tmp_path: Path) -> None:
    from scenarios import sweep
    from scenarios.campaign.sweep_spark import run_sweep_on_spark

    params = [sweep.parse_param("consumers.0.count=1,2")]
    tasks = sweep.plan_sweep(small_short(), params, 3)
    on_spark = run_sweep_on_spark(tasks, "sweep:small_short", tmp_path, partitions=3)
    here = sweep.run_sweep(tasks, "sweep:small_short")
    assert len(on_spark) == 6 and not (tmp_path / "_spark_runs").exists()

    def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "wall_time_s"} for row in rows]

    assert comparable(on_spark) == comparable(here)
    assert on_spark[4]["params"] == [("consumers[0].count", "2")]


def test_the_cli_shrink_flag_asks_the_campaign_to_shrink(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import scenarios.campaign.cli as campaign_cli
    import scenarios.campaign.session as session
    from scenarios.shrink import DEFAULT_MAX_RUNS

    asked: list[int] = []

    def fake_campaign(*_: object, options: Options, **__: object) -> None:
        asked.append(options.shrink_runs)
        raise KeyboardInterrupt  # stop here: the campaign is not the point

    class FakeSpark:
        class sparkContext:  # pyspark's name
            @staticmethod
            def cancelAllJobs() -> None:
                pass

    monkeypatch.setattr(session, "spark_session", lambda master: FakeSpark())
    monkeypatch.setattr(campaign_cli, "run_campaign", fake_campaign)
    for flags in ([], ["--shrink"]):
        result = CliRunner().invoke(main, ["campaign", "small", "--runs", "3", "--out", str(tmp_path / "a"), *flags])
        assert result.exit_code == 130, result.output
    assert asked == [0, DEFAULT_MAX_RUNS]
