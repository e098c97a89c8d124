"""``scenarios/terminal.py`` and every table command: never hard-wrapped when not a terminal, readable at 80
columns on a terminal (each column's content is still there, no line wider than the terminal)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.table import Table

import invariants.cli
import scenarios.campaign.cli
import scenarios.check
import scenarios.cli
import scenarios.commands
from invariants.catalogue import CATALOGUE
from model import mutants
from scenarios import library
from scenarios.cli import main
from scenarios.terminal import UNWRAPPED_WIDTH, human_output_on_stderr, make_console, print_table, records

ROOT = Path(__file__).resolve().parents[2]
MODULES = (scenarios.cli, scenarios.commands, scenarios.check, scenarios.campaign.cli, invariants.cli)


def flat(text: str) -> str:
    """Whitespace and a table's vertical rules dropped: a cell folded over lines reads as one text again."""
    return " ".join(text.replace("│", " ").replace("┃", " ").split())


@pytest.fixture
def terminal_80(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Every command's console is an 80-column terminal writing here (no colour codes, to read it)."""
    screen = io.StringIO()
    console = make_console(file=screen, width=80, force_terminal=True, color_system=None)
    for module in MODULES:
        monkeypatch.setattr(module, "console", console)
    return screen


def assert_fits_80(text: str) -> None:
    too_wide = [line for line in text.splitlines() if len(line) > 80]
    assert not too_wide, too_wide[:3]


# -- not a terminal: never hard-wrapped ------------------------------------------------------------


def test_a_console_that_is_not_a_terminal_is_as_wide_as_any_line() -> None:
    screen = io.StringIO()
    console = make_console(file=screen)
    assert not console.is_terminal and console.width == UNWRAPPED_WIDTH
    command = "sharesim run " + "/very/long/path" * 20 + "/scenario.toml --seed 12345 --mutant spso-before-durable"
    console.print(f"reproducer spso-monotonic: {command}")
    assert f"reproducer spso-monotonic: {command}\n" == screen.getvalue()


def test_plain_lines_are_not_wrapped_on_a_terminal_either() -> None:
    screen = io.StringIO()
    console = make_console(file=screen, force_terminal=True, width=80)
    line = "x " * 100
    console.print(line)
    assert screen.getvalue().rstrip("\n").rstrip() == line.rstrip()


def test_list_piped_prints_each_description_whole_on_one_line() -> None:
    piped = subprocess.run([sys.executable, "-m", "scenarios.cli", "list"], cwd=ROOT, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}, check=True)
    lines = piped.stdout.splitlines()
    for name in library.names():
        description = library.get(name).description
        assert any(description in line for line in lines), (name, description)


def test_a_campaign_reproducer_longer_than_80_columns_stays_one_line(capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    monkeypatch.setattr(scenarios.campaign.cli, "console", make_console())  # stdout: captured, not a terminal
    command = f"sharesim run '{tmp_path}/a scenario [with] brackets/of a long name.toml' --seed 4023117 --mutant " \
              "start-offset-every-write"
    scenarios.campaign.cli.print_summary(summary(command), tmp_path)
    out = capsys.readouterr().out
    assert f"reproducer no-redelivery-after-ack: {command}\n" in out
    assert len(command) > 80


# -- an 80-column terminal: every column readable ----------------------------------------------------


def test_mutants_at_80_columns_keeps_every_description(terminal_80: io.StringIO) -> None:
    result = CliRunner().invoke(main, ["mutants"])
    assert result.exit_code == 0, result.output
    text = terminal_80.getvalue()
    assert_fits_80(text)
    for m in mutants.MUTANTS:
        assert m.name in text.split() and m.expected_invariant in text.split() and m.scenario in text.split()
        assert flat(m.description) in flat(text), m.name
    for v in mutants.VARIANTS:
        assert v.name in text.split() and flat(v.description) in flat(text)


def test_invariants_at_80_columns_keeps_every_statement(terminal_80: io.StringIO) -> None:
    result = CliRunner().invoke(main, ["invariants"])
    assert result.exit_code == 0, result.output
    text = terminal_80.getvalue()
    assert_fits_80(text)
    for invariant in CATALOGUE:
        assert invariant.id in text.split() and flat(invariant.statement) in flat(text), invariant.id


def test_list_at_80_columns_keeps_every_name_description_and_fault_kind(terminal_80: io.StringIO) -> None:
    result = CliRunner().invoke(main, ["list"])
    assert result.exit_code == 0, result.output
    text = terminal_80.getvalue()
    assert_fits_80(text)
    for name in library.names():
        scenario = library.get(name)
        assert name in text.split() and flat(scenario.description) in flat(text), name
        assert flat(", ".join(scenario.fault_kinds) or "none") in flat(text), name


def test_check_at_80_columns_prints_each_reproducer_on_one_line(terminal_80: io.StringIO) -> None:
    result = CliRunner().invoke(main, ["check", "--scenarios", "stuck_head", "--seeds", "5",
                                       "--mutant", "inflight-limit-per-fetch"])
    assert result.exit_code == 1, result.output
    expected = [f"sharesim run stuck_head --seed {s} --mutant inflight-limit-per-fetch  # window-size" for s in (2, 4)]
    assert [line for line in result.stdout.splitlines() if line.startswith("sharesim run")] == expected


def test_a_run_summary_at_80_columns_starts_with_its_reproducer_on_one_line(terminal_80: io.StringIO) -> None:
    command = "sharesim run late_start_offset_write --seed 4 --mutant start-offset-every-write-max"
    assert len(command) > 80
    result = CliRunner().invoke(main, command.split()[1:])
    assert result.exit_code == 0, result.output
    text = terminal_80.getvalue()
    assert text.splitlines()[0] == command
    assert_fits_80("\n".join(text.splitlines()[1:]))


def test_a_sweep_table_at_80_columns_keeps_every_header_and_value(terminal_80: io.StringIO, tmp_path: Path) -> None:
    key = 'groups[0].config."group.share.record.lock.duration.ms"'
    result = CliRunner().invoke(main, ["sweep", "small", "--param", f"{key}=1000,2000", "--seeds", "2",
                                       "--out", str(tmp_path / "sweep")])
    assert result.exit_code == 0, result.output
    text = terminal_80.getvalue()
    assert_fits_80(text)
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    for header in (key, "ok / runs", "redelivery_rate (mean [95% CI])", "latency_p99_ms (mean [95% CI])",
                   "records_unresolved (mean [95% CI])"):
        assert header in flat(text), header
    for point in summary["points"]:
        p99 = point["metrics"]["latency_p99_ms"]
        assert f"{p99['mean']:.4g} [{p99['low']:.4g}, {p99['high']:.4g}]" in flat(text)


def test_the_campaign_summary_at_80_columns_keeps_every_value(terminal_80: io.StringIO, tmp_path: Path) -> None:
    command = "sharesim run late_start_offset_write --seed 4 --mutant start-offset-every-write"
    scenarios.campaign.cli.print_summary(summary(command), tmp_path)
    text = terminal_80.getvalue()
    tables, _ = text.split("reproducer ", 1)  # then the plain lines: soft-wrapped, the terminal folds them
    assert_fits_80(tables)
    for value in ("campaign swarm-1", "runs per second", "broker_crashx40", "network_partitionx12",
                  "no-redelivery-after-ack", "[0.0055, 0.0312]"):
        assert value in flat(tables), value
    assert f"reproducer no-redelivery-after-ack: {command}" in text.splitlines()


# -- print_table -------------------------------------------------------------------------------------


def wide_table() -> Table:
    table = Table(title="t")
    table.add_column("name", no_wrap=True)
    table.add_column("scenario", no_wrap=True)
    table.add_column("description", overflow="fold")
    table.add_row("a-rather-long-mutant-name-x", "read_committed_transactions", "words " * 30)
    table.add_row("short", "small", "one two three")
    return table


def test_print_table_keeps_a_table_that_fits_and_prints_records_where_it_does_not() -> None:
    for width, as_records in ((200, False), (80, True)):
        screen = io.StringIO()
        print_table(Console(file=screen, width=width, force_terminal=True, color_system=None), wide_table())
        text = screen.getvalue()
        assert ("┃" not in text) is as_records, width
        assert "a-rather-long-mutant-name-x" in text and "read_committed_transactions" in text
        assert flat("words " * 30) in flat(text)


def test_records_lists_every_cell_under_its_header() -> None:
    screen = io.StringIO()
    Console(file=screen, width=60, color_system=None).print(records(wide_table()))
    lines = screen.getvalue().splitlines()
    assert lines[1].split() == ["name", "a-rather-long-mutant-name-x"]
    assert lines[2].split() == ["scenario", "read_committed_transactions"]
    assert ["name", "short"] in [line.split() for line in lines]


def test_human_output_on_stderr_moves_the_console_and_restores_it(capsys: pytest.CaptureFixture[str]) -> None:
    console = make_console()
    with human_output_on_stderr(console, when=True):
        console.print("to stderr")
    console.print("to stdout")
    with human_output_on_stderr(console, when=False):
        console.print("stays on stdout")
    captured = capsys.readouterr()
    assert captured.err == "to stderr\n" and captured.out == "to stdout\nstays on stdout\n"


def summary(command: str) -> dict[str, Any]:
    """A campaign summary as ``run_campaign`` returns it (the keys ``print_summary`` reads)."""
    return {
        "campaign_id": "swarm-1", "runs": 1000, "ok": 985, "violated": 15, "errors": 0, "runs_per_second": 151.2,
        "build": "interpreted",
        "faults_fired": {"broker_crash": {"runs": 40}, "network_partition": {"runs": 12},
                         "share_coordinator_failover": {"runs": 300}, "consumer_pause": {"runs": 500}},
        "violations": {"no-redelivery-after-ack": {"runs_violated": 15, "rate": 0.015, "ci_low": 0.0055,
                                                   "ci_high": 0.0312},
                       "spso-monotonic": {"runs_violated": 0, "rate": 0.0, "ci_low": 0.0, "ci_high": 0.0037}},
        "reproducers": [{"invariant": "no-redelivery-after-ack", "command": command}],
        "tables": {"failure_groups": [{"invariant": "no-redelivery-after-ack", "runs": 15, "signature": "#"}]},
    }
