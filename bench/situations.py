"""Situation coverage per swarm (issue 25): for each situation of ``model.situations``, the runs of each
library swarm (seeds 0, 1, ...) until one reaches it, as a Markdown table for the README; then, per swarm,
how many situations it reached, its wall time, and situations reached per CPU-second (the yardstick for
tuning what a swarm run draws). A swarm stops early once it has reached every situation.

    python -m bench situations                     # every library swarm, up to 200 runs each (nox -s bench)
    python bench/situations.py 10000               # the issue's bound: up to 10 000 runs each (hours)
    python bench/situations.py 500 swarm swarm_locks
    python bench/situations.py 2000 swarm_config dlq-enqueue-failed   # stop once these situations are reached
    python bench/situations.py --declared          # each swarm until its declared situations: the docs' table
"""

from __future__ import annotations

import sys
import time

from model import situations
from model.sim.runner import run
from scenarios import library

MAX_RUNS = 200  # a plain `python -m bench` stays minutes long; pass N for more


def swarms() -> list[str]:
    """The library swarms (scenarios whose name starts with ``swarm``)."""
    return [name for name in library.names() if name.startswith("swarm")]


def first_hits(name: str, max_runs: int, targets: set[str] | None = None) -> tuple[dict[str, int], int, float]:
    """Runs of swarm ``name`` (seeds 0..max_runs-1) to the first that reaches each situation: id -> runs
    (seed + 1), stopping once every situation (or every one of ``targets``) is reached. Also the runs
    made and their wall time."""
    scenario = library.get(name)
    wanted = set(targets or situations.COUNTS)
    hits: dict[str, int] = {}
    started = time.perf_counter()
    runs = 0
    for seed in range(max_runs):
        result = run(scenario, seed)
        runs += 1
        for sid in result.situations:
            hits.setdefault(sid, seed + 1)
        if wanted <= hits.keys():
            break
    return hits, runs, time.perf_counter() - started


def declared(max_runs: int) -> None:
    """Runs to first hit of each situation in the swarms declared to reach it (``Situation.swarms``), each
    swarm run until it reached all of them: the Markdown table of docs/explanation/mutant-detection.md."""
    homes: dict[str, list[str]] = {}
    for sit in situations.SITUATIONS:
        for name in sit.swarms:
            homes.setdefault(name, []).append(sit.id)
    run(library.get(next(iter(homes))), 0)  # warm up
    hits: dict[str, dict[str, int]] = {}
    for name in sorted(homes):
        found, runs, seconds = first_hits(name, max_runs, set(homes[name]))
        hits[name] = {sid: found[sid] for sid in homes[name] if sid in found}
        print(f"   {name}: {len(hits[name])} of {len(homes[name])} declared situations in {runs} runs, "
              f"{seconds:.0f} s", file=sys.stderr, flush=True)
    print("| situation | swarm: runs to first hit |")
    print("| --- | --- |")
    best: list[int] = []
    for sit in situations.SITUATIONS:
        if sit.swarms:
            cells = [f"`{name}`: {hits[name].get(sit.id, f'not within {max_runs}')}" for name in sit.swarms]
            firsts = [hits[name][sit.id] for name in sit.swarms if sit.id in hits[name]]
            best += [min(firsts)] if firsts else []
            print(f"| `{sit.id}` | {', '.join(cells)} |")
        else:
            print(f"| `{sit.id}` | {sit.rare} |")
    best.sort()
    if best:
        print(f"\n{len(best)} declared situations reached by their swarm; runs to first hit: median "
              f"{best[len(best) // 2]}, at most {best[-1]}")


def main(argv: list[str] | None = None) -> None:
    args = argv or []
    numbers = [int(a) for a in args if a.isdigit()]
    if "--declared" in args:
        declared(numbers[0] if numbers else 10_000)
        return
    max_runs = numbers[0] if numbers else MAX_RUNS
    targets = {a for a in args if situations.get(a) is not None} or None
    names = [a for a in args if not a.isdigit() and situations.get(a) is None] or swarms()
    run(library.get(names[0]), 0)  # warm up (imports, caches) so the first column is not charged for them
    table: dict[str, dict[str, int]] = {}
    totals: list[str] = []
    for name in names:
        hits, runs, seconds = first_hits(name, max_runs, targets)
        table[name] = hits
        totals.append(f"   {name}: {len(hits)} of {len(situations.SITUATIONS)} situations in {runs} runs, "
                      f"{seconds:.0f} s ({len(hits) / max(seconds, 1e-9):.2f} situations per second)")
        shown = sorted(targets) if targets else []
        print(totals[-1] + "".join(f"; {t}: {hits.get(t, '-')}" for t in shown), file=sys.stderr, flush=True)
    print(f"| situation | {' | '.join(f'`{n}`' for n in names)} |")
    print(f"| --- |{' ---: |' * len(names)}")
    missed = []
    for s in situations.SITUATIONS:
        cells = [str(table[n][s.id]) if s.id in table[n] else "-" for n in names]
        if all(c == "-" for c in cells):
            missed.append(s.id)
        print(f"| `{s.id}` | {' | '.join(cells)} |")
    print(f"\nruns to the first run that reaches each situation (\"-\": not within {max_runs} runs)")
    print("\n".join(totals))
    reached = len(situations.SITUATIONS) - len(missed)
    print(f"\n{reached} of {len(situations.SITUATIONS)} situations reached by some swarm"
          + (f"; not reached: {', '.join(missed)}" if missed else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
