"""``--json`` on ``check`` and ``campaign``: stdout is one JSON document and nothing else; every human line
(progress, tables, reproducer lines, notes) is on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from model.sim import runner
from scenarios import library
from scenarios.check import reproducer
from scenarios.cli import main


def test_check_json_is_the_only_thing_on_stdout_and_holds_every_run() -> None:
    result = CliRunner().invoke(main, ["check", "--scenarios", "small,stuck_head", "--seeds", "3",
                                       "--mutant", "inflight-limit-per-fetch", "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)  # the whole of stdout parses: nothing else is on it
    assert data["kind"] == "check" and data["mutant"] == "inflight-limit-per-fetch" and data["seeds"] == 3
    assert data["totals"] == {"runs": 6, "ok": 5, "violated": 1, "errors": 0}
    assert [(r["scenario"], r["seed"], r["verdict"]) for r in data["runs"]] == [
        ("small", 0, "ok"), ("small", 1, "ok"), ("small", 2, "ok"),
        ("stuck_head", 0, "ok"), ("stuck_head", 1, "ok"), ("stuck_head", 2, "violated")]
    for run in data["runs"]:
        assert set(run) == {"scenario", "seed", "mutant", "verdict", "invariants_violated", "error", "reproducer"}
        assert run["reproducer"] == reproducer(run["scenario"], run["seed"], "inflight-limit-per-fetch")
        assert run["invariants_violated"] == ([] if run["verdict"] == "ok" else ["window-size"])
        assert run["error"] is None
    # The human output is all on stderr: the reproducer lines and the count.
    assert f"{reproducer('stuck_head', 2, 'inflight-limit-per-fetch')}  # window-size" in result.stderr
    assert "6 run(s), 1 violated" in result.stderr


def test_check_json_reports_a_run_that_raised_as_an_error_with_its_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.run

    def raises_on_seed_1(scenario: object, seed: int, **options: object) -> object:
        if seed == 1:
            raise KeyError("c9")
        return real(scenario, seed, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run", raises_on_seed_1)
    result = CliRunner().invoke(main, ["check", "--scenarios", "small", "--seeds", "2", "--json"])
    data = json.loads(result.stdout)
    assert data["totals"] == {"runs": 2, "ok": 1, "violated": 0, "errors": 1}
    ok, error = data["runs"]
    assert ok["verdict"] == "ok" and ok["error"] is None
    assert error["verdict"] == "error" and error["error"] == "KeyError: 'c9'" and error["invariants_violated"] == []
    assert error["reproducer"] == "sharesim run small --seed 1"
    assert "sharesim run small --seed 1  # raised KeyError: 'c9'" in result.stderr


def test_check_without_json_keeps_its_reproducers_on_stdout() -> None:
    result = CliRunner().invoke(main, ["check", "--scenarios", "stuck_head", "--seeds", "3",
                                       "--mutant", "inflight-limit-per-fetch"])
    assert result.stdout.splitlines() == [f"{reproducer('stuck_head', 2, 'inflight-limit-per-fetch')}  # window-size"]


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_campaign_json_is_the_summary_alone_on_stdout_with_the_human_output_on_stderr(tmp_path: Path) -> None:
    # A scenario file under a long path, and a mutant that violates: the reproducers printed on stderr are
    # longer than 80 columns, and stderr is not a terminal, so each must stay on one line.
    folder = tmp_path / "a folder whose name makes every reproducer command longer than eighty columns"
    folder.mkdir()
    scenario = folder / "stuck_head.toml"
    scenario.write_text((Path(library.__file__).parent / "library" / "stuck_head.toml").read_text())
    out = tmp_path / "campaign"
    result = CliRunner().invoke(main, ["campaign", str(scenario), "--runs", "3", "--out", str(out), "--master",
                                       "local[1]", "--mutant", "inflight-limit-per-fetch", "--json"])
    assert result.exit_code == 1, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data == json.loads((out / "summary.json").read_text())
    assert data["runs"] == 3 and data["violated"] >= 1
    commands = [r["command"] for r in data["reproducers"]]
    assert commands and all(len(c) > 80 for c in commands)
    for command in commands:
        assert any(line.endswith(command) for line in result.stderr.splitlines()), command
    assert "summary:" in result.stderr and "report:" in result.stderr
