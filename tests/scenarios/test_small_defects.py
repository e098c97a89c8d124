"""Small defects of issue 23, each with the test that failed before its fix: a sweep's intervals from one seed
and from no value, ``sweep --master`` without ``--spark``, ``report --metric`` where no metric is chosen, and
``./dev`` with no argument."""

from __future__ import annotations

import ast
import html
import json
import re
import subprocess
from pathlib import Path

from click.testing import CliRunner

from scenarios.cli import main

ROOT = Path(__file__).resolve().parents[2]
RESET = 'groups[0].config."group.share.auto.offset.reset"'

# One share group that starts at the latest offset misses all 100 records (nothing delivered: no redelivery
# rate); from the earliest it gets them all.
NOTHING_AT_LATEST = """\
name = "latest_or_earliest"
duration_ms = 3000
heal_ms = 10000

[[topics]]
name = "events"

[[groups]]
name = "g"
topics = ["events"]

[[consumers]]
group = "g"

[[producers]]
topic = "events"
records = 100
rate_per_s = 100000
"""


def one_line_error(result: object) -> str:
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    return stderr


def test_a_sweep_of_one_seed_shows_means_without_an_interval_and_a_missing_mean_as_a_dash(tmp_path: Path) -> None:
    scenario = tmp_path / "latest_or_earliest.toml"
    scenario.write_text(NOTHING_AT_LATEST)
    out = tmp_path / "sweep"
    swept = CliRunner().invoke(main, ["sweep", str(scenario), "--param", f"{RESET}=latest,earliest", "--seeds", "1",
                                      "--out", str(out)])
    assert swept.exit_code == 0, swept.output
    summary = json.loads((out / "summary.json").read_text())
    latest, earliest = summary["points"]
    assert latest["metrics"]["records_delivered"]["mean"] == 0 and latest["metrics"]["redelivery_rate"]["mean"] is None
    assert earliest["metrics"]["records_delivered"]["mean"] == 100
    rendered = CliRunner().invoke(main, ["report", str(out)])
    assert rendered.exit_code == 0, rendered.output
    page = html.unescape((out / "report.html").read_text())
    grid = page[page.index("<tbody>", page.index("Per grid point")):]
    assert "nan" not in grid and "±" not in grid  # one seed: no interval; nothing delivered: no rate
    cells = [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>.*?</td>", grid, re.S)]
    p99 = earliest["metrics"]["latency_p99_ms"]["mean"]
    assert cells[:6] == ["earliest", "1", "0", f"{p99:.4g}", "0", "0"]
    assert cells[6:12] == ["latest", "1", "-", "-", "0", "0"]


def test_sweep_master_without_spark_is_refused_before_anything_runs(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, ["sweep", "small", "--param", "consumers.0.count=1,2", "--out", str(out),
                                       "--master", "spark://cluster:7077"])
    assert result.exit_code == 2
    assert "--master spark://cluster:7077" in one_line_error(result) and "--spark" in result.stderr
    assert not out.exists()


def test_report_metric_is_refused_where_no_metric_is_chosen(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    ran = CliRunner().invoke(main, ["run", "small", "--out", str(run_dir)])
    assert ran.exit_code == 0, ran.output
    campaign_dir = tmp_path / "campaign"
    campaign_dir.mkdir()
    (campaign_dir / "summary.json").write_text(json.dumps({"kind": "campaign", "campaign_id": "small-0"}))
    for directory, kind in ((run_dir, "run"), (campaign_dir, "campaign")):
        before = sorted(p.name for p in directory.iterdir())
        result = CliRunner().invoke(main, ["report", str(directory), "--metric", "nosuch"])
        assert result.exit_code == 2, result.output
        line = one_line_error(result)
        assert f"--metric nosuch: {directory} holds a {kind}" in line and "sweep" in line
        assert sorted(p.name for p in directory.iterdir()) == before  # no report written


def test_report_metric_unknown_in_a_sweep_names_the_known_ones(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    swept = CliRunner().invoke(main, ["sweep", "small", "--param", "consumers.0.count=1", "--seeds", "1",
                                      "--out", str(out)])
    assert swept.exit_code == 0, swept.output
    result = CliRunner().invoke(main, ["report", str(out), "--metric", "nosuch"])
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "--metric nosuch: not a metric of" in line and "known: " in line and "latency_p99_ms" in line


def test_dev_without_a_session_prints_its_usage_and_the_sessions(tmp_path: Path) -> None:
    # A copy of the checkout's two files: ./dev must answer before it bootstraps anything (no .venv made).
    for name in ("dev", "noxfile.py"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "dev").chmod(0o755)
    result = subprocess.run(["./dev"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("usage: ./dev SESSION [ARGS...]")
    functions = [n for n in ast.parse((ROOT / "noxfile.py").read_text()).body if isinstance(n, ast.FunctionDef)]
    sessions = [f.name for f in functions if any("nox.session" in ast.unparse(d) for d in f.decorator_list)]
    assert f"sessions: {' '.join(sessions)}\n" in result.stderr
    assert "parameter not set" not in result.stderr and not (tmp_path / ".venv").exists()
