"""The whole simulation against bare SimPy (issue 4's "done when"): run the ``standard``
scenario with seed 1 and print

* events per second (timers fired + SimPy steps, per wall second of the run);
* simulated seconds per wall second;
* bare SimPy ``timeout`` events per second, measured in this process just before;
* the ratio events/s ÷ bare SimPy timeouts/s (target >= 0.5).

``python -m bench simulation --profile`` (or ``python bench/simulation.py --profile``)
also prints the top functions by own time, to find hot spots.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import time

import simpy

from model.sim.runner import RunResult, run
from scenarios import library

TARGET_RATIO = 0.5
_BARE_EVENTS = 200_000
_CHAINS = 10


def bare_simpy_timeouts_per_s() -> float:
    """Best of 3: ``yield env.timeout(1)`` loops in 10 processes."""
    best = 0.0
    for _ in range(3):
        env = simpy.Environment()

        def loop(count: int, env: simpy.Environment = env) -> simpy.events.ProcessGenerator:
            for _ in range(count):
                yield env.timeout(1)

        for _ in range(_CHAINS):
            env.process(loop(_BARE_EVENTS // _CHAINS))
        started = time.perf_counter()
        env.run()
        best = max(best, _BARE_EVENTS / (time.perf_counter() - started))
    return best


def run_standard(seed: int = 1) -> RunResult:
    return run(library.get("standard"), seed)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    bare = bare_simpy_timeouts_per_s()
    result = run_standard()
    events_per_s = result.events / result.wall_time_s
    sim_per_wall = (result.sim_time_ms / 1000) / result.wall_time_s
    ratio = events_per_s / bare
    print(f"   standard seed 1: {result.events} events, {result.sim_time_ms} ms simulated, "
          f"{result.wall_time_s:.2f} s wall, verdict {result.verdict}")
    print(f"   events/s                         {events_per_s:12,.0f}")
    print(f"   simulated s / wall s             {sim_per_wall:12.1f}")
    print(f"   bare SimPy timeouts/s            {bare:12,.0f}")
    print(f"   ratio events/s : SimPy timeouts  {ratio:12.2f}  (target >= {TARGET_RATIO})")
    if "--profile" in args:
        profiler = cProfile.Profile()
        profiler.enable()
        run_standard()
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())


if __name__ == "__main__":
    main()
