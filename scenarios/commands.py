"""``sharesim list``, ``describe`` and ``sweep``, and how every command turns SCENARIO into a ``Scenario``.

SCENARIO is a library name (``sharesim list``) or a ``.toml`` file. A bad one
exits 2 with every problem listed, never a traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from scenarios import outdir
from scenarios.exits import BadInput, Exit, summary_exit
from scenarios.spec import Scenario, ScenarioError
from scenarios.terminal import make_console, print_table

console = make_console()


def load_or_exit(ref: str) -> Scenario:
    """The scenario SCENARIO names, or ``BadInput`` (exit 2) saying why not."""
    from scenarios import library

    try:
        return library.load(ref)
    except (library.UnknownScenario, ScenarioError) as exc:
        raise BadInput(str(exc)) from None


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, description, fault_kinds}.")
def list_command(as_json: bool) -> None:
    """List the named scenarios: name, description and the fault kinds each exercises."""
    from scenarios import library

    entries = [_entry(library.get(name)) for name in library.names()]
    if as_json:
        click.echo(json.dumps(entries, indent=2))
        return
    table = Table(title=f"{len(entries)} named scenarios (sharesim describe NAME shows one)")
    table.add_column("name", no_wrap=True)
    for column in ("description", "fault kinds"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(entry["name"], entry["description"], ", ".join(entry["fault_kinds"]) or "none")
    print_table(console, table)


def _entry(scenario: Scenario) -> dict[str, Any]:
    return {"name": scenario.name, "description": scenario.description, "fault_kinds": list(scenario.fault_kinds)}


@click.command("describe")
@click.argument("scenario")
def describe_command(scenario: str) -> None:
    """Show SCENARIO (a library name or a .toml file): description, fault kinds, notes on settings that
    quietly change what a run does, every group and broker setting in effect (its value, default and
    allowed range; * marks one the scenario sets), and the scenario as TOML.

    The whole output is a complete scenario file (all but the TOML are comments):
    save it, edit it, and run it with `sharesim run FILE.toml`.
    """
    from scenarios.effective_settings import describe_lines, notes
    from scenarios.toml_format import dumps

    spec = load_or_exit(scenario)
    click.echo(f"# {spec.name}: {spec.description}")
    click.echo(f"# fault kinds: {', '.join(spec.fault_kinds) or 'none'}")
    for note in notes(spec):
        click.echo(f"# note: {note}")
    click.echo("#")
    for line in describe_lines(spec):
        click.echo(f"# {line}")
    click.echo("")
    click.echo(dumps(spec), nl=False)


@click.command("sweep", epilog=outdir.RULE)
@click.argument("scenario")
@click.option("--param", "params", multiple=True, required=True, metavar="KEY=V1,V2,...",
              help="A key path of the scenario's TOML form and its values, e.g. "
                   "'groups[0].config.\"group.share.record.lock.duration.ms\"=1000,2000' or "
                   "consumers.0.count=1,2,4. Repeat for a grid.")
@click.option("--seeds", type=click.IntRange(1, None), default=3, show_default=True,
              help="Runs per grid point, each with its own derived seed.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output directory: runs.parquet and summary.json.")
@click.option("--force", is_flag=True, help="Replace an earlier sweep's output in --out; write beside other files, "
                                            "keeping them.")
@click.option("--spark", "on_spark", is_flag=True, help="Run the tasks as a Spark job (local[*], or --master).")
@click.option("--master", default=None, help="With --spark: the Spark master URL.")
def sweep_command(scenario: str, params: tuple[str, ...], seeds: int, out_dir: Path, force: bool,
                  on_spark: bool, master: str | None) -> None:
    """Run SCENARIO over the grid of --param values × --seeds, here, and write DIR/runs.parquet + summary.json.

    Exit 0 when every run held every invariant, 1 when a run violated one,
    3 when a run raised (each distinct error is printed with its reproducer;
    the sweep still finishes), 2 on bad input. `sharesim report DIR` draws
    the sweep's report.
    """
    from scenarios import sweep
    from scenarios.exits import BadInput

    if master is not None and not on_spark:
        raise BadInput(f"--master {master}: applies to a sweep on Spark only; add --spark, or drop --master")
    spec = load_or_exit(scenario)
    try:
        parsed = [sweep.parse_param(text) for text in params]
        tasks = sweep.plan_sweep(spec, parsed, seeds)
    except sweep.SweepError as exc:
        raise BadInput(str(exc)) from None
    if on_spark:
        from scenarios.campaign.session import check_master

        check_master(master)
    with outdir.claim(out_dir, "sweep", force=force):
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[bad]}"), TimeElapsedColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=False) as progress:
            bar = progress.add_task(f"sweep {spec.name}", total=len(tasks), bad="")
            bad = 0

            def on_run(row: dict[str, Any]) -> None:
                nonlocal bad
                bad += row["verdict"] != "ok"
                progress.update(bar, advance=1, bad=f"[red]{bad} not ok[/red]" if bad else "")

            if on_spark:  # the same tasks through a campaign's Spark path (scenarios/campaign/sweep_spark.py)
                from scenarios.campaign.execute import StaleWorkers
                from scenarios.campaign.interrupt import exit_on_interrupt
                from scenarios.campaign.session import spark_session
                from scenarios.campaign.sweep_spark import InconsistentSweep, run_sweep_on_spark

                with exit_on_interrupt("interrupted") as rearm:  # not Spark's hundreds of lines
                    spark_session(master, app_name=f"sharesim {sweep.campaign_id(spec)}")  # the one the sweep gets
                    rearm()
                    try:
                        rows = run_sweep_on_spark(tasks, sweep.campaign_id(spec), out_dir, master=master,
                                                  on_progress=lambda done, total, rate: progress.update(
                                                      bar, completed=done))
                    except StaleWorkers as exc:
                        raise BadInput(str(exc)) from None
                    except InconsistentSweep as exc:  # never expected: say so loudly, exit 4
                        click.secho(f"error: {exc}", fg="red", bold=True, err=True)
                        sys.exit(Exit.INCONSISTENT)
            else:
                rows = sweep.run_sweep(tasks, sweep.campaign_id(spec), on_run=on_run)
        summary = sweep.write_sweep(out_dir, spec.name, parsed, seeds, rows)
    _print_summary(summary)
    click.echo(f"wrote {out_dir / sweep.RUNS_FILE} and {out_dir / sweep.SUMMARY_FILE}")
    from scenarios.campaign.repro import print_errors

    print_errors(scenario, rows)
    sys.exit(summary_exit(summary))


def _print_summary(summary: dict[str, Any]) -> None:
    shown = ("redelivery_rate", "latency_p99_ms", "records_unresolved")
    table = Table(title=f"sweep {summary['scenario']}: {summary['runs']} runs, {summary['ok']} ok, "
                        f"{summary['violated']} violated, {summary['errors']} errors")
    for key in summary["params"]:
        table.add_column(key, overflow="fold")
    table.add_column("ok / runs", justify="right")
    for name in shown:
        table.add_column(f"{name} (mean [95% CI])", justify="right")
    for point in summary["points"]:
        cells = [json.dumps(point["params"][key]) for key in summary["params"]]
        cells.append(f"{point['ok']} / {point['runs']}")
        cells += [_interval(point["metrics"][name]) for name in shown]
        table.add_row(*cells)
    print_table(console, table)


def _interval(stat: dict[str, Any]) -> str:
    if stat["mean"] is None:
        return "-"
    if stat["low"] is None:
        return f"{stat['mean']:.4g}"
    return f"{stat['mean']:.4g} [{stat['low']:.4g}, {stat['high']:.4g}]"
