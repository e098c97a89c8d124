"""``sharesim list``, ``describe`` and ``sweep`` through click's CliRunner: output, files and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from scenarios import library
from scenarios.cli import main
from scenarios.toml_format import loads


def test_list_json_is_every_named_scenario_with_description_and_fault_kinds() -> None:
    result = CliRunner().invoke(main, ["list", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)
    assert [e["name"] for e in entries] == library.names()
    assert all(set(e) == {"name", "description", "fault_kinds"} for e in entries)
    by_name = {e["name"]: e for e in entries}
    assert by_name["gc_pause"]["fault_kinds"] == ["consumer_pause"] and by_name["happy"]["fault_kinds"] == []
    assert by_name["swarm"]["description"] == library.get("swarm").description


def test_list_prints_a_table() -> None:
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0 and "kip932_example" in result.output and "fault kinds" in result.output


def test_describe_prints_the_description_fault_kinds_and_a_toml_file_that_loads_back() -> None:
    result = CliRunner().invoke(main, ["describe", "rolling_restart"])
    assert result.exit_code == 0, result.output
    head, _, toml = result.output.partition("\n\n")
    assert head.startswith("# rolling_restart: a rolling restart") and "# fault kinds: broker_crash" in head
    assert loads(toml) == library.get("rolling_restart")


def test_describe_takes_a_file_and_refuses_an_unknown_name(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n')
    assert CliRunner().invoke(main, ["describe", str(path)]).output.startswith("# x: \n")
    bad = CliRunner().invoke(main, ["describe", "nope"])
    assert bad.exit_code == 2 and "unknown scenario 'nope'" in bad.output


def test_sweep_writes_runs_and_summary_and_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    args = ["sweep", "small", "--param", "consumers.0.count=1,2", "--param",
            'groups[0].config."group.share.record.lock.duration.ms"=1000,2000', "--seeds", "3", "--out", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert pq.read_table(out / "runs.parquet").num_rows == 12
    summary = json.loads((out / "summary.json").read_text())
    assert summary["runs"] == 12 and summary["ok"] == 12 and len(summary["points"]) == 4
    assert "12/12" in result.output and "wrote" in result.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "(runs.parquet, summary.json); give --force" in again.output
    assert CliRunner().invoke(main, [*args[:-4], "--seeds", "1", "--out", str(out), "--force"]).exit_code == 0
    assert pq.read_table(out / "runs.parquet").num_rows == 4


def test_sweep_bad_input_exits_2_with_the_reason(tmp_path: Path) -> None:
    for args, message in (
        (["--param", "consumers.0.cnt=1,2"], 'did you mean "count"?'),
        (["--param", "consumers.0.count"], "must be KEY=V1,V2"),
        (["--param", "consumers.0.count=1", "--seeds", "0"], "--seeds"),
        ([], "Missing option '--param'"),
    ):
        result = CliRunner().invoke(main, ["sweep", "small", *args, "--out", str(tmp_path / "o")])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_every_new_command_has_help() -> None:
    for command in ("list", "describe", "sweep"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


def test_a_sweep_with_a_violated_run_exits_1_and_counts_it(tmp_path: Path) -> None:
    # The faults end at 1.5 s, while the producer still has half a second of records to send: a 1 ms
    # healing phase cannot wait for them, so the liveness check fails at once.
    out = tmp_path / "sweep"
    result = CliRunner().invoke(main, ["sweep", "broker_crash", "--param", "duration_ms=1500",
                                       "--param", "heal_ms=1,30000", "--seeds", "1", "--out", str(out)])
    assert result.exit_code == 1, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["ok"], summary["violated"]) == (1, 1) and sum(summary["violations"].values()) >= 1
    assert summary["points"][0]["violated"] == 1 and summary["points"][1]["ok"] == 1
