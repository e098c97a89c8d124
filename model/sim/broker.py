"""A simulated Kafka broker: a network endpoint ("b<id>") that reacts to messages and timers.

What it serves, by network kind (answers go back as kind + "Response", same
correlation id):

* data partitions it leads: "Produce" (answered when the batch commits,
  acks=all; idempotent: a batch whose (producer id, base sequence) is already
  in the log, or still being replicated, is not appended again but answered
  with the first append's base offset), "Fetch" (up to the high-water mark or LSO; waits up to
  ``fetch_max_wait_ms`` for new data), "EndTxnMarker" (a transaction's commit
  or abort marker);
* share-partition leaders of the data partitions it leads: "ShareFetch",
  "ShareAcknowledge" (``model.sim.share_leader``), handled in steps on the
  broker's ``num.io.threads`` request-handler threads (``model.sim.handlers``),
  so that they interleave with each other, with lock timers and with the share
  coordinator's answers (other requests are still handled in one event);
* share coordinator shards of the ``__share_group_state`` partitions it
  leads: "InitializeShareGroupState", "ReadShareGroupState",
  "WriteShareGroupState", "DeleteShareGroupState",
  "ReadShareGroupStateSummary" (``model.sim.coordinator_host``);
* group coordinator shards of the ``__consumer_offsets`` partitions it leads:
  "ShareGroupHeartbeat", "ConsumerGroupHeartbeat", "OffsetCommit",
  "OffsetFetch", "ShareGroupDescribe", "ConsumerGroupDescribe",
  "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
  "DescribeShareGroupOffsets", "DeleteGroups", "ListGroups".

A request for a partition this broker does not lead (by its latest metadata)
gets NOT_LEADER_OR_FOLLOWER; a group request for a group whose
``__consumer_offsets`` partition it does not lead gets NOT_COORDINATOR, and
likewise a share-state request for a key whose ``__share_group_state``
partition it does not lead. Clients refresh metadata and retry.

The broker sends share-state requests to share coordinators itself (as a
share-partition leader and as a group coordinator): each has a request
timeout, and fails early when the network reports the coordinator's broker
crashed or refused the connection; a late answer to a forgotten request is
dropped. A request that times out closes the connection to that broker, as
Kafka's NetworkClient does for inter-broker sends too: every other request in
flight on it fails with it, and the next one goes on a new connection, not
behind whatever the old one still held.

``crash`` loses everything in memory (sessions, share-partitions, shards,
waiting requests, timers); the committed logs live in the controller's
``ReplicatedLog``s. ``restart`` starts empty; leadership (and thus loading)
comes back with the controller's metadata.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import Errors
from model.core.group.coordinator import error_response, group_id_of
from model.core.group.share_messages import ListedGroup, ListGroupsResponse
from model.core.metadata import MetadataImage, TopicMetadata
from model.core.produce_fetch import (
    DELETE_TO_HIGH_WATERMARK,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    EndTxnMarkerRequest,
    EndTxnMarkerResponse,
    FetchRequest,
    FetchResponse,
    ProduceRequest,
    ProduceResponse,
)
from model.core.share_coordinator import share_state_error
from model.core.share_fetch import ShareAcknowledgeRequest, ShareFetchRequest
from model.sim.controller import INTERNAL_TOPICS, Controller, broker_node
from model.sim.coordinator_host import GroupCoordinatorHost, ShareCoordinatorHost
from model.sim.handlers import RequestHandlerPool
from model.sim.network import Message, Network
from model.sim.protocol import (
    CONSUMER_OFFSETS_TOPIC,
    GROUP_KINDS,
    SHARE_STATE_KINDS,
    SHARE_STATE_TOPIC,
    ClusterMetadata,
    Envelope,
    Observer,
)
from model.sim.replication import REJECTED, ProduceBatch, TxnMarker
from model.sim.share_leader import ShareLeaderHost
from model.sim.timers import DeadlineQueue, Scheduler, Timer
from model.sim.trace import Trace

StateCallback = Callable[[object | None], None]  # None: no answer (timeout, no coordinator)


@dataclass(frozen=True)
class BrokerSettings:
    """Simulation knobs that are not Kafka configuration."""

    # SC-6/GC-6: a load takes sharesim.coordinator.load.base.ms (BrokerConfig) plus this per committed record
    coordinator_load_us_per_record: int = 20
    request_timeout_ms: int = 5_000  # broker → share coordinator requests
    retry_backoff_ms: int = 100
    max_retry_backoff_ms: int = 1_000
    state_request_attempts: int = 10  # persister retries of a retriable write answer
    fetch_max_wait_ms: int = 500  # a plain Fetch with nothing to return waits this long


class _Request:
    """A request this broker sent and waits on."""

    __slots__ = ("callback", "dst", "sent_ms")

    def __init__(self, dst: str, sent_ms: int, callback: StateCallback) -> None:
        self.dst = dst
        self.sent_ms = sent_ms
        self.callback = callback


class _ParkedFetch:
    __slots__ = ("message", "request", "timer")

    def __init__(self, message: Message, request: FetchRequest, timer: Timer) -> None:
        self.message = message
        self.request = request
        self.timer = timer


class Broker:
    def __init__(
        self,
        broker_id: int,
        scheduler: Scheduler,
        network: Network,
        controller: Controller,
        *,
        config: BrokerConfig | None = None,
        group_configs: Mapping[str, GroupConfig] | None = None,
        settings: BrokerSettings | None = None,
        trace: Trace | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.node = broker_node(broker_id)
        self.scheduler = scheduler
        self.network = network
        self.controller = controller
        self.config = config or BrokerConfig()
        self.group_configs: dict[str, GroupConfig] = dict(group_configs or {})
        self.settings = settings or BrokerSettings()
        self.trace = trace
        self.observer = observer or Observer()
        self.alive = True
        self.metadata = ClusterMetadata()
        self.topic_names: dict[str, str] = {}  # topic id -> topic name
        self.share_coordinators: dict[int, ShareCoordinatorHost] = {}
        self.group_coordinators: dict[int, GroupCoordinatorHost] = {}
        # Counters of the fetch path (model/sim/handlers.py, share_leader.py), kept across restarts.
        self.fetch_stats: dict[str, int] = dict.fromkeys(
            ("jobs", "queued", "interleaved_steps", "fetch_parked", "fetch_woken", "fetch_expired",
             "fetch_lock_busy"), 0)
        cfg = self.config
        self.io_threads = RequestHandlerPool(
            scheduler, cfg.num_io_threads, controller.streams.get("handlers", self.node),
            cfg.handler_step_min_ms, max(cfg.handler_step_min_ms, cfg.handler_step_max_ms), self.fetch_stats)
        self.share_leader = ShareLeaderHost(self)
        self._image = MetadataImage()
        self._inflight: dict[int, _Request] = {}
        self._deadlines = DeadlineQueue(scheduler, self.settings.request_timeout_ms, self._inflight, self._timed_out)
        self._correlation = itertools.count(1)
        self._parked: dict[tuple[str, int], list[_ParkedFetch]] = {}
        # Idempotent batches being replicated, (topic, partition, producer id, base sequence) -> the
        # retries that arrived meanwhile: they get the original's answer.
        self._producing: dict[tuple[str, int, int, int], list[Message]] = {}
        handlers: dict[str, Callable[[Message, Any], None]] = {
            "Produce": self._produce,
            "Fetch": self._fetch,
            "EndTxnMarker": self._end_txn,
            "ShareFetch": self._share_fetch,
            "ShareAcknowledge": self._share_acknowledge,
            "DeleteRecords": self._delete_records,
        }
        for kind in SHARE_STATE_KINDS:
            handlers[kind] = self._share_state
        for kind in GROUP_KINDS:
            handlers[kind] = self._group
        self._handlers = handlers
        network.register(self.node, self.handle, self._disconnected)
        controller.register_broker(self)

    def group_config(self, group_id: str) -> GroupConfig:
        return self.group_configs.get(group_id) or GroupConfig()

    # -- the network --------------------------------------------------------------------------

    def handle(self, message: Message) -> None:
        if not self.alive:
            return
        handler = self._handlers.get(message.kind)
        if handler is not None:
            handler(message, message.payload.body)
        elif message.kind.endswith("Response"):
            self._answered(message)

    def reply(self, message: Message, body: object) -> None:
        """Answer ``message`` (kind + "Response", same correlation id)."""
        if self.alive:
            self.network.send(self.node, message.src, message.kind + "Response",
                              Envelope(message.payload.correlation_id, body))

    def request(self, dst: str, kind: str, body: object, callback: StateCallback) -> None:
        """Send a request to another node; ``callback`` gets the answer, or None after the timeout."""
        if not self.alive:
            return
        correlation_id = next(self._correlation)
        self._inflight[correlation_id] = _Request(dst, self.scheduler.now_ms, callback)
        self._deadlines.add(correlation_id)
        self.network.send(self.node, dst, kind, Envelope(correlation_id, body))

    def send_share_state(self, request: Any, callback: StateCallback) -> None:
        """A share-state RPC to the share coordinator of ``request.key`` (SC-1)."""
        if not self.alive:
            return
        md = self.metadata
        info = md.partitions.get((SHARE_STATE_TOPIC, md.share_coordinator_partition(request.key)))
        if info is None or info.leader < 0:
            self.scheduler.post(self.settings.retry_backoff_ms, self._no_coordinator, callback)
            return
        kind = type(request).__name__.removesuffix("Request")
        self.request(broker_node(info.leader), kind, request, callback)

    def _no_coordinator(self, callback: StateCallback) -> None:
        if self.alive:
            callback(None)

    def _answered(self, message: Message) -> None:
        entry = self._inflight.pop(message.payload.correlation_id, None)
        if entry is not None:
            entry.callback(message.payload.body)

    def _timed_out(self, correlation_id: int) -> None:
        # Closed before any callback runs, so that a retry goes out on the new connection; the timed-out
        # request is the oldest in flight (one timeout for all), so it is failed first.
        peer = self._inflight[correlation_id].dst
        self.network.close_connection(self.node, peer)
        self._fail_requests_to(peer, self.scheduler.now_ms)

    def _disconnected(self, peer: str, cutoff_ms: int, connection: int) -> None:
        """``peer`` crashed, closed ``connection`` or refused us: what we sent it by ``cutoff_ms`` gets no
        answer, and a client's share sessions on the connection end."""
        if not self.alive:
            return
        self.share_leader.on_client_disconnected(peer, connection)
        self._fail_requests_to(peer, cutoff_ms)

    def _fail_requests_to(self, peer: str, cutoff_ms: int) -> None:
        """The connection to ``peer`` is gone: every request sent to it by ``cutoff_ms`` gets no answer,
        oldest first."""
        lost = [cid for cid, entry in self._inflight.items() if entry.dst == peer and entry.sent_ms <= cutoff_ms]
        for correlation_id in lost:
            entry = self._inflight.pop(correlation_id, None)
            if entry is not None:
                entry.callback(None)

    # -- metadata and leadership -------------------------------------------------------------------

    def on_metadata(self, metadata: ClusterMetadata) -> None:
        """A new image from the controller: start or stop coordinators and share-partition leaders."""
        if not self.alive:
            return
        self.metadata = metadata
        self.topic_names = {tid: topic for topic, tid in metadata.topic_ids.items()}
        image = _image_of(metadata)
        image_changed = image != self._image
        self._image = image
        me = self.broker_id
        for (topic, partition), info in metadata.partitions.items():
            if topic == SHARE_STATE_TOPIC:
                share_host = self.share_coordinators.get(partition)
                if share_host is not None and (info.leader != me or share_host.leader_epoch != info.leader_epoch):
                    share_host.retire()
                    del self.share_coordinators[partition]
                    share_host = None
                if share_host is None and info.leader == me:
                    self.share_coordinators[partition] = ShareCoordinatorHost(
                        self, partition, self.controller.log(topic, partition), image)
                elif share_host is not None and image_changed:
                    share_host.on_metadata(image)
            elif topic == CONSUMER_OFFSETS_TOPIC:
                group_host = self.group_coordinators.get(partition)
                if group_host is not None and (info.leader != me or group_host.leader_epoch != info.leader_epoch):
                    group_host.retire()
                    del self.group_coordinators[partition]
                    group_host = None
                if group_host is None and info.leader == me:
                    self.group_coordinators[partition] = GroupCoordinatorHost(
                        self, partition, self.controller.log(topic, partition), image)
                elif group_host is not None and image_changed:
                    group_host.on_metadata(image)
            elif info.leader != me and (topic, partition) in self._parked:
                self._unpark_all(topic, partition, Errors.NOT_LEADER_OR_FOLLOWER)
        self.share_leader.on_metadata(metadata)

    def on_share_group_deleted(self, group_id: str) -> None:
        """A share group's deletion committed (GC-8): its share-partition leaders here drop it."""
        if self.alive:
            self.share_leader.on_group_deleted(group_id)

    def crash(self) -> None:
        """Everything in memory is lost; nothing more is sent until ``restart``."""
        self.alive = False
        for share_host in self.share_coordinators.values():
            share_host.retire()
        for group_host in self.group_coordinators.values():
            group_host.retire()
        self.share_coordinators.clear()
        self.group_coordinators.clear()
        self.share_leader.crash()
        self.io_threads.crash()
        self._inflight.clear()
        self._deadlines.clear()
        for parked in self._parked.values():
            for fetch in parked:
                fetch.timer.cancel()
        self._parked.clear()
        self._producing.clear()
        if self.trace is not None:
            self.trace.record(self.scheduler.now_ms, self.node, "broker.crash")

    def restart(self) -> None:
        """Up again, empty; the controller's next metadata brings leadership back."""
        self.alive = True
        self.metadata = ClusterMetadata()
        self._image = MetadataImage()
        self.share_leader = ShareLeaderHost(self)

    def _leads(self, topic: str, partition: int) -> tuple[Errors, int]:
        """(NONE, leader epoch) if this broker leads the partition, else the error to answer."""
        info = self.metadata.partitions.get((topic, partition))
        if info is None or topic in INTERNAL_TOPICS:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
        if info.leader != self.broker_id:
            return Errors.NOT_LEADER_OR_FOLLOWER, info.leader_epoch
        return Errors.NONE, info.leader_epoch

    # -- data partitions ------------------------------------------------------------------------

    def _produce(self, message: Message, req: ProduceRequest) -> None:
        error, epoch = self._leads(req.topic, req.partition)
        if error == Errors.NONE and (req.records < 1 or (req.transactional and req.producer_id is None)
                                     or (req.keys and len(req.keys) != req.records)):
            error = Errors.INVALID_REQUEST
        if error != Errors.NONE:
            self.reply(message, ProduceResponse(req.topic, req.partition, error, leader_epoch=epoch))
            return
        idempotent = req.producer_id is not None and req.base_sequence >= 0
        if idempotent:
            # A retry after a lost response (or a late duplicate): the batch is in already.
            assert req.producer_id is not None
            base_offset = self.controller.data(req.topic, req.partition).committed_base_offset(
                req.producer_id, req.base_sequence)
            if base_offset is not None:
                if self.trace is not None:
                    self.trace.record(self.scheduler.now_ms, self.node, "produce.duplicate", base_offset=base_offset,
                                      partition=req.partition, producer_id=req.producer_id,
                                      sequence=req.base_sequence, topic=req.topic)
                self.reply(message, ProduceResponse(req.topic, req.partition, Errors.NONE, base_offset, epoch))
                return
            waiting = self._producing.get((req.topic, req.partition, req.producer_id, req.base_sequence))
            if waiting is not None:
                waiting.append(message)
                return
        batch = ProduceBatch(req.records, req.producer_id, req.transactional, req.produce_time_ms,
                             req.base_sequence, req.keys)
        log = self.controller.log(req.topic, req.partition)
        error = log.append((batch,), lambda err, offset: self._produced(message, req, epoch, err, offset))
        if error != Errors.NONE:
            self.reply(message, ProduceResponse(req.topic, req.partition, error, leader_epoch=epoch))
        elif idempotent:
            assert req.producer_id is not None
            self._producing[(req.topic, req.partition, req.producer_id, req.base_sequence)] = []

    def _produced(self, message: Message, req: ProduceRequest, epoch: int, error: Errors, offset: int) -> None:
        if error == Errors.NONE and offset == REJECTED:
            error = Errors.INVALID_REQUEST
        response = ProduceResponse(req.topic, req.partition, error, offset if error == Errors.NONE else -1, epoch)
        self.reply(message, response)
        if req.producer_id is not None and req.base_sequence >= 0:
            for retry in self._producing.pop((req.topic, req.partition, req.producer_id, req.base_sequence), ()):
                self.reply(retry, response)
        if error == Errors.NONE:
            self.observer.on_records_committed(req.topic, req.partition, offset, req.records, req.producer_id,
                                               req.transactional, self.scheduler.now_ms)
            if req.dlq_source is not None:
                self.observer.on_dlq_committed(req.topic, req.partition, offset, req.dlq_source,
                                               self.scheduler.now_ms)
            self._committed(req.topic, req.partition)

    def _end_txn(self, message: Message, req: EndTxnMarkerRequest) -> None:
        error, _ = self._leads(req.topic, req.partition)
        if error != Errors.NONE:
            self.reply(message, EndTxnMarkerResponse(req.topic, req.partition, error))
            return
        log = self.controller.log(req.topic, req.partition)
        error = log.append((TxnMarker(req.producer_id, req.commit),),
                           lambda err, offset: self._marker_written(message, req, err, offset))
        if error != Errors.NONE:
            self.reply(message, EndTxnMarkerResponse(req.topic, req.partition, error))

    def _marker_written(self, message: Message, req: EndTxnMarkerRequest, error: Errors, offset: int) -> None:
        if error == Errors.NONE and offset == REJECTED:
            error = Errors.INVALID_REQUEST
        self.reply(message, EndTxnMarkerResponse(req.topic, req.partition, error,
                                                 offset if error == Errors.NONE else -1))
        if error == Errors.NONE:
            self.observer.on_transaction_ended(req.topic, req.partition, req.producer_id, req.commit,
                                               self.scheduler.now_ms)
            self._committed(req.topic, req.partition)

    def _committed(self, topic: str, partition: int) -> None:
        """The high-water mark moved: wake waiting fetches and share fetches."""
        if not self.alive:
            return
        parked = self._parked.get((topic, partition))
        if parked:
            still: list[_ParkedFetch] = []
            for fetch in parked:
                response = self._fetch_response(fetch.request)
                if response.records or response.error_code != Errors.NONE:
                    fetch.timer.cancel()
                    self.reply(fetch.message, response)
                else:
                    still.append(fetch)
            self._parked[(topic, partition)] = still
        self.share_leader.on_data_committed(topic, partition)

    def _fetch(self, message: Message, req: FetchRequest) -> None:
        response = self._fetch_response(req)
        if response.error_code != Errors.NONE or response.records or response.next_fetch_offset != req.fetch_offset:
            self.reply(message, response)
            return
        # Nothing new: wait for data (long poll) rather than have the consumer spin.
        key = (req.topic, req.partition)
        fetch = _ParkedFetch(message, req, self.scheduler.timer(self.settings.fetch_max_wait_ms, self._fetch_waited,
                                                                key, message))
        self._parked.setdefault(key, []).append(fetch)

    def _fetch_waited(self, key: tuple[str, int], message: Message) -> None:
        parked = self._parked.get(key, [])
        for k, fetch in enumerate(parked):
            if fetch.message is message:
                del parked[k]
                self.reply(message, self._fetch_response(fetch.request))
                return

    def _unpark_all(self, topic: str, partition: int, error: Errors) -> None:
        for fetch in self._parked.pop((topic, partition), []):
            fetch.timer.cancel()
            self.reply(fetch.message, FetchResponse(topic, partition, error))

    def _fetch_response(self, req: FetchRequest) -> FetchResponse:
        error, epoch = self._leads(req.topic, req.partition)
        if error == Errors.NONE and req.leader_epoch >= 0 and req.leader_epoch != epoch:
            error = Errors.FENCED_LEADER_EPOCH if req.leader_epoch < epoch else Errors.UNKNOWN_LEADER_EPOCH
        if error != Errors.NONE:
            return FetchResponse(req.topic, req.partition, error)
        data = self.controller.data(req.topic, req.partition)
        log = data.log
        hwm, lso, start = log.high_watermark, log.last_stable_offset, log.log_start_offset
        offset = req.fetch_offset
        if offset < start or offset > hwm:
            return FetchResponse(req.topic, req.partition, Errors.OFFSET_OUT_OF_RANGE, hwm, lso, start)
        spans = log.read(offset, offset + max(req.max_records, 1), read_committed=req.read_committed)
        if not spans:
            return FetchResponse(req.topic, req.partition, Errors.NONE, hwm, lso, start, (), offset)
        records = tuple((s.first, s.last) for s in spans if s.deliverable)
        return FetchResponse(req.topic, req.partition, Errors.NONE, hwm, lso, start, records, spans[-1].last + 1,
                             data.produce_times_of(records))

    def _delete_records(self, message: Message, req: DeleteRecordsRequest) -> None:
        """DeleteRecords (Kafka's ReplicaManager.deleteRecords / UnifiedLog.maybeIncrementLogStartOffset): the
        leader moves the partition's log start offset up to the requested offset, at most the high-water
        mark (-1: the HWM; past it OFFSET_OUT_OF_RANGE). The committed state stands for every replica, so
        followers, and any later leader, have the new log start at once (Kafka answers once every follower's
        low watermark reached it, DelayedDeleteRecords). The share-partition leaders of the partition on
        this broker hear of it (trunk: SharePartitionManager's fetch path, updateCacheAndOffsets)."""
        error, _ = self._leads(req.topic, req.partition)
        if error != Errors.NONE:
            self.reply(message, DeleteRecordsResponse(req.topic, req.partition, error))
            return
        log = self.controller.data(req.topic, req.partition).log
        start, hwm = log.log_start_offset, log.high_watermark
        offset = hwm if req.offset == DELETE_TO_HIGH_WATERMARK else req.offset
        if req.fraction >= 0:
            offset = start + int((hwm - start) * min(req.fraction, 1.0))
        if offset < 0 or offset > hwm:
            self.reply(message, DeleteRecordsResponse(req.topic, req.partition, Errors.OFFSET_OUT_OF_RANGE, start))
            return
        moved = log.delete_records(offset)
        now = self.scheduler.now_ms
        if self.trace is not None:
            self.trace.record(now, self.node, "data.delete_records", topic=req.topic, partition=req.partition,
                              log_start_offset=moved, previous=start)
        if moved > start:
            self.share_leader.on_log_start_moved(req.topic, req.partition, now)
        self.reply(message, DeleteRecordsResponse(req.topic, req.partition, Errors.NONE, moved))

    # -- share-partition leaders -------------------------------------------------------------------

    def _share_fetch(self, message: Message, req: ShareFetchRequest) -> None:
        self.io_threads.submit(self.share_leader.share_fetch(message, req))

    def _share_acknowledge(self, message: Message, req: ShareAcknowledgeRequest) -> None:
        self.io_threads.submit(self.share_leader.share_acknowledge(message, req))

    # -- coordinators ----------------------------------------------------------------------------

    def _share_state(self, message: Message, body: Any) -> None:
        partition = self.metadata.share_coordinator_partition(body.key)
        host = self.share_coordinators.get(partition)
        if host is None:
            self.reply(message, share_state_error(body, Errors.NOT_COORDINATOR))
            return
        host.handle(message, body)

    def _group(self, message: Message, body: Any) -> None:
        group_id = group_id_of(body)
        if group_id is None:
            group_id = _first_group(body)
        if group_id is None:
            # ListGroups: every shard here answers; merged.
            self._list_groups(message, body)
            return
        host = self.group_coordinators.get(self.metadata.group_coordinator_partition(group_id))
        if host is None:
            self.reply(message, error_response(body, Errors.NOT_COORDINATOR))
            return
        host.handle(message, body)

    def _list_groups(self, message: Message, body: Any) -> None:
        groups: list[ListedGroup] = []
        for partition in sorted(self.group_coordinators):
            host = self.group_coordinators[partition]
            if host.active and not host.loading:
                groups.extend(host.shard.list_groups(body).groups)
        self.reply(message, ListGroupsResponse(tuple(sorted(groups, key=lambda g: g.group_id))))


def _first_group(body: Any) -> str | None:
    """Requests naming several groups go to the coordinator of the first (clients send one per
    coordinator, as Kafka's admin client does)."""
    names = getattr(body, "groups_names", None) or getattr(body, "group_ids", None)
    return names[0] if names else None


def _image_of(metadata: ClusterMetadata) -> MetadataImage:
    """The data topics as the group coordinators see them (GC-5, CG-7)."""
    counts: dict[str, int] = {}
    for topic, _ in metadata.partitions:
        if topic not in INTERNAL_TOPICS:
            counts[topic] = counts.get(topic, 0) + 1
    return MetadataImage({
        topic: TopicMetadata(topic, metadata.topic_ids.get(topic, topic), counts[topic]) for topic in sorted(counts)
    })
