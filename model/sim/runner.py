"""One deterministic run: ``run(scenario, seed) -> RunResult``.

A run is a pure function of (scenario, seed) (DESIGN.md principle 2): the
cluster draws every random choice from streams derived from
``derive_seed(seed, scenario.name)``, and the trace hash folds in every event
in order. ``wall_time_s`` is the one field that is not reproducible; it is
kept out of ``trace_hash`` and of equality checks.

``situations`` counts the protocol situations of ``model.situations`` the run reached (the counters
are zeroed before the run and read after it; counting changes nothing in the run or its trace hash).

``mutant`` names a bug injection of ``model.mutants`` for the run (None: the
correct model); it is set around the run and always reset, even if the run raises.

The verdict: ``"ok"``; ``"violated"`` when a monitor reported a violation
(safety, or liveness at the deadline: E-1 / E-5); the CLI exits 1 on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invariants.violation import Violation
from model import mutants, situations
from model.sim.trace import Trace

if TYPE_CHECKING:
    from invariants.monitors import Monitor
    from model.sim.cluster import Cluster
    from scenarios.spec import Scenario


@dataclass
class RunResult:
    """One run. ``events`` counts the simulator's steps (timers fired and SimPy process steps), not the
    events of its trace: ``metrics["trace_events"]`` is those, the lines ``--trace`` writes."""

    scenario: str
    seed: int
    trace_hash: str
    sim_time_ms: int
    events: int
    metrics: dict[str, Any]
    faults_fired: dict[str, int]
    violations: list[Violation]
    wall_time_s: float
    verdict: str
    fault_plan: list[dict[str, Any]] = field(default_factory=list)
    swarm_config: dict[str, int | str] = field(default_factory=dict)  # the broker settings the swarm drew
    trace: Trace | None = field(default=None, repr=False, compare=False)
    mutant: str | None = None  # the bug injected into this run (model.mutants), if any
    # What a reader should know though no invariant was broken, one sentence each: records produced of which
    # none reached a group (e.g. a share group reading from "latest": Cluster.notes).
    notes: list[str] = field(default_factory=list)
    # The situations of model.situations the run reached: id -> count, only nonzero, sorted by id.
    situations: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    def to_json(self) -> dict[str, Any]:
        """Plain JSON values: what ``sharesim run --json`` prints and a campaign row holds."""
        return {
            "scenario": self.scenario,
            "seed": self.seed,
            "mutant": self.mutant,
            "verdict": self.verdict,
            "trace_hash": self.trace_hash,
            "sim_time_ms": self.sim_time_ms,
            "events": self.events,
            "wall_time_s": round(self.wall_time_s, 3),
            "metrics": self.metrics,
            "faults_fired": dict(sorted(self.faults_fired.items())),
            "fault_plan": self.fault_plan,
            "swarm_config": self.swarm_config,
            "violations": [v.to_json() for v in self.violations],
            "notes": list(self.notes),
            "situations": dict(self.situations),
        }


def run(
    scenario: Scenario,
    seed: int | None = None,
    trace: bool = False,
    trace_path: str | Path | None = None,
    stop_on_first_violation: bool = True,
    mutant: str | None = None,
) -> RunResult:
    """Build the cluster of ``scenario``, run it to quiescence or its deadline, and report.

    ``seed`` defaults to the scenario's. ``trace`` keeps every event the trace records (``trace_path``
    implies it and writes them as NDJSON, ``metrics["trace_events"]`` lines). ``mutant``: a ``model.mutants`` name
    (``UnknownMutant`` if there is none of that name).
    """
    result, _ = run_cluster(scenario, seed, trace=trace, trace_path=trace_path,
                            stop_on_first_violation=stop_on_first_violation, mutant=mutant)
    return result


def run_cluster(
    scenario: Scenario,
    seed: int | None = None,
    trace: bool = False,
    trace_path: str | Path | None = None,
    stop_on_first_violation: bool = True,
    *,
    extra_monitors: Sequence[Monitor] = (),
    before_run: Callable[[Cluster], object] | None = None,
    mutant: str | None = None,
) -> tuple[RunResult, Cluster]:
    """``run``, also returning the cluster at the end (tests look inside it). ``extra_monitors``
    watch the run beside the standard ones; ``before_run`` may set timers on the built cluster."""
    from model.sim.cluster import Cluster

    scenario.validate()
    run_seed = scenario.seed if seed is None else seed
    keep = trace or trace_path is not None
    started = time.perf_counter()
    situations.reset()
    with mutants.injected(mutant):
        cluster = Cluster(scenario, run_seed, keep_trace=keep, stop_on_first_violation=stop_on_first_violation,
                          extra_monitors=extra_monitors)
        if before_run is not None:
            before_run(cluster)
        cluster.run()
    wall = time.perf_counter() - started
    reached = situations.reached()
    violations = list(cluster.violations)
    result = RunResult(
        scenario=scenario.name,
        seed=run_seed,
        trace_hash=cluster.trace.trace_hash,
        sim_time_ms=cluster.scheduler.now_ms,
        events=cluster.events,
        metrics=cluster.metrics(),
        faults_fired=dict(sorted(cluster.injector.fired.items())),
        violations=violations,
        wall_time_s=wall,
        verdict="violated" if violations else "ok",
        fault_plan=cluster.plan.to_records(),
        swarm_config=dict(cluster.swarm_config),
        trace=cluster.trace if keep else None,
        mutant=mutant,
        notes=cluster.notes(),
        situations=reached,
    )
    if trace_path is not None:
        cluster.trace.write_ndjson(trace_path)
    return result, cluster
