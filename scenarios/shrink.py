"""Shrinking a failing run to a small reproducer: ``sharesim shrink`` (DESIGN.md principle 4).

A run that violated an invariant is turned into a scenario file that still
violates it with the same seed, and holds as little as it can:

1. **The plan, written out.** The run's fault plan (the scenario's own, or the
   one its swarm drew from the seed) becomes a scripted ``faults.plan``, and
   the broker settings a swarm drew go into ``cluster.config``. This is the
   same run, event for event: the plan and the settings are all a swarm
   draws, and the scenario keeps its name, which seeds the random streams.
2. **Faults.** Greedy delta debugging (``model.sim.faults.shrink``) drops every
   fault the failure does not need.
3. **Durations.** Each lasting fault's ``duration_ms`` is made as small as
   the failure allows (1 ms if it still fails there, else a binary search).
4. **Records.** Each producer's ``records``, the same way.
5. **The fault window.** ``duration_ms`` is cut to when the last fault ends.
6. **Settings.** Each broker setting a swarm drew (its ``config`` ranges),
   written into ``cluster.config`` at step 1, is taken out again (back to the
   broker's default) if the failure holds without it; but only for a safety
   invariant. A liveness failure may hold without a drawn setting for another
   reason: a drawn 1 s session timeout put back to the default 45 s outlasts
   the healing phase by itself (found by the first ``swarm_config`` campaign).
   A safety violation is a bug in any valid configuration.

Steps 2 to 6 repeat until a round changes nothing or ``max_runs`` runs are
spent. A candidate "still fails" when its run violates the same invariant
(the original run's first, unless one is named), at any time: each run stops
at that invariant's first violation and goes on past others. A candidate
whose run raises is a different failure and counts as not failing (the
shrinker counts them). Every step is a fixed order of deterministic runs, so
the same input shrinks to the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from invariants import catalogue
from model.sim.faults import FaultPlan, shrink
from scenarios.check import reproducer, require_known, require_mutant, run_until
from scenarios.exits import BadInput
from scenarios.outdir import FILE_RULE, check_file, publish_file, written_by_shrink
from scenarios.spec import FaultsSpec, Scenario

if TYPE_CHECKING:
    from model.sim.runner import RunResult

DEFAULT_MAX_RUNS = 400


class NothingToShrink(ValueError):
    """The run to shrink does not violate the invariant it should."""


@dataclass(frozen=True)
class Shrunk:
    """A shrinking's outcome: ``scenario`` run with ``seed`` (and ``mutant``) violates ``invariant``."""

    scenario: Scenario
    seed: int
    mutant: str | None
    invariant: str
    original: Scenario  # the scenario as given, before step 1
    original_faults: int  # events in the run's plan before shrinking
    runs: int  # runs made, the first included
    raised: int  # candidates whose run raised instead
    result: RunResult  # the shrunk scenario's run
    drawn: tuple[str, ...] = ()  # the broker settings the original run's swarm drew

    @property
    def plan(self) -> FaultPlan:
        return self.scenario.fault_plan()

    def to_toml(self, path: str) -> str:
        """The scenario file, headed by where it came from and how to run it (as ``path``)."""
        from scenarios import toml_format

        violation = next(v for v in self.result.violations if v.invariant == self.invariant)
        header = [
            f"# Written by `sharesim shrink {self.original.name} --seed {self.seed}{_with(self.mutant)}`: it violates",
            f"# {self.invariant} at {violation.time_ms} ms. Shrunk in {self.runs} runs: {', '.join(self.changes())}.",
            f"# Run it with `{self.command(path)}`. Keep its name: the name seeds the",
            "# random streams, so a renamed copy is another run.",
        ]
        return "\n".join(header) + "\n" + toml_format.dumps(self.scenario)

    def command(self, path: str) -> str:
        """The command that replays the shrunk run from ``path`` and shows the violation kept."""
        first = self.result.violations[0].invariant
        # `sharesim run` stops at the first violation; the one kept may come after another.
        return reproducer(path, self.seed, self.mutant) + ("" if first == self.invariant else " --all-violations")

    def changes(self) -> list[str]:
        """What shrinking took away, one phrase per kind of change."""
        before, after = self.original, self.scenario
        out = [f"faults {self.original_faults} -> {len(self.plan)}"]
        records = [(a.records, b.records) for a, b in zip(before.producers, after.producers, strict=True)]
        if any(a != b for a, b in records):
            out.append("records " + ", ".join(f"{a} -> {b}" for a, b in records))
        if before.duration_ms != after.duration_ms:
            out.append(f"fault window {before.duration_ms} -> {after.duration_ms} ms")
        if self.drawn:
            kept = [key for key in self.drawn if key in after.cluster.config]
            out.append(f"settings drawn {len(self.drawn)} -> {len(kept)}" + (f" ({', '.join(kept)})" if kept else ""))
        return out


def with_plan(scenario: Scenario, plan: FaultPlan) -> Scenario:
    """``scenario`` with ``plan`` as its scripted fault plan (a swarm's, if any, is gone)."""
    return replace(scenario, faults=FaultsSpec(plan=plan.events))


def written_out(scenario: Scenario, result: RunResult) -> Scenario:
    """The run of ``result`` as a scenario without a swarm: the plan it drew, scripted, and the
    settings it drew, set in ``cluster.config``. The same run, event for event."""
    from model.sim.faults import GROUP_DRAW_SEPARATOR, group_draws
    config = {**scenario.cluster.config,
              **{k: v for k, v in result.swarm_config.items() if GROUP_DRAW_SEPARATOR not in k}}
    groups = tuple(replace(g, config={**group_draws(result.swarm_config, g.name), **g.config})
                   for g in scenario.groups)  # a group setting drawn for one group (auto.offset.reset)
    scripted = replace(scenario, cluster=replace(scenario.cluster, config=config), groups=groups)
    return with_plan(scripted, FaultPlan.from_records(result.fault_plan, scenario.duration_ms))


def shrink_run(scenario: Scenario, seed: int, *, mutant: str | None = None, invariant: str | None = None,
               max_runs: int = DEFAULT_MAX_RUNS) -> Shrunk:
    """Shrink the run of ``scenario`` with ``seed`` to a small scenario that violates the same invariant."""
    if max_runs < 2:
        raise ValueError(f"max_runs = {max_runs}: must be >= 2 (the failing run, then its plan written out)")
    first = run_until(scenario, seed, invariant, mutant) if invariant else _first_violation(scenario, seed, mutant)
    violated = [v.invariant for v in first.violations]
    if not violated:
        raise NothingToShrink(f"{scenario.name} --seed {seed}{_with(mutant)} violates no invariant: "
                              "nothing to shrink")
    target = invariant or violated[0]
    if target not in violated:
        raise NothingToShrink(f"{scenario.name} --seed {seed}{_with(mutant)} does not violate {target} "
                              f"(it violates {', '.join(dict.fromkeys(violated))})")
    shrinker = _Shrinker(seed, mutant, target, max_runs)
    current = written_out(scenario, first)
    if not shrinker.fails(current):  # the same run, event for event: a failure here is a bug of sharesim
        raise RuntimeError(f"{scenario.name} --seed {seed}: its fault plan, written out, does not violate {target}")
    # The broker settings drawn (a group setting drawn, "<key>@<group>", stays in its group's config).
    drawn = tuple(sorted(k for k in first.swarm_config if "@" not in k))
    settings_kept = catalogue.get(target).kind == "liveness"
    while shrinker.budget_left():
        before = current
        for step in (_fewer_faults, _shorter_faults, _fewer_records, _shorter_window):
            current = step(current, shrinker)
        if not settings_kept:
            current = _fewer_settings(current, shrinker, drawn)
        if current == before:
            break
    # The file's own seed is the run's, so `sharesim run FILE` alone replays it.
    return Shrunk(replace(current, seed=seed), seed, mutant, target, scenario, len(first.fault_plan),
                  shrinker.runs, shrinker.raised, shrinker.last_failing(current), drawn)


def _first_violation(scenario: Scenario, seed: int, mutant: str | None) -> RunResult:
    from model.sim.runner import run

    return run(scenario, seed, mutant=mutant)


def _with(mutant: str | None) -> str:
    return f" --mutant {mutant}" if mutant else ""


class _Shrinker:
    """The "still fails" test, with its budget, its count of runs, and the last failing run it saw."""

    def __init__(self, seed: int, mutant: str | None, invariant: str, max_runs: int) -> None:
        self.seed, self.mutant, self.invariant, self.max_runs = seed, mutant, invariant, max_runs
        self.runs = 1  # the run that found the failure
        self.raised = 0
        self._failing: tuple[Scenario, RunResult] | None = None

    def budget_left(self) -> bool:
        return self.runs < self.max_runs

    def fails(self, candidate: Scenario) -> bool:
        if self._failing is not None and self._failing[0] == candidate:
            return True
        if not self.budget_left() or candidate.problems():  # e.g. a fault window that ends before a producer starts
            return False
        self.runs += 1
        try:
            result = run_until(candidate, self.seed, self.invariant, self.mutant)
        except Exception:  # a different failure of the model: not this one, so the candidate is not kept
            self.raised += 1
            return False
        if any(v.invariant == self.invariant for v in result.violations):
            self._failing = (candidate, result)
            return True
        return False

    def last_failing(self, scenario: Scenario) -> RunResult:
        """The run of ``scenario``, the last candidate kept (every step keeps only what failed last)."""
        assert self._failing is not None and self._failing[0] == scenario
        return self._failing[1]


# -- the steps: each returns the smallest candidate it found that still fails ----------------------


def _fewer_faults(scenario: Scenario, shrinker: _Shrinker) -> Scenario:
    plan = scenario.fault_plan()
    if not plan.events:
        return scenario
    # shrink() re-tests its starting plan; that run is answered from the last failing run, not re-run.
    kept = shrink(plan, lambda p: shrinker.fails(with_plan(scenario, p)), max_runs=shrinker.max_runs)
    return with_plan(scenario, kept)


def _smallest(scenario: Scenario, shrinker: _Shrinker, count: int, value: Callable[[Scenario, int], int],
              changed: Callable[[Scenario, int, int], Scenario]) -> Scenario:
    """Make each of ``count`` values as small as the failure allows: 1 if it still fails there, else a
    binary search between 1 (passes) and the value (fails). Failing need not be monotone in the value,
    so this finds a small failing value, not always the smallest."""
    for index in range(count):
        passes, fails = 0, value(scenario, index)
        if fails <= 1:
            continue  # 0: an instant fault, nothing to shorten
        while fails - passes > 1:
            guess = 1 if passes == 0 else (passes + fails) // 2
            candidate = changed(scenario, index, guess)
            if shrinker.fails(candidate):
                scenario, fails = candidate, guess
            else:
                passes = guess
    return scenario


def _shorter_faults(scenario: Scenario, shrinker: _Shrinker) -> Scenario:
    def duration(s: Scenario, index: int) -> int:
        return s.faults.plan[index].duration_ms  # 0 for instant faults

    def changed(s: Scenario, index: int, duration_ms: int) -> Scenario:
        events = list(s.faults.plan)
        events[index] = replace(events[index], duration_ms=duration_ms)
        return replace(s, faults=FaultsSpec(plan=tuple(events)))

    return _smallest(scenario, shrinker, len(scenario.faults.plan), duration, changed)


def _fewer_records(scenario: Scenario, shrinker: _Shrinker) -> Scenario:
    def records(s: Scenario, index: int) -> int:
        return s.producers[index].records

    def changed(s: Scenario, index: int, count: int) -> Scenario:
        producers = list(s.producers)
        producers[index] = replace(producers[index], records=count)
        return replace(s, producers=tuple(producers))

    return _smallest(scenario, shrinker, len(scenario.producers), records, changed)


def _fewer_settings(scenario: Scenario, shrinker: _Shrinker, drawn: tuple[str, ...]) -> Scenario:
    """Give each setting the swarm drew back to the scenario's own value while the failure holds."""
    for key in drawn:
        if key not in scenario.cluster.config:
            continue
        config = {k: v for k, v in scenario.cluster.config.items() if k != key}
        candidate = replace(scenario, cluster=replace(scenario.cluster, config=config))
        if shrinker.fails(candidate):
            scenario = candidate
    return scenario


def _shorter_window(scenario: Scenario, shrinker: _Shrinker) -> Scenario:
    events = scenario.faults.plan
    last = max((max(e.ends_ms, e.at_ms + 1) for e in events), default=1)
    if last >= scenario.duration_ms:
        return scenario
    candidate = replace(scenario, duration_ms=last)
    return candidate if shrinker.fails(candidate) else scenario


# -- the command ---------------------------------------------------------------------------------------


@click.command("shrink", epilog=f"--out: {FILE_RULE}")
@click.argument("scenario")
@click.option("--seed", type=click.IntRange(0, None), default=None, help="The run seed (default: the scenario's own).")
@click.option("--mutant", default=None, metavar="NAME", help="Inject the named bug or variant into every run.")
@click.option("--invariant", default=None, metavar="ID",
              help="The violation to keep (default: the run's first); see `sharesim invariants`.")
@click.option("--max-runs", type=click.IntRange(2, 100_000), default=DEFAULT_MAX_RUNS, show_default=True,
              help="Stop shrinking after this many runs.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The scenario file to write (default: SCENARIO-seedN-shrunk.toml here).")
@click.option("--force", is_flag=True, help="Replace an earlier shrunk file at --out.")
def shrink_command(scenario: str, seed: int | None, mutant: str | None, invariant: str | None, max_runs: int,
                   out: Path | None, force: bool) -> None:
    """Shrink a failing run of SCENARIO to a small scenario file that fails the same way with the same seed:
    its faults as a scripted plan, then as few faults, as short, as few records and as short a fault
    window as still violate the invariant. Exit 0 with the file written, 2 on bad input or a run that
    violates nothing."""
    from scenarios.commands import load_or_exit
    from scenarios.terminal import make_console

    spec = load_or_exit(scenario)
    require_mutant(mutant)
    require_known("--invariant", invariant, catalogue.get)
    run_seed = spec.seed if seed is None else seed
    path = out or Path(f"{spec.name}-seed{run_seed}-shrunk.toml")
    check_file(path, "--out", "shrink", written_by_shrink, force=force)
    try:
        with make_console(stderr=True).status(f"shrinking {spec.name} --seed {run_seed}{_with(mutant)}"):
            shrunk = shrink_run(spec, run_seed, mutant=mutant, invariant=invariant, max_runs=max_runs)
    except NothingToShrink as exc:
        raise BadInput(str(exc)) from None
    publish_file(path, shrunk.to_toml(str(path)), "--out", "shrink", written_by_shrink, force=force)
    click.echo(f"{shrunk.invariant}: {', '.join(shrunk.changes())} ({shrunk.runs} runs"
               + (f", {shrunk.raised} candidates raised" if shrunk.raised else "") + ")")
    click.echo(shrunk.plan.describe())
    click.echo(f"wrote {path}; run it with: {shrunk.command(str(path))}")
