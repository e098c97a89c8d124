"""The controller: replica assignment, leader election, leader epochs, metadata.

Not a network node (KRaft's quorum is not what we study). It

* assigns each partition's replicas round robin over the brokers (rack
  aware when racks are given: consecutive replicas on different racks where
  possible), for data topics and the two internal topics;
* elects leaders: the first alive replica of the ISR, preferring the current
  leader; the leader epoch goes up by one on every leader change (and never
  otherwise), so a leader's epoch names its tenure;
* publishes a new ``ClusterMetadata`` to every live broker at once on every
  change, and keeps it for clients, who read ``metadata`` when they refresh;
* reacts to broker crashes (their replicas leave the ISR, new leaders are
  elected; the last ISR member stays in the ISR, as Kafka's ELR-less
  controller keeps it, so the partition waits for it with no leader) and
  restarts (the broker rejoins the ISR after ``catchup_ms``, and leads the
  partitions that had no leader);
* moves leadership on request (``move_leadership``: another ISR replica),
  which is how coordinator failovers are injected, and adds partitions;
* passes a share group's committed deletion on to every live broker
  (``share_group_deleted``), whose share-partition leaders drop the group.

Each partition's ``ReplicatedLog`` (and, for data topics, its ``DataLog``)
lives here: storage that outlives any broker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from model import situations as _situations
from model.sim.network import Network
from model.sim.protocol import (
    CONSUMER_OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    ClusterMetadata,
    Observer,
    PartitionInfo,
    broker_node,
)
from model.sim.replication import DataLog, ReplicatedLog
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

if TYPE_CHECKING:
    from collections.abc import Sequence

INTERNAL_TOPICS: Final = (SHARE_STATE_TOPIC, CONSUMER_OFFSETS_TOPIC)
CONTROLLER_NODE: Final = "controller"
DEFAULT_CATCHUP_MS: Final = 500


def topic_id_for(topic: str) -> str:
    """A stable, readable topic id (Kafka's are UUIDs; only uniqueness matters here)."""
    return f"{topic}-id"


class MetadataListener(Protocol):
    """What the controller needs of a broker."""

    @property
    def broker_id(self) -> int: ...

    def on_metadata(self, metadata: ClusterMetadata) -> None: ...

    def on_share_group_deleted(self, group_id: str) -> None: ...

    def crash(self) -> None: ...

    def restart(self) -> None: ...


@dataclass
class PartitionState:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    log: ReplicatedLog
    data: DataLog | None  # data topics only

    def info(self) -> PartitionInfo:
        return PartitionInfo(self.topic, self.partition, self.leader, self.leader_epoch, self.replicas, self.isr)


class Controller:
    def __init__(
        self,
        scheduler: Scheduler,
        network: Network,
        streams: RandomStreams,
        *,
        broker_ids: Sequence[int],
        latency: Distribution,
        replication_factor: int = 3,
        min_insync_replicas: int = 2,
        racks: Mapping[int, str] | None = None,
        catchup_ms: int = DEFAULT_CATCHUP_MS,
        trace: Trace | None = None,
        observer: Observer | None = None,
    ) -> None:
        if not broker_ids:
            raise ValueError("a cluster needs at least one broker")
        self.scheduler = scheduler
        self.network = network
        self.streams = streams
        self.broker_ids = tuple(sorted(broker_ids))
        self.latency = latency
        self.replication_factor = min(replication_factor, len(self.broker_ids))
        self.min_insync_replicas = min(min_insync_replicas, self.replication_factor)
        self.racks = dict(racks or {})
        self.catchup_ms = catchup_ms
        self.trace = trace
        self.observer = observer or Observer()
        self.brokers: dict[int, MetadataListener] = {}
        self.alive: set[int] = set(self.broker_ids)
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        self.topic_ids: dict[str, str] = {}
        self._topic_counts: dict[str, int] = {}
        self._topic_rf: dict[str, int] = {}  # topics created with their own replication factor
        self._metadata = ClusterMetadata()
        self._catchup: dict[int, Timer] = {}
        # Partitions whose followers a fault holds out of the ISR (``shrink_isr``), in shrink order.
        self._lagging: list[tuple[str, int]] = []
        self._assign_cursor = 0
        self.leader_changes = 0

    # -- setup ---------------------------------------------------------------------------------

    def register_broker(self, broker: MetadataListener) -> None:
        self.brokers[broker.broker_id] = broker

    def create_topic(self, topic: str, partitions: int, *, publish: bool = True,
                     replication_factor: int | None = None) -> None:
        """A data topic (or an internal one, by its name) with ``partitions`` partitions, each with
        ``replication_factor`` replicas (CreateTopics' replication factor; None: the cluster's)."""
        if topic in self._topic_counts:
            raise ValueError(f"topic {topic} exists")
        self.topic_ids[topic] = topic_id_for(topic)
        self._topic_counts[topic] = 0
        if replication_factor is not None:
            self._topic_rf[topic] = min(replication_factor, len(self.broker_ids))
        self._add(topic, partitions)
        if publish:
            self.publish()

    def add_partitions(self, topic: str, count: int) -> None:
        """CreatePartitions: ``count`` more partitions (GC-2: groups see them after metadata)."""
        if topic not in self._topic_counts:
            raise KeyError(f"unknown topic {topic}")
        if count > 0:
            self._add(topic, count)
            self.publish()

    def _add(self, topic: str, count: int) -> None:
        internal = topic in INTERNAL_TOPICS
        first = self._topic_counts[topic]
        rf = self._topic_rf.get(topic, self.replication_factor)
        # min.insync.replicas above a topic's replication factor would refuse every acks=all write; a topic
        # created with fewer replicas than the cluster's default is taken to set its own at most its RF.
        min_isr = min(self.min_insync_replicas, rf)
        for p in range(first, first + count):
            replicas = self._assign(rf)
            data = None if internal else DataLog()
            log = ReplicatedLog(
                topic, p, self.scheduler, self.streams, self.latency,
                min_insync_replicas=min_isr,
                keep_committed=internal,
                apply=data.apply if data is not None else None,
                reachable=self._reachable,
                keep_tail=internal,  # a new coordinator loads the tail it inherited (coordinator_host.py)
            )
            state = PartitionState(topic, p, replicas, replicas, -1, 0, log, data)
            self.partitions[(topic, p)] = state
            self._elect(state)
        self._topic_counts[topic] = first + count

    def _assign(self, replication_factor: int) -> tuple[int, ...]:
        """``replication_factor`` replicas, round robin; with racks, skip ahead to replicas on racks not
        used yet."""
        ids = self.broker_ids
        n = len(ids)
        start = self._assign_cursor % n
        self._assign_cursor += 1
        order = [ids[(start + k) % n] for k in range(n)]
        if not self.racks:
            return tuple(order[: replication_factor])
        chosen: list[int] = []
        used: set[str] = set()
        for b in order:
            rack = self.racks.get(b, "")
            if rack not in used:
                chosen.append(b)
                used.add(rack)
            if len(chosen) == replication_factor:
                return tuple(chosen)
        for b in order:
            if b not in chosen:
                chosen.append(b)
            if len(chosen) == replication_factor:
                break
        return tuple(chosen)

    def _reachable(self, leader: int, follower: int) -> bool:
        net = self.network
        if not net.faults_active:
            return True  # asked per follower of every append
        a, b = broker_node(leader), broker_node(follower)
        return not (net.is_blocked(a, b) or net.is_blocked(b, a) or net.is_down(b))

    # -- queries -------------------------------------------------------------------------------

    @property
    def metadata(self) -> ClusterMetadata:
        """The latest image (what a client gets when it refreshes)."""
        return self._metadata

    def log(self, topic: str, partition: int) -> ReplicatedLog:
        return self.partitions[(topic, partition)].log

    def data(self, topic: str, partition: int) -> DataLog:
        data = self.partitions[(topic, partition)].data
        if data is None:
            raise KeyError(f"{topic}-{partition} is not a data partition")
        return data

    def partition_count(self, topic: str) -> int:
        return self._topic_counts.get(topic, 0)

    def data_topics(self) -> list[str]:
        return sorted(t for t in self._topic_counts if t not in INTERNAL_TOPICS)

    # -- elections -------------------------------------------------------------------------------

    def _elect(self, state: PartitionState) -> bool:
        """First alive ISR replica, the current leader first. Returns whether the leader changed."""
        if state.leader in self.alive and state.leader in state.isr:
            leader = state.leader
        else:
            leader = next((b for b in state.isr if b in self.alive), -1)
        return self._set_leader(state, leader)

    def _set_leader(self, state: PartitionState, leader: int) -> bool:
        changed = leader != state.leader
        if changed:
            state.leader = leader
            if leader >= 0:
                state.leader_epoch += 1  # a new tenure; "no leader" keeps the last epoch
                self.leader_changes += 1
            now = self.scheduler.now_ms
            if self.trace is not None:
                self.trace.record(now, CONTROLLER_NODE, "leader.elect", epoch=state.leader_epoch, leader=leader,
                                  partition=state.partition, topic=state.topic)
            self.observer.on_event("leader.elect", now, topic=state.topic, partition=state.partition,
                                   leader=leader, leader_epoch=state.leader_epoch)
        state.log.set_leader(state.leader, state.leader_epoch, state.isr)
        return changed

    def publish(self) -> ClusterMetadata:
        """A new image, to every live broker at once (in broker id order)."""
        md = ClusterMetadata(
            version=self._metadata.version + 1,
            partitions={key: state.info() for key, state in sorted(self.partitions.items())},
            topic_ids=dict(sorted(self.topic_ids.items())),
            alive_brokers=tuple(sorted(self.alive)),
        )
        self._metadata = md
        for broker_id in sorted(self.brokers):
            if broker_id in self.alive:
                self.brokers[broker_id].on_metadata(md)
        return md

    def share_group_deleted(self, group_id: str) -> None:
        """A group coordinator committed a share group's deletion (GC-8). Every live broker hears of
        it at once, as of a metadata image, so none keeps serving the old life (a partitioned one
        too); a broker that is down holds nothing of it. SPEC.md is silent on how share-partition
        leaders learn of a deletion: Kafka's learn from their share sessions (ShareGroupListener)."""
        for broker_id in sorted(self.brokers):
            if broker_id in self.alive:
                self.brokers[broker_id].on_share_group_deleted(group_id)

    def move_leadership(self, topic: str, partition: int, to: int | None = None) -> bool:
        """Elect a different alive ISR replica: ``to`` if given (and eligible), else the next
        one after the current leader in replica order. Returns whether leadership moved."""
        state = self.partitions[(topic, partition)]
        eligible = [b for b in state.isr if b in self.alive and b != state.leader]
        if to is not None:
            if to not in eligible:
                return False
            target = to
        elif not eligible:
            return False
        else:
            order = state.replicas
            pos = order.index(state.leader) if state.leader in order else -1
            target = min(eligible, key=lambda b: (order.index(b) - pos - 1) % len(order))
        self._set_leader(state, target)
        self.publish()
        return True

    # -- broker lifecycle --------------------------------------------------------------------------

    def crash_broker(self, broker_id: int) -> bool:
        """The broker dies: its memory is gone, its replicas leave the ISR, leaders move."""
        if broker_id not in self.alive:
            return False
        self.alive.discard(broker_id)
        timer = self._catchup.pop(broker_id, None)
        if timer is not None:
            timer.cancel()
        self.network.crash_node(broker_node(broker_id))
        broker = self.brokers.get(broker_id)
        if broker is not None:
            broker.crash()
        for state in self.partitions.values():
            if broker_id in state.isr and len(state.isr) > 1:
                state.isr = tuple(b for b in state.isr if b != broker_id)
            self._elect(state)
        self._trace_broker("broker.crash", broker_id)
        self.publish()
        return True

    def restart_broker(self, broker_id: int) -> bool:
        """The broker comes back empty; it rejoins the ISR after ``catchup_ms``."""
        if broker_id in self.alive:
            return False
        self.alive.add(broker_id)
        self.network.restart_node(broker_node(broker_id))
        broker = self.brokers.get(broker_id)
        if broker is not None:
            broker.restart()
        self._trace_broker("broker.restart", broker_id)
        # Partitions whose only ISR member is this broker can elect it now: it has the log.
        for state in self.partitions.values():
            if state.leader < 0:
                self._elect(state)
        self.publish()
        self._catchup[broker_id] = self.scheduler.timer(self.catchup_ms, self._caught_up, broker_id)
        return True

    def _caught_up(self, broker_id: int) -> None:
        self._catchup.pop(broker_id, None)
        if broker_id not in self.alive:
            return
        for state in self.partitions.values():
            if (state.topic, state.partition) in self._lagging:
                continue  # its followers lag: they rejoin when the fault ends (expand_isr)
            if broker_id in state.replicas and broker_id not in state.isr:
                state.isr = tuple(b for b in state.replicas if b in state.isr or b == broker_id)
                self._elect(state)
        self.publish()

    # -- lagging followers (fault kind state_partition_under_min_isr) ------------------------------

    def shrink_isr(self, topic: str, partition: int) -> bool:
        """The partition's followers fall out of its ISR and stay out until ``expand_isr``: Kafka's
        leader shrinks the ISR (Partition.maybeShrinkIsr) when a follower has not caught up for
        replica.lag.time.max.ms (a slow disk, a long GC pause, a saturated link). With only the leader
        in sync, an acks=all append below min.insync.replicas fails NOT_ENOUGH_REPLICAS at once
        (Partition.appendRecordsToLeader), which a coordinator's runtime answers as
        COORDINATOR_NOT_AVAILABLE. Nothing commits meanwhile, so the followers miss no committed
        record. Returns False if the partition is unknown, has no leader, or is already shrunk."""
        key = (topic, partition)
        state = self.partitions.get(key)
        if state is None or state.leader < 0 or key in self._lagging:
            return False
        self._lagging.append(key)
        _situations.COUNTS["state-partition-below-min-isr"] += 1
        state.isr = (state.leader,)
        state.log.set_leader(state.leader, state.leader_epoch, state.isr)
        if self.trace is not None:
            self.trace.record(self.scheduler.now_ms, CONTROLLER_NODE, "isr.shrink", topic=topic, partition=partition)
        self.publish()
        return True

    def expand_isr(self, topic: str, partition: int) -> None:
        """The fault of ``shrink_isr`` ends: every live replica not still catching up after a restart
        is in sync again (Partition.maybeExpandIsr), and a partition left without a leader elects one."""
        key = (topic, partition)
        if key not in self._lagging:
            return
        self._lagging.remove(key)
        state = self.partitions[key]
        isr = tuple(b for b in state.replicas if b in state.isr or (b in self.alive and b not in self._catchup))
        state.isr = isr or state.isr
        if self.trace is not None:
            self.trace.record(self.scheduler.now_ms, CONTROLLER_NODE, "isr.expand", topic=topic, partition=partition)
        self._elect(state)
        self.publish()

    def _trace_broker(self, kind: str, broker_id: int) -> None:
        now = self.scheduler.now_ms
        if self.trace is not None:
            self.trace.record(now, CONTROLLER_NODE, kind, broker=broker_id)
        self.observer.on_event(kind, now, broker=broker_id)
