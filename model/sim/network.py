"""The simulated network: named endpoints, per-link latency, loss, delay, duplication, partitions.

A ``Network`` sits on a ``Scheduler`` and a networkx graph whose nodes are the
endpoint names (brokers, consumers, admin clients). Edge attributes tune a
link; pairs without an edge get the defaults:

* ``latency``: a ``Distribution`` of one-way delay in ms (default: constant 1 ms);
* ``loss``: the probability a message on the link is lost (default 0).

An undirected graph's edge tunes both directions; a ``DiGraph`` edge tunes one.

A message is delivered by a timer callback (``Scheduler.post_at``), never a
SimPy process, and handed to the handler registered for its destination.

Semantics chosen where Kafka's TCP connections decide them:

* **FIFO per link.** Requests and responses between two endpoints share one
  TCP connection, so a message never overtakes an earlier one on the same
  directed link: its delivery time is at least the previous message's. A slow
  message therefore holds back later ones (head-of-line blocking), but only
  on its own connection: the next message after a reset or a close (below)
  goes on a new, empty one.
  ``set_reorder(True)`` is a fault that lifts this.
* **Partitions and crashes break connections.** A message is dropped if its
  link is partitioned (or an endpoint is down) when it is sent, *or* if the
  link was partitioned or an endpoint crashed at any time while it was in
  flight: each link has a connection epoch, bumped by ``partition`` and
  ``crash_node``, and a message of an older connection than the link's live
  one is dropped on arrival. A one-way partition blocks (and resets) only the
  listed direction.
* **A close ends a connection in order.** ``close_connection(src, dst)`` is
  src closing its socket (Kafka's NetworkClient does on a request timeout):
  what src already sent still arrives, then dst sees the close (TCP delivers
  the data before the FIN), so a request that timed out on its client can
  still be handled, late; what dst sent src and is still in flight is lost
  (src's socket is gone). Both directions start a new connection.
* **A crash or a close is noticed, a partition is not.** When a node crashes
  its host resets its TCP connections, and connecting to a node that is down
  is refused, so an endpoint that exchanged messages with it (either way) and
  registered an ``on_disconnect`` callback is told ``(peer, cutoff_ms,
  connection)`` one link latency later (a broker so learns that a client died
  and ends its share sessions): every request it sent to ``peer`` at or before
  ``cutoff_ms`` is lost, and it may retry at once instead of waiting out its
  request timeout (Kafka's NetworkClient fails the requests in flight on a
  disconnect). The other end of a close is told the same way, once the last
  message src sent on it has arrived. A partition drops packets silently, so
  only the request timeout finds out.
* **Connections are numbered.** A message carries the number of the
  connection it went on (``Message.connection``: its link's epoch when it was
  sent), and ``connection(src, dst)`` is the one a message from src to dst
  goes on now. A disconnect tells which connection ended, so a broker ends the
  share sessions opened on it or on an earlier one, not those a client opened
  since on a newer one (Kafka marks the old connection stale).
* **Duplication is opt-in per kind.** TCP does not duplicate; a duplicate
  models an RPC retried by the client after a lost response, so only kinds a
  client really retries should get it (``set_duplication``). The copy takes a
  second latency draw after the original and is flagged ``duplicate=True``.

Randomness: each directed link has its own stream, ``streams.get("network",
src, dst)``, so adding an endpoint or a fault on one link does not shift the
draws of any other link.

Metrics count messages sent, delivered, duplicated and dropped (by reason) per
message kind. With a ``Trace``, every delivery and drop is recorded
(``deliver`` / ``drop`` events at the destination node; sends are not
recorded, they are implied by the actor events that cause them).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import networkx as nx

from model.core.message import Message as Value
from model.sim.rng import Distribution, RandomStreams, Sampler
from model.sim.timers import Scheduler
from model.sim.trace import DELIVER, DROP, Trace

DEFAULT_LATENCY: Final = Distribution.constant(1)

DROP_REASONS: Final = ("down", "partition", "loss", "reset", "no_handler")
"""Why a message was dropped: an endpoint was down at send; the link was
partitioned at send; random loss; the connection was reset (partition or crash)
while in flight; nobody is registered at the destination."""


class Message(Value):
    """One message on the wire. ``payload`` is whatever the actors exchange.

    A compiled plain class, not a NamedTuple: one is built per message sent, and a
    NamedTuple's ``__new__`` is an interpreted lambda (``model/core/message.py``).
    """

    FIELDS = ("msg_id", "src", "dst", "kind", "payload", "sent_ms", "duplicate", "connection")
    __slots__ = FIELDS

    def __init__(self, msg_id: int, src: str, dst: str, kind: str, payload: Any, sent_ms: int,
                 duplicate: bool = False, connection: int = 0) -> None:
        self.msg_id: Final = msg_id
        self.src: Final = src
        self.dst: Final = dst
        self.kind: Final = kind
        self.payload: Final = payload
        self.sent_ms: Final = sent_ms
        self.duplicate: Final = duplicate
        self.connection: Final = connection  # the src->dst connection it went on


Handler = Callable[[Message], object]
DisconnectHandler = Callable[[str, int, int], object]  # (peer, cutoff_ms, connection)


@dataclass(frozen=True)
class MessageFilter:
    """Which messages a loss or delay rule applies to. Every non-empty criterion must match.

    ``kinds``: exact message kinds, or ``"*Suffix"`` patterns (``"*Response"``
    matches every response); ``links``: directed ``(src, dst)`` pairs;
    ``nodes``: messages from or to any of these endpoints. The empty filter
    matches every message.
    """

    kinds: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    nodes: tuple[str, ...] = ()
    _exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _suffixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _links: frozenset[tuple[str, str]] = field(init=False, repr=False, compare=False)
    _nodes: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("kinds", "nodes"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"MessageFilter.{name} = {value!r}: must be a tuple of non-empty strings")
        if not isinstance(self.links, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(n, str) for n in pair) for pair in self.links
        ):
            raise ValueError(f"MessageFilter.links = {self.links!r}: must be a tuple of (src, dst) string pairs")
        object.__setattr__(self, "_exact", frozenset(k for k in self.kinds if not k.startswith("*")))
        object.__setattr__(self, "_suffixes", tuple(k[1:] for k in self.kinds if k.startswith("*")))
        object.__setattr__(self, "_links", frozenset(self.links))
        object.__setattr__(self, "_nodes", frozenset(self.nodes))

    def matches(self, src: str, dst: str, kind: str) -> bool:
        if self.kinds and kind not in self._exact and not any(kind.endswith(s) for s in self._suffixes):
            return False
        if self.links and (src, dst) not in self._links:
            return False
        return not self.nodes or src in self._nodes or dst in self._nodes


MATCH_ALL: Final = MessageFilter()


@dataclass
class NetworkMetrics:
    """Counts per message kind (dicts sorted by kind; ``dropped`` by reason, then kind)."""

    sent: dict[str, int]
    delivered: dict[str, int]
    duplicated: dict[str, int]
    dropped: dict[str, dict[str, int]]

    def total(self, counter: str) -> int:
        if counter == "dropped":
            return sum(sum(by_kind.values()) for by_kind in self.dropped.values())
        counts: dict[str, int] = getattr(self, counter)
        return sum(counts.values())


class _Link:
    """State of one directed link, created on its first message."""

    __slots__ = ("dst", "epoch", "last_due", "live_from", "loss", "rng", "sample", "src")

    def __init__(self, src: str, dst: str, streams: RandomStreams, latency: Distribution, loss: float) -> None:
        self.src = src
        self.dst = dst
        self.rng = streams.get("network", src, dst)
        self.sample: Sampler = latency.sampler()
        self.loss = loss
        self.last_due = 0  # FIFO: the latest delivery time handed out on this connection
        self.epoch = 0  # the connection messages go on now: a partition, a crash or a close bumps it
        self.live_from = 0  # messages of an older connection are dropped on arrival

    def reset(self) -> None:
        """The connection breaks: what is in flight on it is dropped on arrival, and the next message
        goes on a new one that nothing of the old one holds back."""
        self.epoch += 1
        self.live_from = self.epoch
        self.last_due = 0

    def reconnect(self) -> int:
        """The sender closed the connection: what it already sent still arrives, and the next message
        goes on a new one. Returns when the last message of the old one arrives (the close after it)."""
        closed_after = self.last_due
        self.epoch += 1
        self.last_due = 0
        return closed_after


class _LossRule(NamedTuple):
    probability: float
    match: MessageFilter


class _DelayRule(NamedTuple):
    sample: Sampler
    match: MessageFilter


class Network:
    """Endpoints exchanging messages over simulated links; see the module docstring."""

    def __init__(
        self,
        scheduler: Scheduler,
        graph: nx.Graph,
        streams: RandomStreams,
        trace: Trace | None = None,
        *,
        default_latency: Distribution = DEFAULT_LATENCY,
        trace_messages: bool = True,
    ) -> None:
        for node in graph.nodes:
            if not isinstance(node, str):
                raise TypeError(f"network node {node!r}: endpoint names must be str")
        self._scheduler = scheduler
        self._graph = graph
        self._streams = streams
        self._trace = trace if trace_messages else None
        self._default_latency = default_latency
        self._handlers: dict[str, Handler] = {}
        self._on_disconnect: dict[str, DisconnectHandler] = {}
        self._links: dict[tuple[str, str], _Link] = {}
        self._links_of: dict[str, list[_Link]] = {}
        self._ids = itertools.count(1)
        self._faults_on = False  # any of the fault state below is set: send takes the slow path
        self._down: set[str] = set()
        self._blocked: dict[tuple[str, str], int] = {}  # directed pair -> how many partitions block it
        self._partitions: dict[int, tuple[tuple[str, str], ...]] = {}
        self._loss_rules: dict[int, _LossRule] = {}
        self._delay_rules: dict[int, _DelayRule] = {}
        self._next_handle = 0
        self._duplication: dict[str, float] = {}
        self._reorder = False
        self._sent: dict[str, int] = {}
        self._delivered: dict[str, int] = {}
        self._duplicated: dict[str, int] = {}
        self._dropped: dict[str, dict[str, int]] = {reason: {} for reason in DROP_REASONS}
        self._taps: dict[str, list[Callable[[Message], None]]] = {}  # message kind -> wiretaps

    # -- endpoints -------------------------------------------------------------

    def register(self, node: str, handler: Handler, on_disconnect: DisconnectHandler | None = None) -> None:
        """Deliver messages addressed to ``node`` to ``handler`` (adds the node to the graph if new);
        tell ``on_disconnect`` when a peer it sent to crashed or refused the connection."""
        if not isinstance(node, str):
            raise TypeError(f"network node {node!r}: endpoint names must be str")
        if node not in self._graph:
            self._graph.add_node(node)
        self._handlers[node] = handler
        if on_disconnect is not None:
            self._on_disconnect[node] = on_disconnect

    def unregister(self, node: str) -> None:
        """Messages to ``node`` are dropped (``no_handler``) from now on."""
        self._handlers.pop(node, None)

    @property
    def nodes(self) -> list[str]:
        return sorted(self._graph.nodes)

    # -- sending -----------------------------------------------------------------

    def send(self, src: str, dst: str, kind: str, payload: Any = None) -> Message | None:
        """Put a message on the wire. Returns it, or None if it was dropped at once."""
        link = self._links.get((src, dst))
        if link is None:
            link = self._open(src, dst)
        now = self._scheduler._now
        message = Message(next(self._ids), src, dst, kind, payload, now, False, link.epoch)
        sent = self._sent
        sent[kind] = sent.get(kind, 0) + 1
        if self._faults_on:
            return self._send_under_faults(message, link)
        # The common case, kept short: no fault is active.
        rng = link.rng
        if link.loss and rng.random() < link.loss:
            self._drop(message, "loss")
            return None
        due = now + link.sample(rng)
        if due < link.last_due:
            due = link.last_due  # FIFO per link
        else:
            link.last_due = due
        self._scheduler.post_at(due, self._deliver, message, link)
        return message

    def _send_under_faults(self, message: Message, link: _Link) -> Message | None:
        src, dst, kind = message.src, message.dst, message.kind
        if src in self._down:
            self._drop(message, "down")
            return None
        if dst in self._down:
            self._drop(message, "down")
            self._tell(src, dst, link, message.sent_ms, self.connection(dst, src))  # connection refused
            return None
        taps = self._taps.get(kind)
        if taps is not None:
            for tap in taps:
                tap(message)
        if (src, dst) in self._blocked:
            self._drop(message, "partition")
            return None
        rng = link.rng
        if link.loss and rng.random() < link.loss:
            self._drop(message, "loss")
            return None
        for loss_rule in self._loss_rules.values():
            if loss_rule.match.matches(src, dst, kind) and rng.random() < loss_rule.probability:
                self._drop(message, "loss")
                return None
        due = message.sent_ms + link.sample(rng)
        for delay_rule in self._delay_rules.values():
            if delay_rule.match.matches(src, dst, kind):
                due += delay_rule.sample(rng)
        if due < link.last_due and not self._reorder:
            due = link.last_due
        elif due > link.last_due:
            link.last_due = due
        self._scheduler.post_at(due, self._deliver, message, link)
        probability = self._duplication.get(kind)
        if probability and rng.random() < probability:
            again = due + link.sample(rng)
            if again > link.last_due:
                link.last_due = again
            self._duplicated[kind] = self._duplicated.get(kind, 0) + 1
            self._scheduler.post_at(again, self._deliver, message.replace(duplicate=True), link)
        return message

    def _faults_changed(self) -> None:
        self._faults_on = bool(
            self._down or self._blocked or self._loss_rules or self._delay_rules or self._duplication or self._reorder
            or self._taps
        )

    def tap(self, kind: str, callback: Callable[[Message], None]) -> None:
        """A wiretap (the ``hostile_state_request`` fault's capture): ``callback`` sees every message of
        ``kind`` its sender puts on the wire, before a partition, loss or delay decides its fate. It must
        only look. Sends take the path of faults from then on, which draws exactly as the fast one does
        when no other fault is set."""
        self._taps.setdefault(kind, []).append(callback)
        self._faults_changed()

    def _open(self, src: str, dst: str) -> _Link:
        graph = self._graph
        for node in (src, dst):
            if node not in graph:
                raise KeyError(f"network node {node!r} is not in the graph; known: {', '.join(self.nodes)}")
        attrs = graph.get_edge_data(src, dst) or {}
        latency = attrs.get("latency", self._default_latency)
        if not isinstance(latency, Distribution):
            raise TypeError(f"edge ({src}, {dst}) latency = {latency!r}: must be a Distribution")
        loss = attrs.get("loss", 0.0)
        if isinstance(loss, bool) or not isinstance(loss, int | float) or not 0 <= loss <= 1:
            raise ValueError(f"edge ({src}, {dst}) loss = {loss!r}: must be a probability in [0, 1]")
        link = _Link(src, dst, self._streams, latency, float(loss))
        self._links[(src, dst)] = link
        self._links_of.setdefault(src, []).append(link)
        if dst != src:
            self._links_of.setdefault(dst, []).append(link)
        return link

    def _deliver(self, message: Message, link: _Link) -> None:
        if message.connection < link.live_from:
            self._drop(message, "reset")
            return
        handler = self._handlers.get(message.dst)
        if handler is None:
            self._drop(message, "no_handler")
            return
        kind = message.kind
        delivered = self._delivered
        delivered[kind] = delivered.get(kind, 0) + 1
        if self._trace is not None:
            self._trace.emit(DELIVER, self._scheduler._now, message.dst, message.duplicate, message.msg_id, kind,
                             message.src)
        handler(message)

    def _drop(self, message: Message, reason: str) -> None:
        by_kind = self._dropped[reason]
        by_kind[message.kind] = by_kind.get(message.kind, 0) + 1
        if self._trace is not None:
            self._trace.emit(DROP, self._scheduler._now, message.dst, message.msg_id, message.kind, reason, message.src)

    # -- faults: nodes -------------------------------------------------------------

    def crash_node(self, node: str) -> bool:
        """``node`` is down: nothing reaches it or leaves it, and its connections reset.

        Returns False if it was already down.
        """
        self._known(node)
        if node in self._down:
            return False
        self._down.add(node)
        self._faults_changed()
        now = self._scheduler._now
        links = self._links_of.get(node, ())
        answered = {link.src for link in links if link.dst == node}
        ended = {link.dst: link.epoch for link in links if link.src == node}  # as each peer knows it
        for link in links:
            link.reset()
        for link in links:
            if link.dst == node and link.src not in self._down:
                # the crashed host resets the connection
                self._tell(link.src, node, link, now, ended.get(link.src, 0))
            elif link.src == node and link.dst not in answered and link.dst not in self._down:
                # A peer that has only heard from it (it never answered yet) has the connection too.
                self._tell(link.dst, node, link, now, ended[link.dst])
        return True

    def connection(self, src: str, dst: str) -> int:
        """The connection a message from ``src`` to ``dst`` arrives on now (the link's epoch)."""
        link = self._links.get((src, dst))
        return 0 if link is None else link.epoch

    def close_connection(self, src: str, dst: str) -> None:
        """``src`` closes its connection to ``dst``: what src sent still arrives, what dst sent src and
        is in flight is lost, and ``dst`` is told one latency from now or once src's last message has
        arrived, whichever is later, unless the way there is cut (then it never learns)."""
        link = self._links.get((src, dst))
        if link is None:
            link = self._open(src, dst)
        ended = link.epoch
        closed_after = link.reconnect()
        back = self._links.get((dst, src))
        if back is not None:
            back.reset()
        if src not in self._down and dst not in self._down:
            self._tell(dst, src, link, self._scheduler._now, ended, closed_after)

    def close_connections(self, src: str) -> None:
        """``src`` closes every connection it opened (a client shutting down)."""
        for link in [link for link in self._links_of.get(src, ()) if link.src == src and link.dst != src]:
            self.close_connection(src, link.dst)

    def _tell(self, node: str, peer: str, link: _Link, cutoff_ms: int, connection: int,
              not_before_ms: int = 0) -> None:
        """``node`` learns, one latency of ``link`` (between the two) from now but not before
        ``not_before_ms``, that its connection to ``peer`` is gone: what it sent ``peer`` by ``cutoff_ms``
        is lost, and ``connection`` (peer -> node's) has ended. The reset travels peer -> node."""
        if node in self._on_disconnect and (peer, node) not in self._blocked:
            due = max(self._scheduler._now + link.sample(link.rng), not_before_ms)
            self._scheduler.post_at(due, self._disconnected, node, peer, cutoff_ms, connection)

    def _disconnected(self, node: str, peer: str, cutoff_ms: int, connection: int) -> None:
        if node in self._down:
            return
        self._on_disconnect[node](peer, cutoff_ms, connection)

    def restart_node(self, node: str) -> bool:
        """``node`` is up again (with fresh connections). Returns False if it was not down."""
        self._known(node)
        if node not in self._down:
            return False
        self._down.discard(node)
        self._faults_changed()
        return True

    @property
    def faults_active(self) -> bool:
        """Whether any fault is set: a node down, a partition, loss, delay, duplication or reordering."""
        return self._faults_on

    def is_down(self, node: str) -> bool:
        return node in self._down

    # -- faults: partitions ----------------------------------------------------------

    def partition(self, side_a: Iterable[str], side_b: Iterable[str], *, one_way: bool = False) -> int:
        """Cut ``side_a`` from ``side_b`` (only a→b if ``one_way``). Returns a handle for ``heal``."""
        a, b = tuple(sorted(set(side_a))), tuple(sorted(set(side_b)))
        if not a or not b:
            raise ValueError(f"partition sides {a!r} / {b!r}: both must be non-empty")
        both = sorted(set(a) & set(b))
        if both:
            raise ValueError(f"partition sides overlap on {', '.join(both)}: a node cannot be on both sides")
        for node in a + b:
            self._known(node)
        pairs = [(x, y) for x in a for y in b]
        if not one_way:
            pairs += [(y, x) for x in a for y in b]
        for pair in pairs:
            self._blocked[pair] = self._blocked.get(pair, 0) + 1
            link = self._links.get(pair)
            if link is not None:
                link.reset()
        handle = self._new_handle()
        self._partitions[handle] = tuple(pairs)
        self._faults_changed()
        return handle

    def heal(self, handle: int) -> bool:
        """Undo one partition. Returns False if the handle is unknown or already healed."""
        pairs = self._partitions.pop(handle, None)
        if pairs is None:
            return False
        for pair in pairs:
            left = self._blocked[pair] - 1
            if left:
                self._blocked[pair] = left
            else:
                del self._blocked[pair]
        self._faults_changed()
        return True

    def heal_all(self) -> int:
        """Undo every partition; returns how many there were."""
        handles = sorted(self._partitions)
        for handle in handles:
            self.heal(handle)
        return len(handles)

    def is_blocked(self, src: str, dst: str) -> bool:
        return (src, dst) in self._blocked

    # -- faults: loss, delay, duplication, reordering -----------------------------------

    def add_loss(self, probability: float, match: MessageFilter = MATCH_ALL) -> int:
        """Lose matching messages with ``probability``. Returns a handle for ``remove_loss``."""
        if isinstance(probability, bool) or not isinstance(probability, int | float) or not 0 <= probability <= 1:
            raise ValueError(f"loss probability = {probability!r}: must be in [0, 1]")
        handle = self._new_handle()
        self._loss_rules[handle] = _LossRule(float(probability), match)
        self._faults_changed()
        return handle

    def remove_loss(self, handle: int) -> bool:
        removed = self._loss_rules.pop(handle, None) is not None
        self._faults_changed()
        return removed

    def add_delay(self, extra: Distribution, match: MessageFilter = MATCH_ALL) -> int:
        """Add a draw from ``extra`` to matching messages' latency. Returns a handle for ``remove_delay``."""
        if not isinstance(extra, Distribution):
            raise TypeError(f"delay extra = {extra!r}: must be a Distribution")
        handle = self._new_handle()
        self._delay_rules[handle] = _DelayRule(extra.sampler(), match)
        self._faults_changed()
        return handle

    def remove_delay(self, handle: int) -> bool:
        removed = self._delay_rules.pop(handle, None) is not None
        self._faults_changed()
        return removed

    def set_duplication(self, kind: str, probability: float) -> None:
        """Deliver messages of ``kind`` twice with ``probability`` (0 switches it off)."""
        if isinstance(probability, bool) or not isinstance(probability, int | float) or not 0 <= probability <= 1:
            raise ValueError(f"duplication probability for {kind} = {probability!r}: must be in [0, 1]")
        if probability:
            self._duplication[kind] = float(probability)
        else:
            self._duplication.pop(kind, None)
        self._faults_changed()

    def set_reorder(self, enabled: bool) -> None:
        """Let messages overtake earlier ones on the same link (a fault: breaks per-link FIFO)."""
        self._reorder = enabled
        self._faults_changed()

    def _new_handle(self) -> int:
        self._next_handle += 1
        return self._next_handle

    def _known(self, node: str) -> None:
        if node not in self._graph:
            raise KeyError(f"network node {node!r} is not in the graph; known: {', '.join(self.nodes)}")

    # -- metrics ----------------------------------------------------------------------

    def metrics(self) -> NetworkMetrics:
        return NetworkMetrics(
            sent=dict(sorted(self._sent.items())),
            delivered=dict(sorted(self._delivered.items())),
            duplicated=dict(sorted(self._duplicated.items())),
            dropped={reason: dict(sorted(self._dropped[reason].items())) for reason in DROP_REASONS},
        )
