"""Reproducers: the first seeds of each distinct failure, re-run here with full tracing.

A campaign run records only its metrics and violations (DESIGN.md principle
5); the first seeds of each failure group are re-run locally into
``DIR/repro/<group>/seed-S/`` by ``reports.run_dir.run_to_dir`` (the run
report with its violation report, the result and the trace), each with the
command line that reproduces it: ``sharesim run SCENARIO --seed S [--mutant M]``.
With ``shrink_runs`` (``sharesim campaign --shrink``) the first seed of each
group is also shrunk (``scenarios/shrink.py``) into ``seed-S/shrunk.toml``, a
small scenario file that fails the same way.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from scenarios.campaign.plan import Workload

if TYPE_CHECKING:
    from scenarios.spec import Scenario

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
            result = run_to_dir(task.scenario, task.seed, out / rel, scenario_ref=scenario_ref, mutant=task.mutant)
            command = f"{reproducer(scenario_ref, task.seed, task.mutant)} --out {shlex.quote(str(out / rel))}"
            if task.params:  # a sweep's point: the scenario with these parameters
                command += "  # with " + json.dumps(dict(task.params), sort_keys=True)
            reproduced = any(v.invariant == group["invariant"] for v in result.violations)
            shrunk = None
            if shrink_runs and position == 0 and reproduced:
                shrunk = _shrink(task.scenario, task.seed, task.mutant, group["invariant"], out,
                                 rel / "shrunk.toml", shrink_runs)
            found.append(Reproducer(name, group["invariant"], group["signature"], run_id, task.seed, command,
                                    str(rel), reproduced, shrunk))
    return found


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
