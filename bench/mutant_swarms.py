"""Is every mutant caught by some library swarm (issue 25)? For each mutant of ``model.mutants``, run
seed 0 of every library swarm, then seed 1 of every swarm, and so on, until one run violates any
invariant (the correct model is clean over these seeds: the 100 000-run campaigns say so), up to
10 000 seeds. A mutant's runs to detect are the runs of its best swarm (seed + 1); the table also
names the invariant that fired first and whether it is the mutant's expected one. The last line is
the median of runs to detect over the mutants caught. Mutants are split over two processes.

    python -m bench mutant_swarms               # every mutant, up to 200 seeds (nox -s bench)
    python bench/mutant_swarms.py 10000         # the issue's bound
    python bench/mutant_swarms.py 10000 NAME... # some mutants
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import time
from dataclasses import dataclass

from bench.situations import swarms
from model import mutants
from model.sim.runner import run
from scenarios import library

MAX_SEEDS = 200  # a plain `python -m bench` stays minutes long; pass N for the 10 000
PROCESSES = 2
EXCLUDED = ("swarm_standard",)  # 0.6 s a run, 20-50x the others: a mutant only it catches is listed apart


@dataclass(frozen=True)
class Caught:
    mutant: str
    expected: str
    swarm: str | None  # None: no swarm caught it within the bound
    runs: int  # seed + 1 in the catching swarm (or the bound)
    invariant: str | None  # the first invariant violated
    runs_spent: int  # runs of every swarm made until then
    seconds: float


def first_catch(job: tuple[str, int]) -> Caught:
    name, max_seeds = job
    expected = mutants.get(name).expected_invariant
    specs = [(s, library.get(s)) for s in swarms() if s not in EXCLUDED]
    started = time.perf_counter()
    spent = 0
    for seed in range(max_seeds):
        for swarm, spec in specs:
            result = run(spec, seed, mutant=name)
            spent += 1
            if result.violations:
                return Caught(name, expected, swarm, seed + 1, result.violations[0].invariant, spent,
                              time.perf_counter() - started)
    return Caught(name, expected, None, max_seeds, None, spent, time.perf_counter() - started)


def main(argv: list[str] | None = None) -> None:
    args = argv or []
    max_seeds = next((int(a) for a in args if a.isdigit()), MAX_SEEDS)
    names = [a for a in args if not a.isdigit()] or [m.name for m in mutants.MUTANTS]
    print("| mutant | caught by | runs to detect | first invariant | expected? | runs of all swarms | wall |")
    print("| --- | --- | ---: | --- | --- | ---: | ---: |")
    with multiprocessing.get_context("spawn").Pool(PROCESSES) as pool:
        caught = []
        for c in pool.imap(first_catch, [(n, max_seeds) for n in names]):
            caught.append(c)
            runs = str(c.runs) if c.swarm else f"not in {c.runs}"
            same = "-" if c.invariant is None else ("yes" if c.invariant == c.expected else f"no (`{c.expected}`)")
            print(f"| `{c.mutant}` | {f'`{c.swarm}`' if c.swarm else '-'} | {runs} | "
                  f"{f'`{c.invariant}`' if c.invariant else '-'} | {same} | {c.runs_spent} | {c.seconds:.0f} s |",
                  flush=True)
    found = [c.runs for c in caught if c.swarm]
    median = statistics.median(found) if found else float("nan")
    print(f"\n{len(found)} of {len(caught)} mutants caught by some swarm within {max_seeds} seeds; "
          f"median runs to detect {median:g}")


if __name__ == "__main__":
    main(sys.argv[1:])
