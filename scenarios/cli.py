"""The `sharesim` command line.

Every command's exit code means one thing: the table is ``scenarios/exits.py``'s docstring, printed by
``sharesim --help``. The process runs through ``scenarios.entry.guarded``: a failure is one
``error: ...`` line on stderr, with the traceback only under ``--debug``.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from scenarios import outdir
from scenarios.entry import DEBUG_ENV, debugging, error, first_line, guarded, set_debug
from scenarios.exits import Exit, exit_code_table, exit_codes_in_short, verdict_exit
from scenarios.spec import MAX_SEED
from scenarios.terminal import make_console, print_table

console = make_console()


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``sharesim 0.1.0 (compiled build)``, or the interpreted build and why (``model.build_description``)."""
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    import model

    try:
        installed = version("sharesim")
    except PackageNotFoundError:  # a checkout on PYTHONPATH
        installed = "(not installed)"
    click.echo(f"sharesim {installed} ({model.build_description()})")
    ctx.exit()


class _Sharesim(click.Group):
    """The group whose ``main`` (what the console script and CliRunner call) goes through ``guarded``."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        sys.exit(guarded(lambda: super(_Sharesim, self).main(args, prog_name, complete_var, False, **extra)))


@click.group(name="sharesim", cls=_Sharesim, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=exit_code_table())
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and which build runs (compiled or interpreted, and why), then exit.")
@click.option("--debug", is_flag=True, envvar=DEBUG_ENV,
              help=f"Print the traceback of a failure before its error line (or set {DEBUG_ENV}=1).")
def main(debug: bool) -> None:
    """sharesim: a simulation and formal-model testbed for Kafka share groups (KIP-932)
    and the KIP-848 consumer rebalance protocol."""
    set_debug(debug)


@main.command(epilog=outdir.DEMO_RULE)
@click.option("--seed", type=click.IntRange(0, None), default=1, show_default=True, help="The campaign seed.")
@click.option("--runs", type=click.IntRange(1, 1_000_000), default=1000, show_default=True,
              help="Runs of the campaign.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("out/demo-campaign"),
              show_default=True, help="The campaign's output directory (an earlier demo's output in it is replaced).")
@click.option("--force", is_flag=True, help="Write --out even if it holds another command's output or other files "
                                            "(they are kept).")
def demo(seed: int, runs: int, out: Path, force: bool) -> None:
    """The main job: replay the KIP-932 worked example, then a small fault campaign on local Spark.

    Part 1 replays the SPSO/SPEO example of seed 002 through the real
    share-partition leader and prints the table. Part 2 runs --runs runs of
    the `swarm` scenario (each seed draws its own dense mix of faults) as a
    Spark campaign in local mode, aggregates them, and ends with the path of
    the campaign report. Exit codes as `sharesim campaign`'s: 1 if a run violated
    an invariant, 3 if a run raised, 130 on Ctrl-C (with the command that continues).
    """
    from model.core.kip932_example import replay_kip932_example
    from scenarios.campaign.cli import demo_campaign

    def part_1() -> None:  # once --out is accepted: a refusal comes before any work
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
        print_table(console, table)
        console.print("(every value is asserted against the seed by tests/model/core/test_share_partition_golden.py)\n")

    sys.exit(demo_campaign(runs, out, seed, force=force, before_spark=part_1))


@main.command("run", epilog=f"{outdir.RULE} --trace: {outdir.FILE_RULE}")
@click.argument("scenario")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=None,
              help="The run seed (default: the scenario's own).")
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON.")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Keep every event the trace records and write them to FILE as NDJSON, one a line "
                   "(metric trace_events; the events row counts simulator steps, which record none or several); "
                   "an earlier trace is replaced only with --force.")
@click.option("--all-violations", is_flag=True, help="Keep running after the first violation and report them all.")
@click.option("--mutant", default=None, metavar="NAME",
              help="Inject the named bug or variant (see `sharesim mutants`).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Write DIR/result.json, timeline.parquet, report.html (and trace.ndjson on a violation).")
@click.option("--force", is_flag=True, help="Replace an earlier run's output in --out (or an earlier --trace FILE); "
                                            "write beside other files, keeping them.")
def run_command(scenario: str, seed: int | None, as_json: bool, trace_file: Path | None, all_violations: bool,
                mutant: str | None, out: Path | None, force: bool) -> None:
    """Run SCENARIO (a library name or a .toml file) once with --seed N: exit 0 ok, 1 a violation, 2 bad input,
    3 the run raised (one error line with the exception and the command that reproduces it)."""
    from model.sim.runner import run
    from scenarios.check import reproducer, require_mutant
    from scenarios.commands import load_or_exit

    spec = load_or_exit(scenario)
    require_mutant(mutant)
    if trace_file is not None:
        outdir.check_file(trace_file, "--trace", "run", outdir.written_by_trace, force=force)
    try:
        if out is not None:
            from reports.run_dir import run_to_dir

            status = make_console(stderr=True).status(f"running {scenario} and writing {out}")
            with outdir.claim(out, "run", force=force), status:
                result = run_to_dir(spec, seed, out, scenario_ref=scenario, mutant=mutant,
                                    stop_on_first_violation=not all_violations, trace_path=trace_file)
        else:
            result = run(spec, seed, trace_path=trace_file, stop_on_first_violation=not all_violations,
                         mutant=mutant)
    except (OSError, click.ClickException):
        raise  # bad input or environment (an --out refused, a full disk): scenarios/entry.py, not a defect of the run
    except Exception as exc:  # a defect of the simulator: one line with the command that shows it again
        if debugging():
            traceback.print_exception(exc, file=sys.stderr)
        run_seed = spec.seed if seed is None else seed
        error(f"the run raised {type(exc).__name__}: {first_line(str(exc))}; reproduce with: "
              f"{reproducer(scenario, run_seed, mutant)} (`sharesim --debug run ...` prints the traceback)")
        sys.exit(Exit.RUN_ERRORS)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2, sort_keys=False))
    else:
        _print_run(result, scenario)
    if out is not None:
        click.echo(f"report: {out / 'report.html'}", err=as_json)
    sys.exit(verdict_exit(violated=not result.ok, errors=0))


def _print_run(result: Any, scenario_ref: str) -> None:
    from scenarios.check import reproducer

    # The command that replays this run, on a line of its own: a table title would wrap it on a terminal.
    console.print(reproducer(scenario_ref, result.seed, result.mutant), markup=False, highlight=False)
    head = Table(show_header=False)
    head.add_column("what")
    head.add_column("value", overflow="fold")
    verdict = "[green]ok[/green]" if result.ok else f"[red]{result.verdict}[/red]"
    for label, value in (
        ("verdict", verdict),
        ("trace hash", result.trace_hash),
        ("simulated time", f"{result.sim_time_ms} ms"),
        ("events (simulator steps)", str(result.events)),
        ("wall time", f"{result.wall_time_s:.2f} s"),
        ("faults fired", ", ".join(f"{k}x{v}" for k, v in sorted(result.faults_fired.items())) or "none"),
        ("situations reached", ", ".join(f"{k}x{v}" for k, v in result.situations.items()) or "none"),
    ):
        head.add_row(label, value)
    if result.swarm_config:
        head.add_row("settings drawn", ", ".join(f"{k} = {v}" for k, v in sorted(result.swarm_config.items())))
    print_table(console, head)
    for note in result.notes:  # e.g. the first-scenario trap: records produced, none delivered
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)
    metrics = Table(title="metrics")
    metrics.add_column("metric")
    metrics.add_column("value", justify="right")
    for name, value in result.metrics.items():
        metrics.add_row(name, "-" if value is None else str(value))
    print_table(console, metrics)
    if result.violations:
        table = Table(title=f"{len(result.violations)} violation(s)")
        for column in ("invariant", "time_ms", "message"):
            table.add_column(column, overflow="fold")
        for v in result.violations:
            table.add_row(v.invariant, str(v.time_ms), v.message)
        print_table(console, table)


def _register() -> None:
    from scenarios.campaign.cli import campaign_command
    from scenarios.commands import describe_command, list_command, sweep_command

    main.add_command(campaign_command)
    for command in (list_command, describe_command, sweep_command):
        main.add_command(command)
    from scenarios.check import check_command, mutants_command

    main.add_command(mutants_command)
    main.add_command(check_command)
    from scenarios.shrink import shrink_command

    main.add_command(shrink_command)
    from reports.cli import report_command

    main.add_command(report_command)
    from invariants.cli import invariants_command

    main.add_command(invariants_command)
    from scenarios.validate import validate_command

    main.add_command(validate_command)
    from scenarios.situations_cli import situations_command

    main.add_command(situations_command)
    for command in main.commands.values():  # after the command's own epilog (the output rule), if it has one
        command.epilog = f"{command.epilog}\n\n{exit_codes_in_short()}" if command.epilog else exit_codes_in_short()


_register()

if __name__ == "__main__":
    main()
