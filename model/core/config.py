"""Broker and group configuration with the seeds' defaults and bounds.

Every setting names its Kafka key, default, allowed range and the seed it comes
from (000_2de40ef26c3dd7ed.txt unless noted). ``load_broker_config`` and
``load_group_config`` validate a user's overrides and report every problem at
once, each naming the key, the value given and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Final

_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{0,249}")  # Kafka's legal topic characters (Topic.validate)

UNBOUNDED = 2**31 - 1  # Java's Integer.MAX_VALUE, the seeds' "MaxValue"

# The Kafka that ships, as followed wherever the KIPs leave a choice: Apache Kafka trunk at this
# commit (the confluentinc/kafka mirror, 2026-08-22). tests/conformance translates its tests.
KAFKA_TRUNK_COMMIT = "06d492d81361d053700c7cd6a932d7f361ea8309"

# ``protocol``: which of two readings the model follows where the KIP as written and the Kafka that
# ships differ and both are worth simulating. Code asks ``broker.kafka`` (or ``protocol_is_kafka``),
# never compares the string itself, so every such place is found by one search.
PROTOCOL_KAFKA = "kafka"  # Kafka trunk at KAFKA_TRUNK_COMMIT (the default)
PROTOCOL_KIP = "kip"  # KIP-932 / KIP-848 as written, and the seeds' worked tables
PROTOCOLS = (PROTOCOL_KAFKA, PROTOCOL_KIP)


@dataclass(frozen=True)
class Setting:
    key: str
    field: str
    default: int | str | None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    source: str = "000"
    nullable: bool = False
    text: bool = False  # a free string (a topic name): "" means unset

    def allowed(self) -> str:
        if self.text:
            return "a string (a topic name: letters, digits, '.', '_', '-'; \"\" for none)"
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        low = "-inf" if self.minimum is None else str(self.minimum)
        high = "+inf" if self.maximum is None else str(self.maximum)
        text = f"an integer in [{low}, {high}]"
        return text + " or null" if self.nullable else text

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed for this setting, or None if it is."""
        if value is None and self.nullable:
            return None
        if self.text:
            if not isinstance(value, str) or not _TOPIC_NAME.fullmatch(value):
                return f"{self.key} = {value!r}: must be {self.allowed()}"
            return None
        if self.choices:
            if value not in self.choices:
                return f"{self.key} = {value!r}: must be {self.allowed()}"
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{self.key} = {value!r}: must be {self.allowed()}"
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            return f"{self.key} = {value!r}: must be {self.allowed()}"
        return None


class ConfigError(ValueError):
    """One or more configuration problems, each naming key, value and range."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid configuration:\n  " + "\n  ".join(problems))
        self.problems = problems


BROKER_SETTINGS: tuple[Setting, ...] = (
    # sharesim's own switch (not a Kafka key): the Kafka that ships, or the KIP as written.
    Setting("sharesim.protocol", "protocol", PROTOCOL_KAFKA, choices=PROTOCOLS, source="sharesim"),
    Setting("group.share.delivery.count.limit", "delivery_count_limit", 5, 2, 10),
    Setting("group.share.record.lock.duration.ms", "record_lock_duration_ms", 30_000, 1_000, 60_000),
    Setting("group.share.min.record.lock.duration.ms", "min_record_lock_duration_ms", 15_000, 1_000, 30_000),
    Setting("group.share.max.record.lock.duration.ms", "max_record_lock_duration_ms", 60_000, 30_000, 3_600_000),
    Setting("group.share.partition.max.record.locks", "partition_max_record_locks", 200, 100, 10_000),
    Setting("group.share.session.timeout.ms", "share_session_timeout_ms", 45_000, 1),
    Setting("group.share.min.session.timeout.ms", "share_min_session_timeout_ms", 45_000, 1),
    Setting("group.share.max.session.timeout.ms", "share_max_session_timeout_ms", 60_000, 1),
    Setting("group.share.heartbeat.interval.ms", "share_heartbeat_interval_ms", 5_000, 1),
    Setting("group.share.min.heartbeat.interval.ms", "share_min_heartbeat_interval_ms", 5_000, 1),
    Setting("group.share.max.heartbeat.interval.ms", "share_max_heartbeat_interval_ms", 15_000, 1),
    Setting("group.share.max.groups", "share_max_groups", 10, 1, 100),
    Setting("group.share.max.size", "share_max_size", 200, 10, 1_000),
    Setting("share.coordinator.state.topic.num.partitions", "share_state_topic_num_partitions", 50, 1),
    Setting("share.coordinator.state.topic.replication.factor", "share_state_topic_replication_factor", 3, 1),
    Setting("share.coordinator.state.topic.min.isr", "share_state_topic_min_isr", 2, 1),
    Setting("share.coordinator.append.linger.ms", "share_coordinator_append_linger_ms", 10, 0),
    Setting("share.coordinator.snapshot.update.records.per.snapshot", "snapshot_update_records_per_snapshot", 500, 0),
    Setting("share.coordinator.write.timeout.ms", "share_coordinator_write_timeout_ms", 5_000, 1),
    # SC-8 housekeeping (Kafka's ShareCoordinatorConfig; the seeds give no values): how often a share
    # coordinator re-snapshots idle keys and deletes the records replay no longer needs.
    Setting("share.coordinator.cold.partition.snapshot.interval.ms",
            "share_coordinator_cold_partition_snapshot_interval_ms", 300_000, 1, source="kafka"),
    Setting("share.coordinator.state.topic.prune.interval.ms",
            "share_coordinator_state_topic_prune_interval_ms", 300_000, 1, source="kafka"),
    # KIP-848 (004_32d84b698b32e157.txt), broker side of consumer groups.
    Setting("group.consumer.session.timeout.ms", "consumer_session_timeout_ms", 45_000, 1, source="004"),
    Setting("group.consumer.min.session.timeout.ms", "consumer_min_session_timeout_ms", 45_000, 1, source="004"),
    Setting("group.consumer.max.session.timeout.ms", "consumer_max_session_timeout_ms", 60_000, 1, source="004"),
    Setting("group.consumer.heartbeat.interval.ms", "consumer_heartbeat_interval_ms", 5_000, 1, source="004"),
    Setting("group.consumer.min.heartbeat.interval.ms", "consumer_min_heartbeat_interval_ms", 5_000, 1, source="004"),
    Setting("group.consumer.max.heartbeat.interval.ms", "consumer_max_heartbeat_interval_ms", 15_000, 1, source="004"),
    Setting("group.consumer.max.size", "consumer_max_size", UNBOUNDED, 1, source="004"),
    Setting("group.consumer.assignors", "consumer_assignor", "uniform", choices=("uniform", "range"), source="004"),
    # Share sessions idle this long are evicted (003, CL-1).
    Setting("share.session.idle.eviction.ms", "share_session_idle_eviction_ms", 120_000, 1, source="003"),
    # The log cleaner of compacted topics (Kafka broker settings; model/sim/log_cleaner.py, SP-14).
    Setting("log.cleaner.backoff.ms", "log_cleaner_backoff_ms", 15_000, 1, source="kafka"),
    Setting("log.cleaner.min.compaction.lag.ms", "log_cleaner_min_compaction_lag_ms", 0, 0, source="kafka"),
    # The request-handler threads (Kafka's num.io.threads, default 8) that handle ShareFetch and
    # ShareAcknowledge in steps, and the simulated time of one step (sharesim's own: uniform in
    # [min, max] ms; a max below the min counts as the min). model/sim/handlers.py.
    Setting("num.io.threads", "num_io_threads", 8, 1, 64, source="kafka"),
    Setting("sharesim.handler.step.min.ms", "handler_step_min_ms", 0, 0, 1_000, source="sharesim"),
    Setting("sharesim.handler.step.max.ms", "handler_step_max_ms", 0, 0, 1_000, source="sharesim"),
    # sharesim's own knob (not a Kafka key): how long a coordinator's load takes before the records
    # (plus 20 us per record replayed), model/sim/coordinator_host.py. Kafka's CoordinatorLoaderImpl
    # reads a small partition in a few milliseconds, while the new leader's high-water mark still
    # waits for its followers: below one replication round trip, a coordinator activates before the
    # tail it inherited has committed ("loaded but not caught up").
    Setting("sharesim.coordinator.load.base.ms", "coordinator_load_base_ms", 10, 1, 60_000, source="sharesim"),
    # Time-based retention of the data topics (Kafka's log.retention.ms, overridden per topic by the scenario's
    # [[topics]] retention_ms, and log.retention.check.interval.ms; model/sim/log_cleaner.py LogRetention), in
    # segments of sharesim.log.segment.records records (Kafka's segment.bytes, counted in records).
    Setting("log.retention.ms", "log_retention_ms", 604_800_000, 1, source="kafka"),
    Setting("log.retention.check.interval.ms", "log_retention_check_interval_ms", 300_000, 1, source="kafka"),
    Setting("sharesim.log.segment.records", "log_segment_records", 1_000, 1, 1_000_000, source="sharesim"),
)

# Dynamic group configuration (003_cf42721e0e7b2a9a.txt, 004 for consumer groups).
GROUP_SETTINGS: tuple[Setting, ...] = (
    Setting("group.share.isolation.level", "isolation_level", "read_uncommitted",
            choices=("read_uncommitted", "read_committed"), source="003"),
    Setting("group.share.auto.offset.reset", "auto_offset_reset", "latest",
            choices=("latest", "earliest"), source="003"),
    # null means "use the broker's group.share.record.lock.duration.ms".
    Setting("group.share.record.lock.duration.ms", "record_lock_duration_ms", None, 1_000, 3_600_000,
            source="003", nullable=True),
    Setting("group.share.session.timeout.ms", "share_session_timeout_ms", None, 1, nullable=True),
    Setting("group.share.heartbeat.interval.ms", "share_heartbeat_interval_ms", None, 1, nullable=True),
    Setting("group.consumer.session.timeout.ms", "consumer_session_timeout_ms", None, 1,
            source="004", nullable=True),
    Setting("group.consumer.heartbeat.interval.ms", "consumer_heartbeat_interval_ms", None, 1,
            source="004", nullable=True),
    # Kafka's per-group share.delivery.count.limit and share.partition.max.record.locks (GroupConfig at
    # the pinned commit; ShareGroupConfigProvider): null means "use the broker's group.share.* value".
    Setting("group.share.delivery.count.limit", "delivery_count_limit", None, 2, 10, source="kafka",
            nullable=True),
    Setting("group.share.partition.max.record.locks", "partition_max_record_locks", None, 100, 10_000,
            source="kafka", nullable=True),
    # KIP-1191 (trunk's GroupConfig.ERRORS_DEADLETTERQUEUE_TOPIC_NAME_CONFIG): the share group's dead-letter
    # topic; "" (the default) means the group has none.
    Setting("errors.deadletterqueue.topic.name", "dlq_topic", "", source="kafka", text=True),
)


# What each setting does, by Kafka key: the reference page "Broker and group settings" is generated from
# these (docs/gen); tests/model/core/test_config.py checks that every setting has one.
_NOT_READ: Final = "Kafka's setting, checked against its bounds and kept; the simulation does not read it"

BROKER_DESCRIPTIONS: Final[dict[str, str]] = {
    "log.retention.ms": "time-based retention of the data topics (a topic's retention_ms overrides it): closed "
                        "segments whose newest record is older are deleted and the log start offset moves past them",
    "log.retention.check.interval.ms": "how often the brokers look for segments past their retention",
    "sharesim.log.segment.records": "the records of one log segment (Kafka's segment.bytes, counted in records); "
                                    "retention deletes whole closed segments",
    "sharesim.protocol": "which protocol the model follows where the two differ: \"kafka\", Kafka trunk at the "
                         "pinned commit, or \"kip\", the KIPs as written",
    "group.share.delivery.count.limit": "deliveries of a record before it is archived instead of delivered again "
                                        "(SP-5)",
    "group.share.record.lock.duration.ms": "how long an acquisition lock lasts; when it runs out the records go "
                                           "back to AVAILABLE, or to ARCHIVED at the limit (SP-4)",
    "group.share.min.record.lock.duration.ms": "the least lock duration a group may set",
    "group.share.max.record.lock.duration.ms": "the most lock duration a group may set",
    "group.share.partition.max.record.locks": "in-flight records of a share-partition at most: SPEO - SPSO (SP-8)",
    "group.share.session.timeout.ms": "a share group member that sends no heartbeat for this long is removed "
                                      "(GC-1)",
    "group.share.min.session.timeout.ms": "the least session timeout a share group may set",
    "group.share.max.session.timeout.ms": "the most session timeout a share group may set",
    "group.share.heartbeat.interval.ms": "how often a share group member heartbeats",
    "group.share.min.heartbeat.interval.ms": "the least heartbeat interval a share group may set",
    "group.share.max.heartbeat.interval.ms": "the most heartbeat interval a share group may set",
    "group.share.max.groups": "share groups a broker serves at most; with group.share.max.size it sizes the "
                              "broker's share-session cache",
    "group.share.max.size": "members of a share group at most",
    "share.coordinator.state.topic.num.partitions": _NOT_READ + " (the simulated cluster's count is "
                                                    "`cluster.share_state_partitions`)",
    "share.coordinator.state.topic.replication.factor": _NOT_READ + " (the cluster's `replication_factor` "
                                                        "applies)",
    "share.coordinator.state.topic.min.isr": _NOT_READ + " (the cluster's `min_insync_replicas` applies)",
    "share.coordinator.append.linger.ms": _NOT_READ,
    "share.coordinator.snapshot.update.records.per.snapshot": "ShareUpdate records a share coordinator appends "
                                                              "for a share-partition before it writes a "
                                                              "ShareSnapshot again (SC-3)",
    "share.coordinator.write.timeout.ms": _NOT_READ,
    "share.coordinator.cold.partition.snapshot.interval.ms": "how often a share coordinator snapshots again the "
                                                             "keys that have been idle (SC-8)",
    "share.coordinator.state.topic.prune.interval.ms": "how often a share coordinator deletes the records of "
                                                       "`__share_group_state` that replay no longer needs (SC-8)",
    "group.consumer.session.timeout.ms": "a KIP-848 member that sends no heartbeat for this long is removed",
    "group.consumer.min.session.timeout.ms": "the least session timeout a consumer group may set",
    "group.consumer.max.session.timeout.ms": "the most session timeout a consumer group may set",
    "group.consumer.heartbeat.interval.ms": "how often a KIP-848 member heartbeats",
    "group.consumer.min.heartbeat.interval.ms": "the least heartbeat interval a consumer group may set",
    "group.consumer.max.heartbeat.interval.ms": "the most heartbeat interval a consumer group may set",
    "group.consumer.max.size": "members of a consumer group at most",
    "group.consumer.assignors": "the server-side assignor of consumer groups: uniform or range",
    "share.session.idle.eviction.ms": "a share session idle this long may be evicted, and its member's acquired "
                                      "records released (CL-1, SP-15)",
    "log.cleaner.backoff.ms": "how often the log cleaner of a compacted topic runs (SP-14)",
    "log.cleaner.min.compaction.lag.ms": "how old a record must be before the cleaner may remove it",
    "num.io.threads": "request-handler threads of a broker, which handle ShareFetch and ShareAcknowledge in steps",
    "sharesim.handler.step.min.ms": "the least simulated time of one request-handler step (uniform in "
                                    "[min, max])",
    "sharesim.handler.step.max.ms": "the most simulated time of one request-handler step (a max below the min "
                                    "counts as the min)",
    "sharesim.coordinator.load.base.ms": "how long a coordinator's load takes before its records are replayed "
                                         "(plus 20 us a record): below one replication round trip, a coordinator "
                                         "activates before the tail it inherited has committed",
}

GROUP_DESCRIPTIONS: Final[dict[str, str]] = {
    "group.share.isolation.level": "read_committed: a share group reads up to the last stable offset and never "
                                   "delivers aborted records (SP-13)",
    "group.share.auto.offset.reset": "where a share-partition starts when the group first reads it: the end of "
                                     "the log (latest) or its start (earliest) (SP-10)",
    "group.share.record.lock.duration.ms": "the group's own lock duration, within the broker's min and max",
    "group.share.session.timeout.ms": "the group's own session timeout, within the broker's min and max",
    "group.share.heartbeat.interval.ms": "the group's own heartbeat interval, within the broker's min and max",
    "group.consumer.session.timeout.ms": "a consumer group's own session timeout, within the broker's min and max",
    "group.consumer.heartbeat.interval.ms": "a consumer group's own heartbeat interval, within the broker's min "
                                            "and max",
    "group.share.delivery.count.limit": "the group's own delivery-count limit (Kafka's share.delivery.count.limit)",
    "group.share.partition.max.record.locks": "the group's own in-flight limit (Kafka's "
                                              "share.partition.max.record.locks)",
    "errors.deadletterqueue.topic.name": "the group's dead-letter topic (KIP-1191): rejected records and records "
                                         "at the delivery limit are written to it before they are archived",
}


@dataclass(frozen=True)
class BrokerConfig:
    protocol: str = PROTOCOL_KAFKA
    delivery_count_limit: int = 5
    record_lock_duration_ms: int = 30_000
    min_record_lock_duration_ms: int = 15_000
    max_record_lock_duration_ms: int = 60_000
    partition_max_record_locks: int = 200
    share_session_timeout_ms: int = 45_000
    share_min_session_timeout_ms: int = 45_000
    share_max_session_timeout_ms: int = 60_000
    share_heartbeat_interval_ms: int = 5_000
    share_min_heartbeat_interval_ms: int = 5_000
    share_max_heartbeat_interval_ms: int = 15_000
    share_max_groups: int = 10
    share_max_size: int = 200
    share_state_topic_num_partitions: int = 50
    share_state_topic_replication_factor: int = 3
    share_state_topic_min_isr: int = 2
    share_coordinator_append_linger_ms: int = 10
    snapshot_update_records_per_snapshot: int = 500
    share_coordinator_write_timeout_ms: int = 5_000
    share_coordinator_cold_partition_snapshot_interval_ms: int = 300_000
    share_coordinator_state_topic_prune_interval_ms: int = 300_000
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_max_size: int = UNBOUNDED
    consumer_assignor: str = "uniform"
    share_session_idle_eviction_ms: int = 120_000
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_min_compaction_lag_ms: int = 0
    num_io_threads: int = 8
    handler_step_min_ms: int = 0
    handler_step_max_ms: int = 0
    coordinator_load_base_ms: int = 10
    log_retention_ms: int = 604_800_000
    log_retention_check_interval_ms: int = 300_000
    log_segment_records: int = 1_000

    def with_overrides(self, overrides: Mapping[str, Any]) -> BrokerConfig:
        return load_broker_config(overrides, base=self)

    @property
    def kafka(self) -> bool:
        """True when the model follows Kafka trunk (``protocol = "kafka"``), False for the KIP as written."""
        return self.protocol == PROTOCOL_KAFKA


@dataclass(frozen=True)
class GroupConfig:
    isolation_level: str = "read_uncommitted"
    auto_offset_reset: str = "latest"
    record_lock_duration_ms: int | None = None
    share_session_timeout_ms: int | None = None
    share_heartbeat_interval_ms: int | None = None
    consumer_session_timeout_ms: int | None = None
    consumer_heartbeat_interval_ms: int | None = None
    delivery_count_limit: int | None = None
    partition_max_record_locks: int | None = None
    dlq_topic: str = ""

    @property
    def read_committed(self) -> bool:
        return self.isolation_level == "read_committed"


def settings_by_name(settings: tuple[Setting, ...]) -> dict[str, Setting]:
    """Each setting under its Kafka key and its field name: a user may write either."""
    return {s.key: s for s in settings} | {s.field: s for s in settings}


def _overrides(
    settings: tuple[Setting, ...], values: Mapping[str, Any], problems: list[str]
) -> dict[str, Any]:
    """Accept either Kafka keys or field names; collect problems, not exceptions."""
    by_name = settings_by_name(settings)
    chosen: dict[str, Any] = {}
    for name in sorted(values):
        setting = by_name.get(name)
        if setting is None:
            problems.append(f"{name}: unknown setting (known: {', '.join(s.key for s in settings)})")
            continue
        problem = setting.problem(values[name])
        if problem:
            problems.append(problem)
        else:
            chosen[setting.field] = values[name]
    return chosen


def _ordered(problems: list[str], cfg: Any, low: str, mid: str, high: str, key: str) -> None:
    lo, me, hi = getattr(cfg, low), getattr(cfg, mid), getattr(cfg, high)
    if not lo <= me <= hi:
        problems.append(f"{key} = {me}: must lie in [{lo}, {hi}] (its min and max settings)")


# The cross-setting rules of the broker: a value within its min and max settings (the seeds' bounds).
# Each is (min field, field, max field, the Kafka key a problem names).
ORDERED: tuple[tuple[str, str, str, str], ...] = (
    ("min_record_lock_duration_ms", "record_lock_duration_ms", "max_record_lock_duration_ms",
     "group.share.record.lock.duration.ms"),
    ("share_min_session_timeout_ms", "share_session_timeout_ms", "share_max_session_timeout_ms",
     "group.share.session.timeout.ms"),
    ("share_min_heartbeat_interval_ms", "share_heartbeat_interval_ms", "share_max_heartbeat_interval_ms",
     "group.share.heartbeat.interval.ms"),
    ("consumer_min_session_timeout_ms", "consumer_session_timeout_ms", "consumer_max_session_timeout_ms",
     "group.consumer.session.timeout.ms"),
    ("consumer_min_heartbeat_interval_ms", "consumer_heartbeat_interval_ms", "consumer_max_heartbeat_interval_ms",
     "group.consumer.heartbeat.interval.ms"),
)


def load_broker_config(values: Mapping[str, Any], base: BrokerConfig | None = None) -> BrokerConfig:
    problems: list[str] = []
    cfg = replace(base or BrokerConfig(), **_overrides(BROKER_SETTINGS, values, problems))
    if not problems:
        for low, mid, high, key in ORDERED:
            _ordered(problems, cfg, low, mid, high, key)
    if problems:
        raise ConfigError(problems)
    return cfg


def load_group_config(
    values: Mapping[str, Any], broker: BrokerConfig | None = None
) -> GroupConfig:
    problems: list[str] = []
    cfg = replace(GroupConfig(), **_overrides(GROUP_SETTINGS, values, problems))
    broker = broker or BrokerConfig()
    lock = cfg.record_lock_duration_ms
    if lock is not None and not (
        broker.min_record_lock_duration_ms <= lock <= broker.max_record_lock_duration_ms
    ):
        problems.append(
            f"group.share.record.lock.duration.ms = {lock}: must lie in "
            f"[{broker.min_record_lock_duration_ms}, {broker.max_record_lock_duration_ms}] "
            "(the broker's min and max record lock duration)"
        )
    if problems:
        raise ConfigError(problems)
    return cfg


def effective_lock_duration_ms(broker: BrokerConfig, group: GroupConfig) -> int:
    return group.record_lock_duration_ms or broker.record_lock_duration_ms


def effective_delivery_count_limit(broker: BrokerConfig, group: GroupConfig) -> int:
    """The group's share.delivery.count.limit if set, else the broker's (SharePartition.maxDeliveryCount)."""
    return group.delivery_count_limit or broker.delivery_count_limit


def effective_max_record_locks(broker: BrokerConfig, group: GroupConfig) -> int:
    """The group's share.partition.max.record.locks if set, else the broker's (SharePartition.maxInFlightRecords)."""
    return group.partition_max_record_locks or broker.partition_max_record_locks


def _check_tables() -> None:
    # The dataclass defaults and the settings tables must not drift apart.
    for settings, cls in ((BROKER_SETTINGS, BrokerConfig), (GROUP_SETTINGS, GroupConfig)):
        defaults = {f.name: f.default for f in fields(cls)}
        assert defaults == {s.field: s.default for s in settings}, cls.__name__


_check_tables()
