"""``Scenario.problems()``: key paths for configuration overrides, swarm rates, and no cascades."""

from __future__ import annotations

from dataclasses import replace

from model.core.config import BROKER_SETTINGS
from model.sim.cluster import Cluster
from model.sim.faults import FaultEvent
from model.sim.runner import run
from scenarios import library
from scenarios.spec import FaultsSpec, GroupSpec, Scenario, SwarmSpec


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


# -- the broker settings a swarm draws --------------------------------------------------------------


def _drawing(config: dict[str, object], cluster_config: dict[str, object] | None = None) -> Scenario:
    scenario = library.get("swarm_config")
    assert scenario.faults.swarm is not None
    scenario = replace(scenario, faults=FaultsSpec(swarm=replace(scenario.faults.swarm, config=config)))
    if cluster_config is not None:
        scenario = replace(scenario, cluster=replace(scenario.cluster, config=cluster_config))
    return scenario


def test_each_drawn_setting_names_its_key_its_value_and_the_form_allowed() -> None:
    path = "faults.swarm.config"
    assert _drawing({"group.share.partition.max.record.locks": [50, 200],
                     "group.share.delivery.count.limt": [2, 5],
                     "group.consumer.assignors": ["range", "sticky"],
                     "group.share.session.timeout.ms": 3000}).problems() == [
        f'{path}."group.consumer.assignors" = [\'range\', \'sticky\']: must be a non-empty list of \'uniform\', '
        "'range'",
        f'{path}."group.share.delivery.count.limt": unknown setting (did you mean '
        '"group.share.delivery.count.limit"?); known: ' + ", ".join(s.key for s in BROKER_SETTINGS),
        f'{path}."group.share.partition.max.record.locks" = [50, 200]: must be [low, high], low <= high, each an '
        "integer in [100, 10000]",
        f'{path}."group.share.session.timeout.ms" = 3000: must be [low, high], low <= high, each an integer in '
        "[1, +inf]",
    ]
    assert _drawing({"group.share.delivery.count.limit": [5, 2]}).problems() == [
        f'{path}."group.share.delivery.count.limit" = [5, 2]: must be [low, high], low <= high, each an integer '
        "in [2, 10]"]


def test_a_setting_is_drawn_or_set_not_both() -> None:
    scenario = _drawing({"group.share.delivery.count.limit": [2, 5]},
                        {"delivery_count_limit": 3, "group.share.min.record.lock.duration.ms": 1000})
    assert scenario.problems() == ['faults.swarm.config."group.share.delivery.count.limit": cluster.config sets it '
                                   "too; draw it or set it, not both"]


def test_every_draw_must_keep_the_cross_setting_rules() -> None:
    # min <= lock <= max must hold for every draw: checked with each side at its worst end.
    minimum = {"group.share.min.record.lock.duration.ms": 1000}
    assert _drawing({"group.share.record.lock.duration.ms": [1000, 4000]}, minimum).problems() == []
    assert _drawing({"group.share.record.lock.duration.ms": [500, 4000]}, minimum).problems() == [
        'faults.swarm.config."group.share.record.lock.duration.ms" = [500, 4000]: must be [low, high], low <= '
        "high, each an integer in [1000, 60000]"]
    assert _drawing({"group.share.record.lock.duration.ms": [2000, 4000],
                     "group.share.min.record.lock.duration.ms": [1000, 3000]}, {}).problems() == [
        "faults.swarm.config: a draw could break group.share.min.record.lock.duration.ms <= "
        "group.share.record.lock.duration.ms (group.share.min.record.lock.duration.ms [1000, 3000], "
        "group.share.record.lock.duration.ms [2000, 4000])"]
    # The broker's default minimum, 15 000 ms, against a drawn lock duration.
    assert _drawing({"group.share.record.lock.duration.ms": [1000, 4000]}, {}).problems() == [
        "faults.swarm.config: a draw could break group.share.min.record.lock.duration.ms <= "
        "group.share.record.lock.duration.ms (group.share.min.record.lock.duration.ms = 15000, "
        "group.share.record.lock.duration.ms [1000, 4000])"]
    # A group's own lock duration must lie within every drawn min and max.
    scenario = _drawing({"group.share.max.record.lock.duration.ms": [30_000, 40_000]}, minimum)
    group = replace(scenario.groups[0], config={**scenario.groups[0].config,
                                                "group.share.record.lock.duration.ms": 35_000})
    assert replace(scenario, groups=(group,)).problems() == [
        'faults.swarm.config: a draw could refuse groups[0].config."group.share.record.lock.duration.ms" = 35000 '
        "(group.share.min.record.lock.duration.ms = 1000, group.share.max.record.lock.duration.ms [30000, 40000])"]


def test_a_run_uses_the_settings_it_drew_and_reports_them() -> None:
    scenario = library.get("swarm_config")
    seen = set()
    for seed in range(20):
        cluster = Cluster(scenario, seed)
        drawn = cluster.swarm_config
        assert set(drawn) == set(scenario.faults.swarm.config)  # type: ignore[union-attr]
        assert cluster.broker_config.delivery_count_limit == drawn["group.share.delivery.count.limit"]
        assert cluster.broker_config.partition_max_record_locks == drawn["group.share.partition.max.record.locks"]
        seen.add(drawn["group.share.delivery.count.limit"])
    assert seen == {2, 3, 4, 5}
    result = run(scenario, 3)
    assert result.swarm_config == Cluster(scenario, 3).swarm_config
    assert result.to_json()["swarm_config"] == result.swarm_config
    assert run(library.get("swarm"), 3).swarm_config == {}


def test_the_settings_drawn_leave_the_plans_times_and_targets_alone() -> None:
    scenario = library.get("swarm_config")
    assert scenario.faults.swarm is not None
    fixed = replace(scenario, faults=FaultsSpec(swarm=replace(scenario.faults.swarm, config={})),
                    cluster=replace(scenario.cluster, config={**scenario.cluster.config,
                                                              "group.share.record.lock.duration.ms": 2000}))
    for seed in range(20):
        drawn, plain = Cluster(scenario, seed).plan.events, Cluster(fixed, seed).plan.events
        assert [(e.at_ms, e.kind, e.target) for e in drawn] == [(e.at_ms, e.kind, e.target) for e in plain]
