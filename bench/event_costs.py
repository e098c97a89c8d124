"""Where a ``standard`` event's time goes: the wall time of each event, grouped by what handled it
(a message delivery by its kind, a timer by its callback), for issue 4's ratio.

The run is ``standard`` seed 1, as in ``simulation``, with the scheduler's ``on_event`` set: the loop
then reads the clock around every callback (unset, it costs the loop one test an event). The run is
the same run (the trace hash is checked). Printed: each group's events, its total, and its mean
cost per event, against the budget an event has at the 0.5 target (half a bare SimPy timeout's
rate means each event may take at most twice a bare timeout's time, everything included).

    python -m bench event_costs
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from bench.simulation import TARGET_RATIO, bare_simpy_timeouts_per_s
from model.sim.cluster import Cluster
from model.sim.network import Message
from model.sim.runner import run
from scenarios import library

_SHOWN = 12


def _group(fn: Any, args: tuple[Any, ...]) -> str:
    if fn is None:
        return "SimPy step"
    if args and type(args[0]) is Message:
        return f"deliver {args[0].kind}"
    return str(getattr(fn, "__qualname__", fn))


def measure(scenario: str = "standard", seed: int = 1) -> tuple[dict[str, int], dict[str, int], float, str]:
    """Per-group nanoseconds and event counts, the wall seconds of the whole run, its trace hash."""
    costs_ns: dict[str, int] = defaultdict(int)
    counts: dict[str, int] = defaultdict(int)

    def observe(fn: Any, args: tuple[Any, ...], elapsed_ns: int) -> None:
        group = _group(fn, args)
        costs_ns[group] += elapsed_ns
        counts[group] += 1

    cluster = Cluster(library.get(scenario), seed)
    cluster.scheduler.on_event = observe
    started = time.perf_counter()
    cluster.run()
    return costs_ns, counts, time.perf_counter() - started, cluster.trace.trace_hash


def main() -> None:
    bare = bare_simpy_timeouts_per_s()
    expected = run(library.get("standard"), 1)
    costs_ns, counts, wall_s, trace_hash = measure()
    events = sum(counts.values())
    if trace_hash != expected.trace_hash or events != expected.events:
        raise SystemExit(f"timing changed the run: trace hash {trace_hash}, {events} events reported; "
                         f"expected {expected.trace_hash}, {expected.events}")
    budget_us = 1e6 / (bare * TARGET_RATIO)
    inside_ns = sum(costs_ns.values())
    print(f"   standard seed 1: {events} events, {wall_s * 1e3:.0f} ms timed ({expected.wall_time_s * 1e3:.0f} ms "
          f"untimed), {inside_ns / 1e6:.0f} ms inside handlers; same trace hash")
    print(f"   budget at ratio {TARGET_RATIO}: {budget_us:.2f} us an event, everything included "
          f"(bare SimPy {bare / 1e6:.2f} M timeouts/s); mean now {expected.wall_time_s * 1e6 / events:.2f} us")
    print(f"   {'handled by':<40} {'events':>7} {'total ms':>9} {'us/event':>9} {'x budget':>9}")
    ranked = sorted(costs_ns, key=lambda group: (-costs_ns[group], group))
    for group in ranked[:_SHOWN]:
        mean_us = costs_ns[group] / counts[group] / 1e3
        print(f"   {group:<40} {counts[group]:>7} {costs_ns[group] / 1e6:>9.1f} {mean_us:>9.2f} "
              f"{mean_us / budget_us:>9.1f}")
    rest = ranked[_SHOWN:]
    if rest:
        rest_ns = sum(costs_ns[g] for g in rest)
        rest_n = sum(counts[g] for g in rest)
        print(f"   {f'{len(rest)} others':<40} {rest_n:>7} {rest_ns / 1e6:>9.1f} {rest_ns / rest_n / 1e3:>9.2f} "
              f"{rest_ns / rest_n / 1e3 / budget_us:>9.1f}")


if __name__ == "__main__":
    main()
