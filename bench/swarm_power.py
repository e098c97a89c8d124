"""How much a swarm finds per second of CPU: for each mutant of ``model.mutants``, the runs of a swarm
scenario (seeds 0, 1, ...) until one violates the mutant's expected invariant, and the wall time
that took. A campaign is only as good as the bugs its runs find per core-hour, so this is the
yardstick for choosing what a swarm run is (docs/explanation/benchmarks.md "Campaign throughput").

    python -m bench swarm_power             # swarm, swarm_small, swarm_locks, swarm_config, swarm_lifecycle: 200 seeds
    python bench/swarm_power.py swarm 500   # one scenario, another bound
"""

from __future__ import annotations

import sys

from model import mutants
from model.sim.runner import run
from scenarios import library
from scenarios.check import first_detection

SCENARIOS = ("swarm", "swarm_small", "swarm_locks", "swarm_config", "swarm_lifecycle")
MAX_SEEDS = 200


def _cell(runs: int, seed: int | None, seconds: float) -> str:
    return f"{runs} ({seconds:.1f} s)" if seed is not None else f"not in {runs} ({seconds:.0f} s)"


def main(argv: list[str] | None = None) -> None:
    args = argv or []
    scenarios = tuple(a for a in args if not a.isdigit()) or SCENARIOS
    max_seeds = next((int(a) for a in args if a.isdigit()), MAX_SEEDS)
    for name in scenarios:
        run(library.get(name), 0)  # warm up, so the first row is not charged for imports
    print(f"| mutant | expected invariant | {' | '.join(f'`{s}`: runs to first detection' for s in scenarios)} |")
    print(f"| --- | --- |{' ---: |' * len(scenarios)}")
    caught = dict.fromkeys(scenarios, 0)
    spent = dict.fromkeys(scenarios, 0.0)
    for mutant in mutants.MUTANTS:
        cells = []
        for name in scenarios:
            found = first_detection(mutant.name, max_seeds, scenario=name)
            spent[name] += found.wall_time_s
            caught[name] += found.seed is not None
            cells.append(_cell(found.runs, found.seed, found.wall_time_s))
        print(f"| `{mutant.name}` | `{mutant.expected_invariant}` | {' | '.join(cells)} |", flush=True)
    total = len(mutants.MUTANTS)
    print()
    for name in scenarios:
        print(f"   {name}: {caught[name]} of {total} mutants caught within {max_seeds} seeds, {spent[name]:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
