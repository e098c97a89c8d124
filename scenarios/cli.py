"""The `sharesim` command line.

Exit codes: 0 ok, 1 an invariant was violated (or a check failed), 2 bad input.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click
from rich.console import Console
from rich.table import Table

console = Console()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sharesim")
def main() -> None:
    """sharesim: a simulation and formal-model testbed for Kafka share groups (KIP-932)
    and the KIP-848 consumer rebalance protocol."""


@main.command()
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the simulated run.")
def demo(seed: int) -> None:
    """The main job: replay the KIP-932 worked example, then simulate the `standard` scenario.

    Part 1 replays the SPSO/SPEO example of seed 002 through the real
    share-partition leader and prints the table. Part 2 runs the `standard`
    scenario (3 brokers, 6 partitions, 6 share consumers, 20 000 records, a
    leader move, a share-coordinator failover and a broker crash) with every
    invariant monitor on. Exit 1 if an invariant was violated.
    """
    from model.core.kip932_example import replay_kip932_example
    from model.sim.runner import run
    from scenarios import library

    table = Table(title="KIP-932 worked example, replayed (seed 002_6b3a98b13b89437f.txt)")
    for column in ("operation", "SPSO", "SPEO", "WriteShareGroupState (StartOffset; StateBatches)"):
        table.add_column(column, overflow="fold")
    for row in replay_kip932_example():
        write = "-"
        if row.write is not None:
            batches = ", ".join(
                f"{b.first_offset}-{b.last_offset} {b.delivery_state.name.lower()} x{b.delivery_count}"
                for b in row.write.state_batches
            )
            write = f"{row.write.start_offset}; [{batches}]"
        table.add_row(row.operation, str(row.spso), str(row.speo), write)
    console.print(table)
    console.print("(every value is asserted against the seed by tests/model/core/test_share_partition_golden.py)\n")
    result = run(library.get("standard"), seed)
    _print_run(result)
    sys.exit(0 if result.ok else 1)


@main.command("run")
@click.argument("scenario")
@click.option("--seed", type=int, default=None, help="The run seed (default: the scenario's own).")
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON.")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None,
              help="Keep every event and write them to FILE as NDJSON.")
@click.option("--all-violations", is_flag=True, help="Keep running after the first violation and report them all.")
def run_command(scenario: str, seed: int | None, as_json: bool, trace_file: str | None, all_violations: bool) -> None:
    """Run SCENARIO (a library name) once with --seed N: exit 0 ok, 1 a violation, 2 bad input."""
    from model.sim.runner import run
    from scenarios import library
    from scenarios.spec import ScenarioError

    if scenario.endswith(".toml"):
        click.echo(f"error: {scenario}: scenario files (TOML) are not available yet; "
                   f"use a named scenario: {', '.join(library.names())}", err=True)
        sys.exit(2)
    if seed is not None and seed < 0:
        click.echo(f"error: --seed {seed}: must be an integer >= 0", err=True)
        sys.exit(2)
    try:
        spec = library.get(scenario)
    except library.UnknownScenario as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except ScenarioError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    result = run(spec, seed, trace_path=trace_file, stop_on_first_violation=not all_violations)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, sort_keys=False))
    else:
        _print_run(result)
    sys.exit(0 if result.ok else 1)


def _print_run(result: Any) -> None:
    head = Table(title=f"sharesim run {result.scenario} --seed {result.seed}", show_header=False)
    head.add_column("what")
    head.add_column("value", overflow="fold")
    verdict = "[green]ok[/green]" if result.ok else f"[red]{result.verdict}[/red]"
    for label, value in (
        ("verdict", verdict),
        ("trace hash", result.trace_hash),
        ("simulated time", f"{result.sim_time_ms} ms"),
        ("events", str(result.events)),
        ("wall time", f"{result.wall_time_s:.2f} s"),
        ("faults fired", ", ".join(f"{k}x{v}" for k, v in sorted(result.faults_fired.items())) or "none"),
    ):
        head.add_row(label, value)
    console.print(head)
    metrics = Table(title="metrics")
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    for name, value in result.metrics.items():
        metrics.add_row(name, "-" if value is None else str(value))
    console.print(metrics)
    if result.violations:
        table = Table(title=f"{len(result.violations)} violation(s)")
        for column in ("invariant", "time_ms", "message"):
            table.add_column(column, overflow="fold")
        for v in result.violations:
            table.add_row(v.invariant, str(v.time_ms), v.message)
        console.print(table)


if __name__ == "__main__":
    main()
