"""What every simulated client shares: requests, timeouts, retries, metadata, pause and crash.

A client is a plain object on the network (no SimPy process): it reacts to
deliveries (its registered handler) and to its own ``Scheduler`` timers.

* **Requests** go out as ``Envelope(correlation_id, request)`` to a broker
  node ("b<id>"); the answer comes back with the same id and kind +
  "Response". A request not answered within ``request_timeout_ms`` is
  forgotten and the caller told (a lost request or response), and, as Kafka's
  NetworkClient does, the connection to that broker is closed: every other
  request in flight on it fails too, the broker learns of the close (and ends
  the share sessions opened on it) unless the way there is cut, and the next
  request opens a new connection. A response that arrives later, or twice,
  finds no entry and is ignored. The timeout is
  the same for every request, so deadlines fall in send order and wait in a
  ``DeadlineQueue`` under one timer rather than a timer per request that is
  nearly always cancelled. Correlation ids never repeat within a client,
  across crashes too.
  When the network reports that a broker crashed or refused the connection,
  the requests sent to it before then fail at once, through the same
  no-answer callback as a timeout (Kafka fails them with a disconnect).
* ``call`` wraps a request in retries: on no answer or a retriable error
  (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)
  it asks for a metadata refresh, backs off (exponentially, capped) and sends
  again to whichever broker the target resolver names then, until
  ``default_api_timeout_ms`` has passed (as Kafka's blocking calls do).
* **Metadata** is the controller's published ``ClusterMetadata``, read through
  a callable. A client holds its own snapshot and reads a fresh one
  ``metadata_refresh_ms`` after asking (the staleness window that produces
  NOT_LEADER_OR_FOLLOWER), and every ``metadata_max_age_ms`` regardless.
* **Pause** (a GC pause) freezes the client: timers that fall due and
  messages that arrive are held, in order, and run when it resumes — the
  messages first (they were already in the socket), then the timers.
* **Crash** stops everything silently: in-flight requests and held work are
  dropped, every timer set before becomes a no-op (an incarnation check), and
  the client answers nothing until ``restart``.

``GroupConsumer`` is the part both consumers (KIP-848 ``Consumer`` and
``ShareConsumer``) share: the group and its subscription, one heartbeat in
flight at a time to the group coordinator, the retry of a heartbeat that
failed, and the end of a close (as Kafka's heartbeat request managers share
one base).

``ClientMetrics`` is one plain dataclass for every kind of client; each
client fills in the counters that mean something for it and the runner sums
them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Final

from model.core.errors import Errors
from model.sim.network import Message, Network
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, ClusterMetadata, Envelope, PartitionInfo, broker_node
from model.sim.timers import DeadlineQueue, Scheduler, Timer
from model.sim.trace import Trace, TraceKind

MetadataSource = Callable[[], ClusterMetadata]

# Errors after which a request goes again, to whichever broker metadata names next.
RETRIABLE_ERRORS: Final = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.REQUEST_TIMED_OUT,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.LEADER_NOT_AVAILABLE,
    }
)
# The subset that says our metadata is stale (the leader or coordinator moved).
STALE_METADATA_ERRORS: Final = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.LEADER_NOT_AVAILABLE,  # Kafka: an InvalidMetadataException, which asks for fresh metadata
    }
)


@dataclass(frozen=True)
class ClientConfig:
    request_timeout_ms: int = 30_000  # request.timeout.ms
    retry_backoff_ms: int = 100  # retry.backoff.ms: the first back-off
    retry_backoff_max_ms: int = 1_000  # retry.backoff.max.ms: back-offs double up to this
    metadata_refresh_ms: int = 100  # a refresh asked for now is seen this much later
    metadata_max_age_ms: int = 10_000  # metadata.max.age.ms: refresh at least this often
    default_api_timeout_ms: int = 60_000  # default.api.timeout.ms: how long ``call`` keeps retrying

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if type(value) is not int or value < 0:
                raise ValueError(f"ClientConfig.{f.name} = {value!r}: must be an integer >= 0")
        if self.request_timeout_ms == 0 or self.metadata_max_age_ms == 0:
            raise ValueError("ClientConfig: request_timeout_ms and metadata_max_age_ms must be > 0")


@dataclass
class ClientMetrics:
    """Counters of one client; the runner adds them up (``merge``)."""

    requests_sent: int = 0
    requests_timed_out: int = 0
    # failed early: the broker crashed or refused the connection, or another request's timeout closed it
    requests_disconnected: int = 0
    retries: int = 0
    metadata_refreshes: int = 0
    # producers
    records_produced: int = 0  # acknowledged by the leader (and, in a transaction, committed)
    records_aborted: int = 0  # acknowledged, then their transaction aborted
    produce_errors: int = 0  # batches given up on (a non-retriable error)
    transactions_committed: int = 0
    transactions_aborted: int = 0
    # consumers
    records_delivered: int = 0  # handed to the application, redeliveries included
    redeliveries: int = 0  # of those, delivered with delivery_count > 1
    records_accepted: int = 0  # acknowledgements the leader confirmed, by type
    records_released: int = 0
    records_rejected: int = 0
    ack_errors: int = 0  # records whose acknowledgement failed or was lost
    records_renewed: int = 0  # RENEW acknowledgements the leader confirmed (records whose lock restarted)
    records_gap_acknowledged: int = 0  # GAP acknowledgements the leader confirmed (offsets with no record)
    offsets_committed: int = 0  # KIP-848: partitions whose OffsetCommit succeeded
    commit_errors: int = 0
    rebalances: int = 0  # assignment changes seen
    fenced: int = 0  # fenced / unknown member: rejoined with epoch 0
    share_session_resets: int = 0
    end_to_end_latencies_ms: list[int] = field(default_factory=list)

    def merge(self, other: ClientMetrics) -> None:
        for f in fields(self):
            mine = getattr(self, f.name)
            if isinstance(mine, list):
                mine.extend(getattr(other, f.name))
            else:
                setattr(self, f.name, mine + getattr(other, f.name))


class _InFlight:
    """A request awaiting its answer (a plain class, not a dataclass: one per request, see
    ``model/core/message.py``)."""

    __slots__ = ("broker", "kind", "on_response", "on_timeout", "sent_ms")

    def __init__(self, kind: str, broker: int, sent_ms: int, on_response: Callable[[Any], None],
                 on_timeout: Callable[[], None]) -> None:
        self.kind = kind
        self.broker = broker
        self.sent_ms = sent_ms
        self.on_response = on_response
        self.on_timeout = on_timeout


class Client:
    """The base of every client actor; see the module docstring."""

    def __init__(
        self,
        name: str,
        scheduler: Scheduler,
        network: Network,
        metadata_source: MetadataSource,
        *,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.name = name
        self.scheduler = scheduler
        self.network = network
        self.config = config or ClientConfig()
        self.trace = trace
        self.metrics = ClientMetrics()
        self.metadata = ClusterMetadata()
        self.alive = False
        self.paused = False
        self._metadata_source = metadata_source
        self._next_correlation_id = 1
        self._inflight: dict[int, _InFlight] = {}
        self._deadlines = DeadlineQueue(scheduler, self.config.request_timeout_ms, self._inflight,
                                        self._deadline_passed)
        self._incarnation = 0
        self._held_messages: list[Message] = []
        self._held_timers: list[tuple[Callable[..., object], tuple[Any, ...]]] = []
        self._refresh_timer: Timer | None = None
        self._resume_timer: Timer | None = None
        network.register(name, self._on_message, self._on_disconnect)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Come alive (first start or restart after a crash) with fresh metadata."""
        if self.alive:
            return
        self.alive = True
        self.paused = False
        self._incarnation += 1
        self.network.restart_node(self.name)  # a no-op unless it crashed: new connections
        self.metadata = self._metadata_source()
        self._refresh_timer = None
        self.call_later(self.config.metadata_max_age_ms, self._periodic_refresh)
        self.record("client.start")
        self.on_start()

    def crash(self) -> None:
        """Stop at once, silently: no leave, no final acknowledgements (consumer_crash). The process
        dies, not its host: the host resets its connections, so the brokers hear of it one latency
        later (a share-partition leader then ends its share sessions, SP-15)."""
        if not self.alive:
            return
        self.halt()
        self.network.crash_node(self.name)
        self.record("client.crash")
        self.on_crash()

    def halt(self) -> None:
        """Stop every timer and forget every request (a crash, or the end of a clean close)."""
        self.alive = False
        self.paused = False
        self._incarnation += 1
        self._inflight.clear()
        self._deadlines.clear()
        self._held_messages.clear()
        self._held_timers.clear()
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        if self._resume_timer is not None:
            self._resume_timer.cancel()
            self._resume_timer = None

    def pause(self, duration_ms: int) -> None:
        """Freeze for ``duration_ms`` (consumer_pause): hold every timer and message, then resume."""
        if not self.alive or self.paused:
            return
        self.paused = True
        self.record("client.pause", duration_ms=duration_ms)
        self._resume_timer = self.scheduler.timer(duration_ms, self.resume)

    def resume(self) -> None:
        if not self.paused:
            return
        self.paused = False
        if self._resume_timer is not None:
            self._resume_timer.cancel()
            self._resume_timer = None
        self.record("client.resume")
        incarnation = self._incarnation
        messages, self._held_messages = self._held_messages, []
        for message in messages:
            if self._incarnation != incarnation or self.paused:
                break
            self._dispatch(message)
        held, self._held_timers = self._held_timers, []
        for index, (fn, args) in enumerate(held):
            if self._incarnation != incarnation:
                break
            if self.paused:  # paused again by a callback: keep the rest for later
                self._held_timers.extend(held[index:])
                break
            fn(*args)

    # Hooks for subclasses.
    def on_start(self) -> None:
        pass

    def on_crash(self) -> None:
        pass

    def on_metadata(self) -> None:
        """A fresh metadata snapshot arrived; re-route whatever depends on leaders."""

    # -- timers ------------------------------------------------------------------------------

    def call_later(self, delay_ms: int, fn: Callable[..., object], *args: Any) -> Timer:
        """A timer that respects pause (held until resume) and crash (dropped)."""
        return self.scheduler.timer(delay_ms, self._fire, self._incarnation, fn, args)

    def _fire(self, incarnation: int, fn: Callable[..., object], args: tuple[Any, ...]) -> None:
        if incarnation != self._incarnation:
            return
        if self.paused:
            self._held_timers.append((fn, args))
            return
        fn(*args)

    # -- requests ----------------------------------------------------------------------------

    def send_request(
        self,
        broker: int,
        kind: str,
        body: Any,
        on_response: Callable[[Any], None],
        on_timeout: Callable[[], None],
    ) -> int:
        """Send ``body`` to broker ``broker``; exactly one of the callbacks runs (unless we crash)."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        self._inflight[correlation_id] = _InFlight(kind, broker, self.scheduler.now_ms, on_response, on_timeout)
        self._deadlines.add(correlation_id)
        self.metrics.requests_sent += 1
        self.network.send(self.name, broker_node(broker), kind, Envelope(correlation_id, body))
        return correlation_id

    def forget_request(self, correlation_id: int) -> None:
        """Stop waiting for an answer; neither callback will run."""
        self._inflight.pop(correlation_id, None)

    @property
    def requests_in_flight(self) -> int:
        return len(self._inflight)

    def _deadline_passed(self, correlation_id: int) -> None:
        # As a timer of its own would: held while paused, after the messages (an answer may be in the socket).
        if self.paused:
            self._held_timers.append((self._timed_out, (correlation_id,)))
        else:
            self._timed_out(correlation_id)

    def _timed_out(self, correlation_id: int) -> None:
        pending = self._inflight.get(correlation_id)
        if pending is None:
            return  # answered by a message held in the same pause
        self.metrics.requests_timed_out += 1
        self.record("client.timeout", msg_kind=pending.kind, broker=pending.broker, id=correlation_id)
        # Closed before any callback runs, so that a retry goes out on the new connection.
        peer = broker_node(pending.broker)
        self.network.close_connection(self.name, peer)
        self._fail_requests_to(peer, self.scheduler.now_ms, correlation_id)

    def _on_disconnect(self, peer: str, cutoff_ms: int, connection: int) -> None:
        if not self.alive:
            return
        if self.paused:  # the socket error is read when the client wakes up
            self._held_timers.append((self._fail_requests_to, (peer, cutoff_ms)))
            return
        self._fail_requests_to(peer, cutoff_ms)

    def _fail_requests_to(self, peer: str, cutoff_ms: int, timed_out: int = -1) -> None:
        """The connection to ``peer`` is gone: fail every request sent to it at or before ``cutoff_ms``,
        oldest first. ``timed_out``, the one whose timeout closed it, is the oldest in flight (every
        request has the same timeout), so it goes first; it counts as timed out, not disconnected."""
        lost = [
            correlation_id
            for correlation_id, pending in self._inflight.items()
            if pending.sent_ms <= cutoff_ms and broker_node(pending.broker) == peer
        ]
        for correlation_id in lost:
            pending = self._inflight.pop(correlation_id, None)
            if pending is None:  # an earlier callback forgot it
                continue
            if correlation_id != timed_out:
                self.metrics.requests_disconnected += 1
                self.record("client.disconnect", msg_kind=pending.kind, broker=pending.broker, id=correlation_id)
            pending.on_timeout()

    def _on_message(self, message: Message) -> None:
        if not self.alive:
            return
        if self.paused:
            self._held_messages.append(message)
            return
        self._dispatch(message)

    def _dispatch(self, message: Message) -> None:
        envelope = message.payload
        if not isinstance(envelope, Envelope):
            return
        pending = self._inflight.get(envelope.correlation_id)
        if pending is None or message.kind != pending.kind + "Response":
            return  # late (timed out), duplicated, or not ours
        del self._inflight[envelope.correlation_id]
        pending.on_response(envelope.body)

    def call(
        self,
        target: Callable[[], int | None],
        kind: str,
        body: Any,
        on_done: Callable[[Any | None], None],
        *,
        error_of: Callable[[Any], Errors],
        timeout_ms: int | None = None,
    ) -> None:
        """A request retried until it gets an answer that is not retriable.

        ``target`` names the broker each attempt (None: not known yet; refresh
        and try again). ``error_of`` reads the response's error; a RETRIABLE
        one sends again after a back-off. ``on_done`` gets the final response.
        No attempt starts ``timeout_ms`` (default ``default_api_timeout_ms``;
        0: never give up) after the first: then ``on_done`` gets the last
        retriable response, or None if the last attempt got no answer.
        """
        if timeout_ms is None:
            timeout_ms = self.config.default_api_timeout_ms
        deadline_ms = self.scheduler.now_ms + timeout_ms if timeout_ms else None
        _Call(self, target, kind, body, on_done, error_of, deadline_ms).attempt()

    def backoff_ms(self, attempt: int) -> int:
        """The back-off before attempt ``attempt + 1`` (attempt counts from 1)."""
        base = self.config.retry_backoff_ms
        return min(self.config.retry_backoff_max_ms, base << min(attempt - 1, 20)) if base else 0

    # -- metadata ----------------------------------------------------------------------------

    def request_metadata_refresh(self) -> None:
        """Read fresh metadata ``metadata_refresh_ms`` from now (requests coalesce)."""
        if not self.alive or (self._refresh_timer is not None and self._refresh_timer.active):
            return
        self._refresh_timer = self.call_later(self.config.metadata_refresh_ms, self._refresh_metadata)

    def _periodic_refresh(self) -> None:
        self._refresh_metadata()
        self.call_later(self.config.metadata_max_age_ms, self._periodic_refresh)

    def _refresh_metadata(self) -> None:
        self._refresh_timer = None
        fresh = self._metadata_source()
        self.metrics.metadata_refreshes += 1
        if fresh is self.metadata or fresh == self.metadata:
            return
        self.metadata = fresh
        self.on_metadata()

    def leader_of(self, topic: str, partition: int) -> PartitionInfo | None:
        """The partition's leader in our (possibly stale) metadata; None if unknown or leaderless."""
        info = self.metadata.leader_of(topic, partition)
        return info if info is not None and info.leader >= 0 else None

    def group_coordinator(self, group_id: str) -> int | None:
        """GC-6: the leader of the ``__consumer_offsets`` partition that holds the group."""
        if self.metadata.partition_count(CONSUMER_OFFSETS_TOPIC) == 0:
            return None
        info = self.leader_of(CONSUMER_OFFSETS_TOPIC, self.metadata.group_coordinator_partition(group_id))
        return info.leader if info is not None else None

    def topic_id(self, topic: str) -> str:
        return self.metadata.topic_ids.get(topic, topic)

    def topic_name(self, topic_id: str) -> str:
        for name, tid in self.metadata.topic_ids.items():
            if tid == topic_id:
                return name
        return topic_id

    # -- tracing -----------------------------------------------------------------------------

    def record(self, kind: str, **fields: Any) -> None:
        if self.trace is not None:
            self.trace.record(self.scheduler.now_ms, self.name, kind, **fields)

    def emit(self, kind: TraceKind, *values: Any) -> None:
        """``record`` for a declared kind (``model.sim.trace``): the per-message events."""
        if self.trace is not None:
            self.trace.emit(kind, self.scheduler.now_ms, self.name, *values)


class GroupConsumer(Client, ABC):
    """A consumer in a group: the heartbeat plumbing ``Consumer`` and ``ShareConsumer`` share."""

    def __init__(
        self,
        name: str,
        group_id: str,
        topics: tuple[str, ...] | list[str],
        scheduler: Scheduler,
        network: Network,
        metadata_source: MetadataSource,
        *,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(name, scheduler, network, metadata_source, config=config, trace=trace)
        self.group_id = group_id
        self.topics = tuple(sorted(set(topics)))
        self.closing = False
        self.closed = False
        self._heartbeat_timer: Timer | None = None
        self._heartbeat_request: int | None = None  # correlation id of the heartbeat in flight
        self._restart_when_closed = False  # consumer_close ended while the close was still under way

    def restart_after_close(self) -> None:
        """Start again as a new process once ``close()`` has finished (at once if it has): the end of a
        consumer_close. A consumer that is up and not closing (it never closed) is left alone."""
        if not self.alive:
            if self.closed:
                self.start()
        elif self.closing:
            self._restart_when_closed = True

    def subscribe(self, topics: tuple[str, ...] | list[str]) -> None:
        """Change the subscription (``subscribe(topics)`` on a member in the group): the next heartbeat
        carries it; the coordinator bumps the group epoch and computes a new assignment (GC-2)."""
        self.topics = tuple(sorted(set(topics)))
        self.record("consumer.subscribe", topics=",".join(self.topics))
        self.on_subscribe()

    def on_subscribe(self) -> None:
        """The subscription changed: tell the member (subclasses)."""

    @abstractmethod
    def _heartbeat(self) -> None:
        """Send the next heartbeat if one is due (the member builds it)."""

    def _schedule_heartbeat(self, delay_ms: int) -> None:
        if self._heartbeat_timer is not None:
            self._heartbeat_timer.cancel()
        self._heartbeat_timer = self.call_later(delay_ms, self._heartbeat)

    def _heartbeat_coordinator(self) -> int | None:
        """The group coordinator to heartbeat; None (and a retry) while our metadata does not know it."""
        coordinator = self.group_coordinator(self.group_id)
        if coordinator is None:
            self._retry_heartbeat(Errors.COORDINATOR_NOT_AVAILABLE)
        return coordinator

    def _retry_heartbeat(self, error: Errors) -> None:
        """Heartbeat again after the retry back-off; a retriable ``error`` (the coordinator moved, is
        not known, did not answer) first asks for fresh metadata."""
        if error in STALE_METADATA_ERRORS or error in RETRIABLE_ERRORS:
            self.request_metadata_refresh()
        self._schedule_heartbeat(self.config.retry_backoff_ms)

    def _forget_heartbeat(self) -> None:
        """Stop waiting for the heartbeat in flight (the leave heartbeat replaces it)."""
        if self._heartbeat_request is not None:
            self.forget_request(self._heartbeat_request)
            self._heartbeat_request = None

    def _finish_close(self) -> None:
        self.closed = True
        self.record("consumer.closed")
        self.halt()
        # As Kafka's consumer closes its NetworkClient: a broker still holding a share session of ours
        # (its close was lost) ends it when it hears of the close.
        self.network.close_connections(self.name)
        if self._restart_when_closed:
            self._restart_when_closed = False
            self.scheduler.timer(0, self.start)


class _Call:
    """One retried request (``Client.call``)."""

    __slots__ = ("attempts", "body", "client", "deadline_ms", "error_of", "kind", "on_done", "target")

    def __init__(
        self,
        client: Client,
        target: Callable[[], int | None],
        kind: str,
        body: Any,
        on_done: Callable[[Any | None], None],
        error_of: Callable[[Any], Errors],
        deadline_ms: int | None,
    ) -> None:
        self.client = client
        self.target = target
        self.kind = kind
        self.body = body
        self.on_done = on_done
        self.error_of = error_of
        self.deadline_ms = deadline_ms
        self.attempts = 0

    def attempt(self) -> None:
        client = self.client
        if not client.alive:
            return
        self.attempts += 1
        broker = self.target()
        if broker is None:
            client.request_metadata_refresh()
            self._again()
            return
        client.send_request(broker, self.kind, self.body, self._on_response, self._on_timeout)

    def _on_response(self, response: Any) -> None:
        error = self.error_of(response)
        if error in RETRIABLE_ERRORS:
            if error in STALE_METADATA_ERRORS:
                self.client.request_metadata_refresh()
            self._again(response)
            return
        self.on_done(response)

    def _on_timeout(self) -> None:
        self.client.request_metadata_refresh()
        self._again()

    def _again(self, last: Any | None = None) -> None:
        client = self.client
        backoff_ms = client.backoff_ms(self.attempts)
        if self.deadline_ms is not None and client.scheduler.now_ms + backoff_ms >= self.deadline_ms:
            self.on_done(last)
            return
        client.metrics.retries += 1
        client.call_later(backoff_ms, self.attempt)
