"""How much a swarm finds per second of CPU: for each mutant of ``model.mutants``, the runs of a swarm
scenario (seeds 0, 1, ...) until one violates the mutant's expected invariant, and the CPU time
(``time.process_time``) that took. A campaign is only as good as the bugs its runs find per
core-hour, so the summary's yardstick is CPU seconds per mutant caught: every search's CPU time,
the ones that caught nothing included, over the mutants caught (docs/explanation/benchmarks.md
"Campaign throughput").

    python -m bench swarm_power                 # the five swarms of SCENARIOS, 200 seeds
    python bench/swarm_power.py swarm 500       # one scenario, another bound
    python bench/swarm_power.py my_swarm.toml   # a scenario file (a variant of a swarm's knobs)
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


def per_caught(cpu_s: float, caught: int) -> str:
    """CPU seconds per mutant caught: the yardstick (a swarm that catches nothing costs all it spent)."""
    return f"{cpu_s / caught:.2f} CPU s per mutant caught" if caught else "no mutant caught"


def main(argv: list[str] | None = None) -> None:
    args = argv or []
    scenarios = tuple(a for a in args if not a.isdigit()) or SCENARIOS
    max_seeds = next((int(a) for a in args if a.isdigit()), MAX_SEEDS)
    for name in scenarios:
        run(library.load(name), 0)  # warm up, so the first row is not charged for imports
    columns = " | ".join(f"`{s}`: runs to first detection (CPU s)" for s in scenarios)
    print(f"| mutant | expected invariant | {columns} |")
    print(f"| --- | --- |{' ---: |' * len(scenarios)}")
    caught = dict.fromkeys(scenarios, 0)
    spent = dict.fromkeys(scenarios, 0.0)
    cpu = dict.fromkeys(scenarios, 0.0)
    for mutant in mutants.MUTANTS:
        cells = []
        for name in scenarios:
            found = first_detection(mutant.name, max_seeds, scenario=name)
            spent[name] += found.wall_time_s
            cpu[name] += found.cpu_time_s
            caught[name] += found.seed is not None
            cells.append(_cell(found.runs, found.seed, found.cpu_time_s))
        print(f"| `{mutant.name}` | `{mutant.expected_invariant}` | {' | '.join(cells)} |", flush=True)
    total = len(mutants.MUTANTS)
    print()
    for name in scenarios:
        print(f"   {name}: {caught[name]} of {total} mutants caught within {max_seeds} seeds, "
              f"{spent[name]:.0f} s wall, {cpu[name]:.1f} CPU s; {per_caught(cpu[name], caught[name])}")


if __name__ == "__main__":
    main(sys.argv[1:])
