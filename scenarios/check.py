"""``sharesim mutants`` and ``sharesim check``: the bug injections, and scenarios × seeds for CI.

* ``sharesim mutants [--json]`` lists the mutants of ``model.mutants`` with the
  invariant expected to catch each and the scenario in which it shows.
* ``sharesim check [--scenarios A,B] [--seeds N] [--mutant NAME] [--json]`` runs
  every scenario with seeds 0..N-1 in this process and prints one reproducer
  command per violating run and per run that raised (``sharesim run SCENARIO
  --seed S [--mutant M]``), counting the two apart. Exit 0 when every run held
  every invariant, 1 when one was violated, 3 when a run raised (a defect of the
  simulator, which matters more than a violation), 2 on bad input. ``--json``
  prints one JSON document on stdout (``CheckedRun.to_json`` per run, and the
  totals) and everything else on stderr.

``first_detection`` is the search the mutant tests and ``bench/mutants.py``
share: the first seed of a mutant's scenario whose run violates the mutant's
expected invariant.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import click
from rich.progress import Progress
from rich.table import Table

from model import mutants
from model.unknown_name import UnknownName
from scenarios.entry import first_line
from scenarios.exits import BadInput, verdict_exit
from scenarios.terminal import make_console, print_table

if TYPE_CHECKING:
    from invariants.violation import Violation
    from model.sim.cluster import Cluster
    from model.sim.runner import RunResult
    from scenarios.spec import Scenario

console = make_console()


def require_known(option: str, name: str | None, lookup: Callable[[str], object]) -> None:
    """``BadInput`` (exit 2) with the known names if ``lookup`` does not know ``name`` (None is: nothing named)."""
    if name is not None:
        try:
            lookup(name)
        except UnknownName as exc:
            raise BadInput(f"{option}: {exc}") from None


def require_mutant(name: str | None) -> None:
    """``BadInput`` with the known names if ``name`` is not a mutant or a variant (None is: no mutant)."""
    require_known("--mutant", name, mutants.injectable)


def reproducer(scenario: str, seed: int, mutant: str | None = None) -> str:
    """The one-line command that replays a run (SCENARIO shell-quoted: a file's path may hold spaces)."""
    return shlex.join(["sharesim", "run", scenario, "--seed", str(seed), *(["--mutant", mutant] if mutant else [])])


# -- the search for a mutant's first detection ------------------------------------------------------


@dataclass(frozen=True)
class Detection:
    """How a search over seeds 0.. of a mutant's scenario went."""

    mutant: str
    expected_invariant: str
    scenario: str
    seed: int | None  # the first seed whose run violated the expected invariant (None: not found)
    runs: int  # runs made (the seeds tried)
    wall_time_s: float
    first_seen: tuple[str, ...]  # the invariants violated in the detecting run (or the last run), in order
    cpu_time_s: float = 0.0  # the process's CPU time the search took (time.process_time): what a core paid

    @property
    def detected(self) -> bool:
        return self.seed is not None


def run_until(scenario: Scenario, seed: int, invariant: str, mutant: str | None) -> RunResult:
    """One run that keeps going past other violations and stops at the first of ``invariant``."""
    from model.sim.runner import run_cluster

    def stop_at_expected(cluster: Cluster) -> None:
        report = cluster.sink.on_violation
        assert report is not None

        def on_violation(violation: Violation) -> None:
            # The cluster stops at a violation only while this flag is set: set it for the expected one.
            cluster.stop_on_first_violation = violation.invariant == invariant
            report(violation)

        cluster.sink.on_violation = on_violation

    result, _ = run_cluster(scenario, seed, stop_on_first_violation=False,
                            before_run=stop_at_expected, mutant=mutant)
    return result


def first_detection(name: str, max_seeds: int = 2_000, scenario: str | None = None) -> Detection:
    """Search seeds 0..max_seeds-1 of mutant ``name``'s scenario for a violation of its expected invariant.
    ``scenario``: a library name or a ``.toml`` file (the mutant's own scenario if None)."""
    from scenarios import library

    mutant = mutants.get(name)
    scenario_name = scenario or mutant.scenario
    spec = library.load(scenario_name)
    started = time.perf_counter()
    cpu_started = time.process_time()
    seen: tuple[str, ...] = ()
    for seed in range(max_seeds):
        result = run_until(spec, seed, mutant.expected_invariant, name)
        seen = _distinct(v.invariant for v in result.violations)
        if mutant.expected_invariant in seen:
            return Detection(name, mutant.expected_invariant, scenario_name, seed, seed + 1,
                             time.perf_counter() - started, seen, time.process_time() - cpu_started)
    return Detection(name, mutant.expected_invariant, scenario_name, None, max_seeds,
                     time.perf_counter() - started, seen, time.process_time() - cpu_started)


def _distinct(ids: Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for invariant in ids:
        if invariant not in out:
            out.append(invariant)
    return tuple(out)


# -- the commands -------------------------------------------------------------------------------------


@click.command("mutants")
@click.option("--json", "as_json", is_flag=True, help="Print the mutants as a JSON list.")
def mutants_command(as_json: bool) -> None:
    """List the mutants: named bug injections, each with the invariant expected to catch it
    and the scenario it shows in; then the variants, candidate fixes of a mutant that should hold
    every invariant. Run either with `sharesim run SCENARIO --mutant NAME`."""
    if as_json:
        click.echo(json.dumps([m.to_json() for m in mutants.MUTANTS], indent=2))
        return
    table = Table(title=f"{len(mutants.MUTANTS)} mutants")
    for column in ("name", "expected invariant", "scenario"):
        table.add_column(column, no_wrap=True)
    table.add_column("description", overflow="fold", min_width=30)
    for m in mutants.MUTANTS:
        table.add_row(m.name, m.expected_invariant, m.scenario, m.description)
    print_table(console, table)
    variants = Table(title=f"{len(mutants.VARIANTS)} variant(s): candidate fixes, expected to hold every invariant")
    variants.add_column("name", no_wrap=True)
    variants.add_column("description", overflow="fold", min_width=30)
    for v in mutants.VARIANTS:
        variants.add_row(v.name, f"the mutant {v.base} with a fix: {v.description}")
    print_table(console, variants)


@click.command("check")
@click.option("--scenarios", "scenario_list", default=None, metavar="A,B,...",
              help="Comma-separated library scenarios or .toml files (default: every named scenario).")
@click.option("--seeds", type=click.IntRange(1, None), default=3, show_default=True,
              help="Run seeds 0..N-1 of each scenario.")
@click.option("--mutant", default=None, metavar="NAME",
              help="Inject the named bug (or candidate fix, a variant) into every run.")
@click.option("--json", "as_json", is_flag=True,
              help="Print every run's verdict and the totals as one JSON document on stdout; "
                   "everything else goes to stderr.")
def check_command(scenario_list: str | None, seeds: int, mutant: str | None, as_json: bool) -> None:
    """Run scenarios x seeds in this process (for CI): print a reproducer per violating run and per run
    that raised; exit 0 if every invariant held, 1 if one was violated, 3 if a run raised, 2 on bad input."""
    from scenarios import library
    from scenarios.commands import load_or_exit

    require_mutant(mutant)
    chosen = library.names() if scenario_list is None else [s.strip() for s in scenario_list.split(",") if s.strip()]
    if not chosen:
        raise BadInput(f"--scenarios {scenario_list!r}: name at least one of {', '.join(library.names())}")
    try:
        specs = [(name, load_or_exit(name)) for name in chosen]
    except BadInput as exc:
        raise BadInput(f"--scenarios: {exc.message}") from None
    checked = _check(specs, seeds, mutant)
    failures = [run for run in checked if run.verdict != "ok"]
    for failure in failures:  # human output: on stderr when stdout is the JSON document
        click.echo(f"{failure.reproducer}  # {failure.what}", err=as_json)
    violated = sum(run.verdict == "violated" for run in checked)
    errors = sum(run.verdict == "error" for run in checked)
    summary = f"{len(checked)} run(s), {violated} violated, {errors} raised" + (f" (mutant {mutant})" if mutant else "")
    click.echo(summary, err=True)
    if as_json:
        click.echo(json.dumps(check_json(checked, seeds, mutant), indent=2))
    sys.exit(verdict_exit(violated=violated, errors=errors))


@dataclass(frozen=True)
class CheckedRun:
    """One run of ``sharesim check``: its verdict, the invariants it violated, or the error it raised."""

    scenario: str  # as named on the command line (a library name or a file)
    seed: int
    mutant: str | None
    verdict: Literal["ok", "violated", "error"]
    invariants_violated: tuple[str, ...] = ()  # distinct, in the order first violated
    error: str | None = None  # a run that raised: "ExceptionType: message"

    @property
    def reproducer(self) -> str:
        return reproducer(self.scenario, self.seed, self.mutant)

    @property
    def what(self) -> str:
        """What went wrong, as the reproducer line's comment."""
        return f"raised {self.error}" if self.error is not None else ", ".join(self.invariants_violated)

    def to_json(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "seed": self.seed, "mutant": self.mutant, "verdict": self.verdict,
                "invariants_violated": list(self.invariants_violated), "error": self.error,
                "reproducer": self.reproducer}


def check_json(checked: Sequence[CheckedRun], seeds: int, mutant: str | None) -> dict[str, Any]:
    """``sharesim check --json``: the totals (named as in a campaign's summary.json), then every run in order."""
    totals = {"runs": len(checked), "ok": sum(r.verdict == "ok" for r in checked),
              "violated": sum(r.verdict == "violated" for r in checked),
              "errors": sum(r.verdict == "error" for r in checked)}
    return {"kind": "check", "mutant": mutant, "seeds": seeds, "totals": totals,
            "runs": [r.to_json() for r in checked]}


def _check(specs: Sequence[tuple[str, Scenario]], seeds: int, mutant: str | None) -> list[CheckedRun]:
    """Every run of ``specs`` x seeds 0..seeds-1, in order, with a progress bar on stderr. A run that
    raises is recorded with its exception (a bug of the model) and the check goes on."""
    from model.sim.runner import run

    checked: list[CheckedRun] = []
    stderr = make_console(stderr=True)
    # A transient bar leaves nothing in a log but a blank line: only a terminal gets one.
    with Progress(console=stderr, transient=True, disable=not stderr.is_terminal) as progress:
        task = progress.add_task("checking", total=len(specs) * seeds)
        for name, spec in specs:
            for seed in range(seeds):
                progress.update(task, description=f"{spec.name} --seed {seed}")
                try:
                    result = run(spec, seed, mutant=mutant)
                except Exception as exc:  # a bug of the model: reported with its reproducer, the check goes on
                    checked.append(CheckedRun(name, seed, mutant, "error",
                                              error=f"{type(exc).__name__}: {first_line(str(exc))}"))
                else:
                    invariants = _distinct(v.invariant for v in result.violations)
                    checked.append(CheckedRun(name, seed, mutant, "ok" if result.ok else "violated", invariants))
                progress.advance(task)
    return checked
