"""The swarm library's bug-finding power per CPU-second, before and after a change of its swarms (issue 25):
the same model, the same mutants and situations, two sets of swarm scenario files. For each set:

* situations: seed 0 of every swarm, then seed 1 of every swarm, and so on for ``rounds`` rounds, the
  correct model; the CPU time (``time.process_time``) at which each situation of ``model.situations`` is
  first reached. Yardstick: situations reached, and reached per CPU-second.
* mutants: for each mutant of ``model.mutants``, the same round-robin until a run violates an invariant
  on a seed where the correct model holds every invariant (a seed the correct model fails is never a
  catch), up to ``rounds`` rounds. Yardstick: CPU seconds per mutant caught (every search's CPU time, the ones
  that caught nothing included, over the mutants caught), as ``bench swarm_power``.

The "before" set is the library's swarm files at a git revision (``git show REV:scenarios/library/...``),
run on the current model; ``swarm_standard`` is left out of both (0.6 s a run, 20 to 50 times the others).

    python -m bench.swarm_yardstick 52385c6     # the library before issue 25 against today's, 200 rounds
    python -m bench.swarm_yardstick 52385c6 50  # fewer rounds

``python -m bench`` (every benchmark) only prints how to run it: it needs a revision and takes about
15 minutes of CPU compiled.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass

from bench.situations import swarms
from model import mutants, situations
from model.sim.runner import run
from scenarios import library
from scenarios.spec import Scenario
from scenarios.toml_format import loads

ROUNDS = 200
EXCLUDED = ("swarm_standard",)


def swarms_at(revision: str) -> list[tuple[str, Scenario]]:
    """The library swarms as the files at ``revision`` define them."""
    listing = subprocess.run(["git", "ls-tree", "--name-only", f"{revision}:scenarios/library"],
                             check=True, capture_output=True, text=True).stdout.split()
    names = sorted(f.removesuffix(".toml") for f in listing if f.startswith("swarm") and f.endswith(".toml"))
    out = []
    for name in names:
        if name in EXCLUDED:
            continue
        text = subprocess.run(["git", "show", f"{revision}:scenarios/library/{name}.toml"],
                              check=True, capture_output=True, text=True).stdout
        out.append((name, loads(text, source=f"{revision}:{name}.toml", default_name=name)))
    return out


def swarms_now() -> list[tuple[str, Scenario]]:
    return [(name, library.get(name)) for name in swarms() if name not in EXCLUDED]


@dataclass(frozen=True)
class Coverage:
    reached: dict[str, float]  # situation -> CPU seconds into the search when first reached
    cpu_s: float
    runs: int
    clean: dict[tuple[str, int], bool]  # (swarm, seed) -> the correct model held every invariant


def coverage(specs: list[tuple[str, Scenario]], rounds: int) -> Coverage:
    reached: dict[str, float] = {}
    clean: dict[tuple[str, int], bool] = {}
    cpu_s = 0.0
    runs = 0
    for seed in range(rounds):
        for swarm, spec in specs:
            started = time.process_time()
            result = run(spec, seed)
            cpu_s += time.process_time() - started
            runs += 1
            clean[(swarm, seed)] = result.ok
            for situation, count in sorted(result.situations.items()):
                if count and situation not in reached:
                    reached[situation] = cpu_s
    return Coverage(reached, cpu_s, runs, clean)


@dataclass(frozen=True)
class Catch:
    swarm: str | None
    runs: int
    cpu_s: float


def first_catch(name: str, specs: list[tuple[str, Scenario]], rounds: int, clean: dict[tuple[str, int], bool]) -> Catch:
    """``clean``: (swarm, seed) -> whether the correct model holds there, filled by ``coverage``'s runs."""
    cpu_s = 0.0
    runs = 0
    for seed in range(rounds):
        for swarm, spec in specs:
            started = time.process_time()
            result = run(spec, seed, mutant=name)
            runs += 1
            cpu_s += time.process_time() - started
            if result.violations and clean[(swarm, seed)]:
                return Catch(swarm, runs, cpu_s)
    return Catch(None, runs, cpu_s)


def measure(label: str, specs: list[tuple[str, Scenario]], rounds: int) -> None:
    print(f"## {label}: {len(specs)} swarms ({', '.join(n for n, _ in specs)}), {rounds} rounds", flush=True)
    run(specs[0][1], rounds)  # warm up, so that the first search is not charged for imports
    cov = coverage(specs, rounds)
    total = len(situations.COUNTS)
    print(f"situations: {len(cov.reached)} of {total} reached in {cov.runs} runs, {cov.cpu_s:.1f} CPU s "
          f"({len(cov.reached) / cov.cpu_s:.2f} per CPU s); the last first reached at "
          f"{max(cov.reached.values(), default=0.0):.1f} CPU s", flush=True)
    missed = sorted(set(situations.COUNTS) - cov.reached.keys())
    print(f"  not reached: {', '.join(missed) or 'none'}", flush=True)
    caught = 0
    cpu_s = 0.0
    for mutant in mutants.MUTANTS:
        found = first_catch(mutant.name, specs, rounds, cov.clean)
        caught += found.swarm is not None
        cpu_s += found.cpu_s
        where = f"`{found.swarm}`, run {found.runs}" if found.swarm else f"not in {found.runs} runs"
        print(f"  {mutant.name}: {where}, {found.cpu_s:.1f} CPU s", flush=True)
    per = f"{cpu_s / caught:.2f} CPU s per mutant caught" if caught else "no mutant caught"
    print(f"mutants: {caught} of {len(mutants.MUTANTS)} caught within {rounds} rounds, {cpu_s:.0f} CPU s; {per}",
          flush=True)


def main(argv: list[str] | None = None) -> None:
    args = argv or []
    if not args:
        print("   run it with a revision: python -m bench.swarm_yardstick REVISION [ROUNDS] (about 15 min of CPU)")
        return
    revision = args[0]
    rounds = int(args[1]) if len(args) > 1 else ROUNDS
    measure(f"before: the swarms at {revision}", swarms_at(revision), rounds)
    measure("after: the swarms now", swarms_now(), rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
