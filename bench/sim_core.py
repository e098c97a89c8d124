"""The simulation layer's hot paths against bare SimPy (issue 4: the simulator must reach
at least half of SimPy's bare-timeout rate in events/s, so this layer must be lean).

Prints, best of 3 each:

* bare SimPy: ``yield env.timeout(1)`` loops in processes (the yardstick);
* scheduler timers: ``Scheduler.post`` chains (handle-free) and ``Scheduler.timer`` chains (cancellable);
* network: request/response ping-pong, messages delivered per second (without and with a trace);
* trace: ``Trace.record`` calls per second with ``keep=False``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import networkx as nx
import simpy

from model.sim.network import Message, Network
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

EVENTS = 200_000
CHAINS = 10


def bare_simpy_timeouts() -> float:
    env = simpy.Environment()

    def loop(count: int) -> simpy.events.ProcessGenerator:
        for _ in range(count):
            yield env.timeout(1)

    for _ in range(CHAINS):
        env.process(loop(EVENTS // CHAINS))
    started = time.perf_counter()
    env.run()
    return EVENTS / (time.perf_counter() - started)


def scheduler_posts() -> float:
    scheduler = Scheduler()
    left = [EVENTS]

    def tick(chain: int) -> None:
        left[0] -= 1
        if left[0] > 0:
            scheduler.post(1, tick, chain)

    for chain in range(CHAINS):
        scheduler.post(1, tick, chain)
    started = time.perf_counter()
    scheduler.run()
    return scheduler.timers_fired / (time.perf_counter() - started)


def scheduler_timers() -> float:
    """Cancellable timers, each re-armed by its own callback (a heartbeat loop)."""
    scheduler = Scheduler()
    left = [EVENTS]
    timers: list[Timer] = []

    def tick(chain: int) -> None:
        left[0] -= 1
        if left[0] > 0:
            timers[chain].reschedule(1)

    for chain in range(CHAINS):
        timers.append(scheduler.timer(1, tick, chain))
    started = time.perf_counter()
    scheduler.run()
    return scheduler.timers_fired / (time.perf_counter() - started)


def network_ping_pong(trace: Trace | None, clock: Callable[[], float] = time.perf_counter) -> float:
    """Messages delivered per second of ``clock`` (``bench simulation`` passes CPU time)."""
    scheduler = Scheduler()
    graph = nx.Graph()
    clients = [f"c{i}" for i in range(CHAINS)]
    graph.add_nodes_from(["b1", *clients])
    network = Network(scheduler, graph, RandomStreams(7), trace, default_latency=Distribution.uniform(1, 5))
    left = [EVENTS]

    def broker(message: Message) -> None:
        network.send("b1", message.src, "PingResponse", message.payload)

    def client(message: Message) -> None:
        left[0] -= 1
        if left[0] > 0:
            network.send(message.dst, "b1", "PingRequest", message.payload)

    network.register("b1", broker)
    for name in clients:
        network.register(name, client)
        network.send(name, "b1", "PingRequest", None)
    started = clock()
    scheduler.run()
    elapsed = clock() - started
    return network.metrics().total("delivered") / elapsed


def trace_records() -> float:
    trace = Trace(keep=False)
    record = trace.record
    started = time.perf_counter()
    for i in range(EVENTS):
        record(i, "b1", "deliver", id=i, msg_kind="ShareFetchRequest", src="c3")
    _ = trace.trace_hash
    return EVENTS / (time.perf_counter() - started)


def best_of_3(run: Callable[[], float]) -> float:
    return max(run() for _ in range(3))


def main() -> None:
    bare = best_of_3(bare_simpy_timeouts)
    rows = [
        ("bare SimPy timeouts", bare),
        ("scheduler post (no handle)", best_of_3(scheduler_posts)),
        ("scheduler timer (cancellable)", best_of_3(scheduler_timers)),
        ("network messages delivered", best_of_3(lambda: network_ping_pong(None))),
        ("network delivered, traced", best_of_3(lambda: network_ping_pong(Trace(keep=False)))),
        ("trace records (keep=False)", best_of_3(trace_records)),
    ]
    for name, rate in rows:
        print(f"   {name:<32} {rate / 1e6:6.3f} M/s   {rate / bare:5.2f} x bare")


if __name__ == "__main__":
    main()
