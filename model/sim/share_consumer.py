"""A simulated KafkaShareConsumer (CL-1..CL-3): heartbeats, share sessions, processing, acks.

* **Membership.** A ``ShareMember`` builds the ShareGroupHeartbeats; one is in
  flight at a time, the next goes ``heartbeat_interval_ms`` later (the
  coordinator's value, else ours), at once after a fencing (rejoin), after a
  back-off on NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS or a timeout.
* **Share sessions (CL-1).** One per broker that leads an assigned partition
  (or still holds our unsent acknowledgements): epoch 0 opens it, each answered
  request moves it on, -1 closes it. SHARE_SESSION_NOT_FOUND,
  INVALID_SHARE_SESSION_EPOCH, any other top-level error, or a lost request
  (timed out, or failed because its connection closed) start it over at 0.
  Starting over bumps the session's generation: acknowledgements of records
  acquired in an earlier generation fail here and are never sent, as the Java
  consumer fails them (an epoch-0 ShareFetch may not carry any). Those
  records stay acquired until the broker releases them: at once if it heard
  the connection close (``Client``), else when their locks time out; opening
  the new session releases nothing.
* **Fetch loop per session.** ShareFetch (max_records = max.poll.records, the
  pending acks of that leader piggybacked, CL-2) → the acquired records go to
  the application → once processed, the next ShareFetch carries their acks.
  A session has at most one batch out at a time; an empty answer waits
  ``idle_fetch_backoff_ms`` before the next fetch.
* **The application** processes one batch at a time (one poll thread): each
  record takes a draw of the processing distribution plus the slow_processing
  extra in force when that record starts; one timer covers the batch. A change
  of the extra (the fault starts or ends) re-times the records not yet started,
  so a slow spell ends with its fault instead of lasting as long as the batch
  it began in. Then per record: a poison record fails and is
  RELEASED every time (so it ends ARCHIVED at the delivery limit); otherwise
  implicit mode ACCEPTs, explicit mode draws accept / release / reject from
  the AckPolicy probabilities. ``commit_sync`` sends the acks at once in a
  ShareAcknowledge instead of waiting for the next fetch.
* **Renewal (KIP-1222, ``ack.renew``).** Every ``renew_interval_ms`` (half
  the group's acquisition lock, as KafkaShareConsumer's renewal example waits)
  the records waiting for or in processing are acknowledged RENEW in a
  ShareAcknowledge of their own, per session with no request in flight; the
  leader restarts their locks without a write.
* **Retried acknowledgements.** An acknowledgement answered
  LEADER_NOT_AVAILABLE (the leader is still reading the share-partition's
  state) goes out again with the session's next request, up to
  ``ACK_RETRIES`` times, as the Java consumer retries a RetriableException.
* **Counting.** Accepted / released / rejected count acknowledgements the
  leader confirmed; ``ack_errors`` counts records whose acknowledgement failed
  (INVALID_RECORD_STATE after a lock expiry, a fenced leader …), was lost
  (timeout) or was dropped (session started over). End-to-end latency (produce
  time → processed) is kept for confirmed accepts.
* ``close``: finish the batch being processed, send the remaining acks with
  ShareAcknowledge epoch -1 to every open session, then the leave heartbeat
  (epoch -1); heartbeats go on until the leave (ShareConsumerImpl.close:
  acknowledgeOnClose, then the ShareUnsubscribeEvent), and a member fenced
  meanwhile leaves rather than rejoins. A consumer_close fault starts it
  again as a new member (``restart_after_close``); ``subscribe`` sends new
  topics with the next heartbeat; ``crash`` stops silently; ``pause``
  freezes (``Client``).
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

from model import mutants as _mutants
from model import situations as _situations
from model.core.errors import Errors
from model.core.group.share_member import REJOIN_ERRORS, MemberState, ShareMember
from model.core.group.share_messages import ShareGroupHeartbeatResponse
from model.core.metadata import TopicPartition
from model.core.share_fetch import (
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchPartition,
    ShareFetchPartitionResponse,
    ShareFetchRequest,
    ShareFetchResponse,
)
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords
from model.core.share_session import FINAL_EPOCH, INITIAL_EPOCH, next_epoch
from model.core.share_state import AcknowledgeType
from model.sim.client import STALE_METADATA_ERRORS, ClientConfig, GroupConsumer, MetadataSource
from model.sim.network import Network
from model.sim.poison import poison_between
from model.sim.processing import BatchProcessing
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler, Timer
from model.sim.trace import CONSUMER_DELIVERED, CONSUMER_PROCESSED, Trace

ACCEPT = int(AcknowledgeType.ACCEPT)
RELEASE = int(AcknowledgeType.RELEASE)
REJECT = int(AcknowledgeType.REJECT)
RENEW = int(AcknowledgeType.RENEW)
GAP = int(AcknowledgeType.GAP)
# Acknowledgement errors the Java consumer retries (their exceptions are RetriableException:
# ShareConsumeRequestManager.handlePartitionError): the acks go out again with the next request.
RETRIED_ACK_ERRORS = frozenset((Errors.LEADER_NOT_AVAILABLE,))
ACK_RETRIES = 3  # attempts after the first (the Java consumer retries until its acknowledgement timer ends)


@dataclass(frozen=True)
class ShareConsumerSettings:
    """What a share consumer does (scenario ConsumerSpec, CL-3)."""

    processing: Distribution = field(default_factory=lambda: Distribution.constant(1))
    accept: float = 1.0  # the AckPolicy of explicit mode
    release: float = 0.0
    reject: float = 0.0
    poison_rate: float = 0.0
    poison_seed: int = 0  # the run seed: poison is the same records for every consumer
    ack_mode: str = "explicit"  # or "implicit": accept the whole batch
    commit_sync: bool = False  # send acks in a ShareAcknowledge as soon as a batch is processed
    max_poll_records: int = 500
    acquire_mode: str = "batch_optimized"  # share.acquire.mode, sent on every ShareFetch
    max_wait_ms: int = 500  # ShareFetch MaxWaitMs (the broker may hold an empty fetch this long)
    min_bytes: int = 1  # ShareFetch MinBytes (fetch.min.bytes; the broker counts records)
    idle_fetch_backoff_ms: int = 100  # after an empty answer
    heartbeat_interval_ms: int = 5_000  # until the coordinator says otherwise
    # KIP-1222: every this many ms, records waiting for or in processing are acknowledged RENEW in a
    # ShareAcknowledge (0: never; the cluster gives half the group's acquisition lock, ack.renew).
    renew_interval_ms: int = 0

    def __post_init__(self) -> None:
        if self.ack_mode not in ("explicit", "implicit"):
            raise ValueError(f"ack_mode = {self.ack_mode!r}: must be 'explicit' or 'implicit'")
        if abs(self.accept + self.release + self.reject - 1.0) > 1e-9:
            raise ValueError("accept + release + reject must be 1")
        if self.max_poll_records < 1:
            raise ValueError("max_poll_records must be >= 1")
        if self.acquire_mode not in ("batch_optimized", "record_limit"):
            raise ValueError(f"acquire_mode = {self.acquire_mode!r}: must be 'batch_optimized' or 'record_limit'")
        if not 0.0 <= self.poison_rate <= 1.0:  # NaN too
            raise ValueError(f"poison_rate = {self.poison_rate!r}: must be a probability in [0, 1]")
        if self.renew_interval_ms < 0:
            raise ValueError(f"renew_interval_ms = {self.renew_interval_ms!r}: must be >= 0")


class _PendingAck:
    """One acknowledgement run, with what to count when the leader confirms it."""

    __slots__ = ("batch", "latencies", "retries")

    def __init__(self, batch: AcknowledgementBatch, latencies: tuple[int, ...] = ()) -> None:
        self.batch = batch
        self.latencies = latencies  # accepted records with a known produce time
        self.retries = 0  # times sent again after a retriable error (RETRIED_ACK_ERRORS)

    @property
    def count(self) -> int:
        return self.batch.last_offset - self.batch.first_offset + 1


@dataclass
class _Session:
    """Our side of one share session (CL-1) with one leader."""

    broker: int
    epoch: int = INITIAL_EPOCH
    generation: int = 0
    known: set[TopicPartition] = field(default_factory=set)  # what the broker's session holds
    acks: dict[TopicPartition, list[_PendingAck]] = field(default_factory=dict)
    request: int | None = None  # correlation id in flight
    outstanding: int = 0  # acquired batches not yet processed
    fetch_timer: Timer | None = None
    closed: bool = False

    def take_acks(self) -> dict[TopicPartition, list[_PendingAck]]:
        acks, self.acks = self.acks, {}
        return {tp: sorted(runs, key=lambda a: a.batch.first_offset) for tp, runs in sorted(acks.items())}


class _Delivery:
    """Records of one ShareFetch answer, waiting for (or in) processing (a plain class: one per fetch,
    see ``model/core/message.py``)."""

    __slots__ = ("gaps", "generation", "processing", "records", "session")

    def __init__(self, session: _Session, generation: int,
                 records: list[tuple[TopicPartition, AcquiredRecords, tuple[int, ...]]],
                 gaps: dict[TopicPartition, tuple[tuple[int, int], ...]] | None = None) -> None:
        self.session = session
        self.generation = generation
        self.records = records  # (tp, range, produce times)
        # Acquired offsets the fetched batches held no record for (compacted away, control markers):
        # never given to the application, acknowledged with GAP (ShareCompletedFetch).
        self.gaps = gaps or {}
        self.processing: BatchProcessing | None = None  # set when its processing starts


class ShareConsumer(GroupConsumer):
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
        settings: ShareConsumerSettings | None = None,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(name, group_id, topics, scheduler, network, metadata_source, config=config, trace=trace)
        self.settings = settings or ShareConsumerSettings()
        self._processing_rng: random.Random = streams.get("consumer", name, "processing")
        self._ack_rng: random.Random = streams.get("consumer", name, "ack")
        self._sample_processing = self.settings.processing.sampler()
        self.extra_processing_ms = 0  # slow_processing fault
        self.member = ShareMember(group_id, self.topics, client_id=name)
        self._sessions: dict[int, _Session] = {}
        self._routes: dict[TopicPartition, int] = {}  # assigned partition -> leader we fetch it from
        self._queue: deque[_Delivery] = deque()
        self._processing: _Delivery | None = None
        self._leave_sent = False
        self._renew_timer: Timer | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def on_start(self) -> None:
        # A (re)started consumer is a new member with empty sessions.
        if not (_mutants.ACTIVE == "restart-after-close-stays-left" and self.member.state is MemberState.LEFT):
            self.member = ShareMember(self.group_id, self.topics, client_id=self.name)
        # else mutant: the process started again after close() keeps the membership that left: it never joins
        self.closing = self.closed = self._leave_sent = False
        self._sessions.clear()
        self._routes.clear()
        self._queue.clear()
        self._processing = None
        self._heartbeat_request = None
        self._renew_timer = None
        self._schedule_heartbeat(0)

    def on_crash(self) -> None:
        self._sessions.clear()
        self._routes.clear()
        self._queue.clear()
        self._processing = None
        self._heartbeat_request = None
        if self._renew_timer is not None:
            self._renew_timer.cancel()
            self._renew_timer = None

    def slow_processing(self, extra_ms: int) -> None:
        """Each record takes ``extra_ms`` more to process (0 ends the fault).

        The record being processed keeps its time; the records after it in the batch take the new extra.
        """
        self.extra_processing_ms = extra_ms
        self.record("consumer.slow", extra_ms=extra_ms)
        delivery = self._processing
        if delivery is not None and delivery.processing is not None:
            delivery.processing.retime(self.scheduler.now_ms, extra_ms)

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        return self.member.assignment

    # -- heartbeats --------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        # A closing consumer heartbeats on until its leave: Kafka's heartbeat request manager runs beside
        # the close's acknowledgements (ShareConsumerImpl.close: acknowledgeOnClose, then the leave).
        if self._leave_sent or self._heartbeat_request is not None or not self.member.active:
            return
        if self.closing and self.member.state is MemberState.JOINING:
            return  # fenced while closing: it leaves rather than joins again
        coordinator = self._heartbeat_coordinator()
        if coordinator is None:
            return
        request = self.member.heartbeat()
        self._heartbeat_request = self.send_request(
            coordinator, "ShareGroupHeartbeat", request, self._on_heartbeat_response, self._on_heartbeat_timeout
        )

    def _on_heartbeat_response(self, response: ShareGroupHeartbeatResponse) -> None:
        self._heartbeat_request = None
        before = self.member.assignment
        self.member.on_response(response)
        error = response.error_code
        if error in REJOIN_ERRORS:
            _situations.COUNTS["share-member-rejoined-after-fence"] += 1
            self.metrics.fenced += 1
            self.record("consumer.fenced", error=int(error))
        if self.member.assignment != before:
            self.metrics.rebalances += 1
            self.record(
                "consumer.assignment",
                epoch=self.member.member_epoch,
                partitions=",".join(str(tp) for tp in sorted(self.member.assignment)),
            )
            self._reconcile()
        if self.member.state is MemberState.FAILED:
            self.record("consumer.failed", error=int(error))
            return
        if error in REJOIN_ERRORS:
            self._schedule_heartbeat(0)
        elif error != Errors.NONE:
            self._retry_heartbeat(error)
        else:
            self._schedule_heartbeat(self.member.heartbeat_interval_ms or self.settings.heartbeat_interval_ms)

    def _on_heartbeat_timeout(self) -> None:
        self._heartbeat_request = None
        self.member.on_request_lost()
        self._retry_heartbeat(Errors.REQUEST_TIMED_OUT)

    # -- routing assigned partitions to leaders ------------------------------------------------

    def on_metadata(self) -> None:
        self._reconcile()

    def on_subscribe(self) -> None:
        # Kafka's onSubscriptionUpdated: a member in the group sends the new topics with its next heartbeat.
        self.member.subscribe(self.topics)

    def _reconcile(self) -> None:
        """Route every assigned partition to its leader's session and poke the fetch loops."""
        routes: dict[TopicPartition, int] = {}
        missing = False
        for tp in sorted(self.member.assignment):
            info = self.leader_of(tp.topic, tp.partition)
            if info is None:
                missing = True
                continue
            routes[tp] = info.leader
        if missing:
            self.request_metadata_refresh()
        self._routes = routes
        for broker in sorted(set(routes.values())):
            if broker not in self._sessions:
                self._sessions[broker] = _Session(broker)
        for broker in sorted(self._sessions):
            self._maybe_fetch(self._sessions[broker])

    def _wanted(self, session: _Session) -> list[TopicPartition]:
        return [tp for tp, broker in self._routes.items() if broker == session.broker]

    # -- the fetch loop ----------------------------------------------------------------------

    def _maybe_fetch(self, session: _Session) -> None:
        if not self.alive:
            return
        if self.closing:
            self._close_session(session)
            return
        if session.request is not None or session.outstanding or not self.member.member_id:
            return
        if session.fetch_timer is not None and session.fetch_timer.active:
            return
        wanted = self._wanted(session)
        if not wanted and not session.acks:
            return
        if not wanted and session.epoch != INITIAL_EPOCH:
            self._acknowledge(session, session.epoch)  # acks only: nothing to fetch from this leader
            return
        if not wanted:
            session.acks.clear()  # cannot happen: acks imply an open session
            return
        acks = session.take_acks() if session.epoch != INITIAL_EPOCH else {}
        partitions: list[ShareFetchPartition] = []
        for tp in sorted(set(wanted) | set(acks)):
            batches = tuple(a.batch for a in acks.get(tp, ()))
            partitions.append(
                ShareFetchPartition(
                    self.topic_id(tp.topic),
                    tp.partition,
                    partition_max_bytes=(1 << 20) if tp in wanted else 0,
                    acknowledgement_batches=batches,
                )
            )
        forgotten = (
            sorted(session.known - set(wanted) - set(acks)) if session.epoch != INITIAL_EPOCH else []
        )
        request = ShareFetchRequest(
            group_id=self.group_id,
            member_id=self.member.member_id,
            share_session_epoch=session.epoch,
            partitions=tuple(partitions),
            forgotten=tuple((self.topic_id(tp.topic), tp.partition) for tp in forgotten),
            max_wait_ms=self.settings.max_wait_ms,
            min_bytes=self.settings.min_bytes,
            max_records=self.settings.max_poll_records,
            acquire_mode=self.settings.acquire_mode,
        )
        # The broker's session now holds every partition named (ack-only ones too, CL-1): an
        # incremental fetch reads them all until they are forgotten.
        named = set(wanted) | set(acks)
        session.known = named if session.epoch == INITIAL_EPOCH else (session.known | named) - set(forgotten)
        epoch = session.epoch
        session.request = self.send_request(
            session.broker,
            "ShareFetch",
            request,
            lambda response: self._on_fetch_response(session, epoch, acks, response),
            lambda: self._on_request_lost(session, acks),
        )

    def _on_fetch_response(
        self,
        session: _Session,
        epoch: int,
        acks: dict[TopicPartition, list[_PendingAck]],
        response: ShareFetchResponse,
    ) -> None:
        session.request = None
        if response.error_code != Errors.NONE:
            self._on_session_error(session, response.error_code, acks)
            return
        session.epoch = next_epoch(epoch)
        by_tp: dict[TopicPartition, ShareFetchPartitionResponse] = {}
        for part in response.responses:
            tp = TopicPartition(self.topic_name(part.topic_id), part.partition)
            by_tp[tp] = part
            if part.error_code in STALE_METADATA_ERRORS:
                self.request_metadata_refresh()
        for tp, runs in acks.items():
            answered = by_tp.get(tp)
            self._confirm(runs, Errors.UNKNOWN_SERVER_ERROR if answered is None else answered.acknowledge_error_code,
                          session, tp)
        records: list[tuple[TopicPartition, AcquiredRecords, tuple[int, ...]]] = []
        gaps: dict[TopicPartition, tuple[tuple[int, int], ...]] = {}
        gap_count = 0
        for tp, part in by_tp.items():
            if part.gaps and part.acquired_records:
                gaps[tp] = part.gaps
                gap_count += sum(last - first + 1 for first, last in part.gaps)
            times = part.produce_times
            cursor = 0
            for acquired in part.acquired_records:
                count = acquired.last_offset - acquired.first_offset + 1
                records.append((tp, acquired, times[cursor : cursor + count] if times else ()))
                cursor += count
        if records and not self.closing and gap_count:
            delivered = sum(r.last_offset - r.first_offset + 1 for _, r, _ in records)
            if delivered == gap_count:
                # Nothing for the application: the GAPs ride on the next request.
                self._gaps_only(session, records, gaps)
                return
        if records and not self.closing:
            delivered = sum(r.last_offset - r.first_offset + 1 for _, r, _ in records) - gap_count
            self.metrics.records_delivered += delivered
            self.metrics.redeliveries += sum(
                r.last_offset - r.first_offset + 1 for _, r, _ in records if r.delivery_count > 1
            )
            self.emit(CONSUMER_DELIVERED, session.broker, delivered)
            session.outstanding += 1
            self._queue.append(_Delivery(session, session.generation, records, gaps))
            self._process_next()
            self._arm_renewal()
        elif self.closing:
            self._close_session(session)
        else:
            session.fetch_timer = self.call_later(self.settings.idle_fetch_backoff_ms, self._fetch_again, session)

    def _gaps_only(self, session: _Session, records: list[tuple[TopicPartition, AcquiredRecords, tuple[int, ...]]],
                   gaps: dict[TopicPartition, tuple[tuple[int, int], ...]]) -> None:
        """A fetch whose acquired offsets all lack a record: acknowledged GAP at once (ShareCompletedFetch
        hands the application an empty batch whose gaps are acknowledged with the next request)."""
        for tp, acquired, times in records:
            session.acks.setdefault(tp, []).extend(self._decide(tp, acquired, times, gaps.get(tp, ())))
        self._maybe_fetch(session)

    def _fetch_again(self, session: _Session) -> None:
        session.fetch_timer = None
        self._maybe_fetch(session)

    def _on_request_lost(self, session: _Session, acks: dict[TopicPartition, list[_PendingAck]]) -> None:
        session.request = None
        self._on_session_error(session, Errors.REQUEST_TIMED_OUT, acks)

    def _on_session_error(
        self, session: _Session, error: Errors, acks: dict[TopicPartition, list[_PendingAck]]
    ) -> None:
        """Start the session over at epoch 0; unconfirmed and pending acks are lost (CL-1, CL-2)."""
        if _mutants.ACTIVE == "ack-across-sessions":  # mutant: kept, for the new session
            for tp, runs in acks.items():
                session.acks.setdefault(tp, []).extend(runs)
            acks = {}
        else:
            for runs in session.take_acks().values():
                self._confirm(runs, error)
        for runs in acks.values():
            self._confirm(runs, error)
        session.epoch = INITIAL_EPOCH
        session.generation += 1
        session.known = set()
        self.metrics.share_session_resets += 1
        self.record("consumer.session_reset", broker=session.broker, error=int(error))
        if error not in (Errors.SHARE_SESSION_NOT_FOUND, Errors.INVALID_SHARE_SESSION_EPOCH):
            self.request_metadata_refresh()
        if self.closing:
            session.closed = True  # nothing left to close on the broker
            self._maybe_leave()
            return
        session.fetch_timer = self.call_later(self.config.retry_backoff_ms, self._fetch_again, session)

    def _confirm(self, runs: list[_PendingAck], error: Errors, session: _Session | None = None,
                 tp: TopicPartition | None = None) -> None:
        """Count what the leader answered for ``runs``; a retriable error (RETRIED_ACK_ERRORS) puts them
        back in ``session``'s pending acks for the next request, a few times."""
        metrics = self.metrics
        if error != Errors.NONE:
            if error in RETRIED_ACK_ERRORS and session is not None and tp is not None and not session.closed:
                again = [a for a in runs if a.retries < ACK_RETRIES and a.batch.acknowledge_types[0] != RENEW]
                for a in again:
                    a.retries += 1
                if again:
                    session.acks.setdefault(tp, []).extend(again)
                    self.record("consumer.ack_retry", broker=session.broker, error=int(error),
                                records=sum(a.count for a in again))
                runs = [a for a in runs if a not in again]
            metrics.ack_errors += sum(a.count for a in runs if a.batch.acknowledge_types[0] != RENEW)
            return
        for ack in runs:
            kind = ack.batch.acknowledge_types[0]
            if kind == RENEW:
                metrics.records_renewed += ack.count
            elif kind == ACCEPT:
                metrics.records_accepted += ack.count
                metrics.end_to_end_latencies_ms.extend(ack.latencies)
            elif kind == RELEASE:
                metrics.records_released += ack.count
            elif kind == REJECT:
                metrics.records_rejected += ack.count
            elif kind == GAP:
                metrics.records_gap_acknowledged += ack.count

    # -- the application ---------------------------------------------------------------------

    def _process_next(self) -> None:
        if self._processing is not None or not self._queue or not self.alive:
            return
        delivery = self._queue.popleft()
        self._processing = delivery
        sample, rng = self._sample_processing, self._processing_rng
        gaps = sum(last - first + 1 for runs in delivery.gaps.values() for first, last in runs)
        durations = [sample(rng) for _ in range(sum(acquired.last_offset - acquired.first_offset + 1
                                                    for _, acquired, _ in delivery.records) - gaps)]
        delivery.processing = BatchProcessing(durations, self.scheduler.now_ms, self.extra_processing_ms,
                                              self.call_later, self._processed, delivery)

    def _processed(self, delivery: _Delivery) -> None:
        if self._processing is not delivery:
            return  # a re-timed batch's old timer, already held by a pause when it was cancelled
        self._processing = None
        delivery.processing = None  # done; and the cycle delivery -> timer -> delivery goes with refcounting
        session = delivery.session
        session.outstanding -= 1
        count = 0
        runs_by_tp: dict[TopicPartition, list[_PendingAck]] = {}
        for tp, acquired, times in delivery.records:
            runs_by_tp.setdefault(tp, []).extend(self._decide(tp, acquired, times, delivery.gaps.get(tp, ())))
            count += acquired.last_offset - acquired.first_offset + 1
        gap_count = sum(last - first + 1 for runs in delivery.gaps.values() for first, last in runs)
        count -= gap_count
        current = self._sessions.get(session.broker) is session and (
            delivery.generation == session.generation or _mutants.ACTIVE == "ack-across-sessions")
        if current:
            for tp, runs in runs_by_tp.items():
                session.acks.setdefault(tp, []).extend(runs)
        else:
            self.metrics.ack_errors += count  # acquired in a session that has ended: never sent (see above)
        self.emit(CONSUMER_PROCESSED, session.broker, current, count)
        if self.closing:
            self._close_sessions()
        elif self.settings.commit_sync and session.acks:
            self._commit_sync_session(session)
        else:
            self._maybe_fetch(session)
        self._process_next()

    def _decide(self, tp: TopicPartition, acquired: AcquiredRecords, times: tuple[int, ...],
                gaps: tuple[tuple[int, int], ...] = ()) -> list[_PendingAck]:
        """The acknowledge type of each record, as runs of equal type; offsets in ``gaps`` (no record in
        the fetched batches) are acknowledged GAP, in the same acknowledgement (ShareCompletedFetch)."""
        settings = self.settings
        explicit = settings.ack_mode == "explicit" and settings.accept < 1.0
        poison_rate, seed = settings.poison_rate, settings.poison_seed
        rng = self._ack_rng
        accept_below = settings.accept
        release_below = settings.accept + settings.release
        now = self.scheduler.now_ms
        runs: list[_PendingAck] = []
        run_first = acquired.first_offset
        run_type = -1
        latencies: list[int] = []
        poison = iter(poison_between(seed, tp.topic, tp.partition, acquired.first_offset, acquired.last_offset,
                                     poison_rate))
        next_poison = next(poison, -1)
        gap_runs = [(first, last) for first, last in gaps
                    if last >= acquired.first_offset and first <= acquired.last_offset]
        if gap_runs and _mutants.ACTIVE == "gap-ack-for-records":
            # mutant: an off-by-one in the client's walk: the record after each gap is acknowledged GAP too
            gap_runs = [(first, min(last + 1, acquired.last_offset)) for first, last in gap_runs]
        gap_index = 0
        for index, offset in enumerate(range(acquired.first_offset, acquired.last_offset + 1)):
            while gap_index < len(gap_runs) and gap_runs[gap_index][1] < offset:
                gap_index += 1
            if gap_index < len(gap_runs) and gap_runs[gap_index][0] <= offset:
                kind = GAP
                if offset == next_poison:
                    next_poison = next(poison, -1)
            elif offset == next_poison:
                next_poison = next(poison, -1)
                kind = RELEASE
            elif explicit:
                draw = rng.random()
                kind = ACCEPT if draw < accept_below else RELEASE if draw < release_below else REJECT
            else:
                kind = ACCEPT
            if kind != run_type:
                if run_type >= 0:
                    runs.append(_PendingAck(AcknowledgementBatch(run_first, offset - 1, (run_type,)), tuple(latencies)))
                run_first, run_type, latencies = offset, kind, []
            if kind == ACCEPT and index < len(times) and times[index] >= 0:
                latencies.append(now - times[index])
        runs.append(
            _PendingAck(AcknowledgementBatch(run_first, acquired.last_offset, (run_type,)), tuple(latencies))
        )
        return runs

    # -- RENEW (KIP-1222) -------------------------------------------------------------------------

    def _arm_renewal(self) -> None:
        interval = self.settings.renew_interval_ms
        if not interval or self.closing or (self._renew_timer is not None and self._renew_timer.active):
            return
        if self._processing is None and not self._queue:
            return
        self._renew_timer = self.call_later(interval, self._renew)

    def _renew(self) -> None:
        """Acknowledge RENEW every record still waiting for or in processing, per session, in a
        ShareAcknowledge of its own (trunk: RENEW rides only a request marked IsRenewAck, which
        fetches nothing). A session with a request in flight renews at the next round."""
        self._renew_timer = None
        if not self.alive or self.closing:
            return
        held = ([self._processing] if self._processing is not None else []) + list(self._queue)
        renewals: dict[int, dict[TopicPartition, list[_PendingAck]]] = {}
        for delivery in held:
            session = delivery.session
            if self._sessions.get(session.broker) is not session or delivery.generation != session.generation:
                continue  # acquired in a session that has ended: its acknowledgements cannot be sent
            by_tp = renewals.setdefault(session.broker, {})
            for tp, acquired, _ in delivery.records:
                by_tp.setdefault(tp, []).append(_PendingAck(
                    AcknowledgementBatch(acquired.first_offset, acquired.last_offset, (RENEW,))))
        for broker, by_tp in sorted(renewals.items()):
            session = self._sessions[broker]
            if session.request is not None or session.epoch == INITIAL_EPOCH or session.closed:
                continue
            self.record("consumer.renew", broker=broker, records=sum(a.count for runs in by_tp.values() for a in runs))
            self._send_acks(session, session.epoch, {tp: by_tp[tp] for tp in sorted(by_tp)})
        self._arm_renewal()

    # -- ShareAcknowledge: commitSync and close ------------------------------------------------

    def commit_sync(self) -> None:
        """Send every session's pending acks now (where no request is in flight) in a ShareAcknowledge."""
        for broker in sorted(self._sessions):
            self._commit_sync_session(self._sessions[broker])

    def _commit_sync_session(self, session: _Session) -> None:
        if session.request is not None or not session.acks or session.epoch == INITIAL_EPOCH:
            return
        self._acknowledge(session, session.epoch)

    def _acknowledge(self, session: _Session, epoch: int) -> None:
        self._send_acks(session, epoch, session.take_acks())

    def _send_acks(self, session: _Session, epoch: int, acks: dict[TopicPartition, list[_PendingAck]]) -> None:
        request = ShareAcknowledgeRequest(
            group_id=self.group_id,
            member_id=self.member.member_id,
            share_session_epoch=epoch,
            partitions=tuple(
                ShareAcknowledgePartition(self.topic_id(tp.topic), tp.partition, tuple(a.batch for a in runs))
                for tp, runs in acks.items()
            ),
        )
        session.request = self.send_request(
            session.broker,
            "ShareAcknowledge",
            request,
            lambda response: self._on_acknowledge_response(session, epoch, acks, response),
            lambda: self._on_request_lost(session, acks),
        )

    def _on_acknowledge_response(
        self,
        session: _Session,
        epoch: int,
        acks: dict[TopicPartition, list[_PendingAck]],
        response: ShareAcknowledgeResponse,
    ) -> None:
        session.request = None
        if response.error_code != Errors.NONE:
            self._on_session_error(session, response.error_code, acks)
            return
        by_tp = {TopicPartition(self.topic_name(p.topic_id), p.partition): p for p in response.responses}
        for tp, runs in acks.items():
            part = by_tp.get(tp)
            self._confirm(runs, Errors.UNKNOWN_SERVER_ERROR if part is None else part.error_code,
                          None if epoch == FINAL_EPOCH else session, tp)
            if part is not None and part.error_code in STALE_METADATA_ERRORS:
                self.request_metadata_refresh()
        if epoch == FINAL_EPOCH:
            session.closed = True
            session.epoch = INITIAL_EPOCH
            self._maybe_leave()
            return
        session.epoch = next_epoch(epoch)
        self._maybe_fetch(session)

    def close(self) -> None:
        """CL-3: commit (final acks, epoch -1) and leave the group (epoch -1)."""
        if not self.alive or self.closing:
            return
        self.closing = True
        _situations.COUNTS["consumer-closed"] += 1
        self.record("consumer.close")
        # Records fetched but not yet handed to the application are released by the session close.
        while self._queue:
            self._queue.popleft().session.outstanding -= 1
        if self._processing is None:
            self._close_sessions()
        # else: _processed → _maybe_fetch → _close_session once the batch is done

    def _close_sessions(self) -> None:
        for broker in sorted(self._sessions):
            self._close_session(self._sessions[broker])
        self._maybe_leave()

    def _close_session(self, session: _Session) -> None:
        if session.closed or session.request is not None or session.outstanding:
            return
        if session.fetch_timer is not None:
            session.fetch_timer.cancel()
        if session.epoch == INITIAL_EPOCH:
            session.closed = True  # never opened (or already gone on the broker)
            self.metrics.ack_errors += sum(a.count for runs in session.take_acks().values() for a in runs)
            self._maybe_leave()
            return
        self._acknowledge(session, FINAL_EPOCH)

    def _maybe_leave(self) -> None:
        if not self.closing or self._leave_sent or self._processing is not None:
            return
        if not all(s.closed for s in self._sessions.values()):
            return
        self._leave_sent = True
        self._forget_heartbeat()
        coordinator = self.group_coordinator(self.group_id)
        if coordinator is None or not self.member.member_id:
            self._finish_close()
            return
        self.send_request(
            coordinator,
            "ShareGroupHeartbeat",
            self.member.leave(),
            lambda response: self._on_leave_done(response),
            lambda: self._on_leave_done(None),
        )

    def _on_leave_done(self, response: ShareGroupHeartbeatResponse | None) -> None:
        if response is None:
            self.member.on_request_lost()
        else:
            self.member.on_response(response)
        self._finish_close()
