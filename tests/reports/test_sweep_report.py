"""The sweep report: confidence intervals over seeds, plots against the swept parameters, in Chromium."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from reports.rows import to_table
from reports.sweep_report import SweepDirError, aggregate, axis_label, load_runs, render_sweep
from scenarios.cli import main

LOCK = 'groups[0].config."group.share.record.lock.duration.ms"'
PROCESSING = "consumers[0].processing.value_ms"


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`small` over lock duration (1 s, 4 s) × processing time per record (4, 40 ms) × 3 seeds."""
    out = tmp_path_factory.mktemp("sweep")
    result = CliRunner().invoke(main, ["sweep", "small", "--param", f"{LOCK}=1000,4000",
                                       "--param", f"{PROCESSING}=4,40", "--seeds", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_the_runs_flatten_to_a_column_per_parameter_and_metric(sweep_dir: Path) -> None:
    runs, params, summary = load_runs(sweep_dir)
    assert params == [LOCK, PROCESSING] and summary["kind"] == "sweep"
    assert len(runs) == 12
    assert {f"param:{LOCK}", f"param:{PROCESSING}", "metric:redelivery_rate", "metric:violated",
            "metric:latency_p99_ms"} <= set(runs.columns)
    # Slow processing under a short lock redelivers; a long lock and fast processing does not.
    table = aggregate(runs, params, "redelivery_rate").set_index([f"param:{LOCK}", f"param:{PROCESSING}"])
    assert table.loc[(1_000, 40), "mean"] > 0.1
    assert table.loc[(4_000, 4), "mean"] == 0


def test_the_sweep_report_shows_every_picture(sweep_dir: Path, assert_renders: Callable[[Path, int], None]) -> None:
    page = render_sweep(sweep_dir)
    text = page.read_text()
    for words in ("redelivery_rate", "latency_p99_ms", "offsets_archived_or_skipped", "violated", "Per grid point",
                  "mean ± 95% CI"):
        assert words in text
    assert_renders(page, 4)


def test_chosen_metrics_and_an_unknown_one(sweep_dir: Path) -> None:
    page = render_sweep(sweep_dir, ["ack_errors"])
    assert page.read_text().count("<img") == 1
    with pytest.raises(SweepDirError, match=r"--metric no_such_metric: not a metric of .*known: .*redelivery_rate"):
        render_sweep(sweep_dir, ["no_such_metric"])


def test_one_swept_parameter_gives_a_line_with_a_band(sweep_dir: Path, tmp_path: Path,
                                                      assert_renders: Callable[[Path, int], None]) -> None:
    rows = pq.read_table(sweep_dir / "runs.parquet").to_pylist()
    for row in rows:
        row["params"] = [p for p in row["params"] if p[0] == LOCK]
    pq.write_table(to_table(rows), tmp_path / "runs.parquet")
    (tmp_path / "summary.json").write_text('{"kind": "sweep", "scenario": "small"}')
    assert_renders(render_sweep(tmp_path, ["redelivery_rate"]), 1)


def test_the_interval_is_students_t_over_the_seeds() -> None:
    runs = pd.DataFrame({"param:x": [1, 1, 1, 2, 3], "verdict": ["ok", "ok", "ok", "error", "ok"],
                         "metric:m": [1.0, 2.0, 3.0, 99.0, 5.0]})
    first, second = aggregate(runs, ["x"], "m").itertuples(index=False)  # the error run is not averaged
    assert (first.count, first.mean) == (3, 2.0)
    assert first.high - first.mean == pytest.approx(4.303 / math.sqrt(3))
    assert (second.count, second.low, second.mean, second.high) == (1, 5.0, 5.0, 5.0)


def test_a_config_key_path_is_labelled_by_its_kafka_key() -> None:
    assert axis_label(LOCK) == "group.share.record.lock.duration.ms"
    assert axis_label(PROCESSING) == PROCESSING


def test_a_directory_without_runs_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SweepDirError, match=r"runs\.parquet: missing"):
        render_sweep(tmp_path)


def test_three_parameters_one_of_them_text_give_a_plot_per_parameter(
        sweep_dir: Path, tmp_path: Path, assert_renders: Callable[[Path, int], None]) -> None:
    rows = pq.read_table(sweep_dir / "runs.parquet").to_pylist()
    for row in rows:
        row["params"] = [*row["params"], ("mode", '"even"' if row["run_id"] % 2 == 0 else '"odd"')]
    pq.write_table(to_table(rows), tmp_path / "runs.parquet")
    (tmp_path / "summary.json").write_text('{"kind": "sweep", "scenario": "small"}')
    runs, params, _ = load_runs(tmp_path)
    assert set(params) == {LOCK, PROCESSING, "mode"} and set(runs["param:mode"]) == {"even", "odd"}
    page = render_sweep(tmp_path, ["redelivery_rate", "violated"])
    assert "even" in page.read_text()
    assert_renders(page, 2)
