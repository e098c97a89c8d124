"""bench/event_costs.py times every event through the scheduler's ``on_event``: the timed run must be
the same run, every event reported once, or its figures describe another."""

from __future__ import annotations

import pytest

from bench.event_costs import measure
from model.sim.runner import run
from scenarios import library


@pytest.mark.parametrize("scenario", ["small", "broker_crash", "consumer_group"])
def test_a_timed_run_is_the_same_run_and_reports_every_event(scenario: str) -> None:
    expected = run(library.get(scenario), 1)
    costs_ns, counts, _, trace_hash = measure(scenario, 1)
    assert trace_hash == expected.trace_hash
    assert sum(counts.values()) == expected.events
    assert set(costs_ns) == set(counts)
    assert "deliver ShareFetch" in counts or "deliver ConsumerGroupHeartbeat" in counts
