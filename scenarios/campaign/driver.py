"""A whole campaign: run the batches, aggregate, reproduce the failures, write the report.

Layout of DIR:

* ``DIR/campaign.json``: what the campaign is (scenario, runs, campaign seed,
  mutant, id) and every attempt (runs run, seconds, master); ``--resume``
  refuses a DIR whose campaign differs.
* ``DIR/runs/scenario=NAME/*.parquet``: one row per run (``reports/rows.py``).
* ``DIR/summary/<table>.parquet`` and ``DIR/summary.json``: the aggregates (``reports/aggregate.py``).
* ``DIR/repro/<group>/seed-S/``: a traced re-run of the first seeds of each failure group (with
  ``shrink_runs``, the first seed's ``shrunk.toml`` too).
* ``DIR/report.html``: the campaign report.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reports.aggregate import read_runs, summarise, write_summary
from scenarios.campaign.execute import Attempt, OnProgress, run_batches
from scenarios.campaign.plan import Campaign, Workload
from scenarios.campaign.repro import MAX_GROUPS, SEEDS_PER_GROUP, reproduce
from scenarios.campaign.worker import Simulate, simulate

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

META: Final = "campaign.json"


class CampaignMismatch(Exception):
    """``--resume`` of a DIR that holds a different campaign."""


@dataclass(frozen=True)
class Options:
    partitions: int | None = None
    batch_runs: int | None = None
    resume: bool = False
    seeds_per_group: int = SEEDS_PER_GROUP
    max_groups: int = MAX_GROUPS
    shrink_runs: int = 0  # > 0: shrink each failure group's first reproducer in at most this many runs
    report: bool = True


def _identity(workload: Workload, scenario_ref: str) -> dict[str, Any]:
    identity: dict[str, Any] = {"campaign_id": workload.campaign_id, "scenario": scenario_ref}
    if isinstance(workload, Campaign):
        identity.update(campaign_seed=workload.campaign_seed, mutant=workload.mutant)
    return identity


def _load_meta(out: Path, identity: dict[str, Any], runs: int, resume: bool) -> dict[str, Any]:
    path = out / META
    if not path.exists():
        return {**identity, "runs": runs, "attempts": []}
    meta: dict[str, Any] = json.loads(path.read_text())
    differs = sorted(k for k in identity if meta.get(k) != identity[k])
    if resume and differs:
        raise CampaignMismatch(f"{out} holds another campaign ({', '.join(f'{k} = {meta.get(k)!r}' for k in differs)}"
                               f"); resume it with the same arguments or choose a new --out")
    return {**meta, **identity, "runs": max(runs, int(meta.get("runs", 0)))}


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
    stop_after_batches: int | None = None,
    on_progress: OnProgress | None = None,
) -> dict[str, Any]:
    """Run ``workload`` into ``out`` and return summary.json's content.

    ``scenario_ref`` is how ``sharesim run`` names the scenario in reproducer
    commands (a library name or a file); it defaults to the scenario's name.
    """
    out.mkdir(parents=True, exist_ok=True)
    first = workload.task(0)
    ref = scenario_ref or first.scenario.name
    meta = _load_meta(out, _identity(workload, ref), workload.runs, options.resume)
    attempt: Attempt = run_batches(spark, workload, out / "runs", partitions=options.partitions,
                                   batch_runs=options.batch_runs, resume=options.resume, simulate_fn=simulate_fn,
                                   stop_after_batches=stop_after_batches, on_progress=on_progress)
    meta["attempts"].append({**asdict(attempt), "runs_per_second": attempt.runs_per_second})
    (out / META).write_text(json.dumps(meta, indent=2) + "\n")
    runs = read_runs(spark, out / "runs")
    if runs is None:
        raise RuntimeError(f"{out / 'runs'}: no run was written")
    summary = summarise(spark, runs)
    groups = summary.tables["failure_groups"]  # violations and errors alike get reproducers
    reproducers = reproduce(groups, workload, ref, out, seeds_per_group=options.seeds_per_group,
                            max_groups=options.max_groups, shrink_runs=options.shrink_runs)
    data = write_summary(summary, out, {**campaign_meta(meta),
                                               "reproducers": [r.to_json() for r in reproducers]})
    if options.report:
        from reports.campaign_report import write_report

        write_report(data, out)
    return data
