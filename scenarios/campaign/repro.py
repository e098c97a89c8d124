"""Reproducers: the first seeds of each distinct failure, re-run here with full tracing.

A campaign run records only its metrics and violations (DESIGN.md principle
5); the first seeds of each failure group are re-run locally into
``DIR/repro/<group>/seed-S/`` by ``reports.run_dir.run_to_dir`` (the run
report with its violation report, the result and the trace), each with the
command line that reproduces it: ``sharesim run SCENARIO --seed S [--mutant M]``.
A group of runs that raised (``invariant`` "error", a defect of the simulator)
is re-run the same way; its directory holds the traceback of the re-run,
``traceback.txt``, and it is reproduced when the re-run raises the same error.
With ``shrink_runs`` (``sharesim campaign --shrink``) the first seed of each
group is also shrunk (``scenarios/shrink.py``) into ``seed-S/shrunk.toml``, a
small scenario file that fails the same way.
"""

from __future__ import annotations

import json
import re
import shlex
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from scenarios.campaign.plan import RunTask, Workload

if TYPE_CHECKING:
    from scenarios.spec import Scenario

ERROR: Final = "error"  # the invariant column of a group of runs that raised
TRACEBACK: Final = "traceback.txt"
SEEDS_PER_GROUP: Final = 2
MAX_GROUPS: Final = 20


@dataclass(frozen=True)
class Reproducer:
    group: str  # directory name under DIR/repro/
    invariant: str
    signature: str
    run_id: int
    seed: int
    command: str
    path: str  # the run's directory, relative to DIR (its report.html is the violation report)
    reproduced: bool  # the local re-run violated the same invariant
    # With --shrink, for a group's first seed: {"path", "command", "changes", "runs"} of the shrunk file,
    # or {"error": why shrinking failed}; None when not shrunk.
    shrunk: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def group_name(index: int, invariant: str) -> str:
    return f"{index + 1:02d}-{re.sub(r'[^A-Za-z0-9_-]+', '_', invariant)}"


def reproduce(groups: list[dict[str, Any]], workload: Workload, scenario_ref: str, out: Path,
              *, seeds_per_group: int = SEEDS_PER_GROUP, max_groups: int = MAX_GROUPS,
              shrink_runs: int = 0) -> list[Reproducer]:
    """Re-run the first ``seeds_per_group`` seeds of the first ``max_groups`` violation groups, and
    shrink each group's first seed in at most ``shrink_runs`` runs (0: do not shrink)."""
    from reports.run_dir import run_to_dir
    from scenarios.check import reproducer

    found: list[Reproducer] = []
    for index, group in enumerate(groups[:max_groups]):
        name = group_name(index, group["invariant"])
        for position, run_id in enumerate(group["run_ids"][:seeds_per_group]):
            task = workload.task(run_id)
            rel = Path("repro") / name / f"seed-{task.seed}"
            if group["invariant"] == ERROR:
                found.append(_reproduce_error(group, task, scenario_ref, out, rel, name, run_id))
                continue
            result = run_to_dir(task.scenario, task.seed, out / rel, scenario_ref=scenario_ref, mutant=task.mutant)
            command = f"{reproducer(scenario_ref, task.seed, task.mutant)} --out {shlex.quote(str(out / rel))}"
            reproduced = any(v.invariant == group["invariant"] for v in result.violations)
            shrunk = None
            if shrink_runs and position == 0 and reproduced:
                shrunk = _shrink(task.scenario, task.seed, task.mutant, group["invariant"], out,
                                 rel / "shrunk.toml", shrink_runs)
            found.append(Reproducer(name, group["invariant"], group["signature"], run_id, task.seed,
                                    command + _with_params(task), str(rel), reproduced, shrunk))
    return found


def _reproduce_error(group: dict[str, Any], task: RunTask, scenario_ref: str, out: Path, rel: Path, name: str,
                     run_id: int) -> Reproducer:
    """Re-run a seed that raised: its traceback goes to ``rel/traceback.txt``."""
    from model.sim.runner import run
    from scenarios.check import reproducer

    (out / rel).mkdir(parents=True, exist_ok=True)
    try:
        run(task.scenario, task.seed, mutant=task.mutant)
    except Exception as exc:
        text = "".join(traceback.format_exception(exc))
        reproduced = error_signature(text) == group["signature"]
    else:
        text, reproduced = "the re-run did not raise\n", False
    (out / rel / TRACEBACK).write_text(text)
    return Reproducer(name, ERROR, group["signature"], run_id, task.seed,
                      reproducer(scenario_ref, task.seed, task.mutant) + _with_params(task), str(rel), reproduced)


def _with_params(task: RunTask) -> str:
    """A sweep's point: the scenario with these parameters."""
    return "  # with " + json.dumps(dict(task.params), sort_keys=True) if task.params else ""


def error_signature(error: str) -> str:
    """What groups runs that raised: the traceback's last line with its numbers blanked (as the
    campaign's ``failure_groups`` query does in SQL)."""
    lines = [line for line in error.splitlines() if line.strip()]
    return re.sub(r"[0-9]+", "#", lines[-1] if lines else "")


def print_errors(scenario_ref: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """On stderr, each distinct error of ``rows`` (in-process runs: a sweep's) with the runs it
    happened in and the command that reproduces its first."""
    from scenarios.check import reproducer

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r["run_id"]):
        if row["verdict"] == "error":
            groups.setdefault(error_signature(row["error"] or ""), []).append(row)
    for signature, raised in groups.items():
        first = raised[0]
        params = f"  # with {json.dumps(_params(first), sort_keys=True)}" if _params(first) else ""
        click.secho(f"error in {len(raised)} run(s): {signature}; reproduce with: "
                    f"{reproducer(scenario_ref, first['seed'], first.get('mutant'))}{params}", err=True, fg="red")


def _params(row: Mapping[str, Any]) -> dict[str, Any]:
    params = row.get("params") or {}
    return dict(params) if isinstance(params, Mapping) else {k: json.loads(v) for k, v in params}


def _shrink(scenario: Scenario, seed: int, mutant: str | None, invariant: str, out: Path, rel: Path,
            max_runs: int) -> dict[str, Any]:
    """Shrink one reproducer into ``out / rel``; a shrinking that fails is noted, and the campaign goes on."""
    from scenarios.shrink import shrink_run

    try:
        shrunk = shrink_run(scenario, seed, mutant=mutant, invariant=invariant, max_runs=max_runs)
    except Exception as exc:  # a bug of the shrinker or the model must not lose the campaign's report
        return {"error": f"{type(exc).__name__}: {exc}"}
    path = out / rel
    path.write_text(shrunk.to_toml(str(path)))
    return {"path": str(rel), "command": shrunk.command(str(path)), "changes": shrunk.changes(), "runs": shrunk.runs}
