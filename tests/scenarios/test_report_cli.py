"""``sharesim run --out DIR`` and ``sharesim report DIR``: files, exit codes, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from scenarios.cli import main


def test_run_out_writes_the_run_directory_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "leadership_move", "--seed", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"report: {out / 'report.html'}" in result.output
    assert sorted(p.name for p in out.iterdir()) == [".sharesim.json", "report.html", "result.json", "timeline.parquet"]
    assert json.loads((out / "result.json").read_text())["kind"] == "run"


def test_run_out_with_a_mutant_exits_1_and_keeps_the_trace(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "small", "--seed", "1", "--mutant", "spso-before-durable",
                                       "--out", str(out), "--json"])
    assert result.exit_code == 1, result.output
    assert (out / "trace.ndjson").is_file()
    data = json.loads((out / "result.json").read_text())
    assert data["mutant"] == "spso-before-durable" and data["verdict"] == "violated"
    assert data["command"] == "sharesim run small --seed 1 --mutant spso-before-durable"
    assert "Violation" in (out / "report.html").read_text()


def test_run_out_with_trace_keeps_it_from_the_start(tmp_path: Path) -> None:
    trace = tmp_path / "all.ndjson"
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "small", "--seed", "1", "--out", str(out), "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    assert len(trace.read_text().splitlines()) > 100 and not (out / "trace.ndjson").exists()


def test_report_prints_the_path_of_the_page_it_wrote(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert CliRunner().invoke(main, ["run", "small", "--seed", "1", "--out", str(out)]).exit_code == 0
    (out / "report.html").unlink()
    result = CliRunner().invoke(main, ["report", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(out / "report.html") and (out / "report.html").is_file()


def test_report_of_a_sweep_with_chosen_metrics(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    swept = CliRunner().invoke(main, ["sweep", "small", "--param", "consumers[0].count=1,2", "--seeds", "2",
                                      "--out", str(out)])
    assert swept.exit_code == 0, swept.output
    result = CliRunner().invoke(main, ["report", str(out), "--metric", "latency_p50_ms"])
    assert result.exit_code == 0, result.output
    assert (out / "report.html").read_text().count("<img") == 1
    bad = CliRunner().invoke(main, ["report", str(out), "--metric", "nope"])
    assert bad.exit_code == 2 and "--metric nope: not a metric of" in bad.output and "Traceback" not in bad.output


def test_report_of_a_missing_or_unknown_directory_exits_2(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["report", str(tmp_path / "nothing")])
    assert missing.exit_code == 2 and "no such directory" in missing.output
    empty = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert empty.exit_code == 2 and "neither result.json" in empty.output
    (tmp_path / "summary.json").write_text('{"kind": "other"}')
    unknown = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert unknown.exit_code == 2 and "kind = 'other'" in unknown.output and "Traceback" not in unknown.output


def test_report_has_help() -> None:
    result = CliRunner().invoke(main, ["report", "--help"])
    assert result.exit_code == 0 and "--metric" in result.output
