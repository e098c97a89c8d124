"""Scenarios as Python values: the API the TOML file format is a thin layer over.

A scenario says what cluster to build, what to produce and consume, which
faults to inject and for how long to run; (scenario, seed) determines a run.
``Scenario.problems()`` lists every problem at once, each with its key path,
the value given and what is allowed; ``validate()`` raises them together.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from model.core.config import (
    BROKER_SETTINGS,
    GROUP_SETTINGS,
    ORDERED,
    BrokerConfig,
    ConfigError,
    Setting,
    load_broker_config,
    load_group_config,
    settings_by_name,
)
from model.core.share_partition import ACQUIRE_MODES
from model.sim.faults import (
    FAULT_KINDS,
    FaultEvent,
    FaultPlan,
    SwarmTargets,
    group_draw_keys,
    has_targets,
    subscribed_topics,
    swarm_params_problems,
)
from model.sim.protocol import REQUEST_KINDS, broker_node
from model.sim.rng import Distribution

GROUP_KINDS: Final = ("share", "consumer")
ACK_MODES: Final = ("explicit", "implicit")
MAX_SEED: Final = 2**63 - 1  # a TOML integer and a Parquet int64
ADMIN_NODE: Final = "admin"  # the admin client's network node
# The messages a swarm's loss or delay may single out (others it hits by node, or all at once).
SWARM_MESSAGE_KINDS: Final = ("ShareFetch", "ShareFetchResponse", "ShareGroupHeartbeat", "ShareGroupHeartbeatResponse",
                              "WriteShareGroupState", "WriteShareGroupStateResponse", "Produce", "ProduceResponse")


class ScenarioError(ValueError):
    """Every problem with a scenario, each naming key path, value and what is allowed."""

    def __init__(self, problems: list[str], source: str = "") -> None:
        head = f"{source}: " if source else ""
        if len(problems) == 1:  # one line, as every other error (scenarios/entry.py)
            super().__init__(f"{head}invalid scenario: {problems[0]}")
        else:
            super().__init__(f"{head}invalid scenario ({len(problems)} problems):\n  " + "\n  ".join(problems))
        self.problems = problems
        self.source = source


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 3
    racks: int = 1
    replication_factor: int = 3
    min_insync_replicas: int = 2
    # Fewer internal partitions than Kafka's 50 keep small simulations small (SC-1, GC-6).
    share_state_partitions: int = 3
    consumer_offsets_partitions: int = 3
    # Broker configuration overrides, Kafka keys (model/core/config.py bounds apply).
    config: Mapping[str, Any] = field(default_factory=dict)
    # One-way network latency between any two nodes.
    latency: Distribution = field(default_factory=lambda: Distribution.uniform(1, 3))
    # How long a client's metadata may be stale (stale → NOT_LEADER_OR_FOLLOWER, refresh).
    metadata_refresh_ms: int = 100


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    compacted: bool = False
    # Kafka's topic retention.ms (absent: the broker's log.retention.ms): whole segments whose newest record
    # is older are deleted and the log start offset moves past them (model/sim/log_cleaner.py LogRetention).
    retention_ms: int | None = None
    # CreateTopics' replication factor (absent: the cluster's replication_factor); min.insync.replicas is
    # capped at it.
    replication_factor: int | None = None


@dataclass(frozen=True)
class GroupSpec:
    name: str
    kind: str = "share"  # "share" (KIP-932) or "consumer" (KIP-848)
    topics: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AckPolicy:
    """What a consumer does with each record it processes (CL-3)."""

    accept: float = 1.0
    release: float = 0.0
    reject: float = 0.0
    # KIP-1222 (Kafka 4.x): while records wait for or are in processing, acknowledge them RENEW every half
    # acquisition lock (KafkaShareConsumer's "renewal" example), so processing may outlast the lock.
    renew: bool = False


@dataclass(frozen=True)
class ConsumerSpec:
    group: str
    count: int = 1
    processing: Distribution = field(default_factory=lambda: Distribution.constant(1))
    ack: AckPolicy = field(default_factory=AckPolicy)
    # Probability that a produced record is poison: processing always fails (released).
    poison_rate: float = 0.0
    ack_mode: str = "explicit"  # or "implicit" (CL-3)
    max_poll_records: int = 500
    # Static members (KIP-848, CG-5) keep their instance id across restarts.
    static: bool = False
    # A share consumer's ShareFetch MinBytes and MaxWaitMs (fetch.min.bytes, fetch.max.wait.ms); the
    # broker's delayed share fetch counts MinBytes in records.
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    # share.acquire.mode (Kafka's share consumer): "batch_optimized" (whole batches; max_poll_records a
    # soft limit) or "record_limit" (max_poll_records a hard limit). Share groups only.
    acquire_mode: str = "batch_optimized"
    # request.timeout.ms of the consumer (Kafka's default 30 s, two thirds of its 45 s session timeout): a
    # heartbeat whose answer was lost goes again this much later, so below the session timeout the member
    # comes back with its old epoch (accepted as the previous one, or fenced: FENCED_MEMBER_EPOCH).
    request_timeout_ms: int = 30_000


@dataclass(frozen=True)
class TransactionSpec:
    records_per_transaction: int = 10
    abort_rate: float = 0.0


@dataclass(frozen=True)
class ProducerSpec:
    topic: str
    records: int = 1_000
    rate_per_s: int = 1_000
    keys: int = 0  # 0: round-robin over partitions; otherwise key-hashed over this many keys
    transactions: TransactionSpec | None = None
    start_ms: int = 0
    linger_ms: int = 5  # linger.ms: how often arrived records are batched
    # batch.size, in records here (Kafka's is bytes): a produce batch holds at most this many records;
    # 0: no cap (every record arrived within a linger goes in one batch).
    batch_size: int = 0
    # metadata.max.age.ms of the producer: how often it reads fresh metadata regardless, and so learns of
    # partitions added since (Kafka's default 5 min; sharesim's clients 10 s).
    metadata_max_age_ms: int = 10_000


@dataclass(frozen=True)
class SwarmSpec:
    kinds: tuple[str, ...] = tuple(FAULT_KINDS)
    intensity: float = 1.0
    # Per-kind base rates (faults per minute at intensity 1) replacing SWARM_RATE_PER_MINUTE's.
    rates: Mapping[str, float] = field(default_factory=dict)
    # Broker settings each run draws (model/sim/faults.py swarm_config): Kafka key -> [low, high] for an
    # integer setting, or a list of choices; every draw must be a valid configuration.
    config: Mapping[str, Any] = field(default_factory=dict)
    # Per-kind parameters every drawn fault of the kind takes, over those it draws (e.g. one request).
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class FaultsSpec:
    """A scripted plan, or swarm (each run draws its own plan from its seed), or none."""

    plan: tuple[FaultEvent, ...] = ()
    swarm: SwarmSpec | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str = ""
    topics: tuple[TopicSpec, ...] = ()
    groups: tuple[GroupSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    producers: tuple[ProducerSpec, ...] = ()
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    faults: FaultsSpec = field(default_factory=FaultsSpec)
    # Faults happen in [0, duration_ms); then the healing phase runs until
    # quiescence or until heal_ms more have passed (the liveness deadline).
    duration_ms: int = 60_000
    heal_ms: int = 120_000
    seed: int = 1

    @property
    def fault_kinds(self) -> tuple[str, ...]:
        if self.faults.swarm is not None:
            return tuple(sorted(self.faults.swarm.kinds))
        return tuple(sorted({event.kind for event in self.faults.plan}))

    def fault_plan(self) -> FaultPlan:
        return FaultPlan(tuple(self.faults.plan), self.duration_ms)

    # -- the names of the nodes: the cluster builds them from these, and a fault's targets are checked
    # against them (a count that is not a valid integer counts as 0 here; it is reported on its own).

    def broker_names(self) -> tuple[str, ...]:
        """"b1" .. "bN"."""
        return tuple(broker_node(b) for b in range(1, _count(self.cluster.brokers) + 1))

    def consumer_names(self) -> tuple[tuple[str, int], ...]:
        """(name, index into ``consumers``): "c1", "c2", ... numbered across all entries, in order."""
        names: list[tuple[str, int]] = []
        for index, consumer in enumerate(self.consumers):
            names.extend((f"c{len(names) + 1}", index) for _ in range(_count(consumer.count)))
        return tuple(names)

    def producer_names(self) -> tuple[str, ...]:
        """"p1", "p2", ...: one producer per entry."""
        return tuple(f"p{i + 1}" for i in range(len(self.producers)))

    def network_nodes(self) -> tuple[str, ...]:
        """Every node of the network, in the order the cluster adds them: brokers, consumers, producers, admin."""
        return (*self.broker_names(), *(name for name, _ in self.consumer_names()), *self.producer_names(),
                ADMIN_NODE)

    def fault_targets(self) -> SwarmTargets:
        """What a fault of this scenario can hit (a swarm draws its targets from it; the timeouts it scales
        durations by are the cluster's to fill in, from the broker settings a run drew)."""
        return SwarmTargets(
            brokers=self.broker_names(),
            consumers=tuple(sorted(name for name, _ in self.consumer_names())),
            groups=tuple(sorted(g.name for g in self.groups)),
            partitions=tuple(f"{t.name}-{p}" for t in self.topics for p in range(_count(t.partitions))),
            topics=tuple(sorted(t.name for t in self.topics)),
            message_kinds=SWARM_MESSAGE_KINDS,
        )

    def validate(self) -> Scenario:
        problems = self.problems()
        if problems:
            raise ScenarioError(problems)
        return self

    def problems(self) -> list[str]:
        out: list[str] = []
        _positive(out, "duration_ms", self.duration_ms)
        _positive(out, "heal_ms", self.heal_ms)
        _positive(out, "seed", self.seed, low=0, high=MAX_SEED)
        _name(out, "name", self.name)
        broker = _cluster_problems(out, self.cluster)
        topics = {t.name for t in self.topics}
        for i, spec in enumerate(self.topics):
            _name(out, f"topics[{i}].name", spec.name)
            _positive(out, f"topics[{i}].partitions", spec.partitions, high=1_000)
            if spec.retention_ms is not None:
                _positive(out, f"topics[{i}].retention_ms", spec.retention_ms)
            if spec.replication_factor is not None:
                _positive(out, f"topics[{i}].replication_factor", spec.replication_factor,
                          high=max(1, self.cluster.brokers))
        if len(topics) != len(self.topics):
            out.append("topics: topic names must be unique")
        groups = {g.name: g for g in self.groups}
        for i, group in enumerate(self.groups):
            out.extend(_group_problems(f"groups[{i}]", group, topics, broker))
        if len(groups) != len(self.groups):
            out.append("groups: group names must be unique")
        for i, consumer in enumerate(self.consumers):
            out.extend(_consumer_problems(f"consumers[{i}]", consumer, groups))
        for i, producer in enumerate(self.producers):
            path = f"producers[{i}]"
            if producer.topic not in topics:
                out.append(f"{path}.topic = {producer.topic!r}: not a topic of this scenario ({sorted(topics)})")
            _positive(out, f"{path}.records", producer.records, low=0)
            _positive(out, f"{path}.rate_per_s", producer.rate_per_s, high=1_000_000)
            _positive(out, f"{path}.keys", producer.keys, low=0)
            _positive(out, f"{path}.start_ms", producer.start_ms, low=0)
            _positive(out, f"{path}.linger_ms", producer.linger_ms, high=60_000)
            _positive(out, f"{path}.batch_size", producer.batch_size, low=0, high=1_000_000)
            _positive(out, f"{path}.metadata_max_age_ms", producer.metadata_max_age_ms, high=3_600_000)
            txn = producer.transactions
            if txn is not None:
                _positive(out, f"{path}.transactions.records_per_transaction", txn.records_per_transaction)
                _probability(out, f"{path}.transactions.abort_rate", txn.abort_rate)
        out.extend(_faults_problems(self.faults, self.duration_ms))
        out.extend(_fault_target_problems(self))
        if self.faults.swarm is not None and self.faults.swarm.config:
            out.extend(_swarm_config_problems(self.faults.swarm.config, self.cluster.config, broker, self.groups))
        return out


def _positive(out: list[str], path: str, value: Any, low: int = 1, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f"an integer in [{low}, {high}]" if high is not None else f"an integer >= {low}"
        out.append(f"{path} = {value!r}: must be {allowed}")


def _probability(out: list[str], path: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        out.append(f"{path} = {value!r}: must be a probability in [0, 1]")


def _name(out: list[str], path: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        out.append(f"{path} = {value!r}: must be a non-empty string")


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """' (did you mean "x"?)' for the closest known word, or '' when none is close."""
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _config_problems(path: str, values: Mapping[str, Any], settings: tuple[Setting, ...]) -> list[str]:
    """Each override on its own: an unknown key (with a did-you-mean) or a value out of the setting's bounds.

    A problem's path quotes the Kafka key, as a TOML file writes it: ``groups[0].config."group.share..."``.
    """
    by_name = settings_by_name(settings)
    out: list[str] = []
    for key in sorted(values):
        setting = by_name.get(key)
        if setting is None:
            out.append(_unknown_setting(f'{path}."{key}"', key, settings))
        elif setting.problem(values[key]) is not None:
            out.append(f'{path}."{key}" = {values[key]!r}: must be {setting.allowed()}')
    return out


def _unknown_setting(where: str, key: str, settings: tuple[Setting, ...]) -> str:
    return (f"{where}: unknown setting{did_you_mean(key, (s.key for s in settings))}; "
            f"known: {', '.join(s.key for s in settings)}")


def _cross_config_problems(path: str, err: ConfigError) -> list[str]:
    # load_*_config words a cross-setting problem as "<kafka key> = <value>: ..."; quote the key into the path.
    out = []
    for problem in err.problems:
        key, _, rest = problem.partition(" ")
        out.append(f'{path}."{key}" {rest}')
    return out


def _cluster_problems(out: list[str], cluster: ClusterSpec) -> BrokerConfig | None:
    """Append the cluster's problems; return its broker configuration if that is valid."""
    _positive(out, "cluster.brokers", cluster.brokers, high=100)
    _positive(out, "cluster.racks", cluster.racks, high=max(1, cluster.brokers))
    _positive(out, "cluster.replication_factor", cluster.replication_factor, high=max(1, cluster.brokers))
    _positive(out, "cluster.min_insync_replicas", cluster.min_insync_replicas, high=max(1, cluster.replication_factor))
    _positive(out, "cluster.share_state_partitions", cluster.share_state_partitions, high=50)
    _positive(out, "cluster.consumer_offsets_partitions", cluster.consumer_offsets_partitions, high=50)
    _positive(out, "cluster.metadata_refresh_ms", cluster.metadata_refresh_ms, low=0)
    problems = _config_problems("cluster.config", cluster.config, BROKER_SETTINGS)
    out.extend(problems)
    if problems:
        return None
    try:
        return load_broker_config(cluster.config)
    except ConfigError as err:
        out.extend(_cross_config_problems("cluster.config", err))
        return None


def _group_problems(path: str, group: GroupSpec, topics: set[str], broker: BrokerConfig | None) -> list[str]:
    out: list[str] = []
    _name(out, f"{path}.name", group.name)
    if group.kind not in GROUP_KINDS:
        out.append(f"{path}.kind = {group.kind!r}: must be 'share' or 'consumer'")
    if not group.topics:
        out.append(f"{path}.topics = []: must name at least one topic")
    for topic in group.topics:
        if topic not in topics:
            out.append(f"{path}.topics: {topic!r} is not a topic of this scenario ({sorted(topics)})")
    problems = _config_problems(f"{path}.config", group.config, GROUP_SETTINGS)
    out.extend(problems)
    if not problems and broker is not None:  # the bounds that depend on the broker's own settings
        try:
            load_group_config(group.config, broker)
        except ConfigError as err:
            out.extend(_cross_config_problems(f"{path}.config", err))
    return out


def _faults_problems(faults: FaultsSpec, duration_ms: int) -> list[str]:
    out: list[str] = []
    for i, event in enumerate(faults.plan):
        if isinstance(duration_ms, int) and event.at_ms >= duration_ms:
            out.append(f"faults.plan[{i}].at_ms = {event.at_ms}: must be < duration_ms ({duration_ms})")
    swarm = faults.swarm
    if swarm is None:
        return out
    if faults.plan:
        out.append("faults: give a plan or a swarm, not both")
    for i, kind in enumerate(swarm.kinds):
        if kind not in FAULT_KINDS:
            out.append(f"faults.swarm.kinds[{i}] = {kind!r}: unknown fault kind{did_you_mean(kind, FAULT_KINDS)}; "
                       f"allowed: {', '.join(FAULT_KINDS)}")
    if not swarm.kinds:
        out.append("faults.swarm.kinds = []: must name at least one fault kind")
    intensity = swarm.intensity
    if isinstance(intensity, bool) or not isinstance(intensity, int | float) or not 0 < intensity <= 100:
        out.append(f"faults.swarm.intensity = {intensity!r}: must be in (0, 100]")
    for kind in sorted(swarm.rates):
        rate = swarm.rates[kind]
        if kind not in swarm.kinds:
            out.append(f"faults.swarm.rates.{kind}: not one of faults.swarm.kinds ({', '.join(swarm.kinds)})")
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 10_000:
            out.append(f"faults.swarm.rates.{kind} = {rate!r}: must be faults per minute in (0, 10000]")
    for kind in sorted(swarm.params):
        fixed = swarm.params[kind]
        if kind not in swarm.kinds:
            out.append(f"faults.swarm.params.{kind}: not one of faults.swarm.kinds ({', '.join(swarm.kinds)})")
        elif not isinstance(fixed, Mapping):
            out.append(f"faults.swarm.params.{kind} = {fixed!r}: must be a table of the kind's params")
        else:
            out.extend(f"faults.swarm.params.{kind}: {problem}" for problem in swarm_params_problems(kind, fixed))
    return out


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# Every kind of message on the network: a request a broker serves, or its answer.
MESSAGE_KINDS: Final = (*REQUEST_KINDS, *(f"{kind}Response" for kind in REQUEST_KINDS))
_TARGET_WORDS: Final = {"broker": "broker", "consumer": "consumer", "group": "group",
                        "partition": "topic-partition", "topic": "topic"}


def _fault_target_problems(scenario: Scenario) -> list[str]:
    """Every name a fault gives (target, params.to, params.topic/partition, side_a/side_b, nodes, links) is a
    node, group, topic or partition of the scenario, and each message kind (kinds) one the network carries; a
    swarm's kinds each have something to hit. A count
    reported invalid elsewhere (brokers, a consumer entry's count, a topic's partitions) leaves the names it
    would make unchecked: no cascade of problems from one."""
    targets = scenario.fault_targets()
    nodes = scenario.network_nodes()
    unknowable = {"broker"} if not _count(scenario.cluster.brokers) else set()
    if any(not _valid_count(c.count) for c in scenario.consumers):
        unknowable.add("consumer")
    if unknowable:
        unknowable.add("network node")
    partitions = {t.name: _count(t.partitions) for t in scenario.topics}
    unknown_partitions = {t.name for t in scenario.topics if not _count(t.partitions)}
    found: list[tuple[int, str]] = []  # (plan index, problem): reported in the file's order

    def check(path: str, value: Any, known: Iterable[str], what: str) -> None:  # about plan event i
        known = tuple(known)
        if value not in known and what not in unknowable:
            exists = f"it has {_names(known)}" if known else f"it has no {what}"
            found.append((i, f"{path} = {value!r}: not a {what} of this scenario ({exists})"))

    # In the plan's order (by at_ms, ties as given), so that the partitions an admin_add_partitions adds count
    # for the faults after it.
    for i, event in sorted(enumerate(scenario.faults.plan), key=lambda pair: pair[1].at_ms):
        path, spec = f"faults.plan[{i}]", FAULT_KINDS.get(event.kind)
        if spec is None:
            continue  # reported by the event itself
        if spec.target == "partition":  # a partition an earlier admin_add_partitions adds counts
            if event.target.rpartition("-")[0] not in unknown_partitions:
                check(f"{path}.target", event.target, _partition_names(partitions), _TARGET_WORDS["partition"])
        elif spec.target is not None:
            check(f"{path}.target", event.target, targets.pool(spec.target), _TARGET_WORDS[spec.target])
        to, topic, partition = event.param("to"), event.param("topic"), event.param("partition")
        if event.kind == "leadership_move" and to is not None:
            check(f"{path}.params.to", to, targets.brokers, "broker")
        if event.kind in ("admin_alter_offsets", "hostile_state_request", "state_partition_under_min_isr",
                          "hostile_share_request") and topic is not None:
            check(f"{path}.params.topic", topic, targets.topics, "topic")
            count = partitions.get(str(topic), 0)
            if count and isinstance(partition, int) and partition >= count:
                found.append((i, f"{path}.params.partition = {partition}: not a partition of {topic} at "
                                  f"{event.at_ms} ms (it has 0..{count - 1})"))
        if event.kind == "consumer_subscribe" and isinstance(event.param("topics"), str):
            for name in subscribed_topics(str(event.param("topics"))):
                check(f"{path}.params.topics", name, targets.topics, "topic")
        for field_name in ("side_a", "side_b", "nodes"):
            for j, node in enumerate(getattr(event, field_name)):
                check(f"{path}.{field_name}[{j}]", node, nodes, "network node")
        for j, link in enumerate(event.links):
            for k, node in enumerate(link):
                check(f"{path}.links[{j}][{k}]", node, nodes, "network node")
        for j, kind in enumerate(event.kinds):
            if not any(known.endswith(kind[1:]) if kind.startswith("*") else known == kind for known in MESSAGE_KINDS):
                what = "matches no message kind" if kind.startswith("*") else "not a message kind"
                found.append((i, f"{path}.kinds[{j}] = {kind!r}: {what}{did_you_mean(kind, MESSAGE_KINDS)}; known: "
                                 f"{', '.join(REQUEST_KINDS)}, each + \"Response\", or \"*Suffix\""))
        if event.kind == "admin_add_partitions" and event.target in partitions:
            add = event.param("add")
            partitions[event.target] += add if isinstance(add, int) else 0
    out = [problem for _, problem in sorted(found, key=lambda pair: pair[0])]
    swarm = scenario.faults.swarm
    if swarm is None or unknowable:
        return out
    idle = [(i, kind) for i, kind in enumerate(swarm.kinds) if kind in FAULT_KINDS and not has_targets(kind, targets)]
    # Every kind named must have something to hit; the default, every kind, those that have (at least one).
    if tuple(swarm.kinds) != tuple(FAULT_KINDS) or len(idle) == len(swarm.kinds):
        for i, kind in idle:
            target = FAULT_KINDS[kind].target
            what = (f"no {_TARGET_WORDS[target]}" if target is not None
                    else f"{len(targets.nodes())} broker or consumer node(s), it needs 2")
            out.append(f"faults.swarm.kinds[{i}] = {kind!r}: nothing to hit: this scenario has {what}")
    return out


def _valid_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _partition_names(partitions: Mapping[str, int]) -> list[str]:
    return [f"{topic}-{p}" for topic in sorted(partitions) for p in range(partitions[topic])]


_NUMBERED: Final = re.compile(r"(.*?)(\d+)")


def _names(names: Iterable[str]) -> str:
    """The names, sorted, each run of consecutive numbers as a range: "admin, b1..b3, c1, c2, orders-0..orders-5"."""
    words: list[str] = []
    numbered: list[tuple[str, int]] = []
    for name in names:
        match = _NUMBERED.fullmatch(name)
        if match is None:
            words.append(name)
        else:
            numbered.append((match.group(1), int(match.group(2))))
    runs: list[tuple[str, int, int]] = []  # (prefix, first, last)
    for prefix, number in sorted(set(numbered)):
        if runs and runs[-1][0] == prefix and runs[-1][2] == number - 1:
            runs[-1] = (prefix, runs[-1][1], number)
        else:
            runs.append((prefix, number, number))
    shown = [f"{p}{a}" if a == b else f"{p}{a}, {p}{b}" if b == a + 1 else f"{p}{a}..{p}{b}" for p, a, b in runs]
    return ", ".join(sorted(set(words)) + shown)


def _swarm_config_problems(ranges: Mapping[str, Any], fixed: Mapping[str, Any], broker: BrokerConfig | None,
                           groups: Iterable[GroupSpec]) -> list[str]:
    """Each range on its own, then whether every draw, with the scenario's own settings, is a valid
    configuration: each cross-setting rule is "a <= b", so it holds for every draw exactly when it
    holds with a at its highest and b at its lowest."""
    path = "faults.swarm.config"
    by_name = settings_by_name(BROKER_SETTINGS)
    set_fixed = {by_name[k].field for k in fixed if k in by_name}
    out: list[str] = []
    spans: dict[str, tuple[int, int]] = {}  # field -> (lowest, highest) an integer setting is drawn
    group_keys = group_draw_keys()
    by_group_key = settings_by_name(GROUP_SETTINGS)
    for key in sorted(ranges):
        setting, allowed, where = by_name.get(key), ranges[key], f'{path}."{key}"'
        if key in group_keys:  # drawn per group (faults.swarm_config)
            group_setting = by_group_key[key]
            if not group_setting.choices:
                out.append(f"{where}: a group setting a swarm draws must be one of choices "
                           f"({', '.join(sorted(k for k in group_keys if by_group_key[k].choices))})")
            elif not _draw_fits(group_setting, allowed):
                out.append(f"{where} = {allowed!r}: must be {_draw_form(group_setting)}")
            continue
        if setting is None:
            out.append(_unknown_setting(where, key, BROKER_SETTINGS))
        elif setting.field in set_fixed:
            out.append(f"{where}: cluster.config sets it too; draw it or set it, not both")
        elif not _draw_fits(setting, allowed):
            out.append(f"{where} = {allowed!r}: must be {_draw_form(setting)}")
        elif not setting.choices:
            spans[setting.field] = (allowed[0], allowed[1])
    if out or broker is None:
        return out

    def lowest(name: str) -> int:
        return spans[name][0] if name in spans else int(getattr(broker, name))

    def highest(name: str) -> int:
        return spans[name][1] if name in spans else int(getattr(broker, name))

    def shown(name: str) -> str:
        return f"{by_name[name].key} {list(spans[name])}" if name in spans else f"{by_name[name].key} = {lowest(name)}"

    for low, mid, high, _ in ORDERED:
        for a, b in ((low, mid), (mid, high)):
            if (a in spans or b in spans) and highest(a) > lowest(b):
                out.append(f"{path}: a draw could break {by_name[a].key} <= {by_name[b].key} "
                           f"({shown(a)}, {shown(b)})")
    for i, group in enumerate(groups):
        try:
            lock = load_group_config(group.config).record_lock_duration_ms
        except ConfigError:
            continue  # reported with the group
        low, high = "min_record_lock_duration_ms", "max_record_lock_duration_ms"
        if lock is not None and (low in spans or high in spans) and not highest(low) <= lock <= lowest(high):
            out.append(f'{path}: a draw could refuse groups[{i}].config."group.share.record.lock.duration.ms" '
                       f"= {lock} ({shown(low)}, {shown(high)})")
    return out


def _draw_fits(setting: Setting, allowed: Any) -> bool:
    if not isinstance(allowed, list | tuple) or any(setting.problem(v) is not None for v in allowed):
        return False
    return bool(allowed) if setting.choices else len(allowed) == 2 and allowed[0] <= allowed[1]


def _draw_form(setting: Setting) -> str:
    if setting.choices:
        return f"a non-empty list of {setting.allowed().removeprefix('one of ')}"
    return f"[low, high], low <= high, each {setting.allowed()}"


def _consumer_problems(path: str, consumer: ConsumerSpec, groups: Mapping[str, GroupSpec]) -> list[str]:
    out: list[str] = []
    if consumer.group not in groups:
        out.append(f"{path}.group = {consumer.group!r}: not a group of this scenario ({sorted(groups)})")
    _positive(out, f"{path}.count", consumer.count, low=0, high=1_000)
    _positive(out, f"{path}.max_poll_records", consumer.max_poll_records, high=10_000)
    shares = []
    for name in ("accept", "release", "reject"):
        before = len(out)
        _probability(out, f"{path}.ack.{name}", getattr(consumer.ack, name))
        if len(out) == before:
            shares.append(getattr(consumer.ack, name))
    if len(shares) == 3 and abs(sum(shares) - 1.0) > 1e-9:
        out.append(f"{path}.ack: accept + release + reject = {sum(shares):g}: must be 1")
    if not isinstance(consumer.ack.renew, bool):
        out.append(f"{path}.ack.renew = {consumer.ack.renew!r}: must be true or false")
    _probability(out, f"{path}.poison_rate", consumer.poison_rate)
    if consumer.ack_mode not in ACK_MODES:
        out.append(f"{path}.ack_mode = {consumer.ack_mode!r}: must be 'explicit' or 'implicit'")
    if not isinstance(consumer.static, bool):
        out.append(f"{path}.static = {consumer.static!r}: must be true or false")
    _positive(out, f"{path}.fetch_min_bytes", consumer.fetch_min_bytes, low=0, high=1 << 20)
    _positive(out, f"{path}.fetch_max_wait_ms", consumer.fetch_max_wait_ms, low=0, high=60_000)
    _positive(out, f"{path}.request_timeout_ms", consumer.request_timeout_ms, high=3_600_000)
    if consumer.acquire_mode not in ACQUIRE_MODES:
        out.append(f"{path}.acquire_mode = {consumer.acquire_mode!r}: must be one of "
                   f"{', '.join(repr(m) for m in ACQUIRE_MODES)}")
    return out


# -- what each key of a scenario means: the reference page "Scenario keys" is generated from this ----------
#
# For each table of a scenario file (its dataclass here, or FaultEvent for a plan's entries), each key's
# bounds (what validation allows, in words; "" when its type says it all) and its description. The type and
# the default come from the dataclass field itself; tests/scenarios/test_key_docs.py checks that every field
# has an entry and every entry a field.

KeyDoc = tuple[str, str]  # (bounds, description)

SCENARIO_TABLES: Final[tuple[tuple[str, type, dict[str, KeyDoc]], ...]] = (
    ("(top level)", Scenario, {
        "name": ("non-empty", "the scenario's name; a file's defaults to its stem. It seeds every random stream "
                 "of a run, so it is part of the run"),
        "description": ("", "one line of what the scenario is (`sharesim list` shows it)"),
        "seed": ("[0, 2^63 - 1]", "the seed a run takes when none is given (`--seed N` overrides it)"),
        "duration_ms": (">= 1", "faults happen in `[0, duration_ms)`; then every fault heals"),
        "heal_ms": (">= 1", "after `duration_ms`, the run goes on until it is quiescent or `heal_ms` more have "
                    "passed, the liveness deadline (E-1, E-5). Keep it well above the clients' "
                    "`request.timeout.ms` (30 s): a request lost just before the faults stop is retried only "
                    "when it times out; the library uses 45 s, and its swarms 75 s: a group coordinator that inherits "
                    "an initialize, or never hears its answer, retries it on a heartbeat "
                    "`group.share.initialize.retry.interval.ms` (30 s) after its last stamp, which may come that "
                    "long after a member rejoined"),
        "cluster": ("", "the brokers and their settings: `[cluster]`"),
        "topics": ("unique names", "the topics: `[[topics]]`"),
        "groups": ("unique names", "share groups and KIP-848 consumer groups: `[[groups]]`"),
        "consumers": ("", "the consumers, named c1, c2, … across all entries in file order: `[[consumers]]`"),
        "producers": ("", "the producers, named p1, p2, …: `[[producers]]`"),
        "faults": ("", "a plan of timed faults or a swarm, not both: `[[faults.plan]]` or `[faults.swarm]`"),
    }),
    ("[cluster]", ClusterSpec, {
        "brokers": ("[1, 100]", "how many brokers, named b1 … bN"),
        "racks": ("[1, brokers]", "how many racks the brokers are spread over, round robin (b1 in r0, b2 in r1, …)"),
        "replication_factor": ("[1, brokers]", "replicas of every partition"),
        "min_insync_replicas": ("[1, replication_factor]", "min.insync.replicas: replicas that must have a "
                                "write before it is acknowledged"),
        "share_state_partitions": ("[1, 50]", "partitions of `__share_group_state` (Kafka: 50; fewer keep a "
                                   "small simulation small; SC-1)"),
        "consumer_offsets_partitions": ("[1, 50]", "partitions of `__consumer_offsets`, which place the group "
                                        "coordinators (GC-6)"),
        "config": ("each setting within its bounds", "broker settings by Kafka key "
                   "([settings](settings.md#broker-settings))"),
        "latency": ("a distribution", "one-way network latency of every link"),
        "metadata_refresh_ms": (">= 0", "how long a client's metadata may be stale before it refreshes it"),
    }),
    ("[[topics]]", TopicSpec, {
        "name": ("non-empty, unique", "the topic's name"),
        "partitions": ("[1, 1000]", "its partitions, named `NAME-0`, `NAME-1`, …"),
        "compacted": ("", "a compacted topic: the log cleaner removes superseded keyed records every "
                      "`log.cleaner.backoff.ms`, past `log.cleaner.min.compaction.lag.ms`; their offsets become "
                      "gaps (SP-14)"),
        "retention_ms": ("[1, …] or absent", "Kafka's retention.ms for this topic (absent: the broker's "
                         "`log.retention.ms`): every `log.retention.check.interval.ms` the closed segments "
                         "(`sharesim.log.segment.records` records each) whose newest record is older are deleted, "
                         "and the log start offset moves past them"),
        "replication_factor": ("[1, brokers] or absent", "CreateTopics' replication factor for this topic (absent: "
                               "the cluster's `replication_factor`); its min.insync.replicas is the cluster's, "
                               "capped at it, so a topic of one replica has a leader only while that broker "
                               "lives"),
    }),
    ("[[groups]]", GroupSpec, {
        "name": ("non-empty, unique", "the group's id"),
        "kind": ("`share` or `consumer`", "a share group (KIP-932) or a KIP-848 consumer group"),
        "topics": ("at least one; topics of the scenario", "the topics the group subscribes to"),
        "config": ("each setting within its bounds", "group settings by Kafka key "
                   "([settings](settings.md#group-settings)); a setting left out takes the broker's value"),
    }),
    ("[[consumers]]", ConsumerSpec, {
        "group": ("a group of the scenario", "the group the consumers join"),
        "count": ("[0, 1000]", "how many consumers this entry makes"),
        "processing": ("a distribution", "how long processing a record takes"),
        "ack": ("", "how a processed record is acknowledged: `consumers.ack` below"),
        "poison_rate": ("[0, 1]", "the probability that a produced record is poison for this consumer: its "
                        "processing always fails and it is released, until the delivery-count limit archives it"),
        "ack_mode": ("`explicit` or `implicit`", "explicit: acknowledge each record as the ack policy says; "
                     "implicit: the next poll accepts the records of the last (CL-3)"),
        "max_poll_records": ("[1, 10000]", "max.poll.records: records a fetch asks for at most"),
        "static": ("", "KIP-848 static membership: group.instance.id is the consumer's name, kept across "
                   "restarts (CG-5)"),
        "fetch_min_bytes": ("[0, 1048576]", "a share consumer's ShareFetch MinBytes, counted in records (the "
                            "broker's delayed share fetch waits for that many)"),
        "fetch_max_wait_ms": ("[0, 60000]", "a share consumer's ShareFetch MaxWaitMs"),
        "request_timeout_ms": ("[1, …]", "request.timeout.ms: how long the client waits for an answer before it "
                               "sends the request again; below the session timeout, a member whose heartbeat "
                               "answers were lost comes back with its old epoch (accepted as the previous one, or "
                               "fenced with FENCED_MEMBER_EPOCH, then a rejoin with epoch 0)"),
        "acquire_mode": ("`batch_optimized` or `record_limit`", "share.acquire.mode: whole batches "
                         "(max_poll_records a soft limit) or at most max_poll_records records. Share groups only"),
    }),
    ("consumers.ack", AckPolicy, {
        "accept": ("[0, 1]", "the probability that a processed record is accepted"),
        "release": ("[0, 1]", "… released (delivered again later); accept + release + reject must be 1"),
        "reject": ("[0, 1]", "… rejected (archived, or sent to the dead-letter queue)"),
        "renew": ("", "KIP-1222: acknowledge the records waiting for or in processing RENEW every half "
                  "acquisition lock, so processing may outlast the lock"),
    }),
    ("[[producers]]", ProducerSpec, {
        "topic": ("a topic of the scenario", "the topic it produces to"),
        "records": (">= 0", "how many records it produces"),
        "rate_per_s": ("[1, 1000000]", "records a second"),
        "keys": (">= 0", "0: round robin over the partitions; N: records keyed over N keys, hashed to a partition"),
        "transactions": ("", "absent: no transactions; else `producers.transactions` below"),
        "start_ms": (">= 0", "when it starts producing"),
        "linger_ms": ("[1, 60000]", "linger.ms: how often the records that arrived are sent as a batch"),
        "metadata_max_age_ms": ("[1, …]", "metadata.max.age.ms: how often the producer reads fresh metadata, and "
                                "so how soon it writes to partitions added since"),
        "batch_size": ("[0, 1000000]", "batch.size in records (Kafka's is in bytes): records a batch holds at "
                       "most; 0: no cap"),
    }),
    ("producers.transactions", TransactionSpec, {
        "records_per_transaction": (">= 1", "records in each transaction"),
        "abort_rate": ("[0, 1]", "the probability that a transaction aborts"),
    }),
    ("[faults]", FaultsSpec, {
        "plan": ("each `at_ms` < duration_ms", "timed faults: `[[faults.plan]]` below"),
        "swarm": ("", "instead of a plan, each run draws its own from its seed: `[faults.swarm]` below"),
    }),
    ("[[faults.plan]]", FaultEvent, {
        "at_ms": (">= 0", "when the fault starts"),
        "kind": ("a fault kind", "what it does ([fault kinds](fault-kinds.md)); the kind says which other keys "
                 "it reads, the others must stay at their defaults"),
        "target": ("a name of the scenario", "what it hits: a broker `bN`, a consumer `cN`, a group, a topic or "
                   "a partition `topic-N`, as its kind says"),
        "duration_ms": (">= 1 for a lasting kind, else 0", "how long a lasting fault lasts"),
        "side_a": ("network nodes", "network_partition: the nodes cut from `side_b`"),
        "side_b": ("network nodes", "network_partition: the other side"),
        "one_way": ("", "network_partition: cut only messages from `side_a` to `side_b`"),
        "kinds": ("message kinds or `*Suffix` patterns", "message_loss, message_delay: the messages it hits "
                  "(empty: every kind)"),
        "links": ("pairs of network nodes", "message_loss, message_delay: the directed `[src, dst]` links it hits"),
        "nodes": ("network nodes", "message_loss, message_delay: messages from or to these nodes"),
        "probability": ("[0, 1]", "message_loss: the probability that a matching message is lost"),
        "extra": ("a distribution", "message_delay: the latency added to a matching message"),
        "extra_ms": (">= 1 for slow_processing", "slow_processing: the time added to each record's processing"),
        "params": ("as its kind says", "a kind's own parameters, an inline table (`params = { to = \"b2\" }`; "
                   "[fault kinds](fault-kinds.md) lists them)"),
    }),
    ("[faults.swarm]", SwarmSpec, {
        "kinds": ("fault kinds, at least one", "the kinds it draws; the default, every kind, keeps those that "
                  "have something to hit in the scenario"),
        "intensity": ("(0, 100]", "scales every kind's rate"),
        "rates": ("(0, 10000] a minute, kinds of `kinds`", "a kind's faults a minute at intensity 1, replacing "
                  "its default rate"),
        "config": ("ranges within each setting's bounds", "broker settings each run draws: Kafka key → "
                   "`[low, high]` for an integer setting or a list of choices; every draw must be a valid "
                   "configuration"),
        "params": ("kinds of `kinds` → their params", "parameters every drawn fault of a kind takes, laid over "
                   "those it draws: `hostile_state_request = { request = \"repeated_initialize\", rest_ms = 2000 }`"),
    }),
)
