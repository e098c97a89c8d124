"""The simulated network: latency, loss, partitions, FIFO per link, duplication, crashes, metrics."""

from collections.abc import Iterable

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.sim.network import MessageFilter, Network
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler
from model.sim.trace import Trace


class Harness:
    """A network whose every endpoint logs (time, msg_id, src, kind, duplicate) on delivery."""

    def __init__(
        self,
        nodes: Iterable[str] = ("a", "b", "c"),
        graph: nx.Graph | None = None,
        seed: int = 1,
        latency: Distribution | None = None,
        trace: Trace | None = None,
    ) -> None:
        self.scheduler = Scheduler()
        self.graph = graph if graph is not None else nx.Graph()
        self.graph.add_nodes_from(nodes)
        self.net = Network(
            self.scheduler,
            self.graph,
            RandomStreams(seed),
            trace,
            default_latency=latency or Distribution.constant(1),
        )
        self.inbox: dict[str, list[tuple[int, int, str, str, bool]]] = {}
        for node in sorted(self.graph.nodes):
            self.inbox[node] = []
            self.net.register(node, self._handler(node))

    def _handler(self, node: str):  # type: ignore[no-untyped-def]
        def deliver(message) -> None:  # type: ignore[no-untyped-def]
            assert message.dst == node
            self.inbox[node].append(
                (self.scheduler.now_ms, message.msg_id, message.src, message.kind, message.duplicate)
            )

        return deliver

    def kinds(self, node: str) -> list[str]:
        return [kind for _, _, _, kind, _ in self.inbox[node]]

    def run(self) -> None:
        if self.scheduler.peek() != float("inf"):
            self.scheduler.run()


def test_default_and_edge_latency() -> None:
    graph = nx.Graph()
    graph.add_edge("a", "b", latency=Distribution.constant(7))
    h = Harness(graph=graph, latency=Distribution.constant(3))
    h.net.send("a", "b", "Req")
    h.net.send("b", "a", "Resp")  # undirected edge: both directions
    h.net.send("a", "c", "Req")  # no edge: the default
    h.run()
    assert [t for t, *_ in h.inbox["b"]] == [7]
    assert [t for t, *_ in h.inbox["a"]] == [7]
    assert [t for t, *_ in h.inbox["c"]] == [3]


def test_directed_graph_latency_is_per_direction() -> None:
    graph = nx.DiGraph()
    graph.add_edge("a", "b", latency=Distribution.constant(9))
    h = Harness(graph=graph, latency=Distribution.constant(2))
    h.net.send("a", "b", "Req")
    h.net.send("b", "a", "Resp")
    h.run()
    assert h.inbox["b"][0][0] == 9
    assert h.inbox["a"][0][0] == 2


def test_message_fields_and_payload() -> None:
    h = Harness()
    got: list[object] = []
    h.net.register("b", got.append)
    sent = h.net.send("a", "b", "ShareFetchRequest", {"max": 5})
    h.run()
    assert sent is not None
    assert got == [sent]
    assert (sent.src, sent.dst, sent.kind, sent.payload, sent.sent_ms, sent.duplicate) == (
        "a",
        "b",
        "ShareFetchRequest",
        {"max": 5},
        0,
        False,
    )


def test_unknown_nodes_are_rejected() -> None:
    h = Harness()
    with pytest.raises(KeyError, match="'zz' is not in the graph"):
        h.net.send("a", "zz", "Req")
    with pytest.raises(KeyError, match="zz"):
        h.net.crash_node("zz")
    with pytest.raises(TypeError, match="must be str"):
        h.net.register(3, print)  # type: ignore[arg-type]


def test_register_adds_a_node_and_unregister_drops() -> None:
    h = Harness()
    got: list[str] = []
    h.net.register("new", lambda m: got.append(m.kind))
    h.net.send("a", "new", "Hello")
    h.run()
    assert got == ["Hello"]
    h.net.unregister("new")
    h.net.send("a", "new", "Hello")
    h.run()
    assert h.net.metrics().dropped["no_handler"] == {"Hello": 1}


# -- loss ---------------------------------------------------------------------------------


def test_loss_by_kind_and_by_suffix() -> None:
    h = Harness()
    h.net.add_loss(1.0, MessageFilter(kinds=("ShareGroupHeartbeatRequest",)))
    suffix = h.net.add_loss(1.0, MessageFilter(kinds=("*Response",)))
    for kind in ("ShareGroupHeartbeatRequest", "ShareFetchRequest", "ShareFetchResponse"):
        h.net.send("a", "b", kind)
    h.run()
    assert h.kinds("b") == ["ShareFetchRequest"]
    assert h.net.metrics().dropped["loss"] == {"ShareFetchResponse": 1, "ShareGroupHeartbeatRequest": 1}
    assert h.net.remove_loss(suffix)
    assert not h.net.remove_loss(suffix)
    h.net.send("a", "b", "ShareFetchResponse")
    h.run()
    assert h.kinds("b")[-1] == "ShareFetchResponse"


def test_loss_by_link_and_by_node() -> None:
    h = Harness()
    h.net.add_loss(1.0, MessageFilter(links=(("a", "b"),)))
    h.net.send("a", "b", "X")
    h.net.send("b", "a", "X")  # links are directed
    h.net.send("a", "c", "X")
    h.run()
    assert (h.kinds("a"), h.kinds("b"), h.kinds("c")) == (["X"], [], ["X"])
    h2 = Harness()
    h2.net.add_loss(1.0, MessageFilter(nodes=("c",)))
    h2.net.send("a", "c", "X")
    h2.net.send("c", "b", "X")
    h2.net.send("a", "b", "Y")
    h2.run()
    assert (h2.kinds("b"), h2.kinds("c")) == (["Y"], [])


def test_loss_probability_is_roughly_right() -> None:
    h = Harness()
    h.net.add_loss(0.3)
    for _ in range(5000):
        h.net.send("a", "b", "X")
    h.run()
    assert 3300 <= len(h.inbox["b"]) <= 3700
    m = h.net.metrics()
    assert m.sent == {"X": 5000}
    assert m.delivered["X"] + m.dropped["loss"]["X"] == 5000


def test_edge_loss_attribute() -> None:
    graph = nx.Graph()
    graph.add_edge("a", "b", loss=1.0)
    h = Harness(graph=graph)
    h.net.send("a", "b", "X")
    h.net.send("a", "c", "X")
    h.run()
    assert (h.kinds("b"), h.kinds("c")) == ([], ["X"])
    bad = nx.Graph()
    bad.add_edge("a", "b", loss=2)
    with pytest.raises(ValueError, match="loss = 2"):
        Harness(graph=bad).net.send("a", "b", "X")


def test_rule_validation() -> None:
    h = Harness()
    with pytest.raises(ValueError, match="probability"):
        h.net.add_loss(1.5)
    with pytest.raises(ValueError, match="kinds"):
        MessageFilter(kinds=("",))
    with pytest.raises(ValueError, match="links"):
        MessageFilter(links=(("a",),))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Distribution"):
        h.net.add_delay(5)  # type: ignore[arg-type]


# -- delay --------------------------------------------------------------------------------


def test_delay_rule_adds_latency_to_matching_messages() -> None:
    h = Harness()
    handle = h.net.add_delay(Distribution.constant(100), MessageFilter(kinds=("Slow",)))
    h.net.send("a", "b", "Slow")
    h.net.send("a", "c", "Fast")
    h.run()
    assert h.inbox["b"][0][0] == 101
    assert h.inbox["c"][0][0] == 101 - 100
    assert h.net.remove_delay(handle)
    h.net.send("a", "b", "Slow")
    h.run()
    assert h.inbox["b"][-1][0] == h.scheduler.now_ms == 102


def test_delay_spike_distribution_on_a_link() -> None:
    spiky = Distribution.spike(Distribution.constant(1), 0.1, Distribution.constant(500))
    h = Harness(latency=spiky)
    h.net.set_reorder(True)  # look at raw latencies, not FIFO-adjusted ones
    for _ in range(2000):
        h.net.send("a", "b", "X")
    h.run()
    latencies = [t for t, *_ in h.inbox["b"]]
    assert set(latencies) == {1, 501}
    assert 150 <= latencies.count(501) <= 250


# -- FIFO per link ----------------------------------------------------------------------


def test_fifo_per_link_holds_back_later_messages() -> None:
    h = Harness(latency=Distribution.uniform(1, 100))
    for i in range(300):
        h.net.send("a", "b", f"m{i}")
    h.run()
    assert h.kinds("b") == [f"m{i}" for i in range(300)]
    times = [t for t, *_ in h.inbox["b"]]
    assert times == sorted(times)


def test_reorder_fault_lets_messages_overtake() -> None:
    h = Harness(latency=Distribution.uniform(1, 100))
    h.net.set_reorder(True)
    for i in range(300):
        h.net.send("a", "b", f"m{i}")
    h.run()
    assert sorted(h.kinds("b")) == sorted(f"m{i}" for i in range(300))
    assert h.kinds("b") != [f"m{i}" for i in range(300)]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    sends=st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from("abc"), st.integers(0, 8)), min_size=1, max_size=80
    ),
    loss=st.sampled_from([0.0, 0.2]),
)
def test_property_no_message_overtakes_an_earlier_one_on_its_link(
    seed: int, sends: list[tuple[str, str, int]], loss: float
) -> None:
    h = Harness(nodes="abc", seed=seed, latency=Distribution.lognormal(5, 1.5))
    if loss:
        h.net.add_loss(loss)
    sent_at: dict[int, int] = {}
    for src, dst, gap in sends:
        if gap:
            h.scheduler.run(until=h.scheduler.now_ms + gap)
        message = h.net.send(src, dst, "X")
        if message is not None:
            sent_at[message.msg_id] = message.sent_ms
    h.run()
    for dst, log in h.inbox.items():
        for src in "abc":
            ids = [msg_id for _, msg_id, s, _, _ in log if s == src]
            assert ids == sorted(ids), f"{src}->{dst} delivered out of order"
        for when, msg_id, *_ in log:
            assert when >= sent_at[msg_id]
    assert sum(len(log) for log in h.inbox.values()) == len(sent_at)


# -- partitions ---------------------------------------------------------------------------


def test_symmetric_partition_and_heal() -> None:
    h = Harness()
    handle = h.net.partition(["a"], ["b", "c"])
    assert h.net.is_blocked("a", "b")
    assert h.net.is_blocked("c", "a")
    for src, dst in (("a", "b"), ("b", "a"), ("c", "a"), ("b", "c")):
        h.net.send(src, dst, f"{src}{dst}")
    h.run()
    assert (h.kinds("a"), h.kinds("b"), h.kinds("c")) == ([], [], ["bc"])
    assert h.net.metrics().dropped["partition"] == {"ab": 1, "ba": 1, "ca": 1}
    assert h.net.heal(handle)
    assert not h.net.heal(handle)
    h.net.send("a", "b", "after")
    h.run()
    assert h.kinds("b") == ["after"]


def test_one_way_partition() -> None:
    h = Harness()
    h.net.partition(["a"], ["b"], one_way=True)
    h.net.send("a", "b", "ab")
    h.net.send("b", "a", "ba")
    h.run()
    assert (h.kinds("a"), h.kinds("b")) == (["ba"], [])


def test_overlapping_partitions_need_both_healed() -> None:
    h = Harness()
    first = h.net.partition(["a"], ["b"])
    h.net.partition(["a", "c"], ["b"])
    h.net.heal(first)
    assert h.net.is_blocked("a", "b")
    assert h.net.heal_all() == 1
    assert not h.net.is_blocked("a", "b")


def test_partition_validation() -> None:
    h = Harness()
    with pytest.raises(ValueError, match="non-empty"):
        h.net.partition([], ["a"])
    with pytest.raises(ValueError, match="overlap on a"):
        h.net.partition(["a", "b"], ["a"])
    with pytest.raises(KeyError, match="zz"):
        h.net.partition(["zz"], ["a"])


def test_in_flight_messages_are_lost_when_a_partition_starts_even_if_it_heals() -> None:
    h = Harness(latency=Distribution.constant(10))
    h.net.send("a", "b", "in_flight")
    h.net.send("b", "a", "other_way")
    h.net.send("a", "c", "other_link")
    h.scheduler.run(until=5)
    handle = h.net.partition(["a"], ["b"], one_way=True)
    h.scheduler.run(until=7)
    h.net.heal(handle)
    h.run()
    assert (h.kinds("b"), h.kinds("a"), h.kinds("c")) == ([], ["other_way"], ["other_link"])
    assert h.net.metrics().dropped["reset"] == {"in_flight": 1}


# -- crashes ------------------------------------------------------------------------------


def test_crashed_node_sends_and_receives_nothing_and_resets_in_flight() -> None:
    h = Harness(latency=Distribution.constant(10))
    h.net.send("a", "b", "before")
    h.net.send("c", "a", "unrelated")
    h.scheduler.run(until=5)
    assert h.net.crash_node("b")
    assert not h.net.crash_node("b")
    assert h.net.is_down("b")
    h.net.send("a", "b", "to_down")
    h.net.send("b", "a", "from_down")
    h.scheduler.run(until=8)
    assert h.net.restart_node("b")
    assert not h.net.restart_node("b")
    h.run()
    assert h.kinds("b") == []
    assert h.kinds("a") == ["unrelated"]
    dropped = h.net.metrics().dropped
    assert dropped["down"] == {"from_down": 1, "to_down": 1}
    assert dropped["reset"] == {"before": 1}
    h.net.send("a", "b", "after_restart")
    h.run()
    assert h.kinds("b") == ["after_restart"]


def test_a_crash_is_reported_to_the_endpoints_it_talked_with_one_latency_later() -> None:
    h = Harness(nodes=("a", "b", "c", "d"), latency=Distribution.constant(4))
    told: list[tuple[int, str, str, int, int]] = []
    for node in ("a", "c", "d"):
        h.net.register(node, h._handler(node), lambda peer, cutoff, connection, node=node: told.append(
            (h.scheduler.now_ms, node, peer, cutoff, connection)))
    h.net.send("a", "b", "request")  # a has a connection to b
    h.net.send("b", "c", "response")  # c only received from b: the connection is reset all the same
    h.net.send("d", "b", "request")
    cut = h.net.partition(["d"], ["b"])  # d cannot hear b's reset
    h.scheduler.run(until=2)
    h.net.crash_node("b")
    h.run()
    # The connection that ended is the one b's messages to each of them came on: b -> c's first.
    assert told == [(6, "a", "b", 2, 0), (6, "c", "b", 2, 0)]
    assert h.net.connection("b", "c") == 1 and h.net.connection("a", "b") == 1
    h.net.heal(cut)


def test_a_send_to_a_node_that_is_down_is_refused() -> None:
    h = Harness(latency=Distribution.constant(3))
    told: list[tuple[int, str, int]] = []
    h.net.register("a", h._handler("a"), lambda peer, cutoff, _: told.append((h.scheduler.now_ms, peer, cutoff)))
    h.net.crash_node("b")
    h.scheduler.run(until=10)
    assert h.net.send("a", "b", "request") is None
    h.net.send("c", "b", "request")  # c registered no callback
    h.scheduler.run(until=20)
    h.net.send("a", "b", "again")
    h.net.crash_node("a")  # a is down itself when this refusal arrives: nobody to tell
    h.run()
    assert told == [(13, "b", 10)]
    assert h.net.metrics().dropped["down"] == {"again": 1, "request": 2}


def test_a_close_delivers_what_the_closer_sent_loses_what_it_was_sent_and_is_heard_after_its_data() -> None:
    """TCP: data written before the close still arrives, then the FIN; what comes back to a closed socket
    is lost. So a request that timed out on its client can still be handled, late (Kafka's NetworkClient
    closes on a request timeout)."""
    h = Harness(latency=Distribution.constant(3))
    told: list[tuple[int, str, int]] = []
    got: list[tuple[str, int]] = []  # (kind, the connection it came on)
    h.net.register("b", lambda message: got.append((message.kind, message.connection)),
                   lambda peer, cutoff, connection: told.append((h.scheduler.now_ms, peer, connection)))
    h.net.add_delay(Distribution.constant(20), MessageFilter(kinds=("slow request",)))
    h.net.send("a", "b", "slow request")  # due at 23
    h.net.send("b", "a", "response")
    h.scheduler.run(until=1)
    h.net.close_connection("a", "b")
    assert h.net.connection("a", "b") == 1
    sent = h.net.send("a", "b", "on the new one")  # not held behind the slow one
    assert sent is not None and sent.connection == 1
    h.scheduler.run(until=30)
    assert h.kinds("a") == [] and got == [("on the new one", 1), ("slow request", 0)]
    assert told == [(23, "a", 0)]  # b hears of the close after the last of its data
    assert h.net.metrics().dropped["reset"] == {"response": 1}
    cut = h.net.partition(["a"], ["b"], one_way=True)
    h.net.close_connection("a", "b")  # the close cannot reach b: it never learns
    h.scheduler.run(until=40)
    h.net.heal(cut)
    assert told == [(23, "a", 0)] and h.net.connection("a", "b") == 3  # the partition reset it too


def test_a_crash_after_a_close_loses_what_the_old_connection_still_carried() -> None:
    h = Harness(latency=Distribution.constant(3))
    h.net.add_delay(Distribution.constant(20), MessageFilter(kinds=("slow request",)))
    h.net.send("a", "b", "slow request")
    h.scheduler.run(until=1)
    h.net.close_connection("a", "b")
    h.net.crash_node("b")
    h.net.restart_node("b")
    h.scheduler.run(until=30)
    assert h.kinds("b") == []
    assert h.net.metrics().dropped["reset"] == {"slow request": 1}


def test_closing_every_connection_of_a_node_closes_only_those_it_opened() -> None:
    h = Harness(nodes=("a", "b", "c", "d"), latency=Distribution.constant(2))
    told: list[tuple[str, str, int]] = []
    for node in ("b", "c", "d"):
        h.net.register(node, h._handler(node), lambda peer, _cutoff, connection, node=node: told.append(
            (node, peer, connection)))
    h.net.send("a", "b", "x")
    h.net.send("a", "c", "x")
    h.net.send("d", "a", "x")  # d -> a is d's connection, not a's
    h.run()
    h.net.close_connections("a")
    h.run()
    assert told == [("b", "a", 0), ("c", "a", 0)]
    assert [h.net.connection(*pair) for pair in (("a", "b"), ("a", "c"), ("d", "a"))] == [1, 1, 0]


# -- duplication --------------------------------------------------------------------------


def test_duplication_is_opt_in_per_kind() -> None:
    h = Harness(latency=Distribution.uniform(1, 20))
    h.net.set_duplication("ShareAcknowledgeRequest", 1.0)
    for _ in range(10):
        h.net.send("a", "b", "ShareAcknowledgeRequest")
        h.net.send("a", "b", "ShareFetchRequest")
    h.run()
    acks = [entry for entry in h.inbox["b"] if entry[3] == "ShareAcknowledgeRequest"]
    assert len(acks) == 20
    assert sum(1 for entry in acks if entry[4]) == 10
    assert h.kinds("b").count("ShareFetchRequest") == 10
    m = h.net.metrics()
    assert m.duplicated == {"ShareAcknowledgeRequest": 10}
    assert m.delivered == {"ShareAcknowledgeRequest": 20, "ShareFetchRequest": 10}
    # each copy arrives after its original
    first_seen: dict[int, int] = {}
    for when, msg_id, _, _, duplicate in h.inbox["b"]:
        if duplicate:
            assert when >= first_seen[msg_id]
        else:
            first_seen[msg_id] = when
    h.net.set_duplication("ShareAcknowledgeRequest", 0)
    h.net.send("a", "b", "ShareAcknowledgeRequest")
    h.run()
    assert h.net.metrics().duplicated == {"ShareAcknowledgeRequest": 10}
    with pytest.raises(ValueError, match="duplication probability"):
        h.net.set_duplication("X", -0.1)


# -- determinism, metrics, trace ----------------------------------------------------------


def _delivery_times(seed: int, extra_traffic: bool) -> list[int]:
    h = Harness(seed=seed, latency=Distribution.exponential(20.0))
    h.net.set_reorder(True)
    for _ in range(50):
        h.net.send("a", "b", "X")
        if extra_traffic:
            h.net.send("a", "c", "X")
            h.net.send("c", "b", "Y")
    h.run()
    return [t for t, _, src, _, _ in h.inbox["b"] if src == "a"]


def test_same_seed_same_latencies_and_links_have_their_own_streams() -> None:
    quiet = _delivery_times(5, extra_traffic=False)
    assert quiet == _delivery_times(5, extra_traffic=False)
    assert quiet == _delivery_times(5, extra_traffic=True)  # other links don't perturb a->b
    assert quiet != _delivery_times(6, extra_traffic=False)


def test_trace_records_deliveries_and_drops() -> None:
    trace = Trace(keep=True)
    h = Harness(trace=trace)
    h.net.add_loss(1.0, MessageFilter(kinds=("Lost",)))
    h.net.send("a", "b", "Kept")
    h.net.send("a", "b", "Lost")
    h.run()
    assert [(e.time_ms, e.node, e.kind, e.fields) for e in trace.events] == [
        (0, "b", "drop", {"id": 2, "msg_kind": "Lost", "reason": "loss", "src": "a"}),
        (1, "b", "deliver", {"dup": False, "id": 1, "msg_kind": "Kept", "src": "a"}),
    ]


def test_metrics_totals() -> None:
    h = Harness()
    h.net.partition(["a"], ["c"])
    h.net.send("a", "b", "X")
    h.net.send("a", "c", "X")
    h.run()
    m = h.net.metrics()
    assert (m.total("sent"), m.total("delivered"), m.total("dropped"), m.total("duplicated")) == (2, 1, 1, 0)
    assert list(m.dropped) == ["down", "partition", "loss", "reset", "no_handler"]
    assert h.net.nodes == ["a", "b", "c"]
