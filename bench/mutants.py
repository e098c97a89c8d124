"""Runs to first detection per mutant (issue 5): for each mutant of ``model.mutants``,
search seeds 0..1999 of its scenario until a run violates its expected invariant,
and print the seeds tried and the wall time, as a Markdown table for docs/explanation/mutant-detection.md;
also how many of the first 20 seeds catch it (how robust the detection is).

    python -m bench mutants          # every mutant
    python bench/mutants.py NAME...  # some
"""

from __future__ import annotations

import sys

from model import mutants
from model.sim.runner import run
from scenarios import library
from scenarios.check import first_detection, run_until

MAX_SEEDS = 2_000  # the bound
RATE_SEEDS = 20


def main(names: list[str] | None = None) -> None:
    chosen = names or [m.name for m in mutants.MUTANTS]
    run(library.get("small"), 0)  # warm up (imports, caches) so the first row is not charged for them
    print(f"| mutant | expected invariant | scenario | runs to first detection | first seed | wall time "
          f"| caught in seeds 0..{RATE_SEEDS - 1} |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: |")
    missed = 0
    for name in chosen:
        d = first_detection(name, MAX_SEEDS)
        runs = str(d.runs) if d.detected else f"not in {d.runs}"
        seed = "-" if d.seed is None else str(d.seed)
        missed += not d.detected
        spec = library.get(d.scenario)
        caught = sum(d.expected_invariant in {v.invariant for v in run_until(spec, s, d.expected_invariant,
                                                                                name).violations}
                     for s in range(RATE_SEEDS))
        print(f"| `{name}` | `{d.expected_invariant}` | `{d.scenario}` | {runs} | {seed} | {d.wall_time_s:.2f} s "
              f"| {caught} of {RATE_SEEDS} |", flush=True)
    print(f"\n{len(chosen) - missed} of {len(chosen)} mutants caught within {MAX_SEEDS} seeds")


if __name__ == "__main__":
    main(sys.argv[1:])
