"""A simulated KIP-848 consumer: reconcile, fetch owned partitions, commit with the member epoch.

* **Membership.** A ``ConsumerMember`` builds the ConsumerGroupHeartbeats and
  reconciles each answer into partitions revoked, assigned and lost. One
  heartbeat is in flight at a time; the next goes at once when the member
  says so (join, revocation to acknowledge), else after the heartbeat interval.
* **Commit before revoke (CG-2).** Revoked partitions stop fetching at once;
  when the batch being processed (if it is theirs) is done, their positions
  are committed (OffsetCommit with the member epoch) and only then does the
  heartbeat that acknowledges the revocation go out. Heartbeats go on as
  usual meanwhile (still reporting the revoked partitions owned), so a slow
  revocation is bounded by the rebalance timeout, not the session timeout.
  One revocation commit is in flight at a time; partitions revoked while it
  is are committed after it, before the acknowledgement. A commit answered
  STALE_MEMBER_EPOCH (a heartbeat response with a new epoch was lost) is
  retried with the member's epoch of that time while it has one, within the
  rebalance timeout (as the Java consumer does); a commit that fails
  otherwise (fencing, the deadline) is counted and the revocation goes ahead:
  the next owner re-reads from the last committed offset (at-least-once).
  Lost partitions (fenced) are dropped uncommitted.
* **Assigned partitions** start from their committed offset (OffsetFetch); with
  none, ``auto_offset_reset`` picks the log start ("earliest") or the
  high-water mark ("latest"): the consumer fetches from -1, and the leader's
  OFFSET_OUT_OF_RANGE answer carries both.
* **Fetch loop per owned partition** from its leader: Fetch (read_committed or
  not) → processing (one batch at a time, one draw of the processing time per
  record) → position moves past the batch → next Fetch. Retriable errors and
  timeouts refresh metadata and back off.
* **Auto-commit** every ``auto_commit_interval_ms`` commits the positions that
  moved. STALE_MEMBER_EPOCH asks for a heartbeat now (the next commit uses
  the new epoch).
* **Close** waits for the batch under way and any revocation, commits, then
  leaves; heartbeats go on until the leave, and assignments that arrive
  meanwhile are ignored (the Java consumer's PREPARE_LEAVING). The final
  commit is not retried on STALE_MEMBER_EPOCH: the Java consumer's close
  logs that CommitFailedException and leaves.
* **Static members** (``instance_id``): ``close(temporary=True)`` leaves with
  epoch -2 so a restart (``start`` again) gets the same assignment back (CG-5).
* **The application** processes one batch at a time, as the share consumer does
  (``model/sim/processing.py``): a slow spell ends with its fault, not with the
  batch it began in.
* Metrics: records_delivered counts records processed; end-to-end latency is
  taken when a record's processing ends.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from model import situations as _situations
from model.core.errors import Errors
from model.core.group.consumer_member import FENCING_ERRORS, ConsumerMember, MemberStatus, ReconcileStep
from model.core.group.consumer_messages import ConsumerGroupHeartbeatResponse, OffsetCommitResponse
from model.core.metadata import TopicPartition
from model.core.produce_fetch import FetchRequest, FetchResponse, OffsetFetchRequest, OffsetFetchResponse
from model.sim.client import STALE_METADATA_ERRORS, ClientConfig, GroupConsumer, MetadataSource
from model.sim.network import Network
from model.sim.processing import BatchProcessing
from model.sim.protocol import Observer
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import Trace

RESET_OFFSET = -1  # fetch from here to learn the log start / high-water mark (OFFSET_OUT_OF_RANGE)


@dataclass(frozen=True)
class ConsumerSettings:
    processing: Distribution = field(default_factory=lambda: Distribution.constant(1))
    max_poll_records: int = 500
    read_committed: bool = False  # isolation.level
    auto_offset_reset: str = "earliest"
    auto_commit_interval_ms: int = 5_000
    idle_fetch_backoff_ms: int = 100
    heartbeat_interval_ms: int = 5_000  # until the coordinator says otherwise
    rebalance_timeout_ms: int = 300_000
    instance_id: str | None = None  # a static member (CG-5)

    def __post_init__(self) -> None:
        if self.auto_offset_reset not in ("earliest", "latest"):
            raise ValueError(f"auto_offset_reset = {self.auto_offset_reset!r}: 'earliest' or 'latest'")
        if self.max_poll_records < 1 or self.auto_commit_interval_ms < 1:
            raise ValueError("max_poll_records and auto_commit_interval_ms must be >= 1")


@dataclass
class _Partition:
    tp: TopicPartition
    position: int | None = None  # None until OffsetFetch answers
    committed: int = -1
    active: bool = True  # owned and fetching
    request: int | None = None
    queued: bool = False  # a fetched batch waits for (or is in) processing
    timer: Timer | None = None


@dataclass
class _Delivery:
    part: _Partition
    fetch_offset: int
    next_offset: int
    records: int
    produce_times: tuple[int, ...]
    processing: BatchProcessing | None = None  # set when its processing starts


class Consumer(GroupConsumer):
    observer: Observer = Observer()  # the cluster's invariant monitors (CG-2, CG-3)

    def __init__(
        self,
        name: str,
        group_id: str,
        topics: tuple[str, ...] | list[str],
        scheduler: Scheduler,
        network: Network,
        metadata_source: MetadataSource,
        streams: RandomStreams,
        *,
        settings: ConsumerSettings | None = None,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(name, group_id, topics, scheduler, network, metadata_source, config=config, trace=trace)
        self.settings = settings or ConsumerSettings()
        self._rng: random.Random = streams.get("consumer", name, "processing")
        self._sample = self.settings.processing.sampler()
        self.extra_processing_ms = 0
        self.member = self._new_member()
        self._parts: dict[TopicPartition, _Partition] = {}
        self._revoking: list[_Partition] | None = None
        self._revoke_started_ms = 0  # when the revocation under way began (its commits retry until its timeout)
        self._revoke_committing = False
        self._queue: deque[_Delivery] = deque()
        self._processing: _Delivery | None = None
        self._temporary_leave = False
        self._close_committing = False  # the final commit is on its way

    def _new_member(self) -> ConsumerMember:
        return ConsumerMember(
            self.group_id,
            self.topics,
            instance_id=self.settings.instance_id,
            rebalance_timeout_ms=self.settings.rebalance_timeout_ms,
            client_id=self.name,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    def on_start(self) -> None:
        self.member = self._new_member()
        self.observer.on_consumer_heartbeat(self.name, self.group_id, "started", self.member, None, None,
                                            self.scheduler.now_ms)
        self.closing = self.closed = self._close_committing = False
        self._reset_local_state()
        self._schedule_heartbeat(0)
        self.call_later(self.settings.auto_commit_interval_ms, self._auto_commit)

    def on_subscribe(self) -> None:
        # Kafka's onSubscriptionUpdated: a member in the group sends the new topics with its next heartbeat.
        self.member.subscribe(self.topics)

    def on_crash(self) -> None:
        self.observer.on_consumer_heartbeat(self.name, self.group_id, "crashed", self.member, None, None,
                                            self.scheduler.now_ms)
        self._reset_local_state()
        self._owns_nothing()

    def _owns_nothing(self) -> None:
        none: frozenset[TopicPartition] = frozenset()
        self.observer.on_consumer_reconciled(self.name, self.group_id, none, none, none, False, self.scheduler.now_ms)

    def _reset_local_state(self) -> None:
        self._parts.clear()
        self._revoking = None
        self._revoke_committing = False
        self._queue.clear()
        self._processing = None
        self._heartbeat_request = None

    def slow_processing(self, extra_ms: int) -> None:
        """Each record takes ``extra_ms`` more to process (0 ends the fault).

        The record being processed keeps its time; the records after it in the batch take the new extra.
        """
        self.extra_processing_ms = extra_ms
        delivery = self._processing
        if delivery is not None and delivery.processing is not None:
            delivery.processing.retime(self.scheduler.now_ms, extra_ms)

    @property
    def owned(self) -> frozenset[TopicPartition]:
        return frozenset(self._parts)

    def position(self, tp: TopicPartition) -> int | None:
        part = self._parts.get(tp)
        return part.position if part is not None else None

    # -- heartbeats and reconciliation --------------------------------------------------------

    def _heartbeat(self) -> None:
        if self._heartbeat_request is not None or not self.member.active:
            return
        coordinator = self._heartbeat_coordinator()
        if coordinator is None:
            return
        request = self.member.build_heartbeat()
        if request is None:
            return
        leaving = request.member_epoch < 0
        self.observer.on_consumer_heartbeat(self.name, self.group_id, "sent", self.member, request, None,
                                            self.scheduler.now_ms)
        self._heartbeat_request = self.send_request(
            coordinator,
            "ConsumerGroupHeartbeat",
            request,
            lambda response: self._on_heartbeat_response(response, leaving),
            lambda: self._on_heartbeat_timeout(leaving),
        )

    def _on_heartbeat_response(self, response: ConsumerGroupHeartbeatResponse, leaving: bool) -> None:
        self._heartbeat_request = None
        if leaving:
            self._finish_close()
            return
        step = self.member.on_response(response)
        self._apply(step)
        self.observer.on_consumer_heartbeat(self.name, self.group_id, "answered", self.member, None, response,
                                            self.scheduler.now_ms)
        error = response.error_code
        self.observer.on_consumer_reconciled(self.name, self.group_id, step.revoked, step.assigned, self.owned,
                                             error in FENCING_ERRORS, self.scheduler.now_ms)
        if error in FENCING_ERRORS:
            _situations.COUNTS["consumer-member-rejoined-after-fence"] += 1
            self.metrics.fenced += 1
            self.record("consumer.fenced", error=int(error))
        if not self.member.active:
            if self.member.status == MemberStatus.FATAL:  # else fenced while closing: out, nothing failed
                self.record("consumer.failed", error=int(error))
            return
        if error != Errors.NONE and error not in FENCING_ERRORS:
            self._retry_heartbeat(error)
        elif self.member.heartbeat_now:
            self._schedule_heartbeat(0)
        else:
            self._schedule_heartbeat(self.member.heartbeat_interval_ms or self.settings.heartbeat_interval_ms)

    def _on_heartbeat_timeout(self, leaving: bool) -> None:
        self._heartbeat_request = None
        if leaving:
            self._finish_close()
            return
        self.member.on_response_lost()
        self.observer.on_consumer_heartbeat(self.name, self.group_id, "lost", self.member, None, None,
                                            self.scheduler.now_ms)
        self._retry_heartbeat(Errors.REQUEST_TIMED_OUT)

    def _apply(self, step: ReconcileStep) -> None:
        if not (step.revoked or step.assigned or step.lost):
            return
        self.metrics.rebalances += 1
        self.record(
            "consumer.reconcile",
            epoch=self.member.member_epoch,
            revoked=len(step.revoked),
            assigned=len(step.assigned),
            lost=len(step.lost),
        )
        for tp in sorted(step.lost):
            part = self._parts.pop(tp, None)
            if part is not None:
                self._stop(part)
        if step.lost and self._revoking is not None:
            # Lost, not revoked (fenced): dropped uncommitted, like the rest (Java: onPartitionsLost).
            still = [p for p in self._revoking if p.tp not in step.lost]
            self._revoking = still or None
            if self.closing:
                self._continue_close()  # goes on once nothing is left to revoke
        if step.revoked:
            revoking = []
            for tp in sorted(step.revoked):
                part = self._parts.pop(tp, None)
                if part is not None:
                    self._stop(part)
                    revoking.append(part)
            if self._revoking is None:
                self._revoke_started_ms = self.scheduler.now_ms
            self._revoking = (self._revoking or []) + revoking
            self._try_finish_revoke()
        if step.assigned:
            fresh = [tp for tp in sorted(step.assigned) if tp not in self._parts]
            for tp in fresh:
                self._parts[tp] = _Partition(tp)
            if fresh:
                self._fetch_committed(fresh)

    def _stop(self, part: _Partition) -> None:
        part.active = False
        if part.request is not None:
            self.forget_request(part.request)
            part.request = None
        if part.timer is not None:
            part.timer.cancel()
        # Fetched but unprocessed records of this partition are dropped; its position stays put.
        kept = [d for d in self._queue if d.part is not part]
        if len(kept) != len(self._queue):
            self._queue = deque(kept)
            part.queued = False

    def _try_finish_revoke(self) -> None:
        revoking = self._revoking
        if revoking is None or self._revoke_committing:
            return
        if self._processing is not None and any(self._processing.part is p for p in revoking):
            return  # commit what it is processing first
        self._revoke_committing = True
        self._commit_revoked(revoking, self._revoke_started_ms + self.settings.rebalance_timeout_ms, 1)

    def _commit_revoked(self, revoking: list[_Partition], deadline_ms: int, attempt: int) -> None:
        """Commit the revoked partitions' positions before the revocation is acknowledged (CG-2).

        A STALE_MEMBER_EPOCH answer (a heartbeat response with a new epoch was lost) is retried
        after a back-off with the member epoch of that time, as long as the member has one and the
        rebalance timeout since the revocation began has not passed (the coordinator fences the
        member then anyway). Java does the same in ``autoCommitSyncBeforeRevocationWithRetries``.
        Any other failure, or the deadline, lets the revocation go ahead uncommitted
        (at-least-once)."""
        if self._revoking is not revoking:  # more were revoked, or some lost, while a retry waited
            self._revoked_committed(revoking)
            return
        offsets = {p.tp: p.position for p in revoking if p.position is not None and p.position != p.committed}

        def done(ok: bool, stale: bool) -> None:
            if not ok and stale and self.member.member_epoch > 0 and self._revoking is revoking:
                delay_ms = self.backoff_ms(attempt)
                if self.scheduler.now_ms + delay_ms < deadline_ms:
                    self.record("consumer.commit_retry", attempt=attempt + 1, partitions=len(offsets))
                    self.call_later(delay_ms, self._commit_revoked, revoking, deadline_ms, attempt + 1)
                    return
            self._revoked_committed(revoking)

        if not offsets:
            self._revoked_committed(revoking)
            return
        self._commit({tp: pos for tp, pos in offsets.items() if pos is not None}, done)

    def _revoked_committed(self, revoking: list[_Partition]) -> None:
        self._revoke_committing = False
        if self._revoking is not revoking:  # more were revoked meanwhile, or some were lost
            self._try_finish_revoke()
        else:
            self._revoking = None
            self.member.revocation_done()
            self.observer.on_consumer_heartbeat(self.name, self.group_id, "revoked", self.member, None, None,
                                                self.scheduler.now_ms)
            self._schedule_heartbeat(0)
        if self.closing:
            self._continue_close()  # close() waited for the revocation

    # -- committed offsets -------------------------------------------------------------------

    def _fetch_committed(self, tps: list[TopicPartition]) -> None:
        request = OffsetFetchRequest(
            self.group_id,
            tuple((tp.topic, tp.partition) for tp in tps),
            member_id=self.member.member_id,
            member_epoch=self.member.member_epoch,
        )

        def done(response: OffsetFetchResponse | None) -> None:
            committed: dict[TopicPartition, int] = {}
            if response is not None and response.error_code == Errors.NONE:
                for p in response.partitions:
                    if p.error_code == Errors.NONE:
                        committed[TopicPartition(p.topic, p.partition)] = p.committed_offset
            for tp in tps:
                part = self._parts.get(tp)
                if part is None or not part.active or part.position is not None:
                    continue
                offset = committed.get(tp, -1)
                part.committed = offset
                part.position = offset if offset >= 0 else RESET_OFFSET
                self._fetch(part)

        self.call(
            lambda: self.group_coordinator(self.group_id),
            "OffsetFetch",
            request,
            done,
            error_of=lambda response: response.error_code,
        )

    def _commit(self, offsets: dict[TopicPartition, int],
                on_done: Callable[[bool, bool], object] | None = None) -> None:
        """OffsetCommit with the member epoch; ``on_done(ok, stale)``: every partition committed, and
        whether one was refused with STALE_MEMBER_EPOCH."""
        request = self.member.commit_request(offsets)

        def done(response: OffsetCommitResponse | None) -> None:
            ok = response is not None
            stale = False
            for p in response.partitions if response is not None else ():
                tp = TopicPartition(p.topic, p.partition_index)
                if p.error_code == Errors.NONE:
                    self.metrics.offsets_committed += 1
                    for part in (self._parts.get(tp), *(self._revoking or ())):
                        if part is not None and part.tp == tp:
                            part.committed = offsets[tp]
                else:
                    ok = False
                    self.metrics.commit_errors += 1
                    stale |= p.error_code == Errors.STALE_MEMBER_EPOCH
            if response is None:
                self.metrics.commit_errors += len(offsets)
            if stale:
                self._schedule_heartbeat(0)  # learn the current member epoch
            self.record("consumer.commit", partitions=len(offsets), ok=ok)
            if on_done is not None:
                on_done(ok, stale)

        self.call(
            lambda: self.group_coordinator(self.group_id),
            "OffsetCommit",
            request,
            done,
            error_of=_commit_error,
        )

    def _auto_commit(self) -> None:
        self.call_later(self.settings.auto_commit_interval_ms, self._auto_commit)
        if self.closing or not self.member.member_id:
            return
        offsets = {
            tp: p.position
            for tp, p in sorted(self._parts.items())
            if p.position is not None and p.position >= 0 and p.position != p.committed
        }
        if offsets:
            self._commit({tp: pos for tp, pos in offsets.items() if pos is not None})

    # -- fetching ----------------------------------------------------------------------------

    def _fetch(self, part: _Partition) -> None:
        if not self.alive or self.closing or not part.active or part.position is None:
            return
        if part.request is not None or part.queued:
            return
        if part.timer is not None and part.timer.active:
            return
        info = self.leader_of(part.tp.topic, part.tp.partition)
        if info is None:
            self.request_metadata_refresh()
            self._fetch_later(part, self.config.retry_backoff_ms)
            return
        fetch_offset = part.position
        request = FetchRequest(
            part.tp.topic,
            part.tp.partition,
            fetch_offset,
            max_records=self.settings.max_poll_records,
            read_committed=self.settings.read_committed,
            leader_epoch=info.leader_epoch,
        )
        part.request = self.send_request(
            info.leader,
            "Fetch",
            request,
            lambda response: self._on_fetch_response(part, fetch_offset, response),
            lambda: self._on_fetch_failed(part, Errors.REQUEST_TIMED_OUT),
        )

    def _fetch_later(self, part: _Partition, delay_ms: int) -> None:
        part.timer = self.call_later(delay_ms, self._fetch_again, part)

    def _fetch_again(self, part: _Partition) -> None:
        part.timer = None
        self._fetch(part)

    def _on_fetch_failed(self, part: _Partition, error: Errors) -> None:
        part.request = None
        if error in STALE_METADATA_ERRORS or error == Errors.REQUEST_TIMED_OUT:
            self.request_metadata_refresh()
        self._fetch_later(part, self.config.retry_backoff_ms)

    def _on_fetch_response(self, part: _Partition, fetch_offset: int, response: FetchResponse) -> None:
        part.request = None
        if not part.active or part.position != fetch_offset:
            return
        error = response.error_code
        if error == Errors.OFFSET_OUT_OF_RANGE:
            part.position = self._reset_position(fetch_offset, response)
            self._fetch(part)
            return
        if error != Errors.NONE:
            self._on_fetch_failed(part, error)
            return
        count = sum(last - first + 1 for first, last in response.records)
        next_offset = max(response.next_fetch_offset, fetch_offset)
        if count:
            part.queued = True
            self._queue.append(_Delivery(part, fetch_offset, next_offset, count, response.produce_times))
            self._process_next()
            return
        part.position = next_offset  # past markers, gaps and aborted records
        self._fetch_later(part, 0 if next_offset > fetch_offset else self.settings.idle_fetch_backoff_ms)

    def _reset_position(self, fetch_offset: int, response: FetchResponse) -> int:
        """auto.offset.reset, or back inside the log after it moved under us."""
        log_start, hwm = response.log_start_offset, response.high_watermark
        if fetch_offset == RESET_OFFSET:
            return log_start if self.settings.auto_offset_reset == "earliest" else hwm
        return log_start if fetch_offset < log_start else hwm

    # -- the application ---------------------------------------------------------------------

    def _process_next(self) -> None:
        if self._processing is not None or not self._queue or not self.alive:
            return
        delivery = self._queue.popleft()
        self._processing = delivery
        sample, rng = self._sample, self._rng
        durations = [sample(rng) for _ in range(delivery.records)]
        delivery.processing = BatchProcessing(durations, self.scheduler.now_ms, self.extra_processing_ms,
                                              self.call_later, self._processed, delivery)

    def _processed(self, delivery: _Delivery) -> None:
        if self._processing is not delivery:
            return  # a re-timed batch's old timer, already held by a pause when it was cancelled
        self._processing = None
        delivery.processing = None  # done; and the cycle delivery -> timer -> delivery goes with refcounting
        part = delivery.part
        part.queued = False
        if part.position == delivery.fetch_offset:
            part.position = delivery.next_offset
        self.metrics.records_delivered += delivery.records
        now = self.scheduler.now_ms
        self.metrics.end_to_end_latencies_ms.extend(now - t for t in delivery.produce_times if t >= 0)
        self.record("consumer.processed", topic=part.tp.topic, partition=part.tp.partition,
                    records=delivery.records, position=part.position or 0)
        if part.active:
            self._fetch(part)
        self._try_finish_revoke()
        if self.closing:
            self._continue_close()
        self._process_next()

    # -- metadata ----------------------------------------------------------------------------

    def on_metadata(self) -> None:
        for _, part in sorted(self._parts.items()):
            self._fetch(part)

    # -- close -------------------------------------------------------------------------------

    def close(self, temporary: bool = False) -> None:
        """Commit, then leave (epoch -1; -2 with ``temporary`` for a static member's restart)."""
        if not self.alive or self.closing:
            return
        self.closing = True
        self.member.prepare_leaving()  # heartbeats go on until the leave, new assignments are ignored
        self._temporary_leave = temporary and self.settings.instance_id is not None
        self.record("consumer.close", temporary=self._temporary_leave)
        for _, part in sorted(self._parts.items()):
            if self._processing is None or self._processing.part is not part:
                self._stop(part)
        self._continue_close()

    def _continue_close(self) -> None:
        if self._processing is not None or self._revoking is not None:
            return
        if self._close_committing:
            return
        self._close_committing = True
        offsets = {
            tp: p.position
            for tp, p in sorted(self._parts.items())
            if p.position is not None and p.position >= 0 and p.position != p.committed
        }
        if offsets and self.member.member_id:
            self._commit({tp: pos for tp, pos in offsets.items() if pos is not None}, lambda ok, stale: self._leave())
        else:
            self._leave()

    def _leave(self) -> None:
        if not self.member.member_id:
            self._finish_close()
            return
        self.member.leave(static=self._temporary_leave)
        self._forget_heartbeat()
        self._heartbeat()
        if self._heartbeat_request is None:
            self._finish_close()

    def _finish_close(self) -> None:
        self._close_committing = False
        super()._finish_close()
        self._owns_nothing()


def _commit_error(response: OffsetCommitResponse) -> Errors:
    """The error that decides a retry: a retriable one shared by every partition."""
    codes = response.error_codes
    if len(codes) == 1:
        (code,) = codes
        return code
    return Errors.NONE

