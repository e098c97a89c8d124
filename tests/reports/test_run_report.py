"""A run directory and its report: the files, the timeline, the HTML with its pictures, in Chromium."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from reports.run_dir import run_to_dir
from reports.run_report import RunDirError, render_run
from reports.sampler import TIMELINE_SCHEMA
from scenarios import library

RUN_IMAGES = 5  # SPSO/SPEO, counts, epochs, deliveries over time, histogram + CDF


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    result = run_to_dir(library.get("consumer_pause"), 1, out)
    assert result.ok
    return out


def test_a_run_directory_holds_the_result_the_timeline_and_the_report(run_dir: Path) -> None:
    assert sorted(p.name for p in run_dir.iterdir()) == ["report.html", "result.json", "timeline.parquet"]
    result = json.loads((run_dir / "result.json").read_text())
    assert result["kind"] == "run" and result["scenario"] == "consumer_pause" and result["seed"] == 1
    assert result["command"] == "sharesim run consumer_pause --seed 1"
    assert result["samples"]["fault_intervals"][0]["kind"] == "consumer_pause"
    timeline = pd.read_parquet(run_dir / "timeline.parquet")
    assert list(timeline.columns) == TIMELINE_SCHEMA.names
    assert {"spso", "speo", "in_flight", "acquired", "archived", "member_epoch"} <= set(timeline["series"])


def test_the_run_report_shows_every_picture(run_dir: Path, assert_renders: Callable[[Path, int], None]) -> None:
    page = (run_dir / "report.html").read_text()
    for heading in ("SPSO and SPEO", "in-flight, acquired and archived", "Group, assignment and member epochs",
                    "Delivery counts", "Faults fired", "Invariants checked", "consumer_pause", "spso-monotonic",
                    "eventual-resolution"):
        assert heading in page
    assert "Violation" not in page
    assert_renders(run_dir / "report.html", RUN_IMAGES)


def test_rendering_again_gives_the_same_page(run_dir: Path) -> None:
    before = (run_dir / "report.html").read_text()
    assert render_run(run_dir).read_text() == before


def test_the_report_of_a_run_that_drew_settings_shows_them(tmp_path: Path) -> None:
    result = run_to_dir(library.get("swarm_config"), 4, tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "settings the swarm drew" in page
    assert "group.share.partition.max.record.locks = 100" in page
    assert result.swarm_config["group.share.partition.max.record.locks"] == 100
    run_to_dir(library.get("swarm"), 4, tmp_path / "plain")
    assert "settings the swarm drew" not in (tmp_path / "plain" / "report.html").read_text()


def test_a_run_without_faults_or_share_groups_still_renders(tmp_path: Path,
                                                           assert_renders: Callable[[Path, int], None]) -> None:
    run_to_dir(library.get("small"), 2, tmp_path)
    assert "No fault fired." in (tmp_path / "report.html").read_text()
    assert_renders(tmp_path / "report.html", RUN_IMAGES)


def test_a_directory_without_a_result_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match=r"result\.json: missing"):
        render_run(tmp_path)
    (tmp_path / "result.json").write_text("{not json")
    (tmp_path / "timeline.parquet").write_bytes(b"")
    with pytest.raises(RunDirError, match="not JSON"):
        render_run(tmp_path)
