"""Reproducers: the first seeds of each distinct failure, re-run here with full tracing.

A campaign run records only its metrics and violations (DESIGN.md principle
5); the first seeds of each failure group are re-run locally into
``DIR/repro/<group>/seed-S/`` by ``reports.run_dir.run_to_dir`` (the run
report with its violation report, the result and the trace), each with the
command line that reproduces it: ``sharesim run SCENARIO --seed S [--mutant M]``.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from scenarios.campaign.plan import Workload

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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def group_name(index: int, invariant: str) -> str:
    return f"{index + 1:02d}-{re.sub(r'[^A-Za-z0-9_-]+', '_', invariant)}"


def reproduce(groups: list[dict[str, Any]], workload: Workload, scenario_ref: str, out: Path,
              *, seeds_per_group: int = SEEDS_PER_GROUP, max_groups: int = MAX_GROUPS) -> list[Reproducer]:
    """Re-run the first ``seeds_per_group`` seeds of the first ``max_groups`` violation groups."""
    from reports.run_dir import reproducer, run_to_dir

    found: list[Reproducer] = []
    for index, group in enumerate(groups[:max_groups]):
        name = group_name(index, group["invariant"])
        for run_id in group["run_ids"][:seeds_per_group]:
            task = workload.task(run_id)
            rel = Path("repro") / name / f"seed-{task.seed}"
            result = run_to_dir(task.scenario, task.seed, out / rel, scenario_ref=scenario_ref, mutant=task.mutant)
            command = f"{reproducer(scenario_ref, task.seed, task.mutant)} --out {shlex.quote(str(out / rel))}"
            if task.params:  # a sweep's point: the scenario with these parameters
                command += "  # with " + json.dumps(dict(task.params), sort_keys=True)
            reproduced = any(v.invariant == group["invariant"] for v in result.violations)
            found.append(Reproducer(name, group["invariant"], group["signature"], run_id, task.seed, command,
                                    str(rel), reproduced))
    return found
