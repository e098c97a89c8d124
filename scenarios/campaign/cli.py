"""``sharesim campaign`` and the main job, ``sharesim demo`` (a small campaign on local Spark)."""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scenarios import outdir
from scenarios.campaign.driver import Options, open_campaign, run_campaign
from scenarios.campaign.execute import CampaignExists, StaleWorkers
from scenarios.campaign.identity import CampaignMismatch
from scenarios.campaign.interrupt import resume_on_interrupt
from scenarios.campaign.plan import MAX_RUNS, Campaign
from scenarios.campaign.session import check_master
from scenarios.exits import BadInput, summary_exit
from scenarios.shrink import DEFAULT_MAX_RUNS
from scenarios.terminal import human_output_on_stderr, make_console, print_table

console = make_console()

DEMO_SCENARIO: Final = outdir.DEMO_SCENARIO


PLAIN_PROGRESS_EVERY_S: Final = 10.0


class PlainProgress:
    """Without a terminal (a CI log): a plain line on stderr every ``PLAIN_PROGRESS_EVERY_S``, and at the end."""

    def __init__(self, total: int) -> None:
        self.started = self.shown_at = time.monotonic()
        self.last: tuple[int, int, float] = (0, total, 0.0)
        self.shown: tuple[int, int, float] | None = None

    def update(self, done: int, total: int, rate: float) -> None:
        self.last = (done, total, rate)
        if time.monotonic() - self.shown_at >= PLAIN_PROGRESS_EVERY_S:
            self.show()

    def show(self) -> None:
        self.shown_at, self.shown = time.monotonic(), self.last
        done, total, rate = self.last
        click.echo(f"runs {done}/{total} ({100 * done // max(total, 1)}%), {rate:.1f} runs/s, "
                   f"elapsed {self.shown_at - self.started:.0f} s", err=True)

    def end(self) -> None:
        if self.shown != self.last:
            self.show()


@contextmanager
def progress_bar(total: int) -> Iterator[Callable[[int, int, float], None]]:
    """A rich progress bar of runs done / total and runs per second (plain lines when stderr is not a
    terminal); yields the progress callback."""
    if not sys.stderr.isatty():
        plain = PlainProgress(total)
        yield plain.update
        plain.end()
        return
    with Progress(TextColumn("[bold]runs"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]:.1f} runs/s"), TimeElapsedColumn(), console=console,
                  transient=False) as bar:
        task = bar.add_task("runs", total=total, rate=0.0)

        def update(done: int, total_runs: int, rate: float) -> None:
            bar.update(task, completed=done, total=total_runs, rate=rate)

        yield update


def print_summary(data: dict[str, Any], out: Path) -> None:
    from rich.table import Table

    head = Table(title=f"campaign {data['campaign_id']}", show_header=False)
    head.add_column("what")
    head.add_column("value", overflow="fold")
    rate = f"{data['runs_per_second']:.1f} ({data.get('build', '-')} build)"
    errors = f"[red]{data['errors']} (runs that raised: see below)[/red]" if data["errors"] else 0
    for label, value in (("runs", data["runs"]), ("ok", data["ok"]), ("violated", data["violated"]),
                         ("errors", errors), ("runs per second", rate),
                         ("faults fired (runs)", ", ".join(f"{k}x{v['runs']}" for k, v in data["faults_fired"].items())
                          or "none")):
        head.add_row(label, str(value))
    coverage = data.get("situation_coverage", {})
    if coverage:
        missed = sorted(k for k, v in coverage.items() if not v["runs_reached"])
        head.add_row("situations reached", f"{len(coverage) - len(missed)} of {len(coverage)}"
                     + (f" (not: {', '.join(missed)})" if missed else ""))
    print_table(console, head)
    hits = {k: v for k, v in data["violations"].items() if v["runs_violated"]}
    if hits:
        table = Table(title="violations (95% Wilson interval)")
        for column in ("invariant", "runs", "rate", "interval"):
            table.add_column(column)
        for name, v in hits.items():
            table.add_row(name, str(v["runs_violated"]), f"{v['rate']:.4f}", f"[{v['ci_low']:.4f}, {v['ci_high']:.4f}]")
        print_table(console, table)
    reproducers = data.get("reproducers", [])
    for group in data["tables"]["failure_groups"]:  # runs that raised first: the verdict cannot be trusted
        if group["invariant"] == "error":
            console.print(f"error in {group['runs']} run(s): {group['example']}", style="red", soft_wrap=True,
                          markup=False, highlight=False)
            for r in reproducers:
                if r["invariant"] == "error" and r["signature"] == group["signature"]:
                    console.print(f"  reproducer: {r['command']}", soft_wrap=True, markup=False, highlight=False)
    for r in reproducers:
        if r["invariant"] == "error":
            continue
        console.print(f"reproducer {r['invariant']}: {r['command']}", soft_wrap=True, markup=False, highlight=False)
        shrunk = r.get("shrunk")
        if shrunk:
            console.print(f"  shrunk ({', '.join(shrunk['changes'])}): {shrunk['command']}" if "command" in shrunk
                          else f"  not shrunk: {shrunk['error']}", markup=False, highlight=False)
    print_validation(data)
    console.print(f"summary: {out / 'summary.json'}")
    console.print(f"report:  [bold]{out / 'report.html'}[/bold]")


def campaign_once(scenario_ref: str, runs: int, out: Path, *, master: str | None, partitions: int | None,
                  batch_runs: int | None, campaign_seed: int, mutant: str | None, resume: bool,
                  shrink: bool = False, force: bool = False, kind: str = "campaign",
                  before_spark: Callable[[], None] | None = None, validate: int | None = None) -> dict[str, Any]:
    """Validate, hold --out (``scenarios/outdir.py``), start Spark, run the campaign with a progress bar;
    bad input raises ``BadInput`` before Spark starts."""
    from scenarios.campaign.session import spark_session
    from scenarios.check import require_mutant
    from scenarios.commands import load_or_exit

    scenario = load_or_exit(scenario_ref)
    require_mutant(mutant)
    try:
        workload = Campaign(scenario, runs, campaign_seed, mutant)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    if resume and force:
        raise BadInput("--resume and --force: give one (--resume continues the campaign in --out, "
                       "--force replaces it)")
    if validate is not None and not any(g.kind == "share" for g in scenario.groups):
        raise BadInput(f"--validate {validate}: {scenario_ref} has no share group; validation checks a "
                       "share-partition against tla/ShareGroup.tla")
    if validate is not None and validate > runs:
        raise BadInput(f"--validate {validate}: more than --runs {runs} (the first K run ids are validated): "
                       f"pass at most --validate {runs}")
    check_master(master)
    again = resume_command(scenario_ref, runs, out, master=master, partitions=partitions, batch_runs=batch_runs,
                           campaign_seed=campaign_seed, mutant=mutant, shrink=shrink, validate=validate)
    with outdir.claim(out, kind, force=force, resume=resume), resume_on_interrupt(again) as rearm:
        try:
            meta = open_campaign(out, workload, scenario_ref, resume, validate)  # refused here, before Spark starts
        except CampaignMismatch as exc:
            raise BadInput("\nerror: ".join(exc.lines)) from exc
        except CampaignExists as exc:
            raise BadInput(str(exc)) from exc
        if before_spark is not None:
            before_spark()
        console.print(f"starting Spark ({master or 'default master'}) ...")
        spark = spark_session(master)
        rearm()
        options = Options(partitions=partitions, batch_runs=batch_runs, resume=resume,
                          shrink_runs=DEFAULT_MAX_RUNS if shrink else 0, validate=meta.get("validate", 0))
        try:
            with progress_bar(runs) as on_progress:
                data = run_campaign(spark, workload, out, scenario_ref=scenario_ref, options=options,
                                    on_progress=on_progress, on_phase=lambda what: console.print(what, markup=False))
        except CampaignMismatch as exc:
            raise BadInput("\nerror: ".join(exc.lines)) from exc
        except (CampaignExists, StaleWorkers) as exc:
            raise BadInput(str(exc)) from exc
    return data


def resume_command(scenario_ref: str, runs: int, out: Path, *, master: str | None, partitions: int | None,
                   batch_runs: int | None, campaign_seed: int, mutant: str | None, shrink: bool,
                   validate: int | None = None) -> str:
    """The command line that continues this campaign, shell-quoted (what Ctrl-C prints)."""
    context = click.get_current_context(silent=True)
    standalone = context is not None and context.find_root().command is campaign_command
    words = ["python", "-m", "scenarios.campaign_main"] if standalone else ["sharesim", "campaign"]
    words += [scenario_ref, "--runs", str(runs), "--out", str(out)]
    for option, value in (("--master", master), ("--partitions", partitions), ("--batch-runs", batch_runs),
                          ("--mutant", mutant), ("--validate", validate)):
        words += [option, str(value)] if value is not None else []
    words += ["--campaign-seed", str(campaign_seed), *(["--shrink"] if shrink else []), "--resume"]
    return shlex.join(words)


@click.command("campaign", epilog=outdir.CAMPAIGN_RULE)
@click.argument("scenario")
@click.option("--runs", type=click.IntRange(1, MAX_RUNS), required=True, help="Number of runs (run ids 0..N-1).")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output directory: runs/ (Parquet), summary.json, report.html, repro/.")
@click.option("--master", default=None, help="Spark master URL (default: spark-submit's, else local[*]).")
@click.option("--partitions", type=click.IntRange(1, 100_000), default=None,
              help="Spark tasks per batch (default: 2 x the default parallelism).")
@click.option("--batch-runs", type=click.IntRange(1, MAX_RUNS), default=None,
              help="Runs per Spark job; each batch is committed as a whole (default: about a minute of work).")
@click.option("--campaign-seed", type=click.IntRange(0, None), default=0, show_default=True,
              help="Seeds are derived from (campaign seed, scenario, run id).")
@click.option("--mutant", default=None, help="Run a mutant (or a variant) of the model (model/mutants.py).")
@click.option("--resume", is_flag=True, help="Continue the campaign in --out: run only the missing run ids.")
@click.option("--force", is_flag=True, help="Replace an earlier campaign's output in --out; write beside other "
                                            "files, keeping them.")
@click.option("--shrink", is_flag=True,
              help="Shrink each distinct failure's first reproducer to a small scenario file (`sharesim shrink`).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary (summary.json's content) as JSON on stdout; everything else goes to stderr.")
@click.option("--validate", type=click.IntRange(1, MAX_RUNS), default=None, metavar="K",
              help="Also validate the first K runs against tla/ShareGroup.tla with TLC (trace validation; Java "
                   "on the executors): acceptance rate, rejections with reproducers, spec coverage.")
def campaign_command(scenario: str, runs: int, out: Path, master: str | None, partitions: int | None,
                     batch_runs: int | None, campaign_seed: int, mutant: str | None, resume: bool,
                     force: bool, shrink: bool, as_json: bool, validate: int | None) -> None:
    """Run SCENARIO (a library name or a .toml file) --runs N times on Spark and aggregate the results.

    Exit 0 when every run held every invariant, 1 when a run violated one, 3 when a run raised (each
    distinct error is printed with its reproducer), 2 on bad input (an unknown or unreachable --master
    included, before Spark starts), 130 on Ctrl-C after printing the command that continues the campaign.
    """
    with human_output_on_stderr(console, when=as_json):
        data = campaign_once(scenario, runs, out, master=master, partitions=partitions, batch_runs=batch_runs,
                             campaign_seed=campaign_seed, mutant=mutant, resume=resume, shrink=shrink,
                             force=force, validate=validate)
        print_summary(data, out)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    sys.exit(campaign_exit(data, out))


def print_validation(data: dict[str, Any]) -> None:
    """The ``--validate`` part of the summary: acceptance, distinct rejections with reproducers, coverage."""
    v = data.get("validation")
    if not v:
        return
    console.print(f"trace validation: {v['accepted']} of {v['validated']} accepted "
                  f"({100 * v['acceptance_rate']:.1f}% of those with a verdict), {v['rejected']} rejected, "
                  f"{v['errors']} without a verdict (error)", markup=False, highlight=False)
    for g in v["groups"]:
        console.print(f"  {g['outcome']} in {g['runs']} run(s): {g['example']}\n    reproducer: {g['command']}",
                      soft_wrap=True, markup=False, highlight=False)
    taken = [c for c in v["coverage"] if c["runs"]]
    console.print("  spec coverage (runs / times): " + ", ".join(f"{c['action']} {c['runs']}/{c['times']}"
                                                             for c in taken), soft_wrap=True, markup=False,
                  highlight=False)
    if v["never"]:
        console.print("  never taken: " + ", ".join(v["never"]), soft_wrap=True, markup=False, highlight=False)


def campaign_exit(data: dict[str, Any], out: Path) -> int:
    """The exit code of a campaign from its summary (scenarios/exits.py), after the loud line of an
    inconsistent output (a run id twice or missing: never expected). A validation that rejected its
    trace counts as a violation (exit 1), one that reached no verdict as a run that raised (exit 3)."""
    if data.get("inconsistent"):
        click.secho(f"error: {out}: {data['inconsistent_message']}", fg="red", bold=True, err=True)
    v = data.get("validation") or {}
    return summary_exit({**data, "violated": data.get("violated", 0) + v.get("rejected", 0),
                         "errors": data.get("errors", 0) + v.get("errors", 0)})


def demo_campaign(runs: int, out: Path, seed: int, *, force: bool = False,
                  before_spark: Callable[[], None] | None = None) -> int:
    """The main job's campaign: ``runs`` runs of swarm on local Spark; returns the exit code. An earlier
    demo's output in ``out`` is replaced (``outdir.DEMO_RULE``)."""
    started = time.perf_counter()
    data = campaign_once(DEMO_SCENARIO, runs, out, master=None, partitions=None, batch_runs=None,
                         campaign_seed=seed, mutant=None, resume=False, force=force, kind="demo",
                         before_spark=before_spark)
    print_summary(data, out)
    console.print(f"(campaign of {runs} runs in {time.perf_counter() - started:.0f} s, Spark start included)")
    return campaign_exit(data, out)
