"""Coordinator failover in the middle of a load (fault kind coordinator_failover_mid_load, issue 25): the
coordinator moves, and moves again while the new one still loads; the abandoned load starts over on the
next leader (Kafka: CoordinatorRuntime unloads a shard in LOADING), counted as coordinator_loads_abandoned."""

from __future__ import annotations

from typing import Any

import pytest

from model.sim.faults import FaultEvent, FaultPlanError, swarm_plan
from model.sim.runner import run
from scenarios import library

KIND = "coordinator_failover_mid_load"


def _loads(result: Any) -> list[tuple[int, str, str]]:
    assert result.trace is not None
    return [(e.time_ms, e.node, str(e.fields.get("topic")))
            for e in result.trace.events if e.kind == "coordinator.load"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_fault_abandons_a_load_that_starts_over_elsewhere_and_the_run_stays_clean(seed: int) -> None:
    result = run(library.get(KIND), seed, trace=True)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {KIND: 3}
    assert result.metrics["coordinator_loads_abandoned"] == 3
    loads = _loads(result)
    for at_ms, topic in ((1_000, "__share_group_state"), (2_500, "__consumer_offsets"), (4_000, "__share_group_state")):
        # the first move starts a load (200 ms); 100 ms later the second starts another, on another broker
        started = [(t, node) for t, node, tp in loads if tp == topic and at_ms <= t <= at_ms + 100]
        assert len(started) == 2 and started[1][0] == at_ms + 100 and started[0][1] != started[1][1], started


def test_the_swarm_draws_the_fault_and_loads_are_abandoned() -> None:
    # Pinned seed of swarm_failovers: re-search it if the swarm's draws change.
    result = run(library.get("swarm_failovers"), 3)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired.get(KIND, 0) >= 1
    assert result.metrics["coordinator_loads_abandoned"] >= result.faults_fired[KIND]


def test_the_swarm_generator_draws_either_coordinator() -> None:
    targets = library.get("swarm_failovers").fault_targets()
    events = [e for seed in range(30) for e in swarm_plan(seed, 60_000, [KIND], targets).events]
    assert {e.param("coordinator") for e in events} == {"share", "group"}


def test_a_bad_coordinator_is_named_with_what_is_allowed() -> None:
    with pytest.raises(FaultPlanError, match=r"params.coordinator = 'offsets': must be 'share' or 'group' "
                                              r"\(or absent: 'share'\)"):
        FaultEvent(0, KIND, "g", params=(("coordinator", "offsets"),))
