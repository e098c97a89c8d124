"""What a campaign runs: run id → (scenario, seed, swept parameters, mutant).

A campaign's run seed is derived from (campaign seed, scenario name, run id)
alone (``model/sim/rng.py``'s stable hash), so a run's row does not depend on
how the run ids are partitioned, on the cluster, or on an interruption and
``--resume``. A ``Workload`` is what the Spark job ships to its Python workers:
it answers ``task(run_id)``; a campaign computes its tasks, a sweep looks them up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from model.sim.rng import derive_seed
from scenarios.spec import Scenario

# Parquet's seed column is a signed int64; a derived seed is 64 bits.
SEED_MASK: Final = (1 << 63) - 1
MAX_RUNS: Final = 10**10


@dataclass(frozen=True)
class RunTask:
    """One run of a campaign or sweep."""

    run_id: int
    scenario: Scenario
    seed: int
    params: Mapping[str, Any] = field(default_factory=dict)
    mutant: str | None = None


class Workload(Protocol):
    """The runs a Spark job executes: ids ``0 .. runs - 1``; ``task`` is called in the Python workers."""

    @property
    def campaign_id(self) -> str: ...

    @property
    def runs(self) -> int: ...

    def task(self, run_id: int) -> RunTask: ...


def run_seed(campaign_seed: int, scenario: str, run_id: int) -> int:
    """The seed of run ``run_id``: a stable hash of (campaign seed, scenario, run id)."""
    return derive_seed("campaign", campaign_seed, scenario, run_id) & SEED_MASK


def campaign_id_of(scenario: str, campaign_seed: int, mutant: str | None) -> str:
    """Readable and deterministic, so an interrupted and resumed campaign writes the same rows."""
    return f"{scenario}/seed={campaign_seed}" + (f"/mutant={mutant}" if mutant else "")


@dataclass(frozen=True)
class Campaign:
    """``runs`` runs of one scenario, seeds derived from ``campaign_seed``."""

    scenario: Scenario
    runs: int
    campaign_seed: int = 0
    mutant: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.runs, bool) or not isinstance(self.runs, int) or not 1 <= self.runs <= MAX_RUNS:
            raise ValueError(f"runs = {self.runs!r}: must be an integer in [1, {MAX_RUNS}]")
        if isinstance(self.campaign_seed, bool) or not isinstance(self.campaign_seed, int) or self.campaign_seed < 0:
            raise ValueError(f"campaign seed = {self.campaign_seed!r}: must be an integer >= 0")

    @property
    def campaign_id(self) -> str:
        return campaign_id_of(self.scenario.name, self.campaign_seed, self.mutant)

    def task(self, run_id: int) -> RunTask:
        return RunTask(run_id, self.scenario, run_seed(self.campaign_seed, self.scenario.name, run_id),
                       mutant=self.mutant)


@dataclass(frozen=True)
class TaskList:
    """A fixed list of tasks (a sweep's grid): run id = position in the list."""

    campaign_id: str
    tasks: Sequence[RunTask]

    @property
    def runs(self) -> int:
        return len(self.tasks)

    def task(self, run_id: int) -> RunTask:
        return self.tasks[run_id]
