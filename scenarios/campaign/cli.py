"""``sharesim campaign`` and the main job, ``sharesim demo`` (a small campaign on local Spark)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from scenarios import exits, outdir
from scenarios.campaign.driver import CampaignMismatch, Options, run_campaign
from scenarios.campaign.execute import CampaignExists
from scenarios.campaign.plan import MAX_RUNS, Campaign
from scenarios.shrink import DEFAULT_MAX_RUNS

console = Console()

DEMO_SCENARIO: Final = "swarm"


class BadInput(click.ClickException):
    exit_code = 2


def load_scenario(ref: str) -> Any:
    """A library name or a scenario file, validated; bad input is a ``BadInput`` naming it."""
    from scenarios import library
    from scenarios.spec import ScenarioError

    try:
        return library.load(ref)
    except (library.UnknownScenario, ScenarioError) as exc:
        raise BadInput(str(exc)) from exc


def check_mutant(name: str | None) -> None:
    from model import mutants

    if name is not None:
        try:
            mutants.injectable(name)
        except mutants.UnknownMutant as exc:
            raise BadInput(f"--mutant: {exc}") from exc


@contextmanager
def progress_bar(total: int) -> Iterator[Callable[[int, int, float], None]]:
    """A rich progress bar of runs done / total and runs per second; yields the progress callback."""
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
    for label, value in (("runs", data["runs"]), ("ok", data["ok"]), ("violated", data["violated"]),
                         ("errors", data["errors"]), ("runs per second", rate),
                         ("faults fired (runs)", ", ".join(f"{k}x{v['runs']}" for k, v in data["faults_fired"].items())
                          or "none")):
        head.add_row(label, str(value))
    console.print(head)
    hits = {k: v for k, v in data["violations"].items() if v["runs_violated"]}
    if hits:
        table = Table(title="violations (95% Wilson interval)")
        for column in ("invariant", "runs", "rate", "interval"):
            table.add_column(column)
        for name, v in hits.items():
            table.add_row(name, str(v["runs_violated"]), f"{v['rate']:.4f}", f"[{v['ci_low']:.4f}, {v['ci_high']:.4f}]")
        console.print(table)
    for r in data.get("reproducers", []):
        console.print(f"reproducer {r['invariant']}: {r['command']}")
        shrunk = r.get("shrunk")
        if shrunk:
            console.print(f"  shrunk ({', '.join(shrunk['changes'])}): {shrunk['command']}" if "command" in shrunk
                          else f"  not shrunk: {shrunk['error']}")
    console.print(f"summary: {out / 'summary.json'}")
    console.print(f"report:  [bold]{out / 'report.html'}[/bold]")


def campaign_once(scenario_ref: str, runs: int, out: Path, *, master: str | None, partitions: int | None,
                  batch_runs: int | None, campaign_seed: int, mutant: str | None, resume: bool,
                  shrink: bool = False, force: bool = False, kind: str = "campaign") -> dict[str, Any]:
    """Validate, hold --out (``scenarios/outdir.py``), start Spark, run the campaign with a progress bar;
    bad input raises ``BadInput`` before Spark starts."""
    from scenarios.campaign.session import spark_session

    scenario = load_scenario(scenario_ref)
    check_mutant(mutant)
    try:
        workload = Campaign(scenario, runs, campaign_seed, mutant)
    except ValueError as exc:
        raise BadInput(str(exc)) from exc
    if resume and force:
        raise exits.BadInput("--resume and --force: give one (--resume continues the campaign in --out, "
                             "--force replaces it)")
    with outdir.claim(out, kind, force=force, resume=resume):
        console.print(f"starting Spark ({master or 'default master'}) ...")
        spark = spark_session(master)
        options = Options(partitions=partitions, batch_runs=batch_runs, resume=resume,
                          shrink_runs=DEFAULT_MAX_RUNS if shrink else 0)
        try:
            with progress_bar(runs) as on_progress:
                data = run_campaign(spark, workload, out, scenario_ref=scenario_ref, options=options,
                                    on_progress=on_progress)
        except (CampaignExists, CampaignMismatch) as exc:
            raise BadInput(str(exc)) from exc
        except KeyboardInterrupt:
            spark.sparkContext.cancelAllJobs()
            console.print(f"interrupted: continue with the same command and --resume (output in {out})")
            raise SystemExit(130) from None
    return data


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
def campaign_command(scenario: str, runs: int, out: Path, master: str | None, partitions: int | None,
                     batch_runs: int | None, campaign_seed: int, mutant: str | None, resume: bool,
                     force: bool, shrink: bool) -> None:
    """Run SCENARIO (a library name or a .toml file) --runs N times on Spark and aggregate the results.

    Exit 0 when no run violated an invariant or raised, 1 otherwise, 2 on bad input.
    """
    data = campaign_once(scenario, runs, out, master=master, partitions=partitions, batch_runs=batch_runs,
                         campaign_seed=campaign_seed, mutant=mutant, resume=resume, shrink=shrink, force=force)
    print_summary(data, out)
    sys.exit(0 if not data["violated"] and not data["errors"] else 1)


def demo_campaign(runs: int, out: Path, seed: int, *, force: bool = False) -> int:
    """The main job's campaign: ``runs`` runs of swarm on local Spark; returns the exit code. An earlier
    demo's output in ``out`` is replaced (``outdir.DEMO_RULE``)."""
    started = time.perf_counter()
    data = campaign_once(DEMO_SCENARIO, runs, out, master=None, partitions=None, batch_runs=None,
                         campaign_seed=seed, mutant=None, resume=False, force=force, kind="demo")
    print_summary(data, out)
    console.print(f"(campaign of {runs} runs in {time.perf_counter() - started:.0f} s, Spark start included)")
    return 0 if not data["violated"] and not data["errors"] else 1
