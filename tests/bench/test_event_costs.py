"""bench/event_costs.py times a copy of the scheduler's loop: the copy must fire the same events in
the same order as the real one, or its figures describe another run."""

from __future__ import annotations

import pytest

from bench.event_costs import measure
from model.sim.runner import run
from scenarios import library


@pytest.mark.parametrize("scenario", ["small", "broker_crash", "consumer_group"])
def test_the_timed_loop_runs_the_same_events_in_the_same_order(scenario: str) -> None:
    expected = run(library.get(scenario), 1)
    costs_ns, counts, _, trace_hash = measure(scenario, 1)
    assert trace_hash == expected.trace_hash
    assert sum(counts.values()) == expected.events
    assert set(costs_ns) == set(counts)
    assert "deliver ShareFetch" in counts or "deliver ConsumerGroupHeartbeat" in counts
