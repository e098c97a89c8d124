"""How small ``sharesim shrink`` makes a swarm's failures, and what it costs: for each mutant, the first
seed of ``swarm`` (then ``swarm_locks``, then ``swarm_wide``) that violates its expected invariant,
shrunk; the faults and records before and after, the runs and the wall time the shrinking took, and
whether the correct model holds on the shrunk file (the failure is the mutant's, not the scenario's).

    python -m bench shrink                 # every mutant a swarm catches within 200 seeds
    python bench/shrink.py 50              # another search bound
"""

from __future__ import annotations

import statistics
import sys
import time

from model import mutants
from model.sim.runner import run
from scenarios import library
from scenarios.check import first_detection
from scenarios.shrink import shrink_run

SCENARIOS = ("swarm", "swarm_locks", "swarm_wide")
MAX_SEEDS = 200


def main(argv: list[str] | None = None) -> None:
    max_seeds = int(argv[0]) if argv else MAX_SEEDS
    print("| mutant | swarm seed | faults | records | shrinking: runs, wall time | correct model on the file |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    kept: list[tuple[int, int]] = []
    seconds: list[float] = []
    for mutant in mutants.MUTANTS:
        found = next((d for d in (first_detection(mutant.name, max_seeds, scenario=s) for s in SCENARIOS)
                      if d.seed is not None), None)
        if found is None or found.seed is None:
            print(f"| `{mutant.name}` | not in {max_seeds} seeds of {', '.join(SCENARIOS)} | | | | |")
            continue
        started = time.perf_counter()
        shrunk = shrink_run(library.get(found.scenario), found.seed, mutant=mutant.name,
                            invariant=mutant.expected_invariant)
        spent = time.perf_counter() - started
        seconds.append(spent)
        kept.append((shrunk.original_faults, len(shrunk.plan)))
        records = f"{sum(p.records for p in shrunk.original.producers)} → " \
                  f"{sum(p.records for p in shrunk.scenario.producers)}"
        holds = "holds" if run(shrunk.scenario, shrunk.seed).ok else "VIOLATED"
        print(f"| `{mutant.name}` | `{found.scenario}` {found.seed} | {shrunk.original_faults} → {len(shrunk.plan)} "
              f"| {records} | {shrunk.runs}, {spent:.1f} s | {holds} |", flush=True)
    if kept:
        print(f"\n   {len(kept)} shrunk: faults {sum(a for a, _ in kept)} → {sum(b for _, b in kept)} in all, "
              f"median {statistics.median(b for _, b in kept)} left; median {statistics.median(seconds):.1f} s, "
              f"max {max(seconds):.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
