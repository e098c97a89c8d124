"""``Scenario.problems()``: key paths for configuration overrides, swarm rates, and no cascades."""

from __future__ import annotations

from dataclasses import replace

from model.sim.cluster import Cluster
from model.sim.faults import FaultEvent
from scenarios import library
from scenarios.spec import FaultsSpec, GroupSpec, SwarmSpec


def test_a_bad_broker_config_is_reported_once_and_not_again_under_every_group() -> None:
    small = library.get("small")
    broken = replace(small, cluster=replace(small.cluster, config={"group.share.delivery.count.limit": 1}))
    assert broken.problems() == [
        'cluster.config."group.share.delivery.count.limit" = 1: must be an integer in [2, 10]']


def test_a_cross_setting_problem_quotes_the_kafka_key_in_its_path() -> None:
    small = library.get("small")
    config = {**small.cluster.config, "group.share.record.lock.duration.ms": 500}
    problems = replace(small, cluster=replace(small.cluster, config=config)).problems()
    assert problems == ['cluster.config."group.share.record.lock.duration.ms" = 500: must be an integer in '
                        "[1000, 60000]"]
    group = GroupSpec("g", "share", ("events",), config={"group.share.record.lock.duration.ms": 90_000})
    assert replace(small, groups=(group,)).problems() == [
        'groups[0].config."group.share.record.lock.duration.ms" = 90000: must lie in [1000, 60000] '
        "(the broker's min and max record lock duration)"]


def test_swarm_rates_must_name_swarmed_kinds_with_positive_rates_and_exclude_a_plan() -> None:
    small = library.get("small")
    swarm = SwarmSpec(kinds=("broker_crash",), rates={"broker_crash": 0.0, "consumer_pause": 1.0})
    plan = (FaultEvent(1_000, "consumer_crash", "c1"),)
    problems = replace(small, faults=FaultsSpec(plan=plan, swarm=swarm)).problems()
    assert problems == [
        "faults: give a plan or a swarm, not both",
        "faults.swarm.rates.broker_crash = 0.0: must be faults per minute in (0, 10000]",
        "faults.swarm.rates.consumer_pause: not one of faults.swarm.kinds (broker_crash)",
    ]
    typo = replace(small, faults=FaultsSpec(swarm=SwarmSpec(kinds=("broker_crsh",)))).problems()
    assert typo[0].startswith("faults.swarm.kinds[0] = 'broker_crsh': unknown fault kind (did you mean "
                              '"broker_crash"?)')


def test_swarm_rates_set_how_often_a_kind_fires() -> None:
    scenario = library.get("swarm_failovers")
    assert scenario.faults.swarm is not None
    slow = replace(scenario, faults=FaultsSpec(swarm=replace(
        scenario.faults.swarm, rates={kind: 0.01 for kind in scenario.faults.swarm.kinds})))
    busy = sum(len(Cluster(scenario, seed).plan.events) for seed in range(10))
    quiet = sum(len(Cluster(slow, seed).plan.events) for seed in range(10))
    assert busy >= 20 and quiet == 0
