"""reports/aggregate.py: rows read back from Parquet (an older campaign's too), the campaign
report's situation coverage section, and (on Spark) the summary's queries."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from model.sim.runner import run
from reports.aggregate import TABLES, catalogued_situations, read_run_table, read_runs, summarise
from reports.campaign_report import render
from reports.rows import ARROW_SCHEMA, COLUMNS, result_row, to_table
from scenarios import library

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_a_row_carries_the_situations_its_run_reached() -> None:
    result = run(library.get("small"), 2)
    row = result_row(result)
    assert dict(row["situations"]) == result.situations and row["situations"] == sorted(row["situations"])
    assert to_table([row]).schema == ARROW_SCHEMA


def test_an_older_campaign_file_without_situations_reads_with_the_column_null(tmp_path: Path) -> None:
    row = result_row(run(library.get("small"), 2))
    (tmp_path / "new").mkdir()
    (tmp_path / "old").mkdir()
    pq.write_table(to_table([row]), tmp_path / "new" / "part-0.parquet")
    older = to_table([row]).drop_columns(["situations"])  # the schema before issue 25
    pq.write_table(older, tmp_path / "old" / "part-0.parquet")
    table = read_run_table(tmp_path)
    assert table.column_names == list(COLUMNS) and table.num_rows == 2
    assert table.column("situations").to_pylist()[0] is not None and table.column("situations").null_count == 1
    assert isinstance(table, pa.Table)


def test_the_campaign_report_shows_situation_coverage_least_reached_first() -> None:
    assert "situation_coverage" in TABLES and len(catalogued_situations()) >= 35
    coverage = [{"situation": "lock-timeout", "runs_reached": 7, "times": 9, "runs_judged": 10, "rate": 0.7,
                 "ci_low": 0.39, "ci_high": 0.89},
                {"situation": "ack-gap", "runs_reached": 0, "times": 0, "runs_judged": 10, "rate": 0.0,
                 "ci_low": 0.0, "ci_high": 0.28}]
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TABLES if name != "totals"}
    tables["situation_coverage"] = coverage
    data = {"campaign_id": "c", "scenario": "small", "runs": 10, "ok": 10, "violated": 0, "errors": 0,
            "runs_per_second": 1.0, "tables": tables}
    html = render(data)
    assert "Situation coverage" in html and "Wilson" in html
    assert html.index("ack-gap") < html.index("lock-timeout")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_the_summary_queries_read_the_runs_files_and_keep_no_copy_of_them(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A cached copy of a million runs' rows outgrew local mode's 1 GiB default heap (the 1 000 000-run
    # campaign in benchmarks.md); read from Parquet, each query loads only the columns it names.
    (tmp_path / "runs" / "batch=0").mkdir(parents=True)
    rows = [result_row(run(library.get("small"), seed), run_id=seed) for seed in range(3)]
    pq.write_table(to_table(rows), tmp_path / "runs" / "batch=0" / "part-0.parquet")
    runs = read_runs(spark, tmp_path / "runs")
    assert runs is not None
    cached: list[bool] = []
    sql = spark.sql

    def watched(query: str) -> Any:
        cached.append(spark.catalog.isCached("runs"))
        return sql(query)

    monkeypatch.setattr(spark, "sql", watched)
    summary = summarise(spark, runs, planned=3)
    assert summary.tables["totals"][0]["runs"] == 3
    assert len(cached) == len(TABLES) and not any(cached)
