"""A whole simulated cluster built from a ``Scenario`` and a seed, and how it runs.

``Cluster(scenario, seed)`` builds, in this order (the order is part of the
trace, so it never depends on dict or set iteration of strings):

* a ``Scheduler``, ``RandomStreams(derive_seed(seed, scenario.name))``, a ``Trace``;
* a ``Network`` over a networkx graph of every node ("b1".., "c1".., "p1"..,
  "admin") with the scenario's one-way latency;
* the ``Controller`` and the brokers, the two internal topics and the data
  topics (leaders elected, metadata published), and the ``LogCleaner`` of the compacted topics;
* the clients: share consumers (and KIP-848 consumers), producers, the admin client;
* the ``FaultInjector`` with a handler for every fault kind (``fault_handlers``)
  over the scenario's plan, or a swarm plan drawn from the seed.

``run()`` runs the fault phase ``[0, duration_ms)``; at ``duration_ms`` the
injector heals every fault and the healing phase runs until quiescence —
every producer done, every share-partition of a group with a live consumer
has SPSO = its bound under the current leader (every produced record
acknowledged or archived), and every live share consumer is a stable member —
or until ``heal_ms`` more have passed. At that liveness deadline an
unfinished run reports E-1 (records neither acknowledged nor archived) and E-5
(members not stable) violations.

Fault kinds → cluster operations:

* ``broker_crash``: ``Controller.crash_broker`` (memory lost, leaders move); restart at the end;
* ``leadership_move``: ``Controller.move_leadership`` of "topic-N" (to ``params.to`` if eligible);
* ``group_coordinator_failover``: move the ``__consumer_offsets`` partition holding the group (GC-6);
* ``share_coordinator_failover``: move the ``__share_group_state`` partition holding the state of
  the group's first share-partition (SC-1);
* ``network_partition`` / ``message_loss`` / ``message_delay``: ``network_fault_handlers``;
* ``consumer_crash`` / ``consumer_pause`` / ``slow_processing``: the consumer's ``crash`` /
  ``pause`` (until the end) / ``slow_processing(extra_ms)`` (0 at the end);
* ``consumer_close``: the consumer's ``close()`` (a static KIP-848 member's with epoch -2), then
  ``restart_after_close`` when it ends (unless ``params.restart = "no"``); ``consumer_subscribe``: its
  ``subscribe(params.topics)``;
* ``admin_*``: the admin client (``AdminClient.apply``);
* ``delete_records``: the admin client's DeleteRecords to the leader of "topic-N" (``AdminClient.delete_records``);
* ``hostile_state_request``: ``HostileStateClient.apply`` from the admin node (``model.sim.hostile``),
  which taps the wire for WriteShareGroupState from the start of a run whose plan holds the kind.
* ``hostile_share_request``: ``HostileShareClient.apply`` from the admin node, to the share-partition's
  leader (it taps ShareFetch / ShareAcknowledge for a real member's id and acknowledgements);
* ``coordinator_failover_mid_load``: move the group's share (or group) coordinator partition, and move it
  again half a load delay later, while the new coordinator still loads;
* ``state_partition_under_min_isr``: ``Controller.shrink_isr`` of the ``__share_group_state`` partition
  holding the share-partition's state, ``expand_isr`` at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import networkx as nx

from invariants.intervals import IntervalSet
from invariants.ledger import Ledger
from invariants.monitors import Monitor, Monitors, ViolationSink, standard_monitors
from invariants.violation import Violation
from model.core.config import (
    BrokerConfig,
    GroupConfig,
    effective_delivery_count_limit,
    effective_lock_duration_ms,
    load_broker_config,
    load_group_config,
)
from model.core.group.consumer_group import ConsumerGroup
from model.core.group.consumer_member import MemberStatus
from model.core.group.coordinator import GroupCoordinatorShard
from model.core.group.share_group import ShareGroup
from model.core.group.share_member import MemberState
from model.core.share_state import AcknowledgeType, RecordState, SharePartitionKey
from model.sim.admin import AdminClient
from model.sim.client import ClientConfig, ClientMetrics
from model.sim.controller import Controller, topic_id_for
from model.sim.faults import (
    GROUP_DRAW_SEPARATOR,
    FaultEvent,
    FaultHandler,
    FaultInjector,
    FaultPlan,
    group_draws,
    network_fault_handlers,
    subscribed_topics,
    swarm_config,
    swarm_plan,
)
from model.sim.hostile import HostileShareClient, HostileStateClient
from model.sim.log_cleaner import NEVER_RETAINED_MS, LogCleaner, LogRetention
from model.sim.network import Network
from model.sim.producer import Producer, ProducerSettings
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, SHARE_STATE_TOPIC, Observer
from model.sim.rng import RandomStreams, derive_seed
from model.sim.share_consumer import ShareConsumer, ShareConsumerSettings
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace
from scenarios.spec import ADMIN_NODE

if TYPE_CHECKING:
    from model.core.share_partition import AcknowledgementBatch, SharePartition
    from model.sim.broker import Broker
    from scenarios.spec import Scenario

_ACCEPT: Final = int(AcknowledgeType.ACCEPT)
QUIESCENCE_CHECK_MS: Final = 250  # how often the healing phase looks for quiescence
CLUSTER_NODE: Final = "cluster"


class ClusterTracker(Monitor):
    """What the runner itself watches: the latest share-partition leader per key (for
    quiescence and the archived count), the offsets whose ACCEPT a leader confirmed after its
    state write (a consumer may never hear of one: its answer was lost), leader starts and
    elections (failovers)."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self.latest: dict[SharePartitionKey, SharePartition] = {}
        self.first_spso: dict[SharePartitionKey, int] = {}
        # (time_ms, key, broker, leader_epoch) of every share-partition leader start.
        self.leader_starts: list[tuple[int, SharePartitionKey, int, int]] = []
        self.elections: dict[str, int] = {}  # topic -> leader elections after the start
        self.failovers_in_transition = 0
        self.sessions_disconnected = 0  # share sessions a leader ended because their connection closed
        self.events: dict[str, int] = {}
        self.accepted: dict[SharePartitionKey, IntervalSet] = {}

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        accepted = self.accepted.get(key)
        if accepted is None:
            accepted = self.accepted[key] = IntervalSet()
        for batch in batches:
            types = batch.acknowledge_types
            if len(types) == 1:
                if types[0] == _ACCEPT:
                    accepted.add(batch.first_offset, batch.last_offset)
                continue
            for index, ack_type in enumerate(types):
                if ack_type == _ACCEPT:
                    accepted.add(batch.first_offset + index, batch.first_offset + index)

    def accepted_between(self, key: SharePartitionKey, first: int, end: int) -> int:
        """How many offsets in [first, end) a leader confirmed as accepted."""
        accepted = self.accepted.get(key)
        if accepted is None:
            return 0
        return sum(max(0, min(hi, end - 1) - max(lo, first) + 1) for lo, hi in accepted)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        key = partition.key
        latest = self.latest.get(key)
        if latest is None or partition.leader_epoch >= latest.leader_epoch:
            self.latest[key] = partition
        if partition.ready and key not in self.first_spso:
            self.first_spso[key] = partition.spso

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        self.leader_starts.append((now_ms, key, broker, leader_epoch))
        previous = self.latest.get(key)
        # A failover while records were in transition (acquired, or a state write in flight): campaigns count it.
        if previous is not None and (previous.acquired_count or previous.pending_write_ids()):
            self.failovers_in_transition += 1

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        self.events[kind] = self.events.get(kind, 0) + 1
        if kind == "leader.elect" and now_ms > 0:
            topic = str(fields.get("topic", ""))
            self.elections[topic] = self.elections.get(topic, 0) + 1
        elif kind == "share.sessions_disconnected":
            self.sessions_disconnected += int(fields.get("sessions", 0))


_SHOWN_PARTITIONS: Final = 5  # E-1 lists this many share-partitions, then counts the rest
_SHOWN_STATES: Final = 6  # and this many (state, owner) groups of offsets per share-partition


class Unresolved(NamedTuple):
    """A share-partition not resolved: offsets ``first`` .. ``bound - 1`` at or above its SPSO, and the
    current leader's share-partition (None without a ready one at the current leader epoch: ``why``)."""

    group: str
    topic: str
    partition: int
    first: int
    bound: int
    leader: SharePartition | None
    why: str
    # Issue 25, from the ghost ledger: records the producers had acknowledged that the group never
    # consumed and the window does not show (below the SPSO unjustified, beyond the group's bound).
    lost: int = 0
    lost_first: int = -1

    @property
    def name(self) -> str:
        return f"{self.group} {self.topic}-{self.partition}"

    @property
    def offsets(self) -> int:
        return max(0, self.bound - self.first) + self.lost

    def describe(self, members: Mapping[str, str]) -> str:
        """"g t-0: offsets 10-674 (600 AVAILABLE, 65 ACQUIRED by c2)": the offsets by state (in offset
        order), an acquired one with its owner (a consumer's name, else the member id), ranges not numbers."""
        window = max(0, self.bound - self.first)
        where = f"offsets {self.first}-{self.bound - 1}" if window > 1 else f"offset {self.first}"
        if self.leader is None:
            return f"{self.name}: {self.why}" + (f", {where} outstanding" if self.offsets else "")
        counts: dict[str, int] = {}
        for batch in self.leader.batches():
            first, last = max(batch.first_offset, self.first), min(batch.last_offset, self.bound - 1)
            if first > last:
                continue
            label = batch.state.name
            if batch.state is RecordState.ACQUIRED:
                label += f" by {members.get(batch.owner or '', batch.owner or '?')}"
            if batch.in_transition:
                label += f" (write to {batch.target_state.name} in flight)"
            counts[label] = counts.get(label, 0) + last - first + 1
        beyond = self.bound - max(self.first, self.leader.speo)
        if beyond > 0:
            counts["not yet acquired"] = beyond
        shown = [f"{n} {label}" for label, n in list(counts.items())[:_SHOWN_STATES]]
        rest = sum(list(counts.values())[_SHOWN_STATES:])
        if rest:
            shown.append(f"{rest} in other states")
        lost = (f"{self.lost} record(s) the producers had acknowledged, from offset {self.lost_first}, neither "
                "acknowledged by a client nor archived for a protocol reason, outside the window")
        if not window:
            return f"{self.name}: {lost}"
        return f"{self.name}: {where} ({', '.join(shown)})" + (f"; and {lost}" if self.lost else "")


def _percentile(values: Sequence[int], fraction: float) -> int | None:
    if not values:
        return None  # nothing accepted: no latency, rather than a latency of 0 that would pull means down
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, int(fraction * len(ordered) + 0.5) - 1))
    return ordered[index]


class Cluster:
    def __init__(
        self,
        scenario: Scenario,
        seed: int,
        *,
        keep_trace: bool = False,
        stop_on_first_violation: bool = True,
        monitors: Sequence[Monitor] | None = None,
        extra_monitors: Sequence[Monitor] = (),
        trace_messages: bool = True,
    ) -> None:
        self.scenario = scenario
        self.seed = seed
        self.scheduler = Scheduler()
        self.streams = RandomStreams(derive_seed(seed, scenario.name))
        self.trace = Trace(keep=keep_trace)
        self.stop_on_first_violation = stop_on_first_violation
        swarm = scenario.faults.swarm
        # The broker settings this run drew (a swarm's `config` ranges), over the scenario's own.
        # A group setting drawn for one group (group.share.auto.offset.reset) is "<key>@<group>"; a group's own
        # setting is never drawn over.
        self.swarm_config: dict[str, int | str] = (
            swarm_config(seed, swarm.config, {g.name: g.config for g in scenario.groups})
            if swarm and swarm.config else {})
        self.broker_config: BrokerConfig = load_broker_config(
            {**scenario.cluster.config,
             **{k: v for k, v in self.swarm_config.items() if GROUP_DRAW_SEPARATOR not in k}})
        self.group_configs: dict[str, GroupConfig] = {
            g.name: load_group_config({**group_draws(self.swarm_config, g.name), **g.config}, self.broker_config)
            for g in scenario.groups
        }
        self._stopped = False
        # Made here, not in run(): a monitor may report while the cluster is built (a coordinator's first load).
        self._stop_event = self.scheduler.event()
        self._stop_timer: Timer | None = None
        self.quiescent_at_ms: int | None = None

        # -- the observers: the invariant monitors and the runner's own tracker --------------------
        limits = {name: effective_delivery_count_limit(self.broker_config, cfg)
                  for name, cfg in self.group_configs.items()}
        locks = {name: effective_lock_duration_ms(self.broker_config, cfg) for name, cfg in self.group_configs.items()}
        if monitors is None:
            standard = standard_monitors(seed, delivery_count_limit=self.broker_config.delivery_count_limit,
                                         lock_duration_ms=self.broker_config.record_lock_duration_ms,
                                         limits=limits, lock_durations=locks)
            sink = standard.sink
            chosen: list[Monitor] = list(standard.monitors)
        else:
            chosen = list(monitors)
            sink = chosen[0].sink if chosen else ViolationSink(seed)
        for extra in extra_monitors:
            extra.sink = sink
            chosen.append(extra)
        sink.on_violation = self._on_violation
        self.sink = sink
        self.tracker = ClusterTracker(sink)
        # E-1 counts from the ghost ledger's facts too (what producers had acknowledged), if it runs.
        self.ledger = next((m for m in chosen if isinstance(m, Ledger)), None)
        self.observer: Observer = Monitors((*chosen, self.tracker), sink)

        # -- nodes and the network -------------------------------------------------------------
        spec = scenario.cluster
        self.broker_ids = list(range(1, spec.brokers + 1))
        consumer_names = scenario.consumer_names()  # (name, index into scenario.consumers)
        producer_names = scenario.producer_names()
        graph = nx.Graph()
        graph.add_nodes_from(scenario.network_nodes())
        self.network = Network(self.scheduler, graph, self.streams, self.trace,
                               default_latency=spec.latency, trace_messages=trace_messages)

        # -- controller, brokers, topics ---------------------------------------------------------
        racks = {b: f"r{(b - 1) % spec.racks}" for b in self.broker_ids} if spec.racks > 1 else None
        self.controller = Controller(
            self.scheduler, self.network, self.streams,
            broker_ids=self.broker_ids, latency=spec.latency,
            replication_factor=spec.replication_factor, min_insync_replicas=spec.min_insync_replicas,
            racks=racks, trace=self.trace, observer=self.observer,
        )
        self.brokers: dict[int, Broker] = {}
        for broker_id in self.broker_ids:
            broker = self._make_broker(broker_id)
            self.brokers[broker_id] = broker  # it registers itself with the controller
        self.controller.create_topic(SHARE_STATE_TOPIC, spec.share_state_partitions, publish=False)
        self.controller.create_topic(CONSUMER_OFFSETS_TOPIC, spec.consumer_offsets_partitions, publish=False)
        for topic in scenario.topics:
            self.controller.create_topic(topic.name, topic.partitions, publish=False,
                                         replication_factor=topic.replication_factor)
        self.controller.publish()
        self.log_cleaner = LogCleaner(
            self.scheduler, self.controller, [t.name for t in scenario.topics if t.compacted],
            backoff_ms=self.broker_config.log_cleaner_backoff_ms,
            min_compaction_lag_ms=self.broker_config.log_cleaner_min_compaction_lag_ms, trace=self.trace,
        )
        default_retention = self.broker_config.log_retention_ms
        retention = {t.name: t.retention_ms or default_retention for t in scenario.topics}
        self.log_retention = LogRetention(
            self.scheduler, self.controller,
            {name: ms for name, ms in retention.items() if ms < NEVER_RETAINED_MS},
            interval_ms=self.broker_config.log_retention_check_interval_ms,
            segment_records=self.broker_config.log_segment_records, trace=self.trace,
        )

        # -- clients -----------------------------------------------------------------------------
        metadata = self._metadata
        client_config = ClientConfig(metadata_refresh_ms=spec.metadata_refresh_ms)
        self.consumers: dict[str, Any] = {}
        self.share_consumers: dict[str, ShareConsumer] = {}
        groups = {g.name: g for g in scenario.groups}
        for name, index in consumer_names:
            cspec = scenario.consumers[index]
            group = groups[cspec.group]
            if group.kind == "share":
                client: Any = ShareConsumer(
                    name, group.name, group.topics, self.scheduler, self.network, metadata, self.streams,
                    settings=ShareConsumerSettings(
                        processing=cspec.processing, accept=cspec.ack.accept, release=cspec.ack.release,
                        reject=cspec.ack.reject, poison_rate=cspec.poison_rate, poison_seed=seed,
                        ack_mode=cspec.ack_mode, max_poll_records=cspec.max_poll_records,
                        min_bytes=cspec.fetch_min_bytes, max_wait_ms=cspec.fetch_max_wait_ms,
                        renew_interval_ms=self._renew_interval_ms(group.name) if cspec.ack.renew else 0,
                        acquire_mode=cspec.acquire_mode,
                    ),
                    config=replace(client_config, request_timeout_ms=cspec.request_timeout_ms), trace=self.trace,
                )
                self.share_consumers[name] = client
            else:
                client = self._make_kip848_consumer(name, cspec, group.name, group.topics,
                                                    replace(client_config, request_timeout_ms=cspec.request_timeout_ms))
            self.consumers[name] = client
        self.producers: dict[str, Producer] = {}
        for i, (name, pspec) in enumerate(zip(producer_names, scenario.producers, strict=True)):
            txn = pspec.transactions
            self.producers[name] = Producer(
                name, 1_000 + i, self.scheduler, self.network, metadata, self.streams,
                settings=ProducerSettings(
                    topic=pspec.topic, records=pspec.records, rate_per_s=pspec.rate_per_s, keys=pspec.keys,
                    records_per_transaction=txn.records_per_transaction if txn else 0,
                    abort_rate=txn.abort_rate if txn else 0.0, start_ms=pspec.start_ms,
                    linger_ms=pspec.linger_ms, batch_size=pspec.batch_size,
                ),
                config=replace(client_config, metadata_max_age_ms=pspec.metadata_max_age_ms), trace=self.trace,
            )
        self.admin = AdminClient(ADMIN_NODE, self.scheduler, self.network, metadata,
                                 add_partitions=self._add_partitions, config=client_config, trace=self.trace)

        # -- faults ------------------------------------------------------------------------------
        self.plan = self._fault_plan()
        # Taps the wire from the start, so only when the plan holds the kind: other runs are unchanged.
        self.hostile = (HostileStateClient(self.admin, self.network)
                        if "hostile_state_request" in self.plan.kinds() else None)
        self.hostile_share = (HostileShareClient(self.admin, self.network, self.observer)
                              if "hostile_share_request" in self.plan.kinds() else None)
        self.injector = FaultInjector(self.scheduler, self.plan, self.fault_handlers(), self.trace)

    # -- building blocks ------------------------------------------------------------------------

    def _metadata(self) -> Any:
        return self.controller.metadata

    def _make_broker(self, broker_id: int) -> Broker:
        from model.sim.broker import Broker

        return Broker(
            broker_id, self.scheduler, self.network, self.controller,
            config=self.broker_config, group_configs=self.group_configs, trace=self.trace, observer=self.observer,
        )

    def _renew_interval_ms(self, group_id: str) -> int:
        """How often a renewing share consumer renews: half the group's acquisition lock, as the
        KafkaShareConsumer example waits acquisitionLockTimeoutMs / 2 before renewing again."""
        return max(1, effective_lock_duration_ms(self.broker_config, self.group_configs[group_id]) // 2)

    def _make_kip848_consumer(self, name: str, cspec: Any, group_id: str, topics: tuple[str, ...],
                              client_config: ClientConfig) -> Any:
        from model.sim.consumer import Consumer, ConsumerSettings

        consumer = Consumer(
            name, group_id, topics, self.scheduler, self.network, self._metadata, self.streams,
            settings=ConsumerSettings(processing=cspec.processing, max_poll_records=cspec.max_poll_records,
                                      instance_id=name if cspec.static else None),
            config=client_config, trace=self.trace,
        )
        consumer.observer = self.observer
        return consumer

    def _add_partitions(self, topic: str, add: int) -> None:
        self.controller.add_partitions(topic, add)

    def _fault_plan(self) -> FaultPlan:
        scenario = self.scenario
        swarm = scenario.faults.swarm
        if swarm is None:
            return scenario.fault_plan()
        targets = replace(scenario.fault_targets(), session_timeout_ms=self.broker_config.share_session_timeout_ms,
                          lock_duration_ms=self.broker_config.record_lock_duration_ms)
        return swarm_plan(self.seed, scenario.duration_ms, swarm.kinds, targets, swarm.intensity, swarm.rates,
                          swarm.params)

    # -- fault handlers -------------------------------------------------------------------------

    def fault_handlers(self) -> dict[str, FaultHandler]:
        handlers = network_fault_handlers(self.network)
        handlers.update({
            "broker_crash": FaultHandler(self._crash_broker, self._restart_broker),
            "leadership_move": FaultHandler(self._move_leadership),
            "group_coordinator_failover": FaultHandler(self._group_coordinator_failover),
            "share_coordinator_failover": FaultHandler(self._share_coordinator_failover),
            "consumer_crash": FaultHandler(self._crash_consumer),
            "consumer_pause": FaultHandler(self._pause_consumer, self._resume_consumer),
            "slow_processing": FaultHandler(self._slow_consumer, self._slow_consumer_end),
            "admin_alter_offsets": FaultHandler(self._admin),
            "admin_delete_group": FaultHandler(self._admin),
            "admin_add_partitions": FaultHandler(self._admin),
            "delete_records": FaultHandler(self._delete_records),
            "hostile_state_request": FaultHandler(self._hostile_state_request),
            "consumer_close": FaultHandler(self._close_consumer, self._restart_consumer),
            "consumer_subscribe": FaultHandler(self._subscribe_consumer),
            "state_partition_under_min_isr": FaultHandler(self._shrink_state_isr, self._expand_state_isr),
            "hostile_share_request": FaultHandler(self._hostile_share_request),
            "coordinator_failover_mid_load": FaultHandler(self._failover_mid_load),
        })
        return handlers

    def _broker_id(self, name: str) -> int | None:
        if name.startswith("b") and name[1:].isdigit() and int(name[1:]) in self.brokers:
            return int(name[1:])
        return None

    def _crash_broker(self, event: FaultEvent) -> bool:
        broker_id = self._broker_id(event.target)
        return broker_id is not None and self.controller.crash_broker(broker_id)

    def _restart_broker(self, event: FaultEvent) -> None:
        broker_id = self._broker_id(event.target)
        if broker_id is not None:
            self.controller.restart_broker(broker_id)

    def _move_leadership(self, event: FaultEvent) -> bool:
        topic, _, number = event.target.rpartition("-")
        if not number.isdigit() or not 0 <= int(number) < self.controller.partition_count(topic):
            return False
        to = event.param("to")
        to_id = self._broker_id(to) if isinstance(to, str) else None
        moved = self.controller.move_leadership(topic, int(number), to_id)
        if not moved and to_id is not None:
            moved = self.controller.move_leadership(topic, int(number))  # "to" not eligible: any other replica
        return moved

    def _group_coordinator_failover(self, event: FaultEvent) -> bool:
        partition = self.controller.metadata.group_coordinator_partition(event.target)
        return self.controller.move_leadership(CONSUMER_OFFSETS_TOPIC, partition)

    def _share_coordinator_failover(self, event: FaultEvent) -> bool:
        group = next((g for g in self.scenario.groups if g.name == event.target), None)
        if group is None or not group.topics:
            return False
        topic = sorted(group.topics)[0]
        key = SharePartitionKey(group.name, topic_id_for(topic), 0)
        partition = self.controller.metadata.share_coordinator_partition(key)
        return self.controller.move_leadership(SHARE_STATE_TOPIC, partition)

    def _consumer(self, event: FaultEvent) -> Any:
        consumer = self.consumers.get(event.target)
        return consumer if consumer is not None and consumer.alive else None

    def _crash_consumer(self, event: FaultEvent) -> bool:
        consumer = self._consumer(event)
        if consumer is None:
            return False
        consumer.crash()
        return True

    def _pause_consumer(self, event: FaultEvent) -> bool:
        consumer = self._consumer(event)
        if consumer is None or consumer.paused:
            return False
        consumer.pause(event.duration_ms)
        return True

    def _resume_consumer(self, event: FaultEvent) -> None:
        consumer = self.consumers.get(event.target)
        if consumer is not None and consumer.alive:
            consumer.resume()

    def _slow_consumer(self, event: FaultEvent) -> bool:
        consumer = self._consumer(event)
        if consumer is None or not hasattr(consumer, "slow_processing"):
            return False
        consumer.slow_processing(event.extra_ms)
        return True

    def _slow_consumer_end(self, event: FaultEvent) -> None:
        consumer = self.consumers.get(event.target)
        if consumer is not None and hasattr(consumer, "slow_processing"):
            consumer.slow_processing(0)

    def _close_consumer(self, event: FaultEvent) -> bool:
        """consumer_close: ``close()`` (a static KIP-848 member's is temporary: epoch -2, CG-5); a paused
        consumer cannot call it, nor can one already closing."""
        consumer = self._consumer(event)
        if consumer is None or consumer.paused or consumer.closing:
            return False
        if isinstance(consumer, ShareConsumer):
            consumer.close()
        else:
            consumer.close(temporary=True)
        return True

    def _restart_consumer(self, event: FaultEvent) -> None:
        """The end of consumer_close: the process starts again (after its close finished)."""
        consumer = self.consumers.get(event.target)
        if consumer is not None and event.param("restart", "yes") == "yes":
            consumer.restart_after_close()

    def _subscribe_consumer(self, event: FaultEvent) -> bool:
        consumer = self._consumer(event)
        topics = subscribed_topics(str(event.param("topics", "")))
        if consumer is None or consumer.paused or consumer.closing or not topics or topics == consumer.topics:
            return False
        consumer.subscribe(topics)
        return True

    def _admin(self, event: FaultEvent) -> bool:
        if event.kind != "admin_add_partitions" and event.target not in self.group_configs:
            return False
        if event.kind == "admin_add_partitions" and self.controller.partition_count(event.target) == 0:
            return False
        return self.admin.apply(event)

    def _delete_records(self, event: FaultEvent) -> bool:
        topic, _, number = event.target.rpartition("-")
        if not number.isdigit() or not 0 <= int(number) < self.controller.partition_count(topic):
            return False
        return self.admin.apply(event)

    def _hostile_state_request(self, event: FaultEvent) -> bool:
        if self.hostile is None or event.target not in self.group_configs:
            return False
        return self.hostile.apply(event)

    def _failover_mid_load(self, event: FaultEvent) -> bool:
        """Move the coordinator, then move it again half a load delay later, while the new one loads."""
        group = next((g for g in self.scenario.groups if g.name == event.target), None)
        if group is None:
            return False
        if event.param("coordinator", "share") == "group":
            topic, partition = CONSUMER_OFFSETS_TOPIC, self.controller.metadata.group_coordinator_partition(group.name)
        elif group.topics:
            key = SharePartitionKey(group.name, topic_id_for(sorted(group.topics)[0]), 0)
            topic, partition = SHARE_STATE_TOPIC, self.controller.metadata.share_coordinator_partition(key)
        else:
            return False
        if not self.controller.move_leadership(topic, partition):
            return False
        again = self.broker_config.coordinator_load_base_ms // 2
        self.scheduler.post(again, self._move_again, topic, partition)
        return True

    def _move_again(self, topic: str, partition: int) -> None:
        if not self.injector.healed:
            self.controller.move_leadership(topic, partition)

    def _hostile_share_request(self, event: FaultEvent) -> bool:
        group = next((g for g in self.scenario.groups if g.name == event.target), None)
        if self.hostile_share is None or group is None or not group.topics:
            return False
        return self.hostile_share.apply(event, sorted(group.topics)[0])

    def _state_partition_of(self, event: FaultEvent) -> int | None:
        """The __share_group_state partition holding the state of the event's share-partition."""
        group = next((g for g in self.scenario.groups if g.name == event.target), None)
        if group is None or not group.topics:
            return None
        topic = event.param("topic", sorted(group.topics)[0])
        number = event.param("partition", 0)
        if not isinstance(topic, str) or not isinstance(number, int):
            return None
        key = SharePartitionKey(group.name, topic_id_for(topic), number)
        return self.controller.metadata.share_coordinator_partition(key)

    def _shrink_state_isr(self, event: FaultEvent) -> bool:
        partition = self._state_partition_of(event)
        return partition is not None and self.controller.shrink_isr(SHARE_STATE_TOPIC, partition)

    def _expand_state_isr(self, event: FaultEvent) -> None:
        partition = self._state_partition_of(event)
        if partition is not None:
            self.controller.expand_isr(SHARE_STATE_TOPIC, partition)

    # -- running ----------------------------------------------------------------------------------

    def _on_violation(self, violation: Violation) -> None:
        self.trace.record(self.scheduler.now_ms, CLUSTER_NODE, "violation", invariant=violation.invariant)
        if self.stop_on_first_violation:
            self._stop()

    def _stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._stop_event.succeed()

    @property
    def violations(self) -> list[Violation]:
        return self.sink.violations

    def run(self) -> None:
        scenario = self.scenario
        for consumer in self.consumers.values():
            consumer.start()
        for producer in self.producers.values():
            producer.start()
        self.admin.start()
        self.log_cleaner.start()
        self.log_retention.start()
        deadline = scenario.duration_ms + scenario.heal_ms
        self.scheduler.timer_at(scenario.duration_ms, self._check_quiescence)
        self._stop_timer = self.scheduler.timer_at(deadline, self._deadline)
        self.scheduler.run(until=self._stop_event)
        now = self.scheduler.now_ms
        self.trace.record(now, CLUSTER_NODE, "run.end", quiescent=self.quiescent_at_ms is not None,
                          violations=len(self.violations))
        if not self.violations or not self.stop_on_first_violation:
            self.observer_finish(now)

    def observer_finish(self, now_ms: int) -> None:
        monitors = self.observer
        assert isinstance(monitors, Monitors)
        monitors.finish(now_ms)

    def _check_quiescence(self) -> None:
        if self._stopped:
            return
        if self.unresolved() == (0, 0) and self.unstable_members() == []:
            self.quiescent_at_ms = self.scheduler.now_ms
            self.trace.record(self.scheduler.now_ms, CLUSTER_NODE, "quiescent")
            if self._stop_timer is not None:
                self._stop_timer.cancel()
            self._stop()
            return
        self.scheduler.timer(QUIESCENCE_CHECK_MS, self._check_quiescence)

    def _deadline(self) -> None:
        if self._stopped:
            return
        now = self.scheduler.now_ms
        unresolved = self.unresolved_share_partitions()
        producing = [name for name, producer in self.producers.items() if not producer.finished]
        if unresolved or producing:
            self.sink.report("eventual-resolution", now, event="liveness deadline",
                             **self._unresolved_report(unresolved, producing))
        unstable = self.unstable_members()
        if unstable:
            self.sink.report("member-convergence", now, event="liveness deadline",
                             message=f"{len(unstable)} live member(s) not stable "
                             f"{self.scenario.heal_ms} ms after the faults stopped: {', '.join(unstable)}",
                             members=unstable)
        self._stop()

    def _unresolved_report(self, unresolved: list[Unresolved], producing: list[str]) -> dict[str, Any]:
        """E-1's message and state: how many offsets, on which share-partitions, held in which states by whom;
        every number in it counts offsets it then lists, so it cannot contradict itself."""
        offsets = sum(u.offsets for u in unresolved)
        with_offsets = sum(1 for u in unresolved if u.offsets)
        heads = []
        if with_offsets:
            heads.append(f"{offsets} offset(s) on {with_offsets} share-partition(s) neither acknowledged nor archived")
        if with_offsets < len(unresolved):
            heads.append(f"{len(unresolved) - with_offsets} share-partition(s) without a ready leader")
        if producing:
            heads.append(f"{len(producing)} producer(s) not finished")
        members = {c.member.member_id: name for name, c in sorted(self.share_consumers.items()) if c.member.member_id}
        details = [u.describe(members) for u in unresolved[:_SHOWN_PARTITIONS]]
        if len(unresolved) > _SHOWN_PARTITIONS:
            details.append(f"and {len(unresolved) - _SHOWN_PARTITIONS} more share-partition(s)")
        for name in producing:
            producer = self.producers[name]
            details.append(f"producer {name}: {producer.metrics.records_produced} of {producer.settings.records} "
                           "record(s) produced so far")
        message = (f"{' and '.join(heads)} {self.scenario.heal_ms} ms after the faults stopped: "
                   + "; ".join(details))
        return {"message": message, "records": offsets, "partitions": len(unresolved),
                "share_partitions": [u.name for u in unresolved][:_SHOWN_PARTITIONS], "producers": producing}

    # -- quiescence ---------------------------------------------------------------------------------

    def _live_groups(self) -> list[str]:
        """Share groups with at least one live consumer: only their records must all be resolved."""
        return sorted({c.group_id for c in self.share_consumers.values() if c.alive and not c.closed})

    def _subscribed_topics(self, group_id: str) -> list[str]:
        """The topics the live share consumers of ``group_id`` subscribe to now (consumer_subscribe changes
        them): only their share-partitions are assigned, so only their records are owed."""
        return sorted({topic for c in self.share_consumers.values()
                       if c.group_id == group_id and c.alive and not c.closed for topic in c.topics})

    def unresolved(self) -> tuple[int, int]:
        """(share-partitions, records) not yet resolved: below the bound and at or above the SPSO of the
        current leader (a producer still running counts as one unresolved partition; a share-partition
        without a ready leader at the current leader epoch as at least one record)."""
        if not all(p.finished for p in self.producers.values()):
            return 1, 0
        found = self.unresolved_share_partitions()
        return len(found), sum(max(1, u.offsets) if u.leader is None else u.offsets for u in found)

    def unresolved_share_partitions(self) -> list[Unresolved]:
        """The share-partitions of live share groups with offsets below the bound and at or above the SPSO
        of the current leader, or without a ready leader at the current leader epoch."""
        out: list[Unresolved] = []
        for group_id in self._live_groups():
            read_committed = self.group_configs[group_id].read_committed
            for topic in self._subscribed_topics(group_id):
                for p in range(self.controller.partition_count(topic)):
                    log = self.controller.data(topic, p).log
                    bound = log.bound(read_committed)
                    key = SharePartitionKey(group_id, topic_id_for(topic), p)
                    partition = self.tracker.latest.get(key)
                    info = self.controller.metadata.leader_of(topic, p)
                    if partition is None:
                        found = Unresolved(group_id, topic, p, log.log_start_offset, bound, None,
                                           "no leader has initialized it")
                    elif not partition.ready or info is None or partition.leader_epoch != info.leader_epoch:
                        why = (f"no ready leader at leader epoch {info.leader_epoch if info else '-'} (last served "
                               f"at epoch {partition.leader_epoch})")
                        found = Unresolved(group_id, topic, p, partition.spso, bound, None, why)
                    else:
                        found = Unresolved(group_id, topic, p, partition.spso, bound, partition, "")
                        if self.ledger is not None:
                            lost, lost_first = self.ledger.unresolved(key, topic, partition, bound, read_committed)
                            if lost:
                                found = found._replace(lost=lost, lost_first=lost_first)
                    if found.offsets > 0 or (found.leader is None and partition is not None):
                        out.append(found)
        return out

    def unstable_members(self) -> list[str]:
        """Live members, of share and of KIP-848 consumer groups, not converged (E-5)."""
        return [name for name, consumer in sorted(self.consumers.items())
                if consumer.alive and not consumer.closed and not self._converged(consumer)]

    def _converged(self, consumer: Any) -> bool:
        """Stable on the view its group coordinator holds: a member of the group at the assignment
        epoch, holding its target assignment (a KIP-848 member owns it, nothing left to revoke). A
        member removed behind its back that still believes it is stable has not converged."""
        member = consumer.member
        shard = self.group_coordinator(consumer.group_id)
        if shard is None:
            return False
        group: ShareGroup | ConsumerGroup | None
        if isinstance(consumer, ShareConsumer):
            stable = member.state is MemberState.STABLE
            group = shard.share.group(consumer.group_id)
            holds = member.assignment
        else:
            stable = member.status is MemberStatus.STABLE
            group = shard.consumer.group(consumer.group_id)
            holds = member.owned
        known = group.members.get(member.member_id) if group is not None else None
        if not stable or group is None or known is None:
            return False
        return (member.member_epoch == known.member_epoch == group.assignment_epoch
                and holds == known.assigned_partitions == group.target_assignment.get(member.member_id))

    def group_coordinator(self, group_id: str) -> GroupCoordinatorShard | None:
        """The loaded group coordinator of ``group_id`` (GC-6), if one serves it now."""
        metadata = self.controller.metadata
        partition = metadata.group_coordinator_partition(group_id)
        info = metadata.leader_of(CONSUMER_OFFSETS_TOPIC, partition)
        broker = self.brokers.get(info.leader) if info is not None else None
        host = broker.group_coordinators.get(partition) if broker is not None and broker.alive else None
        if host is None or not host.active or host.loading:
            return None
        return host.shard

    # -- metrics ------------------------------------------------------------------------------------

    @property
    def events(self) -> int:
        """The simulator's steps: timers fired and SimPy process steps (the unit ``bench`` counts per second).
        Not the trace's events: a step may record none (a poll that finds nothing) or several."""
        return self.scheduler.timers_fired + self.scheduler.simpy_steps

    def notes(self) -> list[str]:
        """What a reader should know though no invariant was broken: a group whose topics got records of
        which none was delivered to it (the ``auto.offset.reset = latest`` trap: a share group starts at the
        end of the log when it first reads a partition, so the records written before are never delivered)."""
        out: list[str] = []
        for group in sorted(self.scenario.groups, key=lambda g: g.name):
            produced = sum(p.metrics.records_produced for p in self.producers.values()
                           if p.settings.topic in group.topics)
            members = [c for c in self.consumers.values() if c.group_id == group.name]
            if not produced or any(c.metrics.records_delivered for c in members):
                continue
            topics = ", ".join(sorted(set(group.topics)))
            note = f"{produced} record(s) produced to {topics}, none delivered to {group.kind} group {group.name}"
            if not members:
                note += ": it has no consumers"
            elif group.kind == "share" and self.group_configs[group.name].auto_offset_reset == "latest":
                starts = [f"{topic}-{key.partition} at offset {spso}"
                          for topic in sorted(set(group.topics))
                          for key, spso in sorted(self.tracker.first_spso.items(), key=lambda item: item[0].partition)
                          if key.group_id == group.name and key.topic_id == topic_id_for(topic)]
                started = f" ({', '.join(starts[:4])}{', ...' if len(starts) > 4 else ''})" if starts else ""
                note += (": its group.share.auto.offset.reset is latest, so each share-partition started at the "
                         f"end of its log when the group first read it{started}, after these records; "
                         'set "group.share.auto.offset.reset" = "earliest" to read them')
            out.append(note)
        return out

    def metrics(self) -> dict[str, Any]:
        total = ClientMetrics()
        for name in sorted(self.consumers):
            total.merge(self.consumers[name].metrics)
        for name in sorted(self.producers):
            total.merge(self.producers[name].metrics)
        total.merge(self.admin.metrics)
        resolved = accepted_by_leader = 0
        for key in sorted(self.tracker.latest):
            partition = self.tracker.latest[key]
            first = self.tracker.first_spso.get(key, partition.spso)
            resolved += max(0, partition.spso - first)
            accepted_by_leader += self.tracker.accepted_between(key, first, partition.spso)
        latencies = total.end_to_end_latencies_ms
        elections = self.tracker.elections
        data_failovers = sum(n for topic, n in elections.items() if topic not in (SHARE_STATE_TOPIC,
                                                                                  CONSUMER_OFFSETS_TOPIC))
        network = self.network.metrics()
        _, unresolved = self.unresolved()
        return {
            "records_produced": total.records_produced,
            "records_aborted": total.records_aborted,
            "records_delivered": total.records_delivered,
            "redeliveries": total.redeliveries,
            # Acknowledgements as the consumers saw them confirmed (a lost answer is an ack error) ...
            "records_accepted": total.records_accepted,
            "records_released": total.records_released,
            "records_rejected": total.records_rejected,
            # ... and the resolved offsets whose ACCEPT a leader confirmed (after its state write),
            # whether or not the consumer heard of it.
            "records_accepted_by_leader": accepted_by_leader,
            # Offsets the SPSO moved past with no accept a leader confirmed: records archived (rejected, at
            # the delivery limit), non-records archived (transaction markers, aborted records, compaction
            # gaps), and offsets an offset reset skipped (even past the log end): offsets, not records.
            "offsets_archived_or_skipped": max(0, resolved - accepted_by_leader),
            "records_unresolved": unresolved,
            # Offsets the log cleaner removed from compacted topics (gaps: archived if never delivered, SP-14).
            "records_compacted": self.log_cleaner.records_compacted,
            # Offsets time-based retention deleted (whole segments: the log start moved past them).
            "records_deleted_by_retention": self.log_retention.records_deleted,
            "ack_errors": total.ack_errors,
            "latency_p50_ms": _percentile(latencies, 0.50),
            "latency_p95_ms": _percentile(latencies, 0.95),
            "latency_p99_ms": _percentile(latencies, 0.99),
            "latency_max_ms": max(latencies, default=None),
            "rebalances": total.rebalances,
            "members_fenced": total.fenced,
            "share_session_resets": total.share_session_resets,
            "share_sessions_disconnected": self.tracker.sessions_disconnected,
            "failovers": sum(elections.values()),
            "partition_failovers": data_failovers,
            "share_coordinator_failovers": elections.get(SHARE_STATE_TOPIC, 0),
            # Coordinator loads abandoned because leadership moved (or the broker crashed) mid-load.
            "coordinator_loads_abandoned": self.tracker.events.get("coordinator.load_abandoned", 0),
            "group_coordinator_failovers": elections.get(CONSUMER_OFFSETS_TOPIC, 0),
            "share_leader_starts": len(self.tracker.leader_starts),
            "leader_failovers_in_transition": self.tracker.failovers_in_transition,
            "requests_sent": total.requests_sent,
            "requests_timed_out": total.requests_timed_out,
            "requests_disconnected": total.requests_disconnected,
            "messages_sent": network.total("sent"),
            "messages_dropped": network.total("dropped"),
            # The simulator's steps (timers fired and SimPy process steps) ...
            "events": self.events,
            # ... and the events the trace recorded: the lines `--trace` writes (a step may record none).
            "trace_events": self.trace.count,
            "sim_time_ms": self.scheduler.now_ms,
            "quiescent_at_ms": self.quiescent_at_ms,
        }
