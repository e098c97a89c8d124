"""Scenarios as Python values: the API the TOML file format is a thin layer over.

A scenario says what cluster to build, what to produce and consume, which
faults to inject and for how long to run; (scenario, seed) determines a run.
``Scenario.problems()`` lists every problem at once, each with its key path,
the value given and what is allowed; ``validate()`` raises them together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from model.core.config import ConfigError, load_broker_config, load_group_config
from model.sim.faults import FAULT_KINDS, FaultEvent, FaultPlan
from model.sim.rng import Distribution


class ScenarioError(ValueError):
    """Every problem with a scenario, each naming key path, value and what is allowed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid scenario:\n  " + "\n  ".join(problems))
        self.problems = problems


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


@dataclass(frozen=True)
class SwarmSpec:
    kinds: tuple[str, ...] = tuple(FAULT_KINDS)
    intensity: float = 1.0


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

    def validate(self) -> Scenario:
        problems = self.problems()
        if problems:
            raise ScenarioError(problems)
        return self

    def problems(self) -> list[str]:
        out: list[str] = []
        _positive(out, "duration_ms", self.duration_ms)
        _positive(out, "heal_ms", self.heal_ms)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            out.append(f"seed = {self.seed!r}: must be an integer >= 0")
        out.extend(_cluster_problems(self.cluster))
        topics = {t.name for t in self.topics}
        for i, spec in enumerate(self.topics):
            _positive(out, f"topics[{i}].partitions", spec.partitions, high=1_000)
        if len(topics) != len(self.topics):
            out.append("topics: topic names must be unique")
        groups = {g.name: g for g in self.groups}
        for i, group in enumerate(self.groups):
            path = f"groups[{i}]"
            if group.kind not in ("share", "consumer"):
                out.append(f"{path}.kind = {group.kind!r}: must be 'share' or 'consumer'")
            if not group.topics:
                out.append(f"{path}.topics = []: must name at least one topic")
            for topic in group.topics:
                if topic not in topics:
                    out.append(f"{path}.topics: {topic!r} is not a topic of this scenario ({sorted(topics)})")
            try:
                load_group_config(group.config, load_broker_config(self.cluster.config))
            except ConfigError as err:
                out.extend(f"{path}.config: {p}" for p in err.problems)
        for i, consumer in enumerate(self.consumers):
            out.extend(_consumer_problems(f"consumers[{i}]", consumer, groups))
        for i, producer in enumerate(self.producers):
            path = f"producers[{i}]"
            if producer.topic not in topics:
                out.append(f"{path}.topic = {producer.topic!r}: not a topic of this scenario ({sorted(topics)})")
            _positive(out, f"{path}.records", producer.records, low=0)
            _positive(out, f"{path}.rate_per_s", producer.rate_per_s, high=1_000_000)
            _positive(out, f"{path}.keys", producer.keys, low=0)
            txn = producer.transactions
            if txn is not None:
                _positive(out, f"{path}.transactions.records_per_transaction", txn.records_per_transaction)
                _probability(out, f"{path}.transactions.abort_rate", txn.abort_rate)
        for i, event in enumerate(self.faults.plan):
            if event.at_ms >= self.duration_ms:
                out.append(f"faults.plan[{i}].at_ms = {event.at_ms}: must be < duration_ms ({self.duration_ms})")
        if self.faults.swarm is not None:
            unknown = sorted(set(self.faults.swarm.kinds) - set(FAULT_KINDS))
            if unknown:
                out.append(f"faults.swarm.kinds: unknown {unknown}; allowed: {', '.join(FAULT_KINDS)}")
            if not 0 < self.faults.swarm.intensity <= 100:
                out.append(f"faults.swarm.intensity = {self.faults.swarm.intensity!r}: must be in (0, 100]")
        return out


def _positive(out: list[str], path: str, value: Any, low: int = 1, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        allowed = f"an integer in [{low}, {high}]" if high is not None else f"an integer >= {low}"
        out.append(f"{path} = {value!r}: must be {allowed}")


def _probability(out: list[str], path: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        out.append(f"{path} = {value!r}: must be a probability in [0, 1]")


def _cluster_problems(cluster: ClusterSpec) -> list[str]:
    out: list[str] = []
    _positive(out, "cluster.brokers", cluster.brokers, high=100)
    _positive(out, "cluster.racks", cluster.racks, high=max(1, cluster.brokers))
    _positive(out, "cluster.replication_factor", cluster.replication_factor, high=max(1, cluster.brokers))
    _positive(out, "cluster.min_insync_replicas", cluster.min_insync_replicas, high=max(1, cluster.replication_factor))
    _positive(out, "cluster.share_state_partitions", cluster.share_state_partitions, high=50)
    _positive(out, "cluster.consumer_offsets_partitions", cluster.consumer_offsets_partitions, high=50)
    _positive(out, "cluster.metadata_refresh_ms", cluster.metadata_refresh_ms, low=0)
    try:
        load_broker_config(cluster.config)
    except ConfigError as err:
        out.extend(f"cluster.config: {p}" for p in err.problems)
    return out


def _consumer_problems(path: str, consumer: ConsumerSpec, groups: Mapping[str, GroupSpec]) -> list[str]:
    out: list[str] = []
    if consumer.group not in groups:
        out.append(f"{path}.group = {consumer.group!r}: not a group of this scenario ({sorted(groups)})")
    _positive(out, f"{path}.count", consumer.count, low=0, high=1_000)
    _positive(out, f"{path}.max_poll_records", consumer.max_poll_records, high=10_000)
    for name in ("accept", "release", "reject"):
        _probability(out, f"{path}.ack.{name}", getattr(consumer.ack, name))
    total = consumer.ack.accept + consumer.ack.release + consumer.ack.reject
    if abs(total - 1.0) > 1e-9:
        out.append(f"{path}.ack: accept + release + reject = {total:g}: must be 1")
    _probability(out, f"{path}.poison_rate", consumer.poison_rate)
    if consumer.ack_mode not in ("explicit", "implicit"):
        out.append(f"{path}.ack_mode = {consumer.ack_mode!r}: must be 'explicit' or 'implicit'")
    return out
