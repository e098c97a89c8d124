"""The named library: every scenario validates, describes itself and runs without a violation; the issue's
list of situations is covered; ``scenarios.load`` takes a name or a file."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import scenarios
from model.sim.faults import FAULT_KINDS
from model.sim.runner import run
from scenarios import library
from scenarios.spec import Scenario, ScenarioError
from scenarios.toml_format import dumps

# The situations issue 6 asks the library to cover, and the scenario that covers each.
COVERAGE = {
    "happy path": "happy",
    "the KIP-932 worked example as a scripted run": "kip932_example",
    "poison pill": "poison",
    "slow consumer and lock timeouts": "slow_consumer_lock_timeout",
    "share-partition leader failover during acknowledgements": "leader_failover_during_acks",
    "share-coordinator failover between snapshots": "share_coordinator_between_snapshots",
    "group-coordinator failover": "group_coordinator_failover",
    "a network partition isolating a consumer": "network_partition",
    "lost heartbeats and session timeout": "lost_heartbeats",
    "a GC pause": "gc_pause",
    "a rolling broker restart": "rolling_restart",
    "read_committed with open and aborted transactions": "read_committed_transactions",
    "a compacted topic with gaps": "compacted_topic",
    "admin alter offsets and delete group": "admin_alter_and_delete",
    "partitions added during consumption": "partitions_added",
    "a KIP-848 rolling restart with static members": "kip848_rolling_restart",
    "swarm": "swarm",
}
# Names other tests, engineers' code and the docs rely on.
KEPT_NAMES = ("standard", "swarm", "small", "happy", "poison", "consumer_group", *FAULT_KINDS)
RECORDS_CAP = 2_000  # the 20 000-record scenarios run with fewer records here: the same run, shorter


def quick(scenario: Scenario) -> Scenario:
    return replace(scenario, producers=tuple(replace(p, records=min(p.records, RECORDS_CAP))
                                             for p in scenario.producers))


def test_the_library_has_at_least_15_scenarios_covering_the_issue_and_keeps_the_old_names() -> None:
    names = library.names()
    assert len(names) >= 15
    missing = {situation: name for situation, name in COVERAGE.items() if name not in names}
    assert missing == {}
    assert [name for name in KEPT_NAMES if name not in names] == []


@pytest.mark.parametrize("name", library.names())
def test_every_named_scenario_validates_describes_itself_and_runs_without_violation(name: str) -> None:
    scenario = library.get(name)
    assert scenario.name == name and scenario.problems() == []
    assert len(scenario.description) >= 20
    assert all(kind in FAULT_KINDS for kind in scenario.fault_kinds)
    result = run(quick(scenario))
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.metrics["records_unresolved"] == 0


def _run(name: str) -> tuple[dict[str, Any], dict[str, int]]:
    result = run(library.get(name))
    assert result.ok, [v.describe() for v in result.violations]
    return result.metrics, result.faults_fired


def test_kip932_example_times_out_consumer_1s_locks_and_redelivers_them() -> None:
    metrics, fired = _run("kip932_example")
    assert fired == {"slow_processing": 1}
    assert metrics["records_produced"] == 21 and metrics["records_accepted"] == 21
    assert metrics["redeliveries"] >= 1


def test_leader_failover_during_acks_moves_leaders_while_records_are_in_transition() -> None:
    metrics, fired = _run("leader_failover_during_acks")
    assert fired == {"leadership_move": 4}
    assert metrics["leader_failovers_in_transition"] >= 1


@pytest.mark.parametrize(("name", "fired", "metric", "at_least"), [
    ("gc_pause", {"consumer_pause": 2}, "members_fenced", 1),
    ("slow_consumer_lock_timeout", {"slow_processing": 1}, "redeliveries", 1),
    ("share_coordinator_between_snapshots", {"share_coordinator_failover": 2}, "share_coordinator_failovers", 2),
    ("rolling_restart", {"broker_crash": 3}, "partition_failovers", 3),
    ("read_committed_transactions", {"leadership_move": 1}, "records_aborted", 1),
    ("partitions_added", {"admin_add_partitions": 2}, "records_accepted", 400),
    ("admin_alter_and_delete", {"admin_alter_offsets": 1, "admin_delete_group": 1, "consumer_pause": 1},
     "records_accepted", 401),  # g2 reads the topic again after the reset
])
def test_the_situation_a_scenario_is_named_after_happens(name: str, fired: dict[str, int], metric: str,
                                                          at_least: int) -> None:
    metrics, got = _run(name)
    assert got == fired
    assert metrics[metric] >= at_least


def test_read_committed_delivers_committed_records_only() -> None:
    metrics, _ = _run("read_committed_transactions")
    # records_produced counts committed records only: an aborted one delivered would make delivered exceed it.
    assert metrics["records_aborted"] >= 1
    assert metrics["records_delivered"] == metrics["records_accepted"] == metrics["records_produced"]
    assert metrics["offsets_archived_or_skipped"] >= metrics["records_aborted"]  # aborted records and markers (SP-13)


def test_load_takes_a_name_or_a_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "gc.toml"
    path.write_text(dumps(library.get("gc_pause")))
    assert scenarios.load("gc_pause") == library.get("gc_pause")
    assert scenarios.load(str(path)) == library.get("gc_pause") == scenarios.load(path)
    with pytest.raises(library.UnknownScenario, match=r"unknown scenario 'nope'; known: .*standard"):
        scenarios.load("nope")
    with pytest.raises(ScenarioError, match="no such scenario file"):
        scenarios.load(tmp_path / "absent.toml")


def test_small_makes_variants_of_the_small_cluster() -> None:
    variant = library.small("v", "d", records=10, consumers=1, poison_rate=0.5, duration_ms=2_000)
    base = library.get("small")
    assert (variant.name, variant.description, variant.duration_ms) == ("v", "d", 2_000)
    assert variant.consumers[0].count == 1 and variant.consumers[0].poison_rate == 0.5
    assert variant.producers[0].records == 10 and variant.cluster == base.cluster
