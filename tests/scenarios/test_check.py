"""``sharesim mutants``, ``sharesim check`` and ``sharesim run --mutant``: output, reproducers, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from model import mutants
from model.sim import runner
from scenarios import library
from scenarios.check import reproducer
from scenarios.cli import main


def test_mutants_json_lists_every_mutant_with_the_documented_keys() -> None:
    result = CliRunner().invoke(main, ["mutants", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [d["name"] for d in data] == [m.name for m in mutants.MUTANTS]
    assert all(set(d) == {"name", "description", "expected_invariant", "scenario"} for d in data)


def test_mutants_prints_a_table() -> None:
    result = CliRunner().invoke(main, ["mutants"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "spso-before-durable" in result.output and "window-size" in result.output


def test_mutants_lists_the_variants_after_the_mutants() -> None:
    result = CliRunner().invoke(main, ["mutants"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "variant(s): candidate fixes" in result.output
    # The last mention of each: a mutant's description may name the variant (start-offset-every-write's does).
    assert result.output.rindex("start-offset-every-write-max") > result.output.rindex("kip848_fenced_member")


def test_check_and_run_take_a_variant_which_holds_where_its_mutant_does_not() -> None:
    args = ["check", "--scenarios", "late_start_offset_write", "--seeds", "5", "--mutant"]
    caught = CliRunner().invoke(main, [*args, "start-offset-every-write"])
    assert caught.exit_code == 1, caught.output
    fixed = CliRunner().invoke(main, [*args, "start-offset-every-write-max"])
    assert fixed.exit_code == 0, fixed.output
    assert "5 run(s), 0 violated, 0 raised (mutant start-offset-every-write-max)" in fixed.output
    ran = CliRunner().invoke(main, ["run", "late_start_offset_write", "--seed", "4", "--json",
                                    "--mutant", "start-offset-every-write-max"])
    assert ran.exit_code == 0 and json.loads(ran.output)["mutant"] == "start-offset-every-write-max"


def test_check_of_the_correct_model_exits_0_and_prints_no_reproducer() -> None:
    result = CliRunner().invoke(main, ["check", "--scenarios", "small,poison", "--seeds", "2"])
    assert result.exit_code == 0, result.output
    assert "sharesim run" not in result.output
    assert "4 run(s), 0 violated, 0 raised" in result.output


def test_check_with_a_mutant_exits_1_with_one_reproducer_per_violating_run() -> None:
    # With batch-wise acquisition the mutant is caught on stuck_head seeds 2 and 4 of 0..4; 0, 1 and 3 hold.
    result = CliRunner().invoke(main, ["check", "--scenarios", "stuck_head", "--seeds", "5",
                                       "--mutant", "inflight-limit-per-fetch"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("sharesim run")]
    assert lines == [f"{reproducer('stuck_head', s, 'inflight-limit-per-fetch')}  # window-size" for s in (2, 4)]


def test_the_reproducer_reproduces() -> None:
    command = reproducer("stuck_head", 2, "inflight-limit-per-fetch").split()[1:]
    result = CliRunner().invoke(main, [*command, "--json"])
    assert result.exit_code == 1, result.output
    data = json.loads(result.output)
    assert data["mutant"] == "inflight-limit-per-fetch" and data["seed"] == 2
    assert data["violations"][0]["invariant"] == "window-size"
    clean = CliRunner().invoke(main, ["run", "stuck_head", "--seed", "2", "--json"])
    assert clean.exit_code == 0 and json.loads(clean.output)["mutant"] is None


def test_run_summary_names_the_mutant() -> None:
    result = CliRunner().invoke(main, ["run", "stuck_head", "--seed", "2", "--mutant", "inflight-limit-per-fetch"],
                                terminal_width=200)
    assert result.exit_code == 1
    flat = " ".join(result.output.split())  # the title may wrap
    assert "--mutant inflight-limit-per-fetch" in flat and "window-size" in flat


def test_bad_input_exits_2_with_the_known_names() -> None:
    runner = CliRunner()
    for args, expected in (
        (["run", "small", "--mutant", "no-such-bug"], "known: "),
        (["check", "--mutant", "no-such-bug"], "unknown mutant 'no-such-bug'"),
        (["check", "--scenarios", "nope"], "unknown scenario 'nope'"),
        (["check", "--scenarios", ","], "name at least one"),
        (["check", "--seeds", "0"], "'--seeds': 0"),
    ):
        result = runner.invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert expected in result.output and "Traceback" not in result.output


def test_every_command_has_help() -> None:
    for command in ("mutants", "check"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


def test_check_counts_a_run_that_raises_apart_from_violations_and_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("the model broke")

    monkeypatch.setattr(runner, "run", boom)
    result = CliRunner().invoke(main, ["check", "--scenarios", "small", "--seeds", "1"])
    assert result.exit_code == 3, result.output
    assert "sharesim run small --seed 0  # raised RuntimeError: the model broke" in result.output
    assert "1 run(s), 0 violated, 1 raised" in result.output


def test_a_run_that_raises_beside_a_violation_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.run

    def boom_on_seed_1(spec: object, seed: int, **kwargs: object) -> object:
        if seed == 1:
            raise RuntimeError("the model broke")
        return real(spec, seed, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run", boom_on_seed_1)
    # Seed 0 holds, seed 1 raises, seed 2 violates.
    result = CliRunner().invoke(main, ["check", "--scenarios", "stuck_head", "--seeds", "3",
                                       "--mutant", "inflight-limit-per-fetch"])
    assert result.exit_code == 3, result.output
    assert "3 run(s), 1 violated, 1 raised (mutant inflight-limit-per-fetch)" in result.output


def test_check_takes_scenario_files_and_replays_them_by_path(tmp_path: Path) -> None:
    source = Path(library.__file__).parent / "library" / "stuck_head.toml"
    copy = tmp_path / "mine.toml"
    copy.write_text(source.read_text())
    result = CliRunner().invoke(main, ["check", "--scenarios", str(copy), "--seeds", "3",
                                       "--mutant", "inflight-limit-per-fetch"])
    assert result.exit_code == 1, result.output
    assert f"sharesim run {copy} --seed 2 --mutant inflight-limit-per-fetch  # window-size" in result.output
