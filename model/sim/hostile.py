"""A misbehaving client of the share coordinators: the ``hostile_state_request`` fault kind.

A share coordinator must not rely on its clients being correct (issue 24): the model's own
share-partition leaders never send a negative epoch, and never send a write again once it was
answered. This client does both. From the start of a run whose plan holds the kind it taps the
wire (``Network.tap``) and keeps, per share-partition, the WriteShareGroupState requests the
leaders send: at the highest (state epoch, leader epoch) seen, the first one that carries a start
offset. At a fault it sends the share coordinator of the target share-partition, from the admin
node, each request of ``HOSTILE_STATE_REQUESTS`` (or the one ``params.request`` names):

* ``replayed_write``: that captured write again, verbatim: a replay whose start offset is, by then,
  usually below the stored one. Kafka trunk accepts it and keeps the higher start offset (its
  batches merge as any write's do, SC-4); Kafka 4.3 and earlier moved the start offset back.
* ``write_negative_leader_epoch`` / ``write_negative_state_epoch``: the same write with leader epoch
  -1, or state epoch -1 (without a captured write: an empty one at epochs 0). INVALID_REQUEST.
* ``read_negative_leader_epoch``: ReadShareGroupState with leader epoch -1. INVALID_REQUEST.
* ``repeated_initialize`` (only when ``params.request`` names it): ReadShareGroupStateSummary, then
  InitializeShareGroupState with the state epoch and start offset it answered: a duplicate, as a
  retried admin reset would be. Kafka trunk answers it without writing (initializeState); one that
  wrote a fresh snapshot would drop the batches and the delivery complete count at that start offset.
  A write landing between the summary and the initialize makes it no duplicate but a stale reset (the
  open finding "a late duplicate initialize"), so a swarm sends it with ``params.rest_ms``: only once
  the tap has seen nothing that leads to a write of the share-partition for that long (no write,
  initialize or read of its state, no ShareFetch or ShareAcknowledge of it: its consumers paused or
  gone), and only if nothing was seen while the summary was out; its initialize goes once, and a moving
  or loading coordinator sends the client back to waiting for rest. ``rest_ms`` must outlast a lock
  (the lock duration and a ShareFetch's longest wait, ``swarm_at_rest``: 1 000 + 500 ms, rest 2 000 ms):
  a lock timeout writes without a message first, and one archiving the head record at the delivery
  limit moves the start offset (with a rest of 500 ms against 2 s locks, 1 of 100 000 runs raced so).

A request is retried as an admin call is while the coordinator moves or loads (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, no answer); any other answer is final and
kept in ``results``. The invariants ``negative-epoch-changes-nothing`` and
``stored-start-offset-monotonic`` judge what the coordinator did with them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from model import situations as _situations
from model.core.errors import Errors
from model.core.message import Message as Value
from model.core.share_fetch import (
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareFetchPartition,
    ShareFetchRequest,
)
from model.core.share_partition import AcknowledgementBatch
from model.core.share_state import (
    UNKNOWN_OFFSET,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    SharePartitionKey,
    WriteShareGroupStateRequest,
)
from model.sim.client import Client
from model.sim.faults import HOSTILE_NAMED_ONLY, HOSTILE_SHARE_REQUESTS, HOSTILE_STATE_REQUESTS, FaultEvent
from model.sim.network import Message, Network
from model.sim.protocol import SHARE_STATE_TOPIC

# How many times a rest-guarded repeated initialize waits for its share-partition to come to rest.
REST_WAITS: Final = 20

# The answers after which the request goes again: the coordinator is moving or loading.
_RETRIED: Final = frozenset({Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE,
                             Errors.COORDINATOR_LOAD_IN_PROGRESS})


class HostileResult(Value):
    """One hostile request and the coordinator's final answer (REQUEST_TIMED_OUT: none came)."""

    FIELDS = ("request", "key", "error", "time_ms", "start_offset")
    __slots__ = FIELDS

    def __init__(self, request: str, key: SharePartitionKey, error: Errors, time_ms: int, start_offset: int) -> None:
        self.request: Final = request
        self.key: Final = key
        self.error: Final = error
        self.time_ms: Final = time_ms
        self.start_offset: Final = start_offset  # of the write sent (-1 for a read)


class _Captured:
    """The writes seen for one share-partition at its highest epochs."""

    __slots__ = ("epochs", "first_moved", "latest")

    def __init__(self, request: WriteShareGroupStateRequest) -> None:
        self.epochs = (request.state_epoch, request.leader_epoch)
        self.latest = request
        self.first_moved = request if request.start_offset != UNKNOWN_OFFSET else None


class HostileStateClient:
    """Sends the hostile share-state requests of a fault through ``client`` (the admin node)."""

    def __init__(self, client: Client, network: Network) -> None:
        self.client = client
        self.results: list[HostileResult] = []
        self.sent: list[tuple[str, object]] = []  # (request name, the body sent), in send order
        self._captured: dict[SharePartitionKey, _Captured] = {}
        # When a share-partition last showed activity that may lead to a write, by others: a write, an
        # initialize or a read of its state (a leader loading it writes next), a ShareFetch or
        # ShareAcknowledge of it (acknowledgements are written).
        self._last_activity_ms: dict[SharePartitionKey, int] = {}
        for kind in ("WriteShareGroupState", "InitializeShareGroupState", "ReadShareGroupState", "ShareFetch",
                     "ShareAcknowledge"):
            network.tap(kind, self._capture)

    def _capture(self, message: Message) -> None:
        request = getattr(message.payload, "body", None)
        if message.src == self.client.name:
            return
        now_ms = self.client.scheduler.now_ms
        if isinstance(request, ShareFetchRequest | ShareAcknowledgeRequest):
            for part in request.partitions:
                self._last_activity_ms[SharePartitionKey(request.group_id, part.topic_id, part.partition)] = now_ms
            return
        key = getattr(request, "key", None)
        if isinstance(key, SharePartitionKey):
            self._last_activity_ms[key] = now_ms
        if not isinstance(request, WriteShareGroupStateRequest):
            return
        seen = self._captured.get(request.key)
        epochs = (request.state_epoch, request.leader_epoch)
        if seen is None or epochs > seen.epochs:
            self._captured[request.key] = _Captured(request)
        elif epochs == seen.epochs:
            seen.latest = request
            if seen.first_moved is None and request.start_offset != UNKNOWN_OFFSET:
                seen.first_moved = request

    def replay_of(self, key: SharePartitionKey) -> WriteShareGroupStateRequest | None:
        """The write a replay sends: the first captured with a start offset at the highest epochs."""
        seen = self._captured.get(key)
        if seen is None:
            return None
        return seen.first_moved or seen.latest

    def apply(self, event: FaultEvent) -> bool:
        """Send what ``event`` asks for; False when its topic-partition does not exist (now)."""
        client = self.client
        topic, partition = event.param("topic"), event.param("partition", 0)
        assert isinstance(topic, str) and isinstance(partition, int)  # FaultEvent validated them
        if not client.alive or partition >= client.metadata.partition_count(topic):
            return False
        key = SharePartitionKey(event.target, client.topic_id(topic), partition)
        wanted = event.param("request")
        replay = self.replay_of(key)
        base = replay or WriteShareGroupStateRequest(key, 0, 0, UNKNOWN_OFFSET, ())
        for name in HOSTILE_STATE_REQUESTS + HOSTILE_NAMED_ONLY:
            if (wanted is None and name in HOSTILE_NAMED_ONLY) or (wanted is not None and name != wanted):
                continue
            body: Any
            if name == "repeated_initialize":
                rest_ms = event.param("rest_ms")
                if isinstance(rest_ms, int):
                    self._repeat_at_rest(key, rest_ms, 0)
                    continue
                self._send("state_summary", key, ReadShareGroupStateSummaryRequest(key, -1),
                           functools.partial(self._repeat_initialize, key))
                continue
            if name == "replayed_write":
                if replay is None:
                    client.record("hostile.nothing_to_replay", key=str(key))
                    continue
                body = replay.replace()  # the same bytes in a new request: a replay, not the leader's own
            elif name == "write_negative_leader_epoch":
                body = WriteShareGroupStateRequest(key, base.state_epoch, -1, base.start_offset, base.state_batches)
            elif name == "write_negative_state_epoch":
                body = WriteShareGroupStateRequest(key, -1, base.leader_epoch, base.start_offset, base.state_batches)
            else:
                body = ReadShareGroupStateRequest(key, -1)
            self._send(name, key, body)
        return True

    def _repeat_initialize(self, key: SharePartitionKey, summary: Any) -> None:
        if summary is None or summary.error_code != Errors.NONE:
            self.client.record("hostile.nothing_to_repeat", key=str(key))
            return
        self._send("repeated_initialize", key,
                   InitializeShareGroupStateRequest(key, summary.state_epoch, summary.start_offset))

    def _repeat_at_rest(self, key: SharePartitionKey, rest_ms: int, waits: int) -> None:
        """The summary, once the share-partition has been at rest ``rest_ms``; then, if it still is, the
        initialize it answers, sent once. Gives up after ``REST_WAITS`` waits."""
        client = self.client
        quiet_ms = client.scheduler.now_ms - self._last_activity_ms.get(key, -rest_ms)
        if quiet_ms < rest_ms:
            if waits >= REST_WAITS:
                client.record("hostile.never_at_rest", key=str(key))
                return
            client.call_later(rest_ms - quiet_ms, self._repeat_at_rest, key, rest_ms, waits + 1)
            return
        asked_ms = client.scheduler.now_ms
        self._send("state_summary", key, ReadShareGroupStateSummaryRequest(key, -1),
                   functools.partial(self._initialize_if_at_rest, key, rest_ms, waits, asked_ms))

    def _initialize_if_at_rest(self, key: SharePartitionKey, rest_ms: int, waits: int, asked_ms: int,
                               summary: Any) -> None:
        if summary is None or summary.error_code != Errors.NONE:
            self.client.record("hostile.nothing_to_repeat", key=str(key))
            return
        if self._last_activity_ms.get(key, -1) >= asked_ms:  # active meanwhile: no longer at rest
            self._repeat_at_rest(key, rest_ms, waits + 1)
            return

        def answered(response: Any) -> None:
            if response is None or Errors(response.error_code) in _RETRIED:
                self._repeat_at_rest(key, rest_ms, waits + 1)  # lost, or the coordinator moved: wait again

        self._send("repeated_initialize", key,
                   InitializeShareGroupStateRequest(key, summary.state_epoch, summary.start_offset),
                   answered, once=True)

    def _send(self, name: str, key: SharePartitionKey, body: Any,
              then: Callable[[Any], None] | None = None, once: bool = False) -> None:
        client = self.client
        kind = type(body).__name__.removesuffix("Request")
        start_offset = body.start_offset if isinstance(body, WriteShareGroupStateRequest) else UNKNOWN_OFFSET
        client.record("hostile.send", request=name, key=str(key), start_offset=start_offset)
        self.sent.append((name, body))

        def coordinator() -> int | None:
            metadata = client.metadata
            info = client.leader_of(SHARE_STATE_TOPIC, metadata.share_coordinator_partition(key))
            return info.leader if info is not None else None

        def done(response: Any) -> None:
            error = Errors.REQUEST_TIMED_OUT if response is None else Errors(response.error_code)
            self.results.append(HostileResult(name, key, error, client.scheduler.now_ms, start_offset))
            client.record("hostile.answer", request=name, key=str(key), error=int(error))
            if then is not None:
                then(response)

        # once: a single attempt (no attempt starts 1 ms after the first); its retriable answer is final.
        client.call(coordinator, kind, body, done, error_of=_error_of, timeout_ms=1 if once else None)


def _error_of(response: Any) -> Errors:
    error = Errors(response.error_code)
    return error if error in _RETRIED else Errors.NONE


# -- hostile share-partition leader requests (fault kind hostile_share_request, issue 25) --------------------


class HostileShareResult(Value):
    """One hostile ShareFetch / ShareAcknowledge, what the protocol allows as its answer, and the answer:
    ``error`` the top-level error (REQUEST_TIMED_OUT: none came), ``partition_errors`` the per-partition
    ones. ``expected`` / ``partition_expected``: the refusals the protocol gives for it (empty: any)."""

    FIELDS = ("request", "group_id", "member_id", "epoch", "broker", "error", "partition_errors", "expected",
              "partition_expected", "time_ms")
    __slots__ = FIELDS

    def __init__(self, request: str, group_id: str, member_id: str, epoch: int, broker: int, error: Errors,
                 partition_errors: tuple[Errors, ...], expected: tuple[Errors, ...],
                 partition_expected: tuple[Errors, ...], time_ms: int) -> None:
        self.request: Final = request
        self.group_id: Final = group_id
        self.member_id: Final = member_id
        self.epoch: Final = epoch
        self.broker: Final = broker
        self.error: Final = error
        self.partition_errors: Final = partition_errors
        self.expected: Final = expected
        self.partition_expected: Final = partition_expected
        self.time_ms: Final = time_ms

    def refused_as_expected(self) -> bool:
        """Whether the answer is a refusal the protocol gives (a broker that restarted meanwhile has no
        session: SHARE_SESSION_NOT_FOUND; an answer lost: REQUEST_TIMED_OUT, which proves nothing)."""
        if self.error in (Errors.REQUEST_TIMED_OUT, Errors.SHARE_SESSION_NOT_FOUND):
            return True
        if self.expected:
            return self.error in self.expected
        return self.error == Errors.NONE and all(e != Errors.NONE for e in self.partition_errors)


HOSTILE_MEMBER_PREFIX: Final = "hostile-"


class HostileShareClient:
    """Sends the hostile ShareFetch / ShareAcknowledge requests of ``hostile_share_request`` faults to the
    leader of the target share-partition, from ``client`` (the admin node), and keeps their answers in
    ``results``. What trunk answers (SharePartitionManager.newContext / acknowledgeSessionUpdate,
    KafkaApis.validateAcknowledgementBatches, SharePartition.acknowledge): a ShareFetch that opens a
    session (epoch 0) with acknowledgements is INVALID_REQUEST; a ShareAcknowledge with no session,
    SHARE_SESSION_NOT_FOUND; an epoch that is not the session's (stale, or negative but not -1),
    INVALID_SHARE_SESSION_EPOCH; malformed acknowledgement batches, INVALID_REQUEST for the partition;
    acknowledgements of records the member did not acquire, INVALID_RECORD_STATE for the partition.
    Each must change nothing (the invariant ``refused-share-request-changes-nothing``)."""

    def __init__(self, client: Client, network: Network, observer: Any) -> None:
        self.client = client
        self.observer = observer
        self.results: list[HostileShareResult] = []
        self._members = 0
        # (group, topic id, partition) -> the latest acknowledgement batches a real member sent there;
        # group -> the member id of its latest ShareFetch / ShareAcknowledge
        self.acks: dict[tuple[str, str, int], tuple[AcknowledgementBatch, ...]] = {}
        self.members: dict[str, str] = {}
        network.tap("ShareFetch", self._capture)
        network.tap("ShareAcknowledge", self._capture)

    def _capture(self, message: Message) -> None:
        request = getattr(message.payload, "body", None)
        if message.src == self.client.name or request is None or not hasattr(request, "member_id"):
            return
        self.members[request.group_id] = request.member_id
        for p in request.partitions:
            if p.acknowledgement_batches:
                self.acks[(request.group_id, p.topic_id, p.partition)] = p.acknowledgement_batches

    def apply(self, event: FaultEvent, default_topic: str) -> bool:
        """Start the requests ``event`` asks for; False when its partition has no known leader."""
        client = self.client
        topic = event.param("topic", default_topic)
        partition = event.param("partition", 0)
        assert isinstance(topic, str) and isinstance(partition, int)  # FaultEvent validated them
        if not client.alive or partition >= client.metadata.partition_count(topic):
            return False
        info = client.leader_of(topic, partition)
        if info is None:
            return False
        wanted = event.param("request")
        names = [n for n in HOSTILE_SHARE_REQUESTS if wanted is None or n == wanted]
        self._members += 1
        run = _HostileRun(self, event.target, f"{HOSTILE_MEMBER_PREFIX}{self._members}", info.leader,
                          client.topic_id(topic), partition, names)
        run.next()
        return True


_Build = Callable[[], Any]
_Step = tuple[str, _Build, tuple[Errors, ...], tuple[Errors, ...]]  # name, body, expected, per partition
_SETUP: Final = ("open_session", "advance_session", "close_session")
# Per-partition refusals of acknowledgements the member may not make (trunk's SharePartition.acknowledge:
# InvalidRecordStateException; KafkaApis.validateAcknowledgementBatches: INVALID_REQUEST; a leader that moved
# meanwhile: NOT_LEADER_OR_FOLLOWER).
_REFUSED_ACK: Final = (Errors.INVALID_RECORD_STATE, Errors.NOT_LEADER_OR_FOLLOWER, Errors.INVALID_REQUEST)
_OWN_SESSION: Final = frozenset(("acks_never_acquired", "duplicated_acks", "invalid_ack_batches",
                                 "stale_session_epoch", "negative_session_epoch"))


class _HostileRun:
    """One fault's requests, in order, each sent once the previous is answered."""

    def __init__(self, owner: HostileShareClient, group_id: str, member_id: str, broker: int, topic_id: str,
                 partition: int, names: list[str]) -> None:
        self.owner = owner
        self.group_id = group_id
        self.member_id = member_id
        self.broker = broker
        self.topic_id = topic_id
        self.partition = partition
        self.epoch = 1  # the hostile session's next epoch once opened (trunk: ShareRequestMetadata.nextEpoch)
        self.steps = self._plan(names)

    def _fetch(self, epoch: int, batches: tuple[AcknowledgementBatch, ...] = (), member: str = "") -> ShareFetchRequest:
        # partition_max_bytes 0: the partition is named (and acknowledged) but nothing is acquired
        part = ShareFetchPartition(self.topic_id, self.partition, 0, batches)
        return ShareFetchRequest(self.group_id, member or self.member_id, epoch, (part,), max_wait_ms=0,
                                 max_records=1)

    def _ack(self, epoch: int, batches: tuple[AcknowledgementBatch, ...]) -> ShareAcknowledgeRequest:
        parts = (ShareAcknowledgePartition(self.topic_id, self.partition, batches),) if batches else ()
        return ShareAcknowledgeRequest(self.group_id, self.member_id, epoch, parts)

    def _plan(self, names: list[str]) -> list[_Step]:
        owner = self.owner
        never = (AcknowledgementBatch(0, 9, (1,)),)
        malformed = (AcknowledgementBatch(5, 3, (1,)), AcknowledgementBatch(0, 4, (1,)),
                     AcknowledgementBatch(2, 6, (1,)))
        session = (Errors.INVALID_SHARE_SESSION_EPOCH,)

        def duplicated() -> ShareAcknowledgeRequest | None:
            batches = owner.acks.get((self.group_id, self.topic_id, self.partition))
            return None if batches is None else self._ack(self.epoch, batches)

        def real_member() -> ShareFetchRequest | None:
            member = owner.members.get(self.group_id)
            return None if member is None else self._fetch(-2, member=member)

        table: dict[str, tuple[_Build, tuple[Errors, ...], tuple[Errors, ...]]] = {
            "acks_on_fresh_session": (lambda: self._fetch(0, never), (Errors.INVALID_REQUEST,), ()),
            "unknown_session": (lambda: self._ack(1, never), (Errors.SHARE_SESSION_NOT_FOUND,), ()),
            "acks_never_acquired": (lambda: self._ack(self.epoch, never), (), _REFUSED_ACK),
            "duplicated_acks": (duplicated, (), _REFUSED_ACK),
            "invalid_ack_batches": (lambda: self._ack(self.epoch, malformed), (), (Errors.INVALID_REQUEST,)),
            "stale_session_epoch": (lambda: self._ack(1, never), session, ()),
            "negative_session_epoch": (lambda: self._ack(-2, never), session, ()),
            "member_negative_epoch": (real_member, (*session, Errors.SHARE_SESSION_NOT_FOUND), ()),
        }
        steps: list[_Step] = []
        opened = False
        for name in names:
            if name in _OWN_SESSION and not opened:
                steps.append(("open_session", lambda: self._fetch(0), (), ()))
                opened = True
            if name == "stale_session_epoch" and steps[-1][0] == "open_session":
                # one request more, so that epoch 1 is stale for certain
                steps.append(("advance_session", lambda: self._ack(self.epoch, ()), (), ()))
            build, expected, per_partition = table[name]
            steps.append((name, build, expected, per_partition))
        if opened:
            steps.append(("close_session", lambda: self._ack(-1, ()), (), ()))
        return steps

    def next(self) -> None:
        client = self.owner.client
        while self.steps:
            step = self.steps.pop(0)
            body = step[1]()
            if body is None:
                client.record("hostile.nothing_to_send", request=step[0])
                continue
            kind = "ShareFetch" if isinstance(body, ShareFetchRequest) else "ShareAcknowledge"
            client.record("hostile.send", request=step[0], member=body.member_id, epoch=body.share_session_epoch,
                          broker=self.broker)
            client.send_request(self.broker, kind, body, functools.partial(self._answered, step, body),
                                functools.partial(self._answered, step, body, None))
            return

    def _answered(self, step: _Step, body: Any, response: Any) -> None:
        owner = self.owner
        client = owner.client
        name, _, expected, per_partition = step
        error = Errors.REQUEST_TIMED_OUT if response is None else Errors(response.error_code)
        parts = () if response is None else tuple(Errors(r.error_code) for r in response.responses)
        if error == Errors.NONE and body.share_session_epoch >= 0:
            self.epoch = body.share_session_epoch + 1  # the session moved on
        client.record("hostile.answer", request=name, error=int(error), partition_errors=[int(e) for e in parts])
        if name not in _SETUP:
            _situations.COUNTS["hostile-share-request-answered"] += 1
            now = client.scheduler.now_ms
            result = HostileShareResult(name, body.group_id, body.member_id, body.share_session_epoch, self.broker,
                                        error, parts, expected, per_partition, now)
            owner.results.append(result)
            owner.observer.on_event("hostile.share_answer", now, result=result)
        if client.alive:
            self.next()
