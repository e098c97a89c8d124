"""``sharesim run``: exit codes 0 / 1 / 2, the JSON keys, the readable summary, the trace file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from invariants.violation import Violation
from model.sim import runner
from scenarios.cli import main


def test_run_json_has_the_documented_keys_and_exits_0() -> None:
    result = CliRunner().invoke(main, ["run", "small", "--seed", "3", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("scenario", "seed", "trace_hash", "sim_time_ms", "events", "metrics", "faults_fired", "violations",
                "fault_plan", "swarm_config"):
        assert key in data
    assert data["scenario"] == "small" and data["seed"] == 3 and data["violations"] == []
    assert isinstance(data["metrics"], dict) and data["metrics"]["records_produced"] == 400
    assert data["faults_fired"] == {}


def test_run_prints_a_readable_summary_and_faults_fired() -> None:
    result = CliRunner().invoke(main, ["run", "leadership_move", "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert "trace hash" in result.output and "leadership_move" in result.output
    assert "records_accepted" in result.output


def test_run_prints_the_settings_a_swarm_drew() -> None:
    result = CliRunner().invoke(main, ["run", "swarm_config", "--seed", "4"], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "settings drawn" in result.output and "group.share.partition.max.record.locks = 100" in result.output
    plain = CliRunner().invoke(main, ["run", "swarm", "--seed", "4"], terminal_width=250)
    assert "settings drawn" not in plain.output


def test_run_writes_the_trace_as_ndjson(tmp_path: Path) -> None:
    target = tmp_path / "trace.ndjson"
    result = CliRunner().invoke(main, ["run", "small", "--seed", "1", "--trace", str(target), "--json"])
    assert result.exit_code == 0, result.output
    lines = target.read_text().splitlines()
    assert len(lines) > 100 and all(json.loads(line)["time_ms"] >= 0 for line in lines[:50])


def test_unknown_scenario_exits_2_and_lists_the_known_ones() -> None:
    result = CliRunner().invoke(main, ["run", "no-such-scenario", "--seed", "1"])
    assert result.exit_code == 2
    assert "unknown scenario 'no-such-scenario'" in result.output
    assert "standard" in result.output and "swarm" in result.output
    assert "Traceback" not in result.output


def test_run_takes_a_scenario_file_and_runs_it_as_its_library_twin(tmp_path: Path) -> None:
    from scenarios import library
    from scenarios.toml_format import dumps

    path = tmp_path / "mine.toml"
    path.write_text(dumps(library.get("leadership_move")))
    from_file = CliRunner().invoke(main, ["run", str(path), "--seed", "2", "--json"])
    by_name = CliRunner().invoke(main, ["run", "leadership_move", "--seed", "2", "--json"])
    assert from_file.exit_code == 0, from_file.output
    assert json.loads(from_file.output)["trace_hash"] == json.loads(by_name.output)["trace_hash"]


def test_a_bad_scenario_file_exits_2_listing_every_problem_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "bad"\nduration_ms = 0\n[cluster]\nbrokerz = 3\n')
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{path}: invalid scenario (2 problems):" in result.output
    assert "duration_ms = 0: must be an integer >= 1" in result.output
    assert 'cluster.brokerz: unknown key (did you mean "brokers"?)' in result.output
    missing = CliRunner().invoke(main, ["run", str(tmp_path / "absent.toml")])
    assert missing.exit_code == 2 and "no such scenario file" in missing.output


@pytest.mark.parametrize("args", [["run", "small", "--seed", "x"], ["run", "small", "--seed", "-4"], ["run"]])
def test_bad_arguments_exit_2(args: list[str]) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_violation_exits_1_and_is_in_the_json(monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.run

    def violated(*args: object, **kwargs: object) -> runner.RunResult:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        result.violations.append(Violation("no-redelivery-after-accept", 1234, result.seed,
                                           "delivered again after its ack", {"offset": 7}))
        result.verdict = "violated"
        return result

    monkeypatch.setattr(runner, "run", violated)
    result = CliRunner().invoke(main, ["run", "small", "--seed", "2", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["violations"][0]["invariant"] == "no-redelivery-after-accept"
    assert data["violations"][0]["time_ms"] == 1234
    assert data["violations"][0]["message"] == "delivered again after its ack"
    plain = CliRunner().invoke(main, ["run", "small", "--seed", "2"])
    assert plain.exit_code == 1 and "no-redelivery-after-accept" in plain.output

