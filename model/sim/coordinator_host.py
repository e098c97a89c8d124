"""Coordinator shards hosted on a broker: one per internal partition it leads.

* ``ShareCoordinatorHost`` serves the share-state RPCs for one
  ``__share_group_state`` partition with a ``ShareCoordinatorShard``;
* ``GroupCoordinatorHost`` serves the group RPCs for one
  ``__consumer_offsets`` partition with a ``GroupCoordinatorShard``.

Both follow the life of Kafka's ``CoordinatorRuntime`` (SC-6, SC-7, GC-6;
Kafka trunk at ``KAFKA_TRUNK_COMMIT``):

1. **Load.** Built when the broker becomes the partition's leader: the shard
   replays the log up to its END, the committed records and the tail above the
   high-water mark this replica had fetched from the old leader
   (``CoordinatorLoaderImpl`` reads with ``FetchIsolation.LOG_END``; the
   tail's fate is ``ReplicatedLog(keep_tail=True)``'s), and answers
   COORDINATOR_LOAD_IN_PROGRESS until a load delay has passed
   (``sharesim.coordinator.load.base.ms`` plus 20 us per record).
2. **Serve.** The shard's state is the last WRITTEN one (Kafka's
   ``SnapshottableCoordinator.lastWrittenOffset``); ``log.committed_count`` is
   its ``lastCommittedOffset``. A handler's records are appended to the
   partition's ``ReplicatedLog`` and the response (and, for the group
   coordinator, the requests to the share coordinator) is sent ONLY when they
   commit; a call that writes nothing is answered once everything appended
   before it has committed (``scheduleWriteOperation``,
   ``waitForPendingWrites``, the ``DeferredEventQueue`` completed by
   ``onHighWatermarkUpdated``). So a coordinator that has loaded but not yet
   seen its inherited tail commit ("catching up": ``catching_up()``) answers
   nothing from it before it is durable; requests that arrive then are
   counted (``coordinator.catching_up`` events and trace lines). The
   inherited tail's commit reaches the observers through the log's
   ``tail_listener``. Kafka's share coordinator runs every RPC, reads too, as a
   write operation; the group coordinator's read operations (describe, list,
   OffsetFetch without requireStable: ``scheduleReadOperation`` at
   ``lastCommittedOffset``) are answered here like the others, after the
   pending writes (no client of the simulation sends them).
3. **Fail.** If the log cannot take the append (fewer in-sync replicas than
   min.insync.replicas: COORDINATOR_NOT_AVAILABLE, as Kafka maps
   NOT_ENOUGH_REPLICAS), the shard is rebuilt from the log (committed records
   plus the tail still being replicated: Kafka reverts to the snapshot of its
   last written offset before the failed batch, ``revertLastWrittenOffset``)
   and reloaded, and the request gets the error. If the uncommitted tail is
   lost to this host (leadership moved), the pending requests get
   NOT_COORDINATOR (Kafka's unload: ``deferredEventQueue.failAll``) and the
   host stops serving; the broker drops it when the new metadata arrives. The
   new leader may still commit those records: their clients never learn it.
4. **Retire.** When the broker loses leadership or crashes, the host is gone
   with everything in memory.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mypy_extensions import mypyc_attr

from model import mutants as _mutants
from model import situations as _situations
from model.core.errors import Errors
from model.core.group.coordinator import GroupCoordinatorShard, ShardResult, error_response, group_id_of
from model.core.group.share_records import ShareGroupMetadata, Tombstone
from model.core.metadata import MetadataImage
from model.core.share_coordinator import ShareCoordinatorShard, share_state_error
from model.core.share_records import ShareStateRecord, ShareUpdate
from model.core.share_state import (
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    WriteShareGroupStateRequest,
)
from model.sim.network import Message
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, SHARE_STATE_TOPIC
from model.sim.replication import ReplicatedLog
from model.sim.timers import Timer
from model.sim.trace import COORDINATOR_WRITE

if TYPE_CHECKING:
    from model.sim.broker import Broker

# What a client is told when the append itself cannot happen or its tail is lost (Kafka's
# coordinator runtime maps the replication errors to coordinator errors).
_APPEND_ERRORS = {
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
}


def coordinator_error(error: Errors) -> Errors:
    return _APPEND_ERRORS.get(error, error)


def load_delay_ms(broker: Broker, records: int) -> int:
    """How long a load takes: ``sharesim.coordinator.load.base.ms`` plus a little per record."""
    return broker.config.coordinator_load_base_ms + records * broker.settings.coordinator_load_us_per_record // 1000


class _Host(ABC):
    """Loading, serving and failing, shared by the two coordinator kinds."""

    topic: str

    def __init__(self, broker: Broker, partition: int, log: ReplicatedLog) -> None:
        self.broker = broker
        self.partition = partition
        self.log = log
        self.leader_epoch = log.leader_epoch
        self.active = True
        self.loading = True
        self._load_timer: Timer | None = None
        # The log end offset the last load replayed up to (Kafka: the shard's lastWrittenOffset after
        # CoordinatorLoaderImpl read to the log end). Until the high-water mark passes it, the shard
        # holds state above what is committed: "loaded but not caught up".
        self.loaded_end = 0
        # Requests that arrived after the load while the loaded tail was not yet committed.
        self.requests_catching_up = 0
        log.tail_listener = self._tail_done

    def catching_up(self) -> bool:
        """Whether the shard's state includes records it loaded above the high-water mark that have
        not committed yet (Kafka: lastCommittedOffset < lastWrittenOffset right after a load)."""
        return self.log.committed_count < self.loaded_end

    def _note_request(self, body: object) -> None:
        """Count a request the loaded shard serves while its state is above what is committed (Kafka:
        lastCommittedOffset < lastWrittenOffset, so its answer waits), and trace one that arrives while
        the loaded tail itself is uncommitted (tests show the swarms reach both)."""
        log = self.log
        if self.loading or log.committed_count >= log.end_offset:
            return
        now = self.broker.scheduler.now_ms
        if not self.catching_up():
            self.broker.observer.on_event("coordinator.uncommitted_window", now, topic=self.topic)
            return
        self.requests_catching_up += 1
        _situations.COUNTS["coordinator-catching-up"] += 1
        self.broker.observer.on_event("coordinator.catching_up", now, topic=self.topic, partition=self.partition)
        self._trace("coordinator.catching_up", request=type(body).__name__, topic=self.topic,
                    committed=log.committed_count, written=self.loaded_end)

    def _tail_done(self, error: Errors, records: Sequence[object]) -> None:
        """An inherited record batch (loaded above the high-water mark) committed or was truncated
        (Kafka: ``onHighWatermarkUpdated`` moves lastCommittedOffset; a truncation comes with a
        resignation, which unloads the shard)."""
        if not self.active or not self.broker.alive:
            return
        if error == Errors.NONE:
            self._records_committed(records)
            self._inherited_committed(records)
        else:
            self._lost_tail()

    @abstractmethod
    def _records_committed(self, records: Sequence[Any]) -> None:
        """Tell the observers that ``records`` of this partition committed."""

    def _inherited_committed(self, records: Sequence[Any]) -> None:  # noqa: B027 (most hosts: nothing)
        """An inherited record batch committed: what else the observers must hear of it."""

    def _start_load(self, records: int) -> None:
        self.loading = True
        self.loaded_end = self.log.end_offset
        delay = load_delay_ms(self.broker, records)
        self._load_timer = self.broker.scheduler.timer(delay, self._load_done)
        self._trace("coordinator.load", records=records, topic=self.topic)

    def _trace(self, kind: str, **fields: Any) -> None:
        broker = self.broker
        if broker.trace is not None:
            broker.trace.record(broker.scheduler.now_ms, broker.node, kind, partition=self.partition, **fields)

    def _load_done(self) -> None:
        self._load_timer = None
        if self.active:
            self.loading = False
            self._loaded()

    @abstractmethod
    def _loaded(self) -> None:
        """The shard has replayed its log: start serving."""

    def retire(self) -> None:
        """Leadership lost or the broker crashed: stop; everything in memory is dropped. A load still
        under way is abandoned (Kafka: CoordinatorRuntime's unload cancels the loading shard); the next
        leader loads from the log again (counted: ``coordinator.load_abandoned``)."""
        if self.active and self.loading and self._load_timer is not None:
            _situations.COUNTS["coordinator-load-abandoned"] += 1
            broker = self.broker
            broker.observer.on_event("coordinator.load_abandoned", broker.scheduler.now_ms, topic=self.topic,
                                     partition=self.partition)
        self.active = False
        if self.log.tail_listener == self._tail_done:
            self.log.tail_listener = None
        if self._load_timer is not None:
            self._load_timer.cancel()
            self._load_timer = None

    def _lost_tail(self) -> None:
        """The uncommitted tail was dropped (a new leader): serve nothing more."""
        _situations.COUNTS["coordinator-tail-lost"] += 1
        self.retire()


# --- share coordinator (SC-*) ---------------------------------------------------------------


@mypyc_attr(native_class=False)  # mypyc: a builtin (list) base
class _Appended(list[ShareStateRecord]):
    """The records one request appended, with the request: if a new leader inherits them and they
    commit there, the write they carry is durable although its client was told NOT_COORDINATOR."""

    __slots__ = ("request",)

    def __init__(self, records: list[ShareStateRecord], request: object) -> None:
        super().__init__(records)
        self.request = request


class ShareCoordinatorHost(_Host):
    """A share coordinator shard on its broker. Besides the RPCs, SC-8 housekeeping on two timers:
    idle keys are re-snapshotted, then the records before the oldest latest snapshot of a live key
    are deleted (``deleteRecords``), so a new coordinator replays only what it needs."""

    topic = SHARE_STATE_TOPIC

    def __init__(self, broker: Broker, partition: int, log: ReplicatedLog,
                 metadata: MetadataImage | None = None) -> None:
        super().__init__(broker, partition, log)
        self._housekeeping: list[Timer] = []
        self.metadata = metadata  # the data topics, as the broker last heard (trunk's onLoaded image)
        self._reload()

    def on_metadata(self, metadata: MetadataImage) -> None:
        """New cluster metadata (trunk's onMetadataUpdate): requests for topics it lacks are refused."""
        self.metadata = metadata
        self.shard.on_metadata_update(metadata)

    def _replayed(self) -> ShareCoordinatorShard:
        config = self.broker.config
        scheduler = self.broker.scheduler
        shard = ShareCoordinatorShard(config.snapshot_update_records_per_snapshot, kafka=config.kafka,
                                      clock=lambda: scheduler.now_ms)
        if self.metadata is not None:
            shard.on_metadata_update(self.metadata)
        shard.begin_load(self.log.log_start_offset)
        for record in self.log.committed:
            if _mutants.ACTIVE == "replay-skips-updates" and isinstance(record, ShareUpdate):
                continue
            shard.apply(record)  # type: ignore[arg-type]
        for record in self.log.uncommitted():
            shard.apply(record)  # type: ignore[arg-type]
        self.broker.observer.on_share_coordinator_loaded(self.partition, shard, self.log.committed,
                                                         self.log.uncommitted(), self.broker.scheduler.now_ms,
                                                         log_start_offset=self.log.log_start_offset)
        return shard

    def _loaded(self) -> None:
        self.shard.complete_load()
        config = self.broker.config
        self._stop_housekeeping()  # a reload starts them again
        self._every(config.share_coordinator_cold_partition_snapshot_interval_ms, self._snapshot_cold)
        self._every(config.share_coordinator_state_topic_prune_interval_ms, self._prune)

    def retire(self) -> None:
        super().retire()
        self._stop_housekeeping()

    def _stop_housekeeping(self) -> None:
        for timer in self._housekeeping:
            timer.cancel()
        self._housekeeping.clear()

    # -- SC-8 housekeeping ------------------------------------------------------------------------

    def _every(self, interval_ms: int, task: Callable[[], None]) -> None:
        def tick() -> None:
            self._housekeeping.remove(timer)
            if self.active:
                self._every(interval_ms, task)
                if not self.loading:
                    task()

        timer = self.broker.scheduler.timer(interval_ms, tick)
        self._housekeeping.append(timer)

    def _snapshot_cold(self) -> None:
        """Fresh snapshots of cold keys: trunk's snapshotColdPartitions (keys whose latest snapshot is an
        interval old); under protocol "kip", of the idle keys that hold redundant records back from pruning."""
        if self.log.writable() != Errors.NONE:
            return
        config = self.broker.config
        records = (self.shard.snapshot_cold(config.share_coordinator_cold_partition_snapshot_interval_ms)
                   if config.kafka else self.shard.resnapshot_idle())
        if not records:
            return
        error = self.log.append(records, lambda err, _offset: self._snapshots_committed(err, records))
        assert error == Errors.NONE, error  # writable() just said so
        self._trace("coordinator.snapshot_cold", keys=len(records))

    def _records_committed(self, records: Sequence[Any]) -> None:
        self.broker.observer.on_share_state_committed(self.partition, records, self.broker.scheduler.now_ms)

    def _snapshots_committed(self, error: Errors, records: list[ShareStateRecord]) -> None:
        broker = self.broker
        if error == Errors.NONE:
            self._records_committed(records)
        elif broker.alive:
            self._lost_tail()

    def _prune(self) -> None:
        """Delete the committed records replay no longer needs (SC-8)."""
        log = self.log
        offset = self.shard.prune_offset(log.committed_count)
        if _mutants.ACTIVE == "prune-past-snapshot":
            # mutant: the newest latest snapshot among live keys, not the oldest
            offset = max((o for o in self.shard._snapshot_offsets.values() if o < log.committed_count),
                         default=offset)
        if offset <= log.log_start_offset:
            return
        self.broker.observer.on_share_state_pruning(self.partition, log.log_start_offset,
                                                    log.committed[: offset - log.log_start_offset],
                                                    self.broker.scheduler.now_ms)
        _situations.COUNTS["share-state-pruned"] += 1
        self.shard.prune(min(offset, self.shard.prune_offset()))  # = offset, unless the mutant deletes more
        log.delete_records(offset)
        self._trace("coordinator.prune", log_start_offset=offset)

    def _reload(self) -> None:
        """Build the shard from the log (at start, or after an append failed) and load it."""
        self.shard = self._replayed()
        self._start_load(len(self.log.committed))

    def handle(self, message: Message, body: Any) -> None:
        broker = self.broker
        if not self.active:
            broker.reply(message, share_state_error(body, Errors.NOT_COORDINATOR))
            return
        self._note_request(body)
        previous = self.shard.state(body.key)
        response, records = self.shard.handle(body)
        broker.observer.on_share_state_request(self.partition, body, response, records, message.sent_ms,
                                               broker.scheduler.now_ms)
        if (_mutants.ACTIVE == "read-uncommitted-coordinator-state" and isinstance(body, ReadShareGroupStateRequest)
                and getattr(response, "error_code", None) == Errors.NONE):
            # mutant: a read answered from the last written state at once, not once that state (the
            # read's own leader-epoch record, the writes before it, a loaded tail) has committed
            broker.reply(message, response)
            response = None
        if not records:
            if response is None:
                return  # the mutant answered it
            if getattr(response, "error_code", None) == Errors.NONE:
                # It wrote nothing but may have read what earlier requests still replicate (a leader
                # epoch a read raised, a write's batches): answer once they commit, as Kafka's coordinator
                # runtime does, so no leader acts on state a failover could undo (SC-7). A refusal goes
                # at once (Kafka: an operation that fails completes at once); acting on it is safe.
                # (A write answered NONE always wrote its record, so _committed reports no write here.)
                self.log.after_pending(lambda error: self._committed(error, message, body, response))
            else:
                broker.reply(message, response)
            return
        broker.observer.on_share_state_handled(self.shard, body, previous, message.sent_ms, broker.scheduler.now_ms)
        if previous is None and isinstance(body, InitializeShareGroupStateRequest):
            broker.observer.on_share_state_created(body.key, body.state_epoch, broker.scheduler.now_ms)
        if _mutants.ACTIVE == "respond-before-commit":
            broker.reply(message, response)  # mutant: answered before the records commit
            response = None
        error = self.log.append(_Appended(records, body),
                                lambda err, _offset: self._committed(err, message, body, response, records))
        if error != Errors.NONE:
            self._reload()
            broker.reply(message, share_state_error(body, coordinator_error(error)))

    def _committed(self, error: Errors, message: Message, body: Any, response: Any,
                   records: list[ShareStateRecord] | None = None) -> None:
        broker = self.broker
        if error == Errors.NONE and records:
            self._records_committed(records)
        if not broker.alive:
            return
        if error != Errors.NONE:
            self._lost_tail()
            if response is not None:
                broker.reply(message, share_state_error(body, coordinator_error(error)))
            return
        if response is not None:
            broker.reply(message, response)  # SC-7: only now
        if isinstance(body, WriteShareGroupStateRequest):
            self._write_durable(body)

    def _write_durable(self, body: WriteShareGroupStateRequest) -> None:
        broker = self.broker
        now = broker.scheduler.now_ms
        broker.observer.on_write_accepted(body, now)
        if broker.trace is not None:
            broker.trace.emit(COORDINATOR_WRITE, now, broker.node, len(body.state_batches), str(body.key),
                              body.leader_epoch, body.start_offset, body.state_epoch)

    def _inherited_committed(self, records: Sequence[Any]) -> None:
        # A write the old coordinator accepted and a new leader kept is durable now: the observers that
        # follow the durable state (the ledger, the SPSO window) must count it, or a leader that reads
        # it would seem to move past offsets no write made durable.
        request = getattr(records, "request", None)
        if isinstance(request, WriteShareGroupStateRequest):
            _situations.COUNTS["state-write-inherited"] += 1
            self._write_durable(request)


# --- group coordinator (GC-*, CG-*) -----------------------------------------------------------


class GroupCoordinatorHost(_Host):
    topic = CONSUMER_OFFSETS_TOPIC

    def __init__(self, broker: Broker, partition: int, log: ReplicatedLog, metadata: MetadataImage) -> None:
        super().__init__(broker, partition, log)
        self.metadata = metadata
        ids = itertools.count(1)
        # Unique across failovers: a tenure's leader epoch is never reused.
        prefix = f"m{partition}.{log.leader_epoch}."
        self._member_ids: Callable[[], str] = lambda: prefix + str(next(ids))
        self._tokens = itertools.count(1)
        self._deferred: dict[int, Message] = {}  # token -> the request answered later
        self._deadline: Timer | None = None
        self._metadata_timer: Timer | None = None
        self._shard_metadata = metadata  # the image the shard has applied (or was built with)
        self.shard = self._replayed()
        self._start_load(log.committed_count)

    def _replayed(self) -> GroupCoordinatorShard:
        broker = self.broker
        shard = GroupCoordinatorShard(broker.config, self.metadata, self._member_ids,
                                      group_configs=broker.group_configs)
        self._shard_metadata = self.metadata
        shard.begin_load()
        for record in self.log.committed:
            if _mutants.ACTIVE == "group-epoch-not-replayed" and isinstance(record, ShareGroupMetadata):
                continue
            shard.apply(record)
        for record in self.log.uncommitted():
            shard.apply(record)
        return shard

    def _loaded(self) -> None:
        self.shard.complete_load()
        self._emit(self.shard.on_loaded(self.broker.scheduler.now_ms), None)
        self._apply_metadata()  # an image that arrived while loading

    def retire(self) -> None:
        super().retire()
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._metadata_timer is not None:
            self._metadata_timer.cancel()
            self._metadata_timer = None
        self._deferred.clear()

    # -- inputs --------------------------------------------------------------------------------

    def handle(self, message: Message, body: Any) -> None:
        broker = self.broker
        if not self.active:
            broker.reply(message, error_response(body, Errors.NOT_COORDINATOR))
            return
        if not self.loading and self.log.writable() != Errors.NONE:
            broker.reply(message, error_response(body, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        self._note_request(body)
        token = next(self._tokens)
        result = self.shard.handle(body, broker.scheduler.now_ms, token)
        broker.observer.on_group_request(self.partition, self.leader_epoch, self.shard, body, result.response,
                                         broker.scheduler.now_ms)
        if result.response is None and not self.shard.loading:
            self._deferred[token] = message
        self._emit(result, message)

    def on_state_response(self, response: object) -> None:
        """A share coordinator's answer to one of our outputs (GC-7, GC-8)."""
        if self.active and not self.loading:
            if self.log.writable() == Errors.NONE:
                self._emit(self.shard.on_state_response(response, self.broker.scheduler.now_ms), None)
            else:
                self.shard.on_state_response_unrecorded(response)

    def on_metadata(self, metadata: MetadataImage) -> None:
        """Topics or partitions changed (GC-2, GC-7, GC-8)."""
        self.metadata = metadata
        self._apply_metadata()

    def _apply_metadata(self) -> None:
        """Hand the shard the newest image. An image is never dropped: while loading, ``_loaded``
        applies it; while the log cannot take the records it leads to (NOT_ENOUGH_REPLICAS),
        look again after a back-off (Kafka only marks the groups for a metadata refresh, done on
        their next heartbeat)."""
        if not self.active or self.loading or self._shard_metadata == self.metadata:
            return
        if self.log.writable() != Errors.NONE:
            if self._metadata_timer is None:
                self._metadata_timer = self.broker.scheduler.timer(self.broker.settings.retry_backoff_ms,
                                                                   self._retry_metadata)
            return
        self._shard_metadata = self.metadata
        self._emit(self.shard.on_metadata(self.metadata, self.broker.scheduler.now_ms), None)

    def _retry_metadata(self) -> None:
        self._metadata_timer = None
        self._apply_metadata()

    def _expire(self) -> None:
        self._deadline = None
        if not self.active:
            return
        if self.log.writable() != Errors.NONE:
            # Cannot write the removals now: look again a little later.
            self._deadline = self.broker.scheduler.timer(self.broker.settings.retry_backoff_ms, self._expire)
            return
        self._emit(self.shard.expire(self.broker.scheduler.now_ms), None)

    # -- outputs -------------------------------------------------------------------------------

    def _emit(self, result: ShardResult, message: Message | None) -> None:
        group_id = None if message is None else group_id_of(message.payload.body)
        self.broker.observer.on_group_coordinator_step(self.partition, self.leader_epoch, self.shard, group_id,
                                                       self.broker.scheduler.now_ms)
        if result.records:
            records = result.records
            error = self.log.append(records, lambda err, _offset: self._committed(err, message, result))
            if error != Errors.NONE:
                self.shard = self._replayed()
                self._deferred.clear()
                self._start_load(self.log.committed_count)
                if message is not None:
                    self.broker.reply(message, error_response(message.payload.body, coordinator_error(error)))
                return
        else:
            # It wrote nothing, but may have read what earlier writes still replicate: answer after them.
            self.log.after_pending(lambda error: self._committed(error, message, result))
        self._arm()

    def _committed(self, error: Errors, message: Message | None, result: ShardResult) -> None:
        if not self.broker.alive:
            return
        if error != Errors.NONE:
            self._lost_tail()
            if message is not None:
                self.broker.reply(message, error_response(message.payload.body, coordinator_error(error)))
            return
        if result.records:
            self._records_committed(result.records)
        if self.active:
            self._send(result, message)

    def _records_committed(self, records: Sequence[Any]) -> None:
        self.broker.observer.on_group_records_committed(self.partition, records, self.broker.scheduler.now_ms)
        for record in records:
            if isinstance(record, Tombstone) and record.key.kind == "ShareGroupMetadata":
                # GC-8: the group is gone for good; its share-partition leaders must not
                # outlive it into a group created again under the same id (SC-5 cannot fence them).
                self.broker.controller.share_group_deleted(record.key.group_id)

    def _send(self, result: ShardResult, message: Message | None) -> None:
        broker = self.broker
        if message is not None and result.response is not None:
            broker.reply(message, result.response)
        for token, response in result.completed:
            waiting = self._deferred.pop(token, None)
            if waiting is not None:
                broker.reply(waiting, response)
        for request in result.outputs:
            broker.send_share_state(request, self._state_answered)

    def _state_answered(self, response: object | None) -> None:
        if response is not None:
            self.on_state_response(response)
        # No answer (timeout, no coordinator): the manager re-sends on its own timer (GC-7).

    def _arm(self) -> None:
        deadline = self.shard.next_deadline_ms()
        timer = self._deadline
        if deadline is None:
            if timer is not None:
                timer.cancel()
                self._deadline = None
            return
        due = max(deadline, self.broker.scheduler.now_ms)
        if timer is not None and timer.active and timer.due_ms == due:
            return
        if timer is None:
            self._deadline = self.broker.scheduler.timer_at(due, self._expire)
        else:
            timer.reschedule_at(due)
