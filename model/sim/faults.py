"""Fault plans as data, the swarm generator, the injector and the shrinker.

DESIGN.md principle 4: a fault plan is a list of timed fault events, written by
hand or generated from the seed, and it can be shrunk to a minimal reproducer.

* ``FaultEvent`` / ``FaultPlan``: frozen, validated data. Every problem names
  the event, the field, the value and what is allowed.
* ``swarm_plan``: "swarm" mode (BUGGIFY-style): each run switches on a random
  non-empty subset of the fault kinds available and gives each its own rate;
  all draws come from streams derived from the seed. No fault starts at or
  after the healing phase begins (``heal_at_ms``).
* ``FaultInjector``: fires each event on the scheduler through the handler for
  its kind, ends durational faults after ``duration_ms``, and at ``heal_at_ms``
  ends every fault still active: the healing phase, after which the run
  continues until quiescence or its liveness deadline (the runner's job).
* ``shrink``: greedy delta debugging over a failing plan's events.

The network faults (partition, message loss, message delay) have ready-made
handlers here (``network_fault_handlers``); the actors provide the others.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from operator import itemgetter
from typing import Any, Final, NamedTuple

from mypy_extensions import mypyc_attr

from model.sim.network import MessageFilter, Network
from model.sim.rng import Distribution, DistributionError, RandomStreams, derive_seed, exponential_draw
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

# -- the fault kinds ------------------------------------------------------------------


@dataclass(frozen=True)
class FaultKindSpec:
    """What a fault kind needs: its target, whether it lasts, which other fields it reads."""

    name: str
    target: str | None  # "broker", "consumer", "group", "partition", "topic", or None (no target)
    durational: bool
    uses: tuple[str, ...] = ()  # fields besides at_ms/kind/target/duration_ms
    params: tuple[str, ...] = ()  # keys allowed in params
    summary: str = ""


FAULT_KINDS: Final[Mapping[str, FaultKindSpec]] = {
    spec.name: spec
    for spec in (
        FaultKindSpec("broker_crash", "broker", True, summary="crash a broker; it restarts after duration_ms"),
        FaultKindSpec("leadership_move", "partition", False, params=("to",), summary="move a partition's leader"),
        FaultKindSpec("group_coordinator_failover", "group", False, summary="move a group's coordinator"),
        FaultKindSpec("share_coordinator_failover", "group", False, summary="move a group's share coordinator"),
        FaultKindSpec(
            "network_partition",
            None,
            True,
            uses=("side_a", "side_b", "one_way"),
            summary="cut side_a from side_b (a->b only if one_way) until duration_ms passes",
        ),
        FaultKindSpec(
            "message_loss",
            None,
            True,
            uses=("kinds", "links", "nodes", "probability"),
            summary="lose matching messages with probability for duration_ms",
        ),
        FaultKindSpec(
            "message_delay",
            None,
            True,
            uses=("kinds", "links", "nodes", "extra"),
            summary="add a draw from extra to matching messages' latency for duration_ms",
        ),
        FaultKindSpec("consumer_crash", "consumer", False, summary="kill a consumer without close()"),
        FaultKindSpec(
            "consumer_pause",
            "consumer",
            True,
            summary="freeze a consumer (a GC pause) for duration_ms, e.g. longer than the session timeout",
        ),
        FaultKindSpec(
            "slow_processing",
            "consumer",
            True,
            uses=("extra_ms",),
            summary="each record takes extra_ms more to process (e.g. longer than the lock duration)",
        ),
        FaultKindSpec(
            "admin_alter_offsets",
            "group",
            False,
            params=("topic", "partition", "offset"),
            summary="AlterShareGroupOffsets: reset the group's start offset on a topic(-partition)",
        ),
        FaultKindSpec("admin_delete_group", "group", False, summary="DeleteShareGroups"),
        FaultKindSpec(
            "delete_records",
            "partition",
            False,
            params=("to",),
            summary="DeleteRecords (Admin.deleteRecords): the partition's log start offset moves up to params.to: "
            "'hwm' (the high-water mark, the default), 'half' (half way to it) or an offset (past the HWM: "
            "OFFSET_OUT_OF_RANGE)",
        ),
        FaultKindSpec("admin_add_partitions", "topic", False, params=("add",), summary="CreatePartitions: add more"),
        FaultKindSpec(
            "hostile_state_request",
            "group",
            False,
            params=("topic", "partition", "request", "rest_ms"),
            summary="a misbehaving client sends the share coordinator a write and a read with epoch -1 and "
            "replays a write it captured on the wire (start offset below the stored one); params.request "
            "'repeated_initialize' repeats the share-partition's initialize instead, once it has been at rest "
            "for params.rest_ms if given",
        ),
        FaultKindSpec(
            "consumer_close",
            "consumer",
            True,
            params=("restart",),
            summary="close() a consumer: it acknowledges what it processed, closes its share sessions "
            "(ShareAcknowledge epoch -1) and leaves its group (epoch -1; a static KIP-848 member -2); when "
            "duration_ms ends it starts again as a new member (a static one with its instance id), unless "
            "params.restart = 'no'",
        ),
        FaultKindSpec(
            "consumer_subscribe",
            "consumer",
            False,
            params=("topics",),
            summary="the consumer subscribes to params.topics (comma-separated topic names) instead: its next "
            "heartbeat carries them, the group epoch moves and the assignment follows",
        ),
        FaultKindSpec(
            "coordinator_failover_mid_load",
            "group",
            False,
            params=("coordinator",),
            summary="move the group's share coordinator (params.coordinator = 'share', the default) or group "
            "coordinator ('group'), then move it again while the new one is still loading (half its load "
            "delay later): the load is abandoned and starts over elsewhere",
        ),
        FaultKindSpec(
            "hostile_share_request",
            "group",
            False,
            params=("topic", "partition", "request"),
            summary="a buggy or hostile client sends the leader of the group's share-partition params.topic-"
            "params.partition (absent: its first topic, partition 0) ShareFetch and ShareAcknowledge requests "
            "the protocol refuses (acks on a fresh session, stale and negative session epochs, duplicated, "
            "malformed and never-acquired acks); each must be refused and change nothing",
        ),
        FaultKindSpec(
            "state_partition_under_min_isr",
            "group",
            True,
            params=("topic", "partition"),
            summary="the followers of the __share_group_state partition holding the group's share-partition "
            "params.topic-params.partition (absent: its first topic, partition 0) drop out of the ISR for "
            "duration_ms: every share-state write there fails (NOT_ENOUGH_REPLICAS, answered "
            "COORDINATOR_NOT_AVAILABLE), for good once the persister's retries run out",
        ),
    )
}

# What a hostile_state_request sends (params.request; absent: all four, in this order). The replay is the
# first write with a start offset the client captured at the latest epochs it saw for the share-partition.
HOSTILE_STATE_REQUESTS: Final = ("replayed_write", "write_negative_leader_epoch", "write_negative_state_epoch",
                                 "read_negative_leader_epoch")
# Sent only when params.request names it: a ReadShareGroupStateSummary, then an InitializeShareGroupState
# repeating the state epoch and start offset it answered (a duplicate: trunk answers it without writing).
HOSTILE_NAMED_ONLY: Final = ("repeated_initialize",)

# What a hostile_share_request sends (params.request; absent: all, in this order; model/sim/hostile.py).
# A hostile member ("hostile-N", a member of no group) runs them at the share-partition's leader on a
# share session of its own, each once the previous is answered, so its epochs are stale or fresh for
# certain: acknowledgements in a ShareFetch that opens a session; a ShareAcknowledge with no session;
# on its session, acknowledgements of offsets it never acquired, a real member's acknowledgements
# captured on the wire (duplicated), malformed batches, a stale epoch and epoch -2; and a real member's
# id with epoch -2.
HOSTILE_SHARE_REQUESTS: Final = ("acks_on_fresh_session", "unknown_session", "acks_never_acquired",
                                 "duplicated_acks", "invalid_ack_batches", "stale_session_epoch",
                                 "negative_session_epoch", "member_negative_epoch")

_ALL_USES: Final = ("side_a", "side_b", "one_way", "kinds", "links", "nodes", "probability", "extra", "extra_ms")
_OFFSET_WORDS: Final = ("earliest", "latest")
_DELETE_TO_WORDS: Final = ("hwm", "half")  # delete_records params.to (model.sim.admin.DELETE_TO_WORDS)
_RESTART_WORDS: Final = ("yes", "no")  # consumer_close params.restart


def subscribed_topics(topics: str) -> tuple[str, ...]:
    """consumer_subscribe's params.topics as sorted, distinct names (empty if any name is blank)."""
    names = [name.strip() for name in topics.split(",")]
    return () if any(not name for name in names) else tuple(sorted(set(names)))


_COORDINATOR_WORDS: Final = ("share", "group")  # coordinator_failover_mid_load params.coordinator


class FaultPlanError(ValueError):
    """One or more problems with a fault event or plan, each naming event, field, value and what is allowed."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("invalid fault plan:\n  " + "\n  ".join(problems))
        self.problems = problems


ParamValue = int | str


# Interpreted in the compiled build (setup.py): scenarios carry it into Spark's workers, and a
# native frozen class cannot be unpickled; its checks also keep their messages for any input.
@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class FaultEvent:
    """One timed fault. Which fields a kind reads is in ``FAULT_KINDS``; the rest must stay at their defaults."""

    at_ms: int
    kind: str
    target: str = ""
    duration_ms: int = 0
    side_a: tuple[str, ...] = ()
    side_b: tuple[str, ...] = ()
    one_way: bool = False
    kinds: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    nodes: tuple[str, ...] = ()
    probability: float = 0.0
    extra: Distribution | None = None
    extra_ms: int = 0
    params: tuple[tuple[str, ParamValue], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.params, tuple) and all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in self.params
        ):
            object.__setattr__(self, "params", tuple(sorted(self.params, key=itemgetter(0))))  # canonical order
        problems = self.problems()
        if problems:
            raise FaultPlanError([f"{self.label()}: {p}" for p in problems])

    def label(self) -> str:
        return f"{self.kind} at {self.at_ms} ms"

    @property
    def spec(self) -> FaultKindSpec:
        return FAULT_KINDS[self.kind]

    @property
    def ends_ms(self) -> int:
        """When a durational fault ends by itself (``at_ms`` for instant ones)."""
        return self.at_ms + self.duration_ms

    def param(self, name: str, default: ParamValue | None = None) -> ParamValue | None:
        for key, value in self.params:
            if key == name:
                return value
        return default

    def message_filter(self) -> MessageFilter:
        return MessageFilter(kinds=self.kinds, links=self.links, nodes=self.nodes)

    def problems(self) -> list[str]:
        """Everything wrong with this event (empty if valid)."""
        if self.kind not in FAULT_KINDS:
            return [f"kind = {self.kind!r}: must be one of {', '.join(FAULT_KINDS)}"]
        spec = FAULT_KINDS[self.kind]
        out: list[str] = []
        if not _is_int(self.at_ms) or self.at_ms < 0:
            out.append(f"at_ms = {self.at_ms!r}: must be an integer >= 0")
        if spec.target is None:
            if self.target != "":
                out.append(f"target = {self.target!r}: {self.kind} takes no target")
        elif not isinstance(self.target, str) or not self.target:
            out.append(f"target = {self.target!r}: {self.kind} needs a {spec.target} name")
        if spec.durational:
            if not _is_int(self.duration_ms) or self.duration_ms < 1:
                out.append(f"duration_ms = {self.duration_ms!r}: must be an integer >= 1 for {self.kind}")
        elif self.duration_ms != 0:
            out.append(f"duration_ms = {self.duration_ms!r}: {self.kind} is instantaneous; leave it 0")
        defaults = {f.name: f.default for f in fields(self)}
        for name in _ALL_USES:
            if name not in spec.uses and getattr(self, name) != defaults[name]:
                out.append(f"{name} = {getattr(self, name)!r}: not used by {self.kind}")
        out += _check_uses(self)
        out += _check_params(self, spec)
        return out

    # -- records (scenario files, reproducers) -------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The non-default fields as plain data (lists, dicts), the form ``from_record`` reads."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in ("at_ms", "kind") and value == f.default:
                continue
            if isinstance(value, Distribution):
                value = value.to_mapping()
            elif f.name == "params":
                value = dict(value)
            elif f.name == "links":
                value = [list(pair) for pair in value]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> FaultEvent:
        allowed = {f.name for f in fields(cls)}
        unknown = sorted(set(record) - allowed)
        label = f"{record.get('kind', '?')} at {record.get('at_ms', '?')} ms"
        if unknown:
            raise FaultPlanError(
                [f"{label}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"]
            )
        for required in ("at_ms", "kind"):
            if required not in record:
                raise FaultPlanError([f"{label}: missing {required}"])
        values = dict(record)
        try:
            if isinstance(values.get("extra"), Mapping):
                values["extra"] = Distribution.from_mapping(values["extra"])
        except DistributionError as exc:
            raise FaultPlanError([f"{label}: extra: {exc}"]) from None
        if isinstance(values.get("params"), Mapping):
            values["params"] = tuple(values["params"].items())
        elif isinstance(values.get("params"), list):
            values["params"] = tuple(tuple(p) if isinstance(p, list) else p for p in values["params"])
        if isinstance(values.get("links"), list | tuple):
            values["links"] = tuple(tuple(pair) if isinstance(pair, list | tuple) else pair for pair in values["links"])
        for name in ("side_a", "side_b", "kinds", "nodes"):
            if isinstance(values.get(name), list):
                values[name] = tuple(values[name])
        return cls(**values)

    def describe(self) -> str:
        """One readable line, e.g. ``12000 ms  broker_crash b2 for 5000 ms``."""
        parts = [f"{self.at_ms:>8} ms  {self.kind}"]
        if self.target:
            parts.append(self.target)
        record = self.to_record()
        for name in (*_ALL_USES, "params"):
            if name in record:
                parts.append(f"{name}={record[name]}")
        if self.duration_ms:
            parts.append(f"for {self.duration_ms} ms")
        return " ".join(parts)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_uses(event: FaultEvent) -> list[str]:
    out: list[str] = []
    uses = event.spec.uses
    if "side_a" in uses:
        for name in ("side_a", "side_b"):
            side = getattr(event, name)
            if not isinstance(side, tuple) or not side or not all(isinstance(n, str) and n for n in side):
                out.append(f"{name} = {side!r}: must be a non-empty tuple of node names")
        if not out:
            both = sorted(set(event.side_a) & set(event.side_b))
            if both:
                out.append(f"side_a / side_b overlap on {', '.join(both)}: a node cannot be on both sides")
        if not isinstance(event.one_way, bool):
            out.append(f"one_way = {event.one_way!r}: must be true or false")
    if "kinds" in uses:
        try:
            event.message_filter()
        except ValueError as exc:
            out.append(str(exc))
    if "probability" in uses and (
        isinstance(event.probability, bool)
        or not isinstance(event.probability, int | float)
        or not 0 < event.probability <= 1
    ):
        out.append(f"probability = {event.probability!r}: must be in (0, 1]")
    if "extra" in uses and not isinstance(event.extra, Distribution):
        out.append(
            f"extra = {event.extra!r}: must be a Distribution (e.g. {{kind = 'uniform', low_ms = 100, high_ms = 900}})"
        )
    if "extra_ms" in uses and (not _is_int(event.extra_ms) or event.extra_ms < 1):
        out.append(f"extra_ms = {event.extra_ms!r}: must be an integer >= 1")
    return out



def _topic_partition_problems(event: FaultEvent, *, absent_partition: str) -> list[str]:
    """params.topic (a name) and params.partition (an integer >= 0, or absent: ``absent_partition``)."""
    topic, partition = event.param("topic"), event.param("partition")
    out = []
    if not isinstance(topic, str) or not topic:
        out.append(f"params.topic = {topic!r}: {event.kind} needs a topic name")
    if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool) or partition < 0):
        out.append(f"params.partition = {partition!r}: must be an integer >= 0 (or absent: {absent_partition})")
    return out

def _check_params(event: FaultEvent, spec: FaultKindSpec) -> list[str]:
    if not isinstance(event.params, tuple) or not all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in event.params
    ):
        return [f"params = {event.params!r}: must be (name, value) pairs"]
    out: list[str] = []
    names = [name for name, _ in event.params]
    if len(set(names)) != len(names):
        out.append(f"params = {event.params!r}: a name appears twice")
    for name, value in event.params:
        if name not in spec.params:
            allowed = ", ".join(spec.params) or "none"
            out.append(f"params.{name} = {value!r}: not a parameter of {event.kind} (allowed: {allowed})")
        elif not isinstance(value, int | str) or isinstance(value, bool):
            out.append(f"params.{name} = {value!r}: must be an integer or a string")
    kind = event.kind
    if kind == "admin_alter_offsets":
        offset = event.param("offset")
        out += _topic_partition_problems(event, absent_partition="every partition")
        if not ((isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0) or offset in _OFFSET_WORDS):
            out.append(f"params.offset = {offset!r}: must be an integer >= 0, 'earliest' or 'latest'")
    elif kind == "hostile_state_request":
        request = event.param("request")
        out += _topic_partition_problems(event, absent_partition="partition 0")
        if request is not None and request not in HOSTILE_STATE_REQUESTS + HOSTILE_NAMED_ONLY:
            out.append(f"params.request = {request!r}: must be one of "
                       f"{', '.join(HOSTILE_STATE_REQUESTS + HOSTILE_NAMED_ONLY)} (or absent: the first four)")
        rest_ms = event.param("rest_ms")
        if rest_ms is not None and request != "repeated_initialize":
            out.append(f"params.rest_ms = {rest_ms!r}: only with params.request = 'repeated_initialize'")
        elif rest_ms is not None and not (isinstance(rest_ms, int) and _is_int(rest_ms) and rest_ms >= 1):
            out.append(f"params.rest_ms = {rest_ms!r}: must be an integer >= 1 (milliseconds)")
    elif kind == "delete_records":
        to = event.param("to")
        if to is not None and not ((isinstance(to, int) and not isinstance(to, bool) and to >= 0)
                                   or to in _DELETE_TO_WORDS):
            out.append(f"params.to = {to!r}: must be an integer >= 0, 'hwm' or 'half' (or absent: 'hwm')")
    elif kind == "consumer_close":
        restart = event.param("restart")
        if restart is not None and restart not in _RESTART_WORDS:
            out.append(f"params.restart = {restart!r}: must be 'yes' or 'no' (or absent: 'yes')")
    elif kind == "consumer_subscribe":
        topics = event.param("topics")
        if not isinstance(topics, str) or not subscribed_topics(topics):
            out.append(f"params.topics = {topics!r}: must be topic names separated by commas, e.g. 'a,b'")
    elif kind == "admin_add_partitions":
        add = event.param("add")
        if not isinstance(add, int) or isinstance(add, bool) or add < 1:
            out.append(f"params.add = {add!r}: must be an integer >= 1 (partitions to add)")
    elif kind == "coordinator_failover_mid_load":
        coordinator = event.param("coordinator")
        if coordinator is not None and coordinator not in _COORDINATOR_WORDS:
            out.append(f"params.coordinator = {coordinator!r}: must be 'share' or 'group' (or absent: 'share')")
    elif kind in ("state_partition_under_min_isr", "hostile_share_request"):
        topic, partition = event.param("topic"), event.param("partition")
        if topic is not None and (not isinstance(topic, str) or not topic):
            out.append(f"params.topic = {topic!r}: must be a topic name (or absent: the group's first topic)")
        if partition is not None and (not isinstance(partition, int) or isinstance(partition, bool) or partition < 0):
            out.append(f"params.partition = {partition!r}: must be an integer >= 0 (or absent: partition 0)")
        request = event.param("request")
        if request is not None and request not in HOSTILE_SHARE_REQUESTS:
            out.append(f"params.request = {request!r}: must be one of {', '.join(HOSTILE_SHARE_REQUESTS)} "
                       "(or absent: all of them)")
    elif kind == "leadership_move":
        to = event.param("to")
        if to is not None and (not isinstance(to, str) or not to):
            out.append(f"params.to = {to!r}: must be a broker name (or absent: the handler picks one)")
    return out


# -- the plan -------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultPlan:
    """Fault events sorted by ``at_ms`` (ties keep their given order) and the start of the healing phase.

    ``heal_at_ms``: when every fault still active is ended and no more start
    (None: no healing phase is forced; durational faults end on their own).
    """

    events: tuple[FaultEvent, ...] = ()
    heal_at_ms: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.events, tuple) or not all(isinstance(e, FaultEvent) for e in self.events):
            raise FaultPlanError([f"events = {self.events!r}: must be a tuple of FaultEvent"])
        object.__setattr__(self, "events", tuple(sorted(self.events, key=lambda e: e.at_ms)))
        problems = []
        if self.heal_at_ms is not None:
            if not _is_int(self.heal_at_ms) or self.heal_at_ms < 0:
                problems.append(f"heal_at_ms = {self.heal_at_ms!r}: must be an integer >= 0 or None")
            else:
                for index, event in enumerate(self.events):
                    if event.at_ms >= self.heal_at_ms:
                        problems.append(
                            f"event {index} ({event.label()}): at_ms = {event.at_ms}: must be < heal_at_ms "
                            f"({self.heal_at_ms}); no fault starts in the healing phase"
                        )
        if problems:
            raise FaultPlanError(problems)

    def __len__(self) -> int:
        return len(self.events)

    def kinds(self) -> list[str]:
        return sorted({event.kind for event in self.events})

    def without(self, indexes: Iterable[int]) -> FaultPlan:
        drop = set(indexes)
        return replace(self, events=tuple(e for i, e in enumerate(self.events) if i not in drop))

    def to_records(self) -> list[dict[str, Any]]:
        return [event.to_record() for event in self.events]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], heal_at_ms: int | None = None) -> FaultPlan:
        """Build from plain data, reporting the problems of every event at once."""
        events, problems = [], []
        for index, record in enumerate(records):
            try:
                events.append(FaultEvent.from_record(record))
            except FaultPlanError as exc:
                problems += [f"event {index}: {p}" for p in exc.problems]
            except TypeError as exc:
                problems.append(f"event {index}: {exc}")
        if problems:
            raise FaultPlanError(problems)
        return cls(tuple(events), heal_at_ms)

    def describe(self) -> str:
        lines = [event.describe() for event in self.events]
        if self.heal_at_ms is not None:
            lines.append(f"{self.heal_at_ms:>8} ms  heal: every fault ends")
        return "\n".join(lines) if lines else "(no faults)"


# -- swarm mode -------------------------------------------------------------------------


@dataclass(frozen=True)
class SwarmTargets:
    """What a generated fault can hit, and the timeouts the interesting durations are relative to."""

    brokers: tuple[str, ...] = ()
    consumers: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()  # "topic-0" style names, for leadership moves
    topics: tuple[str, ...] = ()
    message_kinds: tuple[str, ...] = ()  # kinds a loss/delay fault may single out
    network_nodes: tuple[str, ...] = ()  # partition candidates; default brokers + consumers
    session_timeout_ms: int = 45_000  # group.share.session.timeout.ms
    lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms

    def nodes(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.network_nodes or self.brokers + self.consumers)))

    def pool(self, target: str) -> tuple[str, ...]:
        pools: dict[str, tuple[str, ...]] = {
            "broker": self.brokers,
            "consumer": self.consumers,
            "group": self.groups,
            "partition": self.partitions,
            "topic": self.topics,
        }
        return tuple(sorted(set(pools[target])))


SWARM_RATE_PER_MINUTE: Final[Mapping[str, float]] = {
    "broker_crash": 1.0,
    "leadership_move": 2.0,
    "group_coordinator_failover": 1.0,
    "share_coordinator_failover": 1.0,
    "network_partition": 1.0,
    "message_loss": 2.0,
    "message_delay": 2.0,
    "consumer_crash": 0.5,
    "consumer_pause": 1.0,
    "slow_processing": 1.0,
    "admin_alter_offsets": 0.3,
    "admin_delete_group": 0.1,
    "admin_add_partitions": 0.3,
    "hostile_state_request": 1.0,
    "delete_records": 1.0,
    "consumer_close": 1.0,
    "consumer_subscribe": 0.5,
    "state_partition_under_min_isr": 0.5,
    "hostile_share_request": 1.0,
    "coordinator_failover_mid_load": 1.0,
}
"""A kind's base rate at intensity 1; each run scales it by a random factor in [0.25, 2]."""

_SWARM_MAX_PER_KIND: Final = 10_000


def swarm_plan(
    seed: int,
    duration_ms: int,
    kinds_available: Iterable[str],
    targets: SwarmTargets,
    intensity: float = 1.0,
    rates: Mapping[str, float] | None = None,
    params: Mapping[str, Mapping[str, ParamValue]] | None = None,
) -> FaultPlan:
    """A random fault plan over ``[0, duration_ms)``; the healing phase starts at ``duration_ms``.

    Each kind in ``kinds_available`` that has something to hit is switched on
    with probability 1/2 (at least one is); each switched-on kind gets a rate
    ``intensity × SWARM_RATE_PER_MINUTE[kind] × U(0.25, 2)`` (``rates[kind]``, when
    given, replaces the table's base rate) and Poisson
    arrival times. Every kind draws its switch and its events from its own
    streams, so making another kind available does not change whether this
    one is on or when its events happen. ``params[kind]`` is laid over the
    parameters each event of that kind draws (it draws nothing less for them).
    """
    if not _is_int(duration_ms) or duration_ms < 1:
        raise FaultPlanError([f"duration_ms = {duration_ms!r}: must be an integer >= 1"])
    if isinstance(intensity, bool) or not isinstance(intensity, int | float) or not 0 < intensity <= 100:
        raise FaultPlanError([f"intensity = {intensity!r}: must be in (0, 100]"])
    wanted = sorted(set(kinds_available))
    unknown = [k for k in wanted if k not in FAULT_KINDS]
    if unknown:
        raise FaultPlanError(
            [f"kinds_available: unknown kind(s) {', '.join(unknown)}; known: {', '.join(FAULT_KINDS)}"]
        )
    usable = [k for k in wanted if has_targets(k, targets)]
    if not usable:
        return FaultPlan((), duration_ms)
    streams = RandomStreams(derive_seed(seed, "swarm"))
    enabled = [kind for kind in usable if streams.get("switch", kind).random() < 0.5]
    if not enabled:
        enabled = [streams.get("fallback").choice(usable)]
    events: list[FaultEvent] = []
    for kind in enabled:
        rng = streams.get("kind", kind)
        base = (rates or {}).get(kind, SWARM_RATE_PER_MINUTE[kind])
        fixed = (params or {}).get(kind)
        per_minute = intensity * base * rng.uniform(0.25, 2.0)
        mean_gap_ms = 60_000.0 / per_minute
        at = 0.0
        for _ in range(_SWARM_MAX_PER_KIND):
            at += exponential_draw(rng, 1.0 / mean_gap_ms)
            if at >= duration_ms:
                break
            events.append(_with_params(_swarm_event(kind, int(at), rng, targets), fixed))
    return FaultPlan(tuple(events), duration_ms)


def _with_params(event: FaultEvent, fixed: Mapping[str, ParamValue] | None) -> FaultEvent:
    """``event`` with the swarm's fixed parameters of its kind laid over the ones it drew."""
    if not fixed:
        return event
    return replace(event, params=tuple({**dict(event.params), **fixed}.items()))


def swarm_params_problems(kind: str, fixed: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``fixed`` as the parameters every swarm-drawn ``kind`` fault takes
    (``[faults.swarm.params]``), each problem as its kind's checks word it."""
    spec = FAULT_KINDS[kind]
    if not spec.params:
        return [f"{kind} takes no params"]
    # An event not validated at construction: the checks of the fixed names are the ones that count (the
    # parameters a swarm draws, such as a topic, are not there yet).
    probe = object.__new__(FaultEvent)
    for f in fields(FaultEvent):
        object.__setattr__(probe, f.name, f.default)
    object.__setattr__(probe, "kind", kind)
    object.__setattr__(probe, "params", tuple(sorted(fixed.items(), key=itemgetter(0))))
    names = tuple(f"params.{name} " for name in fixed)
    return [p for p in _check_params(probe, spec) if p.startswith(names) or p.startswith("params = ")]


GROUP_DRAW_SEPARATOR: Final = "@"  # a group setting drawn for one group: "<kafka key>@<group>"


def group_draw_keys() -> frozenset[str]:
    """The settings a swarm draws per group (``[faults.swarm.config]``): the group-only Kafka keys."""
    from model.core.config import BROKER_SETTINGS, GROUP_SETTINGS
    broker = {s.key for s in BROKER_SETTINGS}
    return frozenset(s.key for s in GROUP_SETTINGS if s.key not in broker)


def swarm_config(seed: int, ranges: Mapping[str, Sequence[int] | Sequence[str]],
                 groups: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, int | str]:
    """The broker settings a swarm run draws: for each key of ``ranges`` (validated by the scenario), one of
    its choices, or an integer in its ``[low, high]``: the low end with probability 1/4, the high end
    with 1/4, else uniform between (bugs sit at the ends of a range, as FoundationDB's knob
    randomisation assumes). Each key draws from its own stream, so adding a key changes no other draw
    and no fault of the plan."""
    streams = RandomStreams(derive_seed(seed, "swarm"))
    drawn: dict[str, int | str] = {}
    per_group = group_draw_keys()
    for key in sorted(ranges):
        if key in per_group:
            # A group setting (e.g. group.share.auto.offset.reset): each group that does not set it itself
            # draws its own, from a stream of its own, under "<key>@<group>".
            for group in sorted(groups or {}):
                if key not in (groups or {})[group]:
                    choices = [str(v) for v in ranges[key]]
                    drawn[f"{key}{GROUP_DRAW_SEPARATOR}{group}"] = streams.get("config", key, group).choice(choices)
            continue
        rng = streams.get("config", key)
        allowed = ranges[key]
        if all(isinstance(v, str) for v in allowed):
            drawn[key] = str(rng.choice(list(allowed)))
            continue
        low, high = int(allowed[0]), int(allowed[1])
        end = rng.random()
        drawn[key] = low if end < 0.25 else high if end < 0.5 else rng.randint(low, high)
    return drawn


def group_draws(drawn: Mapping[str, int | str], group: str) -> dict[str, int | str]:
    """The settings ``swarm_config`` drew for ``group`` (its "<key>@<group>" entries), by Kafka key."""
    suffix = f"{GROUP_DRAW_SEPARATOR}{group}"
    return {key[: -len(suffix)]: value for key, value in drawn.items() if key.endswith(suffix)}


def has_targets(kind: str, targets: SwarmTargets) -> bool:
    """Whether a generated fault of ``kind`` has something to hit (a scenario's validation asks it too)."""
    spec = FAULT_KINDS[kind]
    if spec.target is not None:
        return bool(targets.pool(spec.target))
    if kind == "network_partition":
        return len(targets.nodes()) >= 2
    return True


def _swarm_event(kind: str, at_ms: int, rng: random.Random, targets: SwarmTargets) -> FaultEvent:
    spec = FAULT_KINDS[kind]
    target = rng.choice(targets.pool(spec.target)) if spec.target is not None else ""
    if kind == "broker_crash":
        return FaultEvent(at_ms, kind, target, duration_ms=rng.randint(1_000, 20_000))
    if kind == "leadership_move":
        brokers = targets.pool("broker")
        params: tuple[tuple[str, ParamValue], ...] = (("to", rng.choice(brokers)),) if brokers else ()
        return FaultEvent(at_ms, kind, target, params=params)
    if kind == "network_partition":
        shuffled = list(targets.nodes())
        rng.shuffle(shuffled)
        cut = rng.randint(1, len(shuffled) - 1)
        side_a, rest = tuple(sorted(shuffled[:cut])), shuffled[cut:]
        side_b = tuple(sorted(rest[: rng.randint(1, len(rest))]))
        return FaultEvent(
            at_ms,
            kind,
            duration_ms=rng.randint(1_000, 30_000),
            side_a=side_a,
            side_b=side_b,
            one_way=rng.random() < 0.25,
        )
    if kind in ("message_loss", "message_delay"):
        kinds, nodes = _swarm_filter(rng, targets)
        duration = rng.randint(1_000, 30_000)
        if kind == "message_loss":
            probability = round(rng.uniform(0.05, 0.6), 3)
            return FaultEvent(at_ms, kind, duration_ms=duration, kinds=kinds, nodes=nodes, probability=probability)
        low = rng.randint(10, 500)
        extra = Distribution.uniform(low, low + rng.randint(0, 5_000))
        return FaultEvent(at_ms, kind, duration_ms=duration, kinds=kinds, nodes=nodes, extra=extra)
    if kind == "consumer_pause":
        # Mostly around the session timeout: both sides of it are interesting.
        pause = max(1, int(targets.session_timeout_ms * rng.uniform(0.3, 1.6)))
        return FaultEvent(at_ms, kind, target, duration_ms=pause)
    if kind == "slow_processing":
        extra_ms = max(1, int(targets.lock_duration_ms * rng.uniform(0.3, 1.6)))
        return FaultEvent(at_ms, kind, target, duration_ms=rng.randint(5_000, 60_000), extra_ms=extra_ms)
    if kind == "admin_alter_offsets":
        topics = targets.pool("topic") or ("topic",)
        offset: ParamValue = rng.choice(("earliest", "latest", rng.randint(0, 1_000)))
        return FaultEvent(at_ms, kind, target, params=(("offset", offset), ("topic", rng.choice(topics))))
    if kind == "admin_add_partitions":
        return FaultEvent(at_ms, kind, target, params=(("add", rng.randint(1, 3)),))
    if kind == "delete_records":
        return FaultEvent(at_ms, kind, target, params=(("to", rng.choice(_DELETE_TO_WORDS)),))
    if kind == "consumer_close":  # closed for up to about the session timeout, then a new member
        return FaultEvent(at_ms, kind, target, duration_ms=max(1, int(targets.session_timeout_ms
                                                                       * rng.uniform(0.05, 1.2))))
    if kind == "consumer_subscribe":  # a non-empty subset of the scenario's data topics
        pool = list(targets.pool("topic")) or ["topic"]
        chosen = sorted(t for t in pool if rng.random() < 0.5) or [rng.choice(pool)]
        return FaultEvent(at_ms, kind, target, params=(("topics", ",".join(chosen)),))
    if kind == "hostile_state_request":  # every request of the kind, at one of the partitions
        partitions = targets.pool("partition") or ("topic-0",)
        topic, _, number = rng.choice(partitions).rpartition("-")
        return FaultEvent(at_ms, kind, target, params=(("partition", int(number)), ("topic", topic)))
    if kind == "coordinator_failover_mid_load":
        return FaultEvent(at_ms, kind, target, params=(("coordinator", rng.choice(_COORDINATOR_WORDS)),))
    if kind == "hostile_share_request":  # every request of the kind, at one of the partitions
        partitions = targets.pool("partition") or ("topic-0",)
        topic, _, number = rng.choice(partitions).rpartition("-")
        return FaultEvent(at_ms, kind, target, params=(("partition", int(number)), ("topic", topic)))
    if kind == "state_partition_under_min_isr":
        # From well inside to well past the persister's retries (model/sim/broker.py, about 6.5 s).
        partitions = targets.pool("partition") or ("topic-0",)
        topic, _, number = rng.choice(partitions).rpartition("-")
        return FaultEvent(at_ms, kind, target, duration_ms=rng.randint(2_000, 20_000),
                          params=(("partition", int(number)), ("topic", topic)))
    return FaultEvent(at_ms, kind, target)  # the failovers, consumer_crash, admin_delete_group


def _swarm_filter(rng: random.Random, targets: SwarmTargets) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which messages a generated loss/delay hits: a kind, a node, responses, or everything."""
    choice = rng.randint(0, 3)
    message_kinds = tuple(sorted(set(targets.message_kinds)))
    nodes = targets.nodes()
    if choice == 0 and message_kinds:
        return (rng.choice(message_kinds),), ()
    if choice == 1 and nodes:
        return (), (rng.choice(nodes),)
    if choice == 2:
        return ("*Response",), ()
    return (), ()


# -- the injector -------------------------------------------------------------------------


@dataclass(frozen=True)
class FaultHandler:
    """How the simulated cluster applies a fault kind.

    ``start`` returns True if it did something (a crash of a broker that is
    already down returns False, and is not counted as fired); ``end`` undoes a
    durational fault that ``start`` applied.
    """

    start: Callable[[FaultEvent], bool]
    end: Callable[[FaultEvent], None] | None = None


class _Active(NamedTuple):
    event: FaultEvent
    end_timer: Timer


class FaultInjector:
    """Fires a plan's events on a scheduler through per-kind handlers; see the module docstring.

    Counters (dicts by kind): ``fired`` (handler applied it), ``skipped``
    (handler declined), ``ended`` (a durational fault undone, by itself or by
    the heal).
    """

    def __init__(
        self,
        scheduler: Scheduler,
        plan: FaultPlan,
        handlers: Mapping[str, FaultHandler | Callable[[FaultEvent], bool]],
        trace: Trace | None = None,
        *,
        node: str = "faults",
    ) -> None:
        self._scheduler = scheduler
        self.plan = plan
        self._trace = trace
        self._node = node
        self._handlers: dict[str, FaultHandler] = {
            kind: h if isinstance(h, FaultHandler) else FaultHandler(h) for kind, h in handlers.items()
        }
        problems = []
        for kind in plan.kinds():
            handler = self._handlers.get(kind)
            if handler is None:
                problems.append(f"no handler for fault kind {kind} (handlers given: {', '.join(sorted(handlers))})")
            elif FAULT_KINDS[kind].durational and handler.end is None:
                problems.append(f"the handler for {kind} needs an end(): {kind} lasts duration_ms")
        if plan.events and plan.events[0].at_ms < scheduler.now_ms:
            problems.append(f"the plan starts at {plan.events[0].at_ms} ms, before now ({scheduler.now_ms} ms)")
        if plan.heal_at_ms is not None and plan.heal_at_ms < scheduler.now_ms:
            problems.append(f"heal_at_ms = {plan.heal_at_ms}: before now ({scheduler.now_ms} ms)")
        if problems:
            raise FaultPlanError(problems)
        self.fired: dict[str, int] = {}
        self.skipped: dict[str, int] = {}
        self.ended: dict[str, int] = {}
        # Plan index -> when its fault was applied / undone: the intervals a run report shades.
        self.applied_at_ms: dict[int, int] = {}
        self.ended_at_ms: dict[int, int] = {}
        self.healed = False
        self._active: dict[int, _Active] = {}
        self._pending: list[Timer] = [
            scheduler.timer_at(event.at_ms, self._start, index, event) for index, event in enumerate(plan.events)
        ]
        self._heal_timer = None if plan.heal_at_ms is None else scheduler.timer_at(plan.heal_at_ms, self.heal)

    @property
    def active(self) -> list[FaultEvent]:
        """Durational faults applied and not yet ended, in plan order."""
        return [self._active[index].event for index in sorted(self._active)]

    def _start(self, index: int, event: FaultEvent) -> None:
        if self.healed:
            return
        applied = self._handlers[event.kind].start(event)
        if not isinstance(applied, bool):
            raise TypeError(f"the {event.kind} handler returned {applied!r}: it must return True (applied) or False")
        counter = self.fired if applied else self.skipped
        counter[event.kind] = counter.get(event.kind, 0) + 1
        if applied:
            self.applied_at_ms[index] = self._scheduler.now_ms
        self._record("fault_start" if applied else "fault_skip", index, event)
        if applied and FAULT_KINDS[event.kind].durational:
            timer = self._scheduler.timer(event.duration_ms, self._end, index)
            self._active[index] = _Active(event, timer)

    def _end(self, index: int) -> None:
        active = self._active.pop(index)
        active.end_timer.cancel()
        end = self._handlers[active.event.kind].end
        assert end is not None  # checked in __init__
        end(active.event)
        self.ended[active.event.kind] = self.ended.get(active.event.kind, 0) + 1
        self.ended_at_ms[index] = self._scheduler.now_ms
        self._record("fault_end", index, active.event)

    def heal(self) -> None:
        """Start the healing phase now: end every active fault (plan order); start no more."""
        if self.healed:
            return
        self.healed = True
        for timer in self._pending:
            timer.cancel()
        if self._heal_timer is not None:
            self._heal_timer.cancel()
        if self._trace is not None:
            self._trace.record(self._scheduler.now_ms, self._node, "heal", active=len(self._active))
        for index in sorted(self._active):
            self._end(index)

    def _record(self, what: str, index: int, event: FaultEvent) -> None:
        if self._trace is not None:
            self._trace.record(
                self._scheduler.now_ms, self._node, what, fault=event.kind, index=index, target=event.target
            )


def network_fault_handlers(network: Network) -> dict[str, FaultHandler]:
    """Handlers for network_partition, message_loss and message_delay on ``network``."""
    handles: dict[tuple[str, FaultEvent], list[int]] = {}

    def remember(event: FaultEvent, handle: int) -> bool:
        handles.setdefault((event.kind, event), []).append(handle)
        return True

    def forget(event: FaultEvent) -> int:
        stack = handles[(event.kind, event)]
        handle = stack.pop(0)
        if not stack:
            del handles[(event.kind, event)]
        return handle

    def start_partition(event: FaultEvent) -> bool:
        return remember(event, network.partition(event.side_a, event.side_b, one_way=event.one_way))

    def start_loss(event: FaultEvent) -> bool:
        return remember(event, network.add_loss(event.probability, event.message_filter()))

    def start_delay(event: FaultEvent) -> bool:
        return remember(event, network.add_delay(_require(event.extra), event.message_filter()))

    return {
        "network_partition": FaultHandler(start_partition, lambda event: _ignore(network.heal(forget(event)))),
        "message_loss": FaultHandler(start_loss, lambda event: _ignore(network.remove_loss(forget(event)))),
        "message_delay": FaultHandler(start_delay, lambda event: _ignore(network.remove_delay(forget(event)))),
    }


def _ignore(_: object) -> None:
    return None


def _require(extra: Distribution | None) -> Distribution:
    if extra is None:
        raise FaultPlanError(["message_delay needs extra"])
    return extra


# -- shrinking ---------------------------------------------------------------------------


def shrink(plan: FaultPlan, fails: Callable[[FaultPlan], bool], *, max_runs: int = 1_000) -> FaultPlan:
    """The smallest sub-plan (by greedy delta debugging) for which ``fails`` still holds.

    ``fails(plan)`` must be True to begin with. The result is 1-minimal:
    removing any single event makes ``fails`` False, unless ``max_runs``
    calls ran out first. Deterministic: chunks are tried in plan order.
    """
    if not fails(plan):
        raise ValueError("shrink needs a plan that fails; this one passes")
    runs = 1
    current = plan
    chunks = 2
    while len(current) >= 1 and runs < max_runs:
        size = len(current)
        chunks = min(chunks, size)
        bounds = [(i * size) // chunks for i in range(chunks + 1)]
        reduced = False
        for lo, hi in itertools.pairwise(bounds):
            if runs >= max_runs:
                break
            candidate = current.without(range(lo, hi))
            runs += 1
            if fails(candidate):
                current = candidate
                chunks = max(chunks - 1, 2)
                reduced = True
                break
        if reduced:
            continue
        if chunks >= size:
            break
        chunks = min(size, chunks * 2)
    return current
