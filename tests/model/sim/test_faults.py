"""Fault plans as data, swarm generation, the injector and the shrinker (DESIGN.md principle 4)."""

from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.sim.faults import (
    FAULT_KINDS,
    FaultEvent,
    FaultHandler,
    FaultInjector,
    FaultPlan,
    FaultPlanError,
    SwarmTargets,
    network_fault_handlers,
    shrink,
    swarm_config,
    swarm_plan,
)
from model.sim.network import Network
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler
from model.sim.trace import Trace

TARGETS = SwarmTargets(
    brokers=("b1", "b2", "b3"),
    consumers=("c1", "c2", "c3"),
    groups=("g1",),
    partitions=("orders-0", "orders-1"),
    topics=("orders",),
    message_kinds=("ShareFetchRequest", "ShareGroupHeartbeatRequest"),
)

ONE_OF_EACH = [
    FaultEvent(1_000, "broker_crash", "b1", duration_ms=5_000),
    FaultEvent(1_000, "leadership_move", "orders-0", params=(("to", "b2"),)),
    FaultEvent(2_000, "group_coordinator_failover", "g1"),
    FaultEvent(2_000, "share_coordinator_failover", "g1"),
    FaultEvent(3_000, "network_partition", duration_ms=1_000, side_a=("c1",), side_b=("b1", "b2"), one_way=True),
    FaultEvent(3_000, "message_loss", duration_ms=1_000, kinds=("*Response",), probability=0.5),
    FaultEvent(3_000, "message_delay", duration_ms=1_000, nodes=("c2",), extra=Distribution.uniform(10, 90)),
    FaultEvent(4_000, "consumer_crash", "c3"),
    FaultEvent(4_000, "consumer_pause", "c1", duration_ms=50_000),
    FaultEvent(4_000, "slow_processing", "c2", duration_ms=10_000, extra_ms=31_000),
    FaultEvent(5_000, "admin_alter_offsets", "g1", params=(("offset", "earliest"), ("topic", "orders"))),
    FaultEvent(5_000, "admin_delete_group", "g1"),
    FaultEvent(5_000, "admin_add_partitions", "orders", params=(("add", 2),)),
    FaultEvent(6_000, "hostile_state_request", "g1", params=(("partition", 1), ("topic", "orders"))),
    FaultEvent(6_000, "delete_records", "orders-0", params=(("to", "half"),)),
    FaultEvent(7_000, "consumer_close", "c2", duration_ms=1_000, params=(("restart", "no"),)),
    FaultEvent(7_000, "consumer_subscribe", "c1", params=(("topics", "orders"),)),
    FaultEvent(6_000, "state_partition_under_min_isr", "g1", duration_ms=8_000, params=(("partition", 1),)),
    FaultEvent(6_000, "hostile_share_request", "g1", params=(("request", "stale_session_epoch"),)),
    FaultEvent(6_000, "coordinator_failover_mid_load", "g1", params=(("coordinator", "group"),)),
]


def test_every_kind_has_a_valid_example() -> None:
    assert sorted(e.kind for e in ONE_OF_EACH) == sorted(FAULT_KINDS)


def test_plan_sorts_by_time_keeping_ties_in_order() -> None:
    plan = FaultPlan(tuple(reversed(ONE_OF_EACH)))
    assert [e.at_ms for e in plan.events] == sorted(e.at_ms for e in ONE_OF_EACH)
    assert [e.kind for e in plan.events[:2]] == ["leadership_move", "broker_crash"]


def test_records_round_trip() -> None:
    plan = FaultPlan(tuple(ONE_OF_EACH), heal_at_ms=60_000)
    records = plan.to_records()
    assert records[0] == {"at_ms": 1_000, "kind": "broker_crash", "target": "b1", "duration_ms": 5_000}
    assert FaultPlan.from_records(records, plan.heal_at_ms) == plan
    text = plan.describe()
    assert "    1000 ms  broker_crash b1 for 5000 ms" in text
    assert "heal" in text.splitlines()[-1]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        ({"at_ms": 0, "kind": "meteor_strike"}, "kind = 'meteor_strike': must be one of broker_crash"),
        ({"at_ms": -5, "kind": "consumer_crash", "target": "c1"}, "at_ms = -5: must be an integer >= 0"),
        ({"at_ms": 1.5, "kind": "consumer_crash", "target": "c1"}, "at_ms = 1.5"),
        ({"at_ms": 0, "kind": "broker_crash", "target": "b1"}, "duration_ms = 0: must be an integer >= 1"),
        ({"at_ms": 0, "kind": "broker_crash", "duration_ms": 5}, "target = '': broker_crash needs a broker name"),
        ({"at_ms": 0, "kind": "consumer_crash", "target": "c1", "duration_ms": 9}, "consumer_crash is instantaneous"),
        (
            {"at_ms": 0, "kind": "message_loss", "duration_ms": 5, "probability": 1.5},
            r"probability = 1.5: must be in \(0, 1\]",
        ),
        ({"at_ms": 0, "kind": "message_loss", "duration_ms": 5}, "probability = 0.0"),
        ({"at_ms": 0, "kind": "message_delay", "duration_ms": 5}, "extra = None: must be a Distribution"),
        (
            {"at_ms": 0, "kind": "network_partition", "duration_ms": 5, "side_a": ["a"], "side_b": ["a", "b"]},
            "overlap on a",
        ),
        ({"at_ms": 0, "kind": "network_partition", "duration_ms": 5, "side_a": ["a"]}, "side_b = \\(\\): must be"),
        ({"at_ms": 0, "kind": "network_partition", "target": "x", "duration_ms": 5}, "takes no target"),
        ({"at_ms": 0, "kind": "broker_crash", "target": "b1", "duration_ms": 5, "probability": 0.5}, "not used by"),
        ({"at_ms": 0, "kind": "slow_processing", "target": "c1", "duration_ms": 5}, "extra_ms = 0: must be"),
        ({"at_ms": 0, "kind": "admin_add_partitions", "target": "t"}, "params.add = None: must be an integer >= 1"),
        (
            {"at_ms": 0, "kind": "admin_alter_offsets", "target": "g", "params": {"topic": "t", "offset": "middle"}},
            "params.offset = 'middle'",
        ),
        (
            {"at_ms": 0, "kind": "admin_alter_offsets", "target": "g", "params": {"offset": 3}},
            "params.topic = None",
        ),
        (
            {"at_ms": 0, "kind": "admin_delete_group", "target": "g", "params": {"force": 1}},
            r"params.force = 1: not a parameter of admin_delete_group \(allowed: none\)",
        ),
        ({"at_ms": 0, "kind": "consumer_crash", "target": "c1", "colour": "red"}, "unknown field"),
        (
            {"at_ms": 0, "kind": "message_delay", "duration_ms": 5, "extra": {"kind": "uniform", "low_ms": 9}},
            "extra: uniform distribution: high_ms = 0",
        ),
    ],
)
def test_validation_names_field_value_and_range(event: dict[str, Any], message: str) -> None:
    with pytest.raises(FaultPlanError, match=message) as caught:
        FaultPlan.from_records([event])
    assert all(problem.startswith("event 0: ") for problem in caught.value.problems)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(FaultPlanError) as caught:
        FaultPlan.from_records(
            [
                {"at_ms": 0, "kind": "consumer_crash", "target": "c1"},
                {"at_ms": -1, "kind": "broker_crash", "target": ""},
                {"at_ms": 0, "kind": "nope"},
            ]
        )
    problems = caught.value.problems
    assert len(problems) == 4
    assert [p.split(":")[0] for p in problems] == ["event 1", "event 1", "event 1", "event 2"]


def test_params_are_kept_in_name_order() -> None:
    a = FaultEvent(0, "admin_alter_offsets", "g1", params=(("topic", "t"), ("offset", 5)))
    b = FaultEvent.from_record(
        {"at_ms": 0, "kind": "admin_alter_offsets", "target": "g1", "params": [["offset", 5], ["topic", "t"]]}
    )
    assert a == b
    assert a.params == (("offset", 5), ("topic", "t"))
    assert a.param("topic") == "t"
    assert a.param("partition", 0) == 0


def test_no_fault_starts_in_the_healing_phase() -> None:
    with pytest.raises(FaultPlanError, match=r"at_ms = 10000: must be < heal_at_ms \(10000\)"):
        FaultPlan((FaultEvent(10_000, "consumer_crash", "c1"),), heal_at_ms=10_000)
    with pytest.raises(FaultPlanError, match="heal_at_ms = -1"):
        FaultPlan((), heal_at_ms=-1)


# -- swarm ------------------------------------------------------------------------------


def test_swarm_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    plans = [swarm_plan(seed, 120_000, FAULT_KINDS, TARGETS) for seed in range(20)]
    assert plans == [swarm_plan(seed, 120_000, FAULT_KINDS, TARGETS) for seed in range(20)]
    assert len({tuple(p.to_records().__repr__()) for p in plans}) == 20
    assert len({tuple(p.kinds()) for p in plans}) >= 10  # different mixes of kinds, not just times
    assert FaultPlan.from_records(plans[0].to_records(), plans[0].heal_at_ms) == plans[0]


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**64 - 1),
    duration=st.integers(1, 300_000),
    kinds=st.sets(st.sampled_from(sorted(FAULT_KINDS)), min_size=1),
    intensity=st.floats(0.1, 10),
)
def test_property_swarm_plans_are_valid_and_stop_before_healing(
    seed: int, duration: int, kinds: set[str], intensity: float
) -> None:
    plan = swarm_plan(seed, duration, kinds, TARGETS, intensity)
    assert plan.heal_at_ms == duration
    assert all(0 <= e.at_ms < duration for e in plan.events)
    assert set(plan.kinds()) <= kinds
    for event in plan.events:
        spec = FAULT_KINDS[event.kind]
        if spec.target is not None:
            assert event.target in TARGETS.pool(spec.target)
        for node in event.side_a + event.side_b + event.nodes:
            assert node in TARGETS.nodes()


def test_swarm_switches_on_a_non_empty_subset() -> None:
    sizes = []
    for seed in range(200):  # enough seeds for the extremes however many kinds there are
        kinds = swarm_plan(seed, 600_000, FAULT_KINDS, TARGETS, intensity=5).kinds()
        assert kinds
        sizes.append(len(kinds))
        # A lone kind is always switched on (the subset is never empty).
        assert swarm_plan(seed, 600_000, ["broker_crash"], TARGETS, intensity=5).kinds() == ["broker_crash"]
    # Each kind is on with probability 1/2: the subsets range well below and above half of the kinds.
    assert min(sizes) <= len(FAULT_KINDS) // 3
    assert max(sizes) >= 2 * len(FAULT_KINDS) // 3


def test_a_kinds_events_do_not_depend_on_which_other_kinds_are_available() -> None:
    for seed in range(30):
        alone = swarm_plan(seed, 300_000, ["broker_crash"], TARGETS)
        mixed = swarm_plan(seed, 300_000, FAULT_KINDS, TARGETS)
        crashes = [e for e in mixed.events if e.kind == "broker_crash"]
        if crashes:
            assert crashes == list(alone.events)


def test_swarm_skips_kinds_without_targets_and_validates_arguments() -> None:
    only_brokers = SwarmTargets(brokers=("b1",))
    for seed in range(20):
        kinds = swarm_plan(seed, 600_000, FAULT_KINDS, only_brokers, intensity=5).kinds()
        assert not {"consumer_crash", "consumer_pause", "slow_processing", "network_partition"} & set(kinds)
    assert swarm_plan(1, 1000, ["consumer_crash"], only_brokers).events == ()
    with pytest.raises(FaultPlanError, match="unknown kind"):
        swarm_plan(1, 1000, ["nope"], TARGETS)
    with pytest.raises(FaultPlanError, match="duration_ms = 0"):
        swarm_plan(1, 0, ["broker_crash"], TARGETS)
    with pytest.raises(FaultPlanError, match="intensity = 0"):
        swarm_plan(1, 10, ["broker_crash"], TARGETS, intensity=0)


def test_swarm_pauses_and_slowdowns_straddle_the_timeouts() -> None:
    events = [
        e
        for seed in range(40)
        for e in swarm_plan(seed, 600_000, ["consumer_pause", "slow_processing"], TARGETS, intensity=3).events
    ]
    pauses = [e.duration_ms for e in events if e.kind == "consumer_pause"]
    slow = [e.extra_ms for e in events if e.kind == "slow_processing"]
    assert min(pauses) < TARGETS.session_timeout_ms < max(pauses)
    assert min(slow) < TARGETS.lock_duration_ms < max(slow)


# -- swarm settings ----------------------------------------------------------------------

RANGES = {"group.share.delivery.count.limit": [2, 5], "group.share.partition.max.record.locks": [100, 200],
          "group.consumer.assignors": ["uniform", "range"]}


def test_swarm_settings_are_drawn_per_seed_within_their_ranges() -> None:
    draws = [swarm_config(seed, RANGES) for seed in range(400)]
    assert draws == [swarm_config(seed, RANGES) for seed in range(400)]
    assert all(list(d) == sorted(RANGES) for d in draws)
    limits = [d["group.share.delivery.count.limit"] for d in draws]
    locks = [d["group.share.partition.max.record.locks"] for d in draws]
    assert set(limits) == {2, 3, 4, 5} and all(isinstance(v, int) for v in limits + locks)
    assert min(locks) == 100 and max(locks) == 200 and len(set(locks)) > 50
    assert {d["group.consumer.assignors"] for d in draws} == {"uniform", "range"}


def test_half_of_the_draws_sit_at_an_end_of_the_range() -> None:
    locks = [swarm_config(seed, RANGES)["group.share.partition.max.record.locks"] for seed in range(2_000)]
    low, high = locks.count(100), locks.count(200)
    # 1/4 each, plus the uniform draws that land on an end (2 in 101): 0.255 of 2 000 = 510, sd about 20.
    assert 430 < low < 590 and 430 < high < 590


def test_a_settings_draw_does_not_depend_on_the_other_settings_drawn() -> None:
    for seed in range(30):
        alone = swarm_config(seed, {"group.share.delivery.count.limit": [2, 5]})
        assert alone.items() <= swarm_config(seed, RANGES).items()
    assert swarm_config(7, {}) == {}


# -- injector ---------------------------------------------------------------------------


class Recorder:
    def __init__(self, scheduler: Scheduler, applies: bool = True) -> None:
        self.scheduler = scheduler
        self.applies = applies
        self.log: list[tuple[int, str, str]] = []

    def start(self, event: FaultEvent) -> bool:
        self.log.append((self.scheduler.now_ms, "start", event.kind))
        return self.applies

    def end(self, event: FaultEvent) -> None:
        self.log.append((self.scheduler.now_ms, "end", event.kind))


def test_injector_fires_ends_and_counts() -> None:
    scheduler = Scheduler()
    recorder = Recorder(scheduler)
    declines = Recorder(scheduler, applies=False)
    trace = Trace(keep=True)
    plan = FaultPlan(
        (
            FaultEvent(100, "broker_crash", "b1", duration_ms=50),
            FaultEvent(120, "consumer_crash", "c1"),
            FaultEvent(130, "consumer_crash", "c2"),
            FaultEvent(200, "consumer_pause", "c1", duration_ms=10),
        )
    )
    injector = FaultInjector(
        scheduler,
        plan,
        {
            "broker_crash": FaultHandler(recorder.start, recorder.end),
            "consumer_crash": lambda e: e.target == "c1",
            "consumer_pause": FaultHandler(declines.start, declines.end),
        },
        trace,
    )
    scheduler.run()
    assert recorder.log == [(100, "start", "broker_crash"), (150, "end", "broker_crash")]
    assert declines.log == [(200, "start", "consumer_pause")]  # declined: no end
    assert injector.fired == {"broker_crash": 1, "consumer_crash": 1}
    assert injector.skipped == {"consumer_crash": 1, "consumer_pause": 1}
    assert injector.ended == {"broker_crash": 1}
    assert [(e.time_ms, e.kind, e.fields["fault"]) for e in trace.events] == [
        (100, "fault_start", "broker_crash"),
        (120, "fault_start", "consumer_crash"),
        (130, "fault_skip", "consumer_crash"),
        (150, "fault_end", "broker_crash"),
        (200, "fault_skip", "consumer_pause"),
    ]


def test_heal_ends_active_faults_and_nothing_starts_after() -> None:
    scheduler = Scheduler()
    recorder = Recorder(scheduler)
    plan = FaultPlan(
        (
            FaultEvent(10, "broker_crash", "b1", duration_ms=1_000),
            FaultEvent(20, "network_partition", duration_ms=5, side_a=("a",), side_b=("b",)),
            FaultEvent(30, "consumer_pause", "c1", duration_ms=1_000),
        ),
        heal_at_ms=100,
    )
    handler = FaultHandler(recorder.start, recorder.end)
    injector = FaultInjector(
        scheduler, plan, {"broker_crash": handler, "network_partition": handler, "consumer_pause": handler}
    )
    scheduler.run(until=50)
    assert [e.kind for e in injector.active] == ["broker_crash", "consumer_pause"]
    scheduler.run()
    assert recorder.log == [
        (10, "start", "broker_crash"),
        (20, "start", "network_partition"),
        (25, "end", "network_partition"),
        (30, "start", "consumer_pause"),
        (100, "end", "broker_crash"),
        (100, "end", "consumer_pause"),
    ]
    assert injector.healed
    assert injector.active == []
    assert scheduler.now_ms == 100  # the ended faults' own timers were cancelled


def test_heal_now_cancels_pending_starts() -> None:
    scheduler = Scheduler()
    recorder = Recorder(scheduler)
    plan = FaultPlan((FaultEvent(10, "consumer_crash", "c1"), FaultEvent(500, "consumer_crash", "c2")))
    injector = FaultInjector(scheduler, plan, {"consumer_crash": recorder.start})
    scheduler.run(until=100)
    injector.heal()
    injector.heal()  # idempotent
    scheduler.run()
    assert recorder.log == [(10, "start", "consumer_crash")]


def test_injector_checks_its_handlers() -> None:
    scheduler = Scheduler()
    plan = FaultPlan((FaultEvent(10, "broker_crash", "b1", duration_ms=5), FaultEvent(10, "consumer_crash", "c")))
    with pytest.raises(FaultPlanError, match="no handler for fault kind consumer_crash"):
        FaultInjector(scheduler, plan, {"broker_crash": FaultHandler(lambda e: True, lambda e: None)})
    with pytest.raises(FaultPlanError, match="the handler for broker_crash needs an end"):
        FaultInjector(scheduler, plan, {"broker_crash": lambda e: True, "consumer_crash": lambda e: True})
    bad = FaultInjector(scheduler, FaultPlan((FaultEvent(1, "consumer_crash", "c"),)), {"consumer_crash": print})  # type: ignore[dict-item]
    assert bad.plan
    with pytest.raises(TypeError, match="must return True"):
        scheduler.run()
    late = Scheduler(initial_ms=50)
    with pytest.raises(FaultPlanError, match="before now"):
        FaultInjector(late, FaultPlan((FaultEvent(10, "consumer_crash", "c"),)), {"consumer_crash": lambda e: True})


def test_network_handlers_apply_and_undo_network_faults() -> None:
    scheduler = Scheduler()
    graph = nx.Graph()
    graph.add_nodes_from(["a", "b"])
    network = Network(scheduler, graph, RandomStreams(1))
    got: list[tuple[int, str]] = []
    network.register("b", lambda m: got.append((scheduler.now_ms, m.kind)))
    network.register("a", lambda m: None)
    plan = FaultPlan(
        (
            FaultEvent(10, "network_partition", duration_ms=10, side_a=("a",), side_b=("b",)),
            FaultEvent(30, "message_loss", duration_ms=10, kinds=("Ping",), probability=1.0),
            FaultEvent(50, "message_delay", duration_ms=10, extra=Distribution.constant(100)),
        )
    )
    FaultInjector(scheduler, plan, network_fault_handlers(network))
    for t in range(0, 70, 5):
        scheduler.post_at(t, network.send, "a", "b", "Ping")
    scheduler.run()
    times = [t for t, _ in got]
    # Faults cover [10, 20], [30, 40], [50, 60]: the sends at 20, 40 and 60 were set before the
    # faults' ends, so at equal times they run first. Partitioned, then lost, then 100 ms slower;
    # FIFO holds the send at 65 behind the delayed one at 60.
    assert times == [1, 6, 26, 46, 151, 156, 161, 161]


# -- shrink -----------------------------------------------------------------------------


def _needs(*culprits: FaultEvent) -> Any:
    calls: list[int] = []

    def fails(plan: FaultPlan) -> bool:
        calls.append(len(plan))
        return all(c in plan.events for c in culprits)

    fails.calls = calls  # type: ignore[attr-defined]
    return fails


def test_shrink_finds_the_culprits() -> None:
    plan = swarm_plan(7, 600_000, FAULT_KINDS, TARGETS, intensity=3)
    assert len(plan) > 30
    culprits = (plan.events[3], plan.events[len(plan) - 2])
    small = shrink(plan, _needs(*culprits))
    assert small.events == culprits
    assert small.heal_at_ms == plan.heal_at_ms
    assert shrink(plan, _needs(*culprits)) == small  # deterministic


def test_shrink_to_nothing_and_its_preconditions() -> None:
    plan = FaultPlan(tuple(ONE_OF_EACH))
    assert shrink(plan, lambda p: True).events == ()
    with pytest.raises(ValueError, match="passes"):
        shrink(plan, lambda p: False)
    fails = _needs(ONE_OF_EACH[0])
    limited = shrink(plan, fails, max_runs=3)
    assert len(fails.calls) == 3
    assert ONE_OF_EACH[0] in limited.events


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), data=st.data())
def test_property_shrink_is_one_minimal(seed: int, data: st.DataObject) -> None:
    plan = swarm_plan(seed, 300_000, FAULT_KINDS, TARGETS, intensity=2)
    if not plan.events:
        return
    indexes = data.draw(st.sets(st.integers(0, len(plan) - 1), max_size=4))
    culprits = [plan.events[i] for i in sorted(indexes)]
    fails = _needs(*culprits)
    small = shrink(plan, fails)
    assert fails(small)
    assert all(not fails(small.without([i])) for i in range(len(small)))  # 1-minimal
    assert set(small.events) == set(culprits)
