"""A KIP-848 consumer group end to end: static members, a partition leader move, a
group-coordinator failover and a member pause; every produced record is consumed."""

from dataclasses import replace

from model.sim.runner import run
from scenarios import library


def _short() -> object:
    scenario = library.get("consumer_group")
    producers = tuple(replace(p, records=3_000) for p in scenario.producers)
    return replace(scenario, producers=producers)


def test_consumer_group_scenario_consumes_everything_through_failovers() -> None:
    result = run(_short(), 3)  # type: ignore[arg-type]
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"consumer_pause": 1, "group_coordinator_failover": 1, "leadership_move": 1}
    assert result.metrics["records_produced"] == 3_000
    # At-least-once: a failover or a pause may re-deliver uncommitted records, never lose one.
    assert result.metrics["records_delivered"] >= 3_000
    assert result.metrics["records_unresolved"] == 0
    assert result.metrics["rebalances"] >= 2
