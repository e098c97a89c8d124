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

A request is retried as an admin call is while the coordinator moves or loads (NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, no answer); any other answer is final and
kept in ``results``. The invariants ``negative-epoch-changes-nothing`` and
``stored-start-offset-monotonic`` judge what the coordinator did with them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from model.core.errors import Errors
from model.core.message import Message as Value
from model.core.share_state import (
    UNKNOWN_OFFSET,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    SharePartitionKey,
    WriteShareGroupStateRequest,
)
from model.sim.client import Client
from model.sim.faults import HOSTILE_NAMED_ONLY, HOSTILE_STATE_REQUESTS, FaultEvent
from model.sim.network import Message, Network
from model.sim.protocol import SHARE_STATE_TOPIC

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
        network.tap("WriteShareGroupState", self._capture)

    def _capture(self, message: Message) -> None:
        request = getattr(message.payload, "body", None)
        if not isinstance(request, WriteShareGroupStateRequest) or message.src == self.client.name:
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

    def _send(self, name: str, key: SharePartitionKey, body: Any,
              then: Callable[[Any], None] | None = None) -> None:
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

        client.call(coordinator, kind, body, done, error_of=_error_of)


def _error_of(response: Any) -> Errors:
    error = Errors(response.error_code)
    return error if error in _RETRIED else Errors.NONE
