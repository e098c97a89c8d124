"""Scenario files: every problem at once with its key path, unknown keys, and file → Scenario → TOML → Scenario."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.sim.faults import FAULT_KINDS, FaultEvent, has_targets
from model.sim.rng import Distribution
from scenarios import library
from scenarios.spec import (
    MESSAGE_KINDS,
    AckPolicy,
    ClusterSpec,
    ConsumerSpec,
    FaultsSpec,
    GroupSpec,
    ProducerSpec,
    Scenario,
    ScenarioError,
    SwarmSpec,
    TopicSpec,
    TransactionSpec,
)
from scenarios.toml_format import dumps, load_file, loads, scenario_to_data

LIBRARY_DIR = Path(library.__file__).parent / "library"

BROKEN = """
name = "broken"
duraton_ms = 1000
heal_ms = -5
seed = "one"

[cluster]
brokers = 3
replication_factor = 5
config = { "group.share.delivery.count.limit" = 11 }

[[topics]]
name = "events"
partitions = 0

[[groups]]
name = "g"
kind = "queue"
topics = ["events", "orders"]
config = { "group.share.record.lock.duration.ms" = 500, "group.share.isolation.levl" = "read_committed" }

[[consumers]]
group = "g"
count = 2
processing = { kind = "lognormal", median_ms = 0, sigma = 0.5 }
ack = { accept = 0.5, release = 0.2, reject = 0.0 }
ack_mode = "auto"
statc = true

[[producers]]
topic = "events"
rate_per_s = 0

[[faults.plan]]
at_ms = 100
kind = "broker_crahs"
target = "b1"

[[faults.plan]]
at_ms = 200
kind = "broker_crash"
target = "b1"

[[faults.plan]]
at_ms = 70000
kind = "leadership_move"
target = "events-0"
"""

# Every problem of BROKEN, as docs/how-to/write-a-scenario.md documents the error: key path, value, what is allowed.
BROKEN_PROBLEMS = [
    'duraton_ms: unknown key (did you mean "duration_ms"?)',
    "heal_ms = -5: must be an integer >= 1",
    "seed = 'one': must be an integer",
    "cluster.replication_factor = 5: must be an integer in [1, 3]",
    'cluster.config."group.share.delivery.count.limit" = 11: must be an integer in [2, 10]',
    "topics[0].partitions = 0: must be an integer in [1, 1000]",
    "groups[0].kind = 'queue': must be 'share' or 'consumer'",
    "groups[0].topics: 'orders' is not a topic of this scenario (['events'])",
    'groups[0].config."group.share.record.lock.duration.ms" = 500: must be an integer in [1000, 3600000] or null',
    'groups[0].config."group.share.isolation.levl": unknown setting (did you mean "group.share.isolation.level"?)',
    "consumers[0].processing: lognormal distribution: median_ms = 0: must be > 0",
    "consumers[0].ack: accept + release + reject = 0.7: must be 1",
    "consumers[0].ack_mode = 'auto': must be 'explicit' or 'implicit'",
    'consumers[0].statc: unknown key (did you mean "static"?)',
    "producers[0].rate_per_s = 0: must be an integer in [1, 1000000]",
    'faults.plan[0].kind = \'broker_crahs\': unknown fault kind (did you mean "broker_crash"?)',
    "faults.plan[1].duration_ms = 0: must be an integer >= 1 for broker_crash",
    "faults.plan[2].at_ms = 70000: must be < duration_ms (60000)",
]


def _problems(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        loads(text)
    return caught.value.problems


def test_an_invalid_file_lists_every_problem_with_its_key_path() -> None:
    problems = _problems(BROKEN)
    for expected in BROKEN_PROBLEMS:
        assert sum(p.startswith(expected) for p in problems) == 1, (expected, problems)
    assert len(problems) == len(BROKEN_PROBLEMS), problems


def test_the_error_names_the_file_and_counts_the_problems(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(BROKEN)
    with pytest.raises(ScenarioError) as caught:
        load_file(path)
    assert str(caught.value).startswith(f"{path}: invalid scenario ({len(BROKEN_PROBLEMS)} problems):\n  ")


def test_a_file_that_is_not_toml_is_one_problem() -> None:
    problems = _problems('name = "x"\n[cluster\n')
    assert len(problems) == 1 and problems[0].startswith("not valid TOML")


@pytest.mark.parametrize(("text", "expected"), [
    ('name = "x"\nbrokers = 3', "brokers: unknown key; allowed: name, description"),
    ('name = "x"\n[cluster]\nbroker = 3', 'cluster.broker: unknown key (did you mean "brokers"?)'),
    ('name = "x"\n[[topics]]\nname = "t"\npartition = 2',
     'topics[0].partition: unknown key (did you mean "partitions"?)'),
    ('name = "x"\n[faults.swarm]\nkind = ["broker_crash"]', 'faults.swarm.kind: unknown key (did you mean "kinds"?)'),
    ('name = "x"\n[[faults.plan]]\nat_ms = 1\nkind = "consumer_crash"\ntraget = "c1"',
     'faults.plan[0].traget: unknown key (did you mean "target"?)'),
    ('name = "x"\n[cluster]\nlatency = { kind = "constant", value = 3 }',
     'cluster.latency.value: unknown key (did you mean "value_ms"?)'),
    ('name = "x"\n[cluster.config]\n"group.share.delivery.count.limt" = 3',
     'cluster.config."group.share.delivery.count.limt": unknown setting (did you mean '
     '"group.share.delivery.count.limit"?)'),
])
def test_unknown_keys_are_errors_with_a_did_you_mean(text: str, expected: str) -> None:
    problems = _problems(text)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


@pytest.mark.parametrize(("text", "expected"), [
    ('name = "x"\ntopics = "t"', "topics = 't': must be an array"),
    ('name = "x"\ncluster = 3', "cluster = 3: must be a table"),
    ('name = "x"\n[[topics]]\npartitions = 2', "topics[0].name: missing (a string)"),
    ('name = "x"\n[cluster]\nbrokers = true', "cluster.brokers = True: must be an integer"),
    ('name = "x"\n[cluster]\nlatency = 3', "cluster.latency = 3: must be a distribution"),
    ('name = "x"\n[[faults.plan]]\nkind = "consumer_crash"\ntarget = "c1"', "faults.plan[0].at_ms: missing"),
    ('name = "x"\n[[faults.plan]]\nat_ms = 1\nkind = "consumer_crash"\ntarget = "c1"\nduration_ms = 5',
     "faults.plan[0].duration_ms = 5: consumer_crash is instantaneous"),
])
def test_wrong_shapes_are_one_problem_each_without_follow_ons(text: str, expected: str) -> None:
    problems = _problems(text)
    assert len(problems) == 1 and problems[0].startswith(expected), problems


def test_the_name_defaults_to_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(dumps(replace(library.get("small"), name="other")).replace('name = "other"\n', ""))
    assert load_file(path) == replace(library.get("small"), name="mine")


@pytest.mark.parametrize("path", sorted(LIBRARY_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_library_file_round_trips(path: Path) -> None:
    scenario = load_file(path)
    assert loads(dumps(scenario)) == scenario
    assert scenario.name == path.stem  # the library's name is the file's
    assert tomllib.loads(dumps(scenario)) == scenario_to_data(scenario)


def test_dumps_writes_kafka_keys_quoted_and_reads_back_a_null_override_as_none() -> None:
    scenario = replace(library.get("small"), groups=(
        GroupSpec("g", "share", ("events",), config={"group.share.auto.offset.reset": "earliest",
                                                     "group.share.record.lock.duration.ms": None}),))
    text = dumps(scenario)
    assert 'config = { "group.share.auto.offset.reset" = "earliest" }' in text
    assert "faults =" not in text and "[faults" not in text  # no faults: no table
    assert loads(text).groups[0].config == {"group.share.auto.offset.reset": "earliest"}


# -- property: any valid Scenario → TOML → the same Scenario ---------------------------------------

names = st.text(min_size=1, max_size=12).filter(lambda s: s.strip() != "")
probabilities = st.floats(0, 1, allow_nan=False)


@st.composite
def distributions(draw: st.DrawFn, depth: int = 0) -> Distribution:
    kinds = ["constant", "uniform", "exponential", "lognormal"] + (["spike"] if depth < 2 else [])
    kind = draw(st.sampled_from(kinds))
    clamp = {"min_ms": draw(st.integers(0, 10)), "max_ms": draw(st.none() | st.integers(10, 10**6))}
    if kind == "constant":
        return Distribution.constant(draw(st.integers(0, 10**6)))
    if kind == "uniform":
        low = draw(st.integers(0, 10**6))
        return Distribution.uniform(low, low + draw(st.integers(0, 10**6)))
    if kind == "exponential":
        return Distribution.exponential(draw(st.floats(0.001, 1e6)), **clamp)
    if kind == "lognormal":
        return Distribution.lognormal(draw(st.floats(0.001, 1e6)), draw(st.floats(0, 4)), **clamp)
    return Distribution.spike(draw(distributions(depth + 1)), draw(probabilities), draw(distributions(depth + 1)))


def fault_events(scenario: Scenario, duration_ms: int) -> st.SearchStrategy[FaultEvent]:
    """Fault events naming only what ``scenario`` has (its validation checks every name)."""
    at = st.integers(0, duration_ms - 1)
    targets = scenario.fault_targets()
    network = list(scenario.network_nodes())
    nodes = st.lists(st.sampled_from(network), min_size=2, max_size=6, unique=True)
    brokers, groups, topics = (st.sampled_from(list(p)) for p in (targets.brokers, targets.groups, targets.topics))

    @st.composite
    def partition(draw: st.DrawFn) -> FaultEvent:
        both = draw(nodes)
        cut = draw(st.integers(1, len(both) - 1))
        return FaultEvent(draw(at), "network_partition", duration_ms=draw(st.integers(1, 10**6)),
                          side_a=tuple(both[:cut]), side_b=tuple(both[cut:]), one_way=draw(st.booleans()))

    strategies = [
        st.builds(lambda a, t, d: FaultEvent(a, "broker_crash", t, duration_ms=d), at, brokers, st.integers(1, 10**6)),
        st.builds(lambda a, t, to: FaultEvent(a, "leadership_move", t, params=(("to", to),) if to else ()),
                  at, st.sampled_from(list(targets.partitions)), st.none() | brokers),
        st.builds(lambda a, g: FaultEvent(a, "share_coordinator_failover", g), at, groups),
        partition(),
        st.builds(lambda a, d, k, p: FaultEvent(a, "message_loss", duration_ms=d, kinds=k, probability=p),
                  at, st.integers(1, 10**6), st.lists(st.sampled_from([*MESSAGE_KINDS, "*Response"]), max_size=3)
                  .map(tuple), st.floats(0.001, 1)),
        st.builds(lambda a, d, e, links: FaultEvent(a, "message_delay", duration_ms=d, extra=e, links=links),
                  at, st.integers(1, 10**6), distributions(),
                  st.lists(st.tuples(st.sampled_from(network), st.sampled_from(network)), max_size=2).map(tuple)),
        st.builds(lambda a, g, t, o: FaultEvent(a, "admin_alter_offsets", g, params=(("topic", t), ("offset", o))),
                  at, groups, topics, st.integers(0, 10**6) | st.sampled_from(["earliest", "latest"])),
    ]
    if targets.consumers:
        strategies.append(st.builds(lambda a, c, x: FaultEvent(a, "slow_processing", c, duration_ms=1_000, extra_ms=x),
                                    at, st.sampled_from(list(targets.consumers)), st.integers(1, 10**6)))
    return st.one_of(strategies)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    brokers = draw(st.integers(1, 6))
    replication = draw(st.integers(1, brokers))
    cluster = ClusterSpec(
        brokers=brokers, racks=draw(st.integers(1, brokers)), replication_factor=replication,
        min_insync_replicas=draw(st.integers(1, replication)), share_state_partitions=draw(st.integers(1, 50)),
        consumer_offsets_partitions=draw(st.integers(1, 50)), metadata_refresh_ms=draw(st.integers(0, 10**4)),
        latency=draw(distributions()),
        config=draw(st.fixed_dictionaries({}, optional={
            "group.share.delivery.count.limit": st.integers(2, 10),
            "group.share.partition.max.record.locks": st.integers(100, 10_000),
            "share.coordinator.snapshot.update.records.per.snapshot": st.integers(0, 10**4),
            "group.consumer.assignors": st.sampled_from(["uniform", "range"]),
        })),
    )
    topic_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    topics = tuple(TopicSpec(n, draw(st.integers(1, 1_000)), draw(st.booleans())) for n in topic_names)
    group_names = draw(st.lists(names, min_size=1, max_size=3, unique=True))
    groups = tuple(GroupSpec(
        n, draw(st.sampled_from(["share", "consumer"])),
        tuple(draw(st.lists(st.sampled_from(topic_names), min_size=1, max_size=3, unique=True))),
        config=draw(st.fixed_dictionaries({}, optional={
            "group.share.isolation.level": st.sampled_from(["read_uncommitted", "read_committed"]),
            "group.share.auto.offset.reset": st.sampled_from(["latest", "earliest"]),
            "group.share.record.lock.duration.ms": st.integers(15_000, 60_000),
            "group.share.session.timeout.ms": st.integers(1, 10**6),
        })),
    ) for n in group_names)
    consumers = tuple(ConsumerSpec(
        draw(st.sampled_from(group_names)), count=draw(st.integers(0, 1_000)), processing=draw(distributions()),
        ack=draw(st.sampled_from([AckPolicy(), AckPolicy(0.5, 0.25, 0.25), AckPolicy(0.0, 0.0, 1.0)])),
        poison_rate=draw(probabilities), ack_mode=draw(st.sampled_from(["explicit", "implicit"])),
        max_poll_records=draw(st.integers(1, 10_000)), static=draw(st.booleans()),
    ) for _ in range(draw(st.integers(0, 3))))
    producers = tuple(ProducerSpec(
        draw(st.sampled_from(topic_names)), records=draw(st.integers(0, 10**7)),
        rate_per_s=draw(st.integers(1, 10**6)), keys=draw(st.integers(0, 10**4)), start_ms=draw(st.integers(0, 10**6)),
        transactions=draw(st.none() | st.builds(TransactionSpec, st.integers(1, 1_000), probabilities)),
    ) for _ in range(draw(st.integers(0, 3))))
    duration_ms = draw(st.integers(1, 10**7))
    scenario = Scenario(
        name=draw(names), description=draw(st.text(max_size=40)), topics=topics, groups=groups, consumers=consumers,
        producers=producers, cluster=cluster, duration_ms=duration_ms,
        heal_ms=draw(st.integers(1, 10**7)), seed=draw(st.integers(0, 2**63 - 1)),
    )
    if draw(st.booleans()):
        usable = [kind for kind in FAULT_KINDS if has_targets(kind, scenario.fault_targets())]
        kinds = tuple(draw(st.lists(st.sampled_from(usable), min_size=1, unique=True)))
        rates = draw(st.dictionaries(st.sampled_from(kinds), st.floats(0.001, 10_000)))
        faults = FaultsSpec(swarm=SwarmSpec(kinds, draw(st.floats(0.001, 100)), rates))
    else:
        faults = FaultsSpec(plan=tuple(draw(st.lists(fault_events(scenario, duration_ms), max_size=4))))
    return replace(scenario, faults=faults)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_any_valid_scenario_round_trips_through_toml(scenario: Scenario) -> None:
    assert scenario.problems() == []
    assert loads(dumps(scenario)) == scenario
