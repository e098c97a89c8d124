"""A run is a pure function of its seed, in any process (DESIGN.md principle 2, issue 4).

``ping_simulation`` is a small synthetic cluster built only from the simulation
layer: brokers and consumers exchanging heartbeats and fetches over a lossy,
jittery network, a SimPy process beside the timers, and a swarm fault plan
(partitions, loss, delay, broker and consumer crashes, pauses) with a healing
phase. The test runs it in subprocesses with different PYTHONHASHSEEDs and
compares trace hashes. Run this file as a script to print one run's summary:

    python tests/model/sim/test_determinism.py SEED [--unsorted]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Generator
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from model.sim.faults import FaultEvent, FaultHandler, FaultInjector, SwarmTargets, network_fault_handlers, swarm_plan
from model.sim.network import Message, Network
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

BROKERS = ("b1", "b2", "b3")
CONSUMERS = ("c1", "c2", "c3", "c4", "c5", "c6")
FAULT_KINDS = ("network_partition", "message_loss", "message_delay", "broker_crash", "consumer_crash", "consumer_pause")
HEAL_AT_MS = 6_000
END_MS = 9_000


def ping_simulation(seed: int, *, keep: bool = False, sort_members: bool = True) -> dict[str, Any]:
    """Run the synthetic cluster; returns the trace hash and a few counts.

    ``sort_members=False`` plants the classic bug (iterating a set of strings)
    so the test can show the hash comparison catches it.
    """
    scheduler = Scheduler()
    streams = RandomStreams(seed)
    trace = Trace(keep=keep)
    graph = nx.Graph()
    graph.add_nodes_from(BROKERS + CONSUMERS)
    for consumer in CONSUMERS:
        for broker in BROKERS:
            graph.add_edge(
                consumer,
                broker,
                latency=Distribution.spike(Distribution.lognormal(2, 0.6), 0.02, Distribution.uniform(20, 200)),
            )
    network = Network(scheduler, graph, streams, trace, default_latency=Distribution.constant(1))
    network.set_duplication("FetchRequest", 0.01)

    members: dict[str, set[str]] = {broker: set() for broker in BROKERS}

    def broker_handler(broker: str) -> Any:
        def handle(message: Message) -> None:
            if message.kind == "HeartbeatRequest":
                members[broker].add(message.src)
                listed = sorted(members[broker]) if sort_members else list(members[broker])
                trace.record(scheduler.now_ms, broker, "members", members=listed)
                network.send(broker, message.src, "HeartbeatResponse", len(listed))
            elif message.kind == "FetchRequest":
                work = streams.get("broker", broker).randint(0, 5)
                scheduler.post(work, network.send, broker, message.src, "FetchResponse", message.payload)

        return handle

    heartbeats: dict[str, Timer] = {}
    crashed: set[str] = set()

    def consumer_handler(consumer: str) -> Any:
        def handle(message: Message) -> None:
            trace.record(scheduler.now_ms, consumer, "response", msg_kind=message.kind, payload=message.payload)

        return handle

    def heartbeat(consumer: str) -> None:
        rng = streams.get("consumer", consumer)
        broker = BROKERS[rng.randrange(len(BROKERS))]
        network.send(consumer, broker, "HeartbeatRequest")
        network.send(consumer, broker, "FetchRequest", rng.randrange(1000))
        heartbeats[consumer].reschedule(100)

    for broker in BROKERS:
        network.register(broker, broker_handler(broker))
    for consumer in CONSUMERS:
        network.register(consumer, consumer_handler(consumer))
        heartbeats[consumer] = scheduler.timer(streams.get("start").randrange(100), heartbeat, consumer)

    def auditor(env: Scheduler) -> Generator[Any, Any, None]:
        # A SimPy process beside the timers: the layer must interleave both deterministically.
        while True:
            yield env.timeout(250)
            metrics = network.metrics()
            trace.record(env.now_ms, "auditor", "tick", delivered=metrics.total("delivered"))

    scheduler.process(auditor(scheduler))

    def crash_consumer(event: FaultEvent) -> bool:
        if event.target in crashed:
            return False
        crashed.add(event.target)
        heartbeats[event.target].cancel()
        return network.crash_node(event.target)

    def pause_consumer(event: FaultEvent) -> bool:
        return event.target not in crashed and heartbeats[event.target].cancel()

    def resume_consumer(event: FaultEvent) -> None:
        if event.target not in crashed:
            heartbeats[event.target].reschedule(0)

    handlers: dict[str, FaultHandler] = {
        **network_fault_handlers(network),
        "broker_crash": FaultHandler(
            lambda e: network.crash_node(e.target), lambda e: _ignore(network.restart_node(e.target))
        ),
        "consumer_crash": FaultHandler(crash_consumer),
        "consumer_pause": FaultHandler(pause_consumer, resume_consumer),
    }
    targets = SwarmTargets(
        brokers=BROKERS, consumers=CONSUMERS, message_kinds=("HeartbeatRequest", "FetchRequest"), session_timeout_ms=500
    )
    plan = swarm_plan(seed, HEAL_AT_MS, FAULT_KINDS, targets, intensity=20)
    injector = FaultInjector(scheduler, plan, handlers, trace)
    scheduler.run(until=END_MS)
    metrics = network.metrics()
    return {
        "trace_hash": trace.trace_hash,
        "events": trace.count,
        "fired": injector.fired,
        "delivered": metrics.total("delivered"),
        "dropped": metrics.total("dropped"),
        "duplicated": metrics.total("duplicated"),
        "kept": len(trace.events),
    }


def _ignore(_: object) -> None:
    return None


def _in_subprocess(seed: int, hash_seed: str, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), str(seed), *extra],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_the_synthetic_run_exercises_the_layer() -> None:
    result = ping_simulation(25)
    assert result["delivered"] > 500
    assert result["dropped"] > 0
    assert result["duplicated"] > 0
    assert sorted(result["fired"]) == sorted(FAULT_KINDS)  # this seed's swarm switched every kind on
    assert result["events"] > result["delivered"]


def test_same_seed_same_hash_in_process_and_with_keep() -> None:
    first = ping_simulation(11)
    assert ping_simulation(11) == first
    kept = ping_simulation(11, keep=True)
    assert kept["trace_hash"] == first["trace_hash"]
    assert kept["kept"] == first["events"]
    assert ping_simulation(12)["trace_hash"] != first["trace_hash"]


@pytest.mark.parametrize("seed", [2, 25, 2024])
def test_same_hash_under_different_pythonhashseeds(seed: int) -> None:
    here = ping_simulation(seed)
    zero = _in_subprocess(seed, "0")
    other = _in_subprocess(seed, "12345")
    assert zero == other == here


def test_the_comparison_catches_iteration_over_a_set_of_strings() -> None:
    zero = _in_subprocess(2, "0", "--unsorted")
    other = _in_subprocess(2, "12345", "--unsorted")
    assert zero["trace_hash"] != other["trace_hash"]


if __name__ == "__main__":
    print(json.dumps(ping_simulation(int(sys.argv[1]), sort_members="--unsorted" not in sys.argv[2:]), sort_keys=True))
