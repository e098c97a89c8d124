"""A whole campaign: run the batches, aggregate, reproduce the failures, write the report.

Layout of DIR:

* ``DIR/campaign.json``: what the campaign is (``identity.py``: the scenario's content hash, mutant,
  campaign seed, code fingerprint, planned runs), written before the first run, and every attempt
  (runs run, seconds, master), added as each ends; ``--resume`` refuses a DIR whose campaign differs.
* ``DIR/runs/batch=LO-HI-TOKEN/*.parquet``: one row per run (``reports/rows.py``), whole batches only
  (``execute.py``); ``DIR/runs/_staging/`` and ``_progress/``: a batch under way.
* ``DIR/validations/batch=LO-HI-TOKEN/*.parquet``: with ``--validate K``, one row per validated run (run ids
  0..K-1 checked against ``tla/ShareGroup.tla`` by TLC, ``validation.py``), written like the runs.
* ``DIR/summary/<table>.parquet`` and ``DIR/summary.json``: the aggregates (``reports/aggregate.py``).
* ``DIR/repro/<group>/seed-S/``: a traced re-run of the first seeds of each failure group (with
  ``shrink_runs``, the first seed's ``shrunk.toml`` too).
* ``DIR/report.html``: the campaign report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reports.aggregate import read_runs, run_files, summarise, write_summary
from scenarios.campaign.execute import Attempt, CampaignExists, OnProgress, run_batches
from scenarios.campaign.identity import CampaignMismatch, check_resume, identity_of, read_meta, write_meta
from scenarios.campaign.plan import Campaign, Workload
from scenarios.campaign.repro import MAX_GROUPS, SEEDS_PER_GROUP, reproduce
from scenarios.campaign.validation import (
    VALIDATIONS,
    VALIDATIONS_PER_CORE,
    Validate,
    ValidationWorkload,
    dataset,
    planned_validations,
    read_validations,
    validate_task,
    validation_summary,
)
from scenarios.campaign.worker import Simulate, simulate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

@dataclass(frozen=True)
class Options:
    partitions: int | None = None
    batch_runs: int | None = None
    resume: bool = False
    seeds_per_group: int = SEEDS_PER_GROUP
    max_groups: int = MAX_GROUPS
    shrink_runs: int = 0  # > 0: shrink each failure group's first reproducer in at most this many runs
    report: bool = True
    validate: int | None = None  # validate the first K runs with TLC (validation.py); None: as planned (0 if new)


def open_campaign(out: Path, workload: Workload, scenario_ref: str, resume: bool,
                  validate: int | None = None) -> dict[str, Any]:
    """campaign.json's content for this attempt: a new campaign's identity, or the resumed one's (checked
    by ``identity.check_resume``), with its planned validations (``validate``: ``--validate``, None if not
    given). Reads only the files: the CLI calls it before Spark starts."""
    first = workload.task(0)
    campaign = workload if isinstance(workload, Campaign) else None
    identity = identity_of(first.scenario, scenario_ref, campaign.campaign_seed if campaign else None,
                           first.mutant, workload.campaign_id)
    has_runs = bool(run_files(out / "runs"))
    if resume:
        meta = check_resume(out, identity, workload.runs, has_runs=has_runs)
    elif has_runs or read_meta(out) is not None:
        raise CampaignExists(f"{out} already holds a campaign: pass --resume to continue it, or choose a new --out")
    else:
        meta = {**identity, "runs": workload.runs, "attempts": []}
    try:
        planned = planned_validations(meta, validate, meta["runs"])
    except ValueError as exc:
        raise CampaignMismatch([str(exc)]) from exc
    if planned:
        meta["validate"] = planned
    return meta


def campaign_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """The campaign's own fields of summary.json, with runs per second over every attempt and the
    build(s) the workers ran."""
    attempts = meta["attempts"]
    ran = sum(a["runs_run"] for a in attempts)
    seconds = sum(a["seconds"] for a in attempts)
    builds = sorted({a.get("build", "unknown") for a in attempts})  # campaign.json of older versions: none
    return {"kind": "campaign", **{k: v for k, v in meta.items() if k != "runs"}, "runs_planned": meta["runs"],
            "runs_per_second": ran / seconds if seconds > 0 else 0.0, "build": ", ".join(builds) or "-"}


def run_campaign(
    spark: SparkSession,
    workload: Workload,
    out: Path,
    *,
    scenario_ref: str | None = None,
    options: Options = Options(),
    simulate_fn: Simulate = simulate,
    on_progress: OnProgress | None = None,
    on_phase: Callable[[str], None] = lambda _what: None,
    validate_fn: Validate = validate_task,
) -> dict[str, Any]:
    """Run ``workload`` into ``out`` and return summary.json's content.

    ``scenario_ref`` is how ``sharesim run`` names the scenario in reproducer
    commands (a library name or a file); it defaults to the scenario's name.
    campaign.json is written before the first run.
    """
    ref = scenario_ref or workload.task(0).scenario.name
    meta = open_campaign(out, workload, ref, options.resume, options.validate)
    out.mkdir(parents=True, exist_ok=True)
    write_meta(out, meta)
    attempt: Attempt = run_batches(spark, workload, out / "runs", partitions=options.partitions,
                                   batch_runs=options.batch_runs, resume=options.resume, simulate_fn=simulate_fn,
                                   on_progress=on_progress)
    meta["attempts"].append({**asdict(attempt), "runs_per_second": attempt.runs_per_second})
    write_meta(out, meta)
    planned = int(meta.get("validate", 0))
    if planned:
        # Like the runs: whole batches published by one rename, a resume runs only the missing ids.
        on_phase(f"validating {planned} run(s) against tla/ShareGroup.tla with TLC ...")
        checked = run_batches(spark, ValidationWorkload(workload, planned), out / VALIDATIONS,
                              partitions=options.partitions, resume=options.resume,
                              batch_runs=VALIDATIONS_PER_CORE * spark.sparkContext.defaultParallelism,
                              dataset=dataset(validate_fn), job_group="sharesim-validate")
        meta["attempts"][-1].update(validations_run=checked.runs_run, validation_seconds=checked.seconds)
        write_meta(out, meta)
    on_phase("aggregating the runs (Spark SQL) ...")  # the seconds after the last run are not a stall
    runs = read_runs(spark, out / "runs")
    if runs is None:
        raise RuntimeError(f"{out / 'runs'}: no run was written")
    summary = summarise(spark, runs, planned=meta["runs"])
    groups = summary.tables["failure_groups"]  # violations and errors alike get reproducers
    if groups:
        on_phase(f"re-running the first seeds of {min(len(groups), options.max_groups)} failure group(s) "
                 "with full tracing ...")
    reproducers = reproduce(groups, workload, ref, out, seeds_per_group=options.seeds_per_group,
                            max_groups=options.max_groups, shrink_runs=options.shrink_runs)
    extra: dict[str, Any] = {}
    if planned:
        extra["validation"] = validation_summary(read_validations(out), planned, ref)
    data = write_summary(summary, out, {**campaign_meta(meta),
                                               "reproducers": [r.to_json() for r in reproducers], **extra})
    if options.report:
        from reports.campaign_report import write_report

        write_report(data, out)
    return data
