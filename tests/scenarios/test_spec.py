"""``Scenario.problems()``: key paths for configuration overrides, swarm rates, and no cascades."""

from __future__ import annotations

from dataclasses import replace

import pytest

from model.core.config import BROKER_SETTINGS
from model.sim.cluster import Cluster
from model.sim.faults import FAULT_KINDS, FaultEvent, FaultPlanError
from model.sim.protocol import REQUEST_KINDS
from model.sim.rng import Distribution
from model.sim.runner import run
from scenarios import library
from scenarios.spec import ConsumerSpec, FaultsSpec, GroupSpec, Scenario, ScenarioError, SwarmSpec
from scenarios.toml_format import dumps, loads


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
        # A group setting is drawn per group that does not set it: "<key>@<group>" (issue 25).
        assert {key.split("@")[0] for key in drawn} == set(scenario.faults.swarm.config)  # type: ignore[union-attr]
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


# -- the names a fault gives ------------------------------------------------------------------------

_NODES = "admin, b1..b3, c1, c2, p1"
_CASES = [  # (fault, the key path, the value, what the scenario has); the small scenario: b1..b3, c1, c2, p1,
    # one share group g, one topic events of 2 partitions
    (FaultEvent(100, "broker_crash", "b9", duration_ms=10), "target", "b9", "broker (it has b1..b3)"),
    (FaultEvent(100, "leadership_move", "events-7"), "target", "events-7",
     "topic-partition (it has events-0, events-1)"),
    (FaultEvent(100, "leadership_move", "events-0", params=(("to", "b4"),)), "params.to", "b4",
     "broker (it has b1..b3)"),
    (FaultEvent(100, "delete_records", "events-2"), "target", "events-2",
     "topic-partition (it has events-0, events-1)"),
    (FaultEvent(100, "group_coordinator_failover", "nog"), "target", "nog", "group (it has g)"),
    (FaultEvent(100, "share_coordinator_failover", "nog"), "target", "nog", "group (it has g)"),
    (FaultEvent(100, "network_partition", duration_ms=5, side_a=("c9",), side_b=("b1",)), "side_a[0]", "c9",
     f"network node (it has {_NODES})"),
    (FaultEvent(100, "network_partition", duration_ms=5, side_a=("c1",), side_b=("b1", "b4")), "side_b[1]", "b4",
     f"network node (it has {_NODES})"),
    (FaultEvent(100, "message_loss", duration_ms=5, nodes=("c3",), probability=0.5), "nodes[0]", "c3",
     f"network node (it has {_NODES})"),
    (FaultEvent(100, "message_loss", duration_ms=5, links=(("b1", "p2"),), probability=0.5), "links[0][1]", "p2",
     f"network node (it has {_NODES})"),
    (FaultEvent(100, "message_delay", duration_ms=5, nodes=("b0",), extra=Distribution.constant(5)), "nodes[0]",
     "b0", f"network node (it has {_NODES})"),
    (FaultEvent(100, "message_delay", duration_ms=5, links=(("x", "b1"),), extra=Distribution.constant(5)),
     "links[0][0]", "x", f"network node (it has {_NODES})"),
    (FaultEvent(100, "consumer_crash", "c7"), "target", "c7", "consumer (it has c1, c2)"),
    (FaultEvent(100, "consumer_pause", "c7", duration_ms=10), "target", "c7", "consumer (it has c1, c2)"),
    (FaultEvent(100, "slow_processing", "p1", duration_ms=10, extra_ms=5), "target", "p1",
     "consumer (it has c1, c2)"),
    (FaultEvent(100, "admin_alter_offsets", "g2", params=(("offset", "earliest"), ("topic", "events"))), "target",
     "g2", "group (it has g)"),
    (FaultEvent(100, "admin_alter_offsets", "g", params=(("offset", "earliest"), ("topic", "orders"))),
     "params.topic", "orders", "topic (it has events)"),
    (FaultEvent(100, "admin_delete_group", "g2"), "target", "g2", "group (it has g)"),
    (FaultEvent(100, "admin_add_partitions", "orders", params=(("add", 1),)), "target", "orders",
     "topic (it has events)"),
    (FaultEvent(100, "hostile_state_request", "g2", params=(("topic", "events"),)), "target", "g2",
     "group (it has g)"),
    (FaultEvent(100, "hostile_state_request", "g", params=(("topic", "orders"),)), "params.topic", "orders",
     "topic (it has events)"),
    (FaultEvent(100, "consumer_close", "c9", duration_ms=10), "target", "c9", "consumer (it has c1, c2)"),
    (FaultEvent(100, "consumer_subscribe", "c9", params=(("topics", "events"),)), "target", "c9",
     "consumer (it has c1, c2)"),
    (FaultEvent(100, "consumer_subscribe", "c1", params=(("topics", "events,orders"),)), "params.topics", "orders",
     "topic (it has events)"),
    (FaultEvent(100, "state_partition_under_min_isr", "g2", duration_ms=10), "target", "g2", "group (it has g)"),
    (FaultEvent(100, "state_partition_under_min_isr", "g", duration_ms=10, params=(("topic", "orders"),)),
     "params.topic", "orders", "topic (it has events)"),
    (FaultEvent(100, "hostile_share_request", "g2"), "target", "g2", "group (it has g)"),
    (FaultEvent(100, "coordinator_failover_mid_load", "g2"), "target", "g2", "group (it has g)"),
    (FaultEvent(100, "hostile_share_request", "g", params=(("topic", "orders"),)),
     "params.topic", "orders", "topic (it has events)"),
]


_KINDS_KNOWN = ('; known: Produce, Fetch, EndTxnMarker, ShareFetch, ShareAcknowledge, DeleteRecords, '
                'InitializeShareGroupState, '
                "ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary, "
                "ShareGroupHeartbeat, ConsumerGroupHeartbeat, OffsetCommit, OffsetFetch, ShareGroupDescribe, "
                "ConsumerGroupDescribe, AlterShareGroupOffsets, DeleteShareGroupOffsets, DescribeShareGroupOffsets, "
                'DeleteGroups, ListGroups, each + "Response", or "*Suffix"')


@pytest.mark.parametrize(("kind", "index", "value", "problem"), [
    ("message_loss", 1, "ShareFetsh", 'not a message kind (did you mean "ShareFetch"?)'),
    ("message_delay", 0, "*Reponse", "matches no message kind"),
])
def test_a_message_fault_names_only_message_kinds_the_network_carries(kind: str, index: int, value: str,
                                                                      problem: str) -> None:
    small = library.get("small")
    kinds = ("ShareFetchResponse", value) if index else (value, "*Response")
    extra = {"probability": 0.5} if kind == "message_loss" else {"extra": Distribution.constant(5)}
    fault = FaultEvent(100, kind, duration_ms=5, kinds=kinds, **extra)
    assert replace(small, faults=FaultsSpec(plan=(fault,))).problems() == [
        f"faults.plan[0].kinds[{index}] = {value!r}: {problem}{_KINDS_KNOWN}"]


def test_the_message_kinds_are_the_requests_a_broker_serves() -> None:
    broker = Cluster(library.get("small"), 1).brokers[1]
    assert sorted(broker._handlers) == sorted(REQUEST_KINDS)


@pytest.mark.parametrize(("fault", "key", "value", "has"), _CASES,
                         ids=[f"{case[0].kind}.{case[1]}" for case in _CASES])
def test_every_name_a_fault_gives_is_checked_against_the_scenario(fault: FaultEvent, key: str, value: str,
                                                                  has: str) -> None:
    small = library.get("small")
    fine = FaultEvent(50, "consumer_crash", "c2")
    problems = replace(small, faults=FaultsSpec(plan=(fine, fault))).problems()
    assert problems == [f"faults.plan[1].{key} = {value!r}: not a {has.replace(' (', ' of this scenario (')}"]


def test_the_table_covers_every_fault_kind_and_every_field_that_names_something() -> None:
    covered = {(fault.kind, key.split("[")[0]) for fault, key, _, _ in _CASES}
    expected = {(kind, "target") for kind, spec in FAULT_KINDS.items() if spec.target is not None}
    expected |= {("leadership_move", "params.to"), ("admin_alter_offsets", "params.topic"),
                 ("hostile_state_request", "params.topic"), ("consumer_subscribe", "params.topics"),
                 ("state_partition_under_min_isr", "params.topic"),
                 ("hostile_share_request", "params.topic")}
    expected |= {("network_partition", "side_a"), ("network_partition", "side_b")}
    expected |= {(kind, name) for kind in ("message_loss", "message_delay") for name in ("nodes", "links")}
    assert covered == expected  # and the message kinds: the test above


def test_an_alter_offsets_partition_must_exist_when_it_fires_counting_partitions_added_before() -> None:
    small = library.get("small")
    add = FaultEvent(200, "admin_add_partitions", "events", params=(("add", 2),))

    def alter(at_ms: int, partition: int) -> FaultEvent:
        return FaultEvent(at_ms, "admin_alter_offsets", "g",
                          params=(("offset", "earliest"), ("partition", partition), ("topic", "events")))

    def problems(*plan: FaultEvent) -> list[str]:
        return replace(small, faults=FaultsSpec(plan=plan)).problems()

    assert problems(alter(100, 3), add) == [
        "faults.plan[0].params.partition = 3: not a partition of events at 100 ms (it has 0..1)"]
    assert problems(add, alter(300, 3), FaultEvent(300, "leadership_move", "events-3")) == []
    assert problems(FaultEvent(100, "leadership_move", "events-2"), add) == [
        "faults.plan[0].target = 'events-2': not a topic-partition of this scenario (it has events-0, events-1)"]


def test_a_hostile_request_names_a_partition_that_exists_when_it_fires_and_a_request_of_the_kind() -> None:
    small = library.get("small")
    add = FaultEvent(200, "admin_add_partitions", "events", params=(("add", 1),))

    def hostile(at_ms: int, partition: int) -> FaultEvent:
        return FaultEvent(at_ms, "hostile_state_request", "g", params=(("partition", partition), ("topic", "events")))

    def problems(*plan: FaultEvent) -> list[str]:
        return replace(small, faults=FaultsSpec(plan=plan)).problems()

    assert problems(hostile(100, 2), add) == [
        "faults.plan[0].params.partition = 2: not a partition of events at 100 ms (it has 0..1)"]
    assert problems(add, hostile(300, 2)) == []
    with pytest.raises(FaultPlanError) as info:
        FaultEvent(100, "hostile_state_request", "g", params=(("request", "write_epoch_-1"), ("topic", "events")))
    assert info.value.problems == [
        "hostile_state_request at 100 ms: params.request = 'write_epoch_-1': must be one of replayed_write, "
        "write_negative_leader_epoch, write_negative_state_epoch, read_negative_leader_epoch, repeated_initialize "
        "(or absent: the first four)"]
    # repeated_initialize is sent only when named; naming it is accepted.
    FaultEvent(100, "hostile_state_request", "g", params=(("request", "repeated_initialize"), ("topic", "events")))
    with pytest.raises(FaultPlanError, match=r"params\.topic = None: hostile_state_request needs a topic name"):
        FaultEvent(100, "hostile_state_request", "g")


def test_a_swarm_kind_with_nothing_to_hit_is_refused() -> None:
    small = library.get("small")
    swarm = FaultsSpec(swarm=SwarmSpec(kinds=("consumer_pause", "broker_crash", "admin_add_partitions")))
    assert replace(small, consumers=(), topics=(), groups=(), producers=(), faults=swarm).problems() == [
        "faults.swarm.kinds[0] = 'consumer_pause': nothing to hit: this scenario has no consumer",
        "faults.swarm.kinds[2] = 'admin_add_partitions': nothing to hit: this scenario has no topic",
    ]
    lone = replace(small, cluster=replace(small.cluster, brokers=1, replication_factor=1, min_insync_replicas=1),
                   consumers=(), faults=FaultsSpec(swarm=SwarmSpec(kinds=("network_partition",))))
    assert lone.problems() == [
        "faults.swarm.kinds[0] = 'network_partition': nothing to hit: this scenario has 1 broker or consumer "
        "node(s), it needs 2"]


def test_a_file_naming_a_missing_node_is_refused_before_the_run_not_with_a_key_error_in_it() -> None:
    text = dumps(library.get("small")) + (
        '\n[[faults.plan]]\nat_ms = 100\nkind = "network_partition"\nduration_ms = 500\n'
        'side_a = ["c9"]\nside_b = ["b1"]\n')
    with pytest.raises(ScenarioError) as caught:
        loads(text, source="bad.toml")
    assert caught.value.problems == [
        f"faults.plan[0].side_a[0] = 'c9': not a network node of this scenario (it has {_NODES})"]


def test_the_cluster_names_its_nodes_as_the_validation_does() -> None:
    scenario = replace(library.get("small"), consumers=(
        ConsumerSpec("g", count=2), ConsumerSpec("g", count=0), ConsumerSpec("g", count=9)))
    cluster = Cluster(scenario, 1)
    assert set(scenario.network_nodes()) <= set(cluster.network.nodes)
    assert sorted(cluster.consumers) == sorted(name for name, _ in scenario.consumer_names())
    assert [f"b{b}" for b in cluster.brokers] == list(scenario.broker_names())
    assert list(cluster.producers) == list(scenario.producer_names())
    assert scenario.network_nodes() == ("b1", "b2", "b3", *(f"c{i}" for i in range(1, 12)), "p1", "admin")


@pytest.mark.parametrize("name", library.names())
def test_every_library_scenario_names_only_what_it_has(name: str) -> None:
    assert library.get(name).problems() == []


def test_the_default_swarm_of_every_kind_uses_those_with_something_to_hit() -> None:
    small = library.get("small")
    bare = replace(small, consumers=(), faults=FaultsSpec(swarm=SwarmSpec()))
    assert bare.problems() == []
    assert all(event.kind not in ("consumer_crash", "consumer_pause", "slow_processing")
               for seed in range(20) for event in Cluster(bare, seed).plan.events)


def test_a_topics_replication_factor_lies_in_one_to_the_brokers() -> None:
    small = library.get("small")
    assert small.cluster.brokers == 3
    for value, ok in ((1, True), (3, True), (0, False), (4, False), ("2", False)):
        topics = (replace(small.topics[0], replication_factor=value), *small.topics[1:])
        problems = replace(small, topics=topics).problems()
        expected = [] if ok else [f"topics[0].replication_factor = {value!r}: must be an integer in [1, 3]"]
        assert problems == expected


def test_swarm_params_name_swarmed_kinds_and_pass_their_kinds_checks() -> None:
    small = library.get("small")
    swarm = SwarmSpec(kinds=("hostile_state_request", "broker_crash"), params={
        "hostile_state_request": {"request": "repeated_initialise", "rest_ms": 0},
        "broker_crash": {"to": 1},
        "consumer_pause": {"restart": "no"},
    })
    assert replace(small, faults=FaultsSpec(swarm=swarm)).problems() == [
        "faults.swarm.params.broker_crash: broker_crash takes no params",
        "faults.swarm.params.consumer_pause: not one of faults.swarm.kinds (hostile_state_request, broker_crash)",
        "faults.swarm.params.hostile_state_request: params.request = 'repeated_initialise': must be one of "
        "replayed_write, write_negative_leader_epoch, write_negative_state_epoch, read_negative_leader_epoch, "
        "repeated_initialize (or absent: the first four)",
        "faults.swarm.params.hostile_state_request: params.rest_ms = 0: only with params.request = "
        "'repeated_initialize'",
    ]
    good = SwarmSpec(kinds=("hostile_state_request",),
                     params={"hostile_state_request": {"request": "repeated_initialize", "rest_ms": 500}})
    assert replace(small, faults=FaultsSpec(swarm=good)).problems() == []
