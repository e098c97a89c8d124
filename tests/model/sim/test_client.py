"""The shared client plumbing: correlation ids, request timeouts, retries, metadata, pause, crash."""

from __future__ import annotations

from typing import Any

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.errors import Errors
from model.sim.client import Client, ClientConfig, ClientMetrics, broker_node
from model.sim.network import Message, Network
from model.sim.protocol import CONSUMER_OFFSETS_TOPIC, ClusterMetadata, Envelope, PartitionInfo
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler


def metadata(leader: int, version: int = 1) -> ClusterMetadata:
    parts = {
        ("t", 0): PartitionInfo("t", 0, leader, version, (1, 2), (1, 2)),
        (CONSUMER_OFFSETS_TOPIC, 0): PartitionInfo(CONSUMER_OFFSETS_TOPIC, 0, leader, version, (1, 2), (1, 2)),
    }
    return ClusterMetadata(version, parts, {"t": "tid"}, (1, 2))


class Echo:
    """A fake broker: answers ("Ping", n) with n, or an error from a script, or nothing."""

    def __init__(self, network: Network, broker: int) -> None:
        self.network = network
        self.broker = broker
        self.script: list[Errors | None] = []  # per request: an error to answer, or None = drop it
        self.unanswered: set[Any] = set()  # bodies never answered
        self.seen: list[tuple[int, Any]] = []
        self.closed: list[tuple[int, str, int]] = []  # (time, client, connection) of each close we heard of
        network.register(broker_node(broker), self.handle,
                         lambda peer, _cutoff, connection: self.closed.append((network._scheduler.now_ms, peer,
                                                                                connection)))

    def handle(self, message: Message) -> None:
        env: Envelope = message.payload
        self.seen.append((env.correlation_id, env.body))
        if env.body in self.unanswered:
            return
        if self.script:
            step = self.script.pop(0)
            if step is None:
                return
            answer: Any = step
        else:
            answer = Errors.NONE
        self.network.send(message.dst, message.src, message.kind + "Response",
                          Envelope(env.correlation_id, (answer, env.body)))


class Setup:
    def __init__(self, latency: int = 2, **config: int) -> None:
        self.scheduler = Scheduler()
        self.network = Network(self.scheduler, nx.Graph(), RandomStreams(1),
                               default_latency=Distribution.constant(latency))
        self.meta = metadata(1)
        self.brokers = {b: Echo(self.network, b) for b in (1, 2)}
        self.client = Client("c1", self.scheduler, self.network, lambda: self.meta, config=ClientConfig(**config))
        self.client.start()
        self.events: list[tuple[int, str, Any]] = []

    def send(self, broker: int, body: Any) -> int:
        return self.client.send_request(
            broker, "Ping", body,
            lambda r: self.events.append((self.scheduler.now_ms, "response", r)),
            lambda: self.events.append((self.scheduler.now_ms, "timeout", body)),
        )


def test_response_matched_by_correlation_id() -> None:
    s = Setup()
    first = s.send(1, "a")
    second = s.send(2, "b")
    assert second == first + 1
    s.scheduler.run(until=100)
    assert s.events == [(4, "response", (Errors.NONE, "a")), (4, "response", (Errors.NONE, "b"))]
    assert s.client.requests_in_flight == 0


def test_lost_response_times_out_and_a_late_one_is_ignored() -> None:
    s = Setup(request_timeout_ms=50)
    s.brokers[1].script = [None]
    s.send(1, "lost")
    s.scheduler.run(until=100)
    assert s.events == [(50, "timeout", "lost")]
    # A response for a forgotten correlation id (e.g. a duplicate) is dropped.
    s.network.send("b1", "c1", "PingResponse", Envelope(1, (Errors.NONE, "late")))
    s.scheduler.run(until=200)
    assert len(s.events) == 1 and s.client.metrics.requests_timed_out == 1


def test_call_retries_retriable_errors_then_follows_the_new_leader() -> None:
    s = Setup(retry_backoff_ms=10, retry_backoff_max_ms=40, metadata_refresh_ms=30)
    s.brokers[1].script = [Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR, Errors.NOT_COORDINATOR,
                           Errors.NOT_COORDINATOR]
    done: list[tuple[int, Any]] = []

    def target() -> int | None:
        return s.client.group_coordinator("g")

    s.client.call(target, "Ping", "x", lambda r: done.append((s.scheduler.now_ms, r)), error_of=lambda r: r[0])
    s.scheduler.run(until=30)
    s.meta = metadata(2, version=2)  # the coordinator moved; the client sees it on its next refresh
    s.scheduler.run(until=1_000)
    assert done and done[0][1] == (Errors.NONE, "x")
    assert [cid for cid, _ in s.brokers[2].seen]  # it ended at broker 2
    assert s.client.metrics.retries == len(s.brokers[1].seen)
    # Back-offs double: 10, 20, 40 (capped) …
    assert [s.client.backoff_ms(a) for a in (1, 2, 3, 4)] == [10, 20, 40, 40]


def test_call_gives_up_at_its_timeout() -> None:
    s = Setup(request_timeout_ms=20, retry_backoff_ms=5)
    s.brokers[1].script = [None, None, None]
    done: list[tuple[int, Any]] = []
    # Attempts at 0, 25 (after 5 ms), 55 (after 10 ms); the fourth would start at 95, past 90.
    s.client.call(lambda: 1, "Ping", "x", lambda r: done.append((s.scheduler.now_ms, r)), error_of=lambda r: r[0],
                  timeout_ms=90)
    s.scheduler.run(until=1_000)
    assert done == [(75, None)]
    assert [t for t, _ in s.brokers[1].seen] == [1, 2, 3]


def test_call_with_timeout_zero_never_gives_up() -> None:
    s = Setup(request_timeout_ms=20, retry_backoff_ms=5, retry_backoff_max_ms=5, default_api_timeout_ms=50)
    s.brokers[1].script = [None] * 30
    done: list[Any] = []
    s.client.call(lambda: 1, "Ping", "x", done.append, error_of=lambda r: r[0], timeout_ms=0)
    s.scheduler.run(until=10_000)
    assert done == [(Errors.NONE, "x")]
    assert len(s.brokers[1].seen) == 31


def test_a_crashed_broker_fails_the_requests_sent_to_it_at_once() -> None:
    s = Setup(latency=2, request_timeout_ms=30_000)
    s.brokers[1].script = [None, None]  # it would never answer; the crash tells the client sooner
    s.send(1, "a")
    s.send(2, "other broker")
    s.scheduler.run(until=10)
    s.send(1, "b")
    s.scheduler.run(until=20)
    s.network.crash_node("b1")
    s.scheduler.run(until=100)
    # The reset travels one latency (2 ms); the request to b2 is untouched.
    assert s.events == [(4, "response", (Errors.NONE, "other broker")), (22, "timeout", "a"), (22, "timeout", "b")]
    assert s.client.metrics.requests_disconnected == 2 and s.client.metrics.requests_timed_out == 0


def test_a_request_to_a_broker_that_is_down_is_refused() -> None:
    s = Setup(latency=3)
    s.network.crash_node("b1")
    s.scheduler.run(until=10)
    s.send(1, "refused")
    s.scheduler.run(until=100)
    assert s.events == [(13, "timeout", "refused")]
    assert s.client.metrics.requests_disconnected == 1


def test_a_reset_does_not_fail_requests_sent_after_it() -> None:
    s = Setup(latency=5)
    s.send(1, "lost")  # in flight when b1 crashes: reset
    s.network.crash_node("b1")
    s.network.restart_node("b1")  # back before the reset reaches the client
    s.scheduler.run(until=1)
    s.send(1, "new connection")
    s.scheduler.run(until=100)
    assert s.events == [(5, "timeout", "lost"), (11, "response", (Errors.NONE, "new connection"))]


def test_a_partition_is_not_noticed_until_the_request_times_out() -> None:
    s = Setup(latency=2, request_timeout_ms=500)
    s.send(1, "cut off")
    handle = s.network.partition(["c1"], ["b1"])
    s.scheduler.run(until=1_000)
    s.network.heal(handle)
    assert s.events == [(500, "timeout", "cut off")]
    assert s.client.metrics.requests_disconnected == 0


def test_a_paused_client_reads_the_reset_when_it_wakes() -> None:
    s = Setup(latency=2)
    s.brokers[1].script = [None]
    s.send(1, "a")
    s.client.pause(1_000)
    s.network.crash_node("b1")
    s.scheduler.run(until=2_000)
    assert s.events == [(1_000, "timeout", "a")]


def test_metadata_refresh_is_delayed_and_coalesced() -> None:
    s = Setup(metadata_refresh_ms=100, metadata_max_age_ms=10_000)
    s.meta = metadata(2, version=2)
    s.client.request_metadata_refresh()
    s.scheduler.run(until=50)
    s.client.request_metadata_refresh()
    assert s.client.leader_of("t", 0).leader == 1  # type: ignore[union-attr]  # still stale
    s.scheduler.run(until=101)
    assert s.client.leader_of("t", 0).leader == 2  # type: ignore[union-attr]
    assert s.client.metrics.metadata_refreshes == 1
    s.scheduler.run(until=10_001)
    assert s.client.metrics.metadata_refreshes == 2  # the periodic one


def test_pause_holds_messages_and_timers_then_replays_them_in_order() -> None:
    s = Setup(request_timeout_ms=30)
    order: list[str] = []
    s.client.send_request(1, "Ping", "a", lambda r: order.append("response a"), lambda: order.append("timeout a"))
    s.brokers[2].script = [None]
    s.client.send_request(2, "Ping", "b", lambda r: order.append("response b"), lambda: order.append("timeout b"))
    s.client.call_later(10, order.append, "timer")
    s.client.pause(100)
    s.scheduler.run(until=99)
    assert order == [] and s.client.paused
    s.scheduler.run(until=200)
    # The response that arrived during the pause first, then the timers in due order.
    assert order == ["response a", "timer", "timeout b"]


def test_timeouts_that_fall_in_a_pause_keep_their_place_among_the_held_timers() -> None:
    # Two lost requests (to two brokers) time out at 40 and 50 and a timer falls due at 45, all in the
    # pause: on resume they run in due order, as they would have without it.
    s = Setup(request_timeout_ms=40)
    order: list[str] = []
    s.brokers[1].script = [None]
    s.brokers[2].script = [None]
    s.client.send_request(1, "Ping", "a", lambda r: order.append("response a"), lambda: order.append("timeout a"))
    s.scheduler.post(10, s.client.send_request, 2, "Ping", "b", lambda r: order.append("response b"),
                     lambda: order.append("timeout b"))
    s.client.call_later(45, order.append, "timer")
    s.scheduler.post(20, s.client.pause, 100)
    s.scheduler.run(until=200)
    assert order == ["timeout a", "timer", "timeout b"]
    assert s.client.metrics.requests_timed_out == 2


def test_crash_drops_everything_and_restart_starts_fresh() -> None:
    s = Setup()
    fired: list[str] = []
    s.send(1, "a")
    s.client.call_later(10, fired.append, "old timer")
    s.client.crash()
    s.scheduler.run(until=100)
    assert s.events == [] and fired == [] and s.client.requests_in_flight == 0
    s.client.start()
    s.send(1, "b")
    s.scheduler.run(until=200)
    assert s.events == [(104, "response", (Errors.NONE, "b"))]


def test_metrics_merge_adds_counters_and_latencies() -> None:
    a = ClientMetrics(records_accepted=2, end_to_end_latencies_ms=[1, 2])
    b = ClientMetrics(records_accepted=3, ack_errors=1, end_to_end_latencies_ms=[5])
    a.merge(b)
    assert (a.records_accepted, a.ack_errors, a.end_to_end_latencies_ms) == (5, 1, [1, 2, 5])


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.sampled_from(["ok", "drop", "error", "late"]), min_size=1, max_size=20),
    pause_at=st.one_of(st.none(), st.integers(0, 200)),
)
def test_exactly_one_outcome_per_request(steps: list[str], pause_at: int | None) -> None:
    """Whatever happens on the wire (and a pause), each request gets exactly one callback."""
    s = Setup(request_timeout_ms=40)
    script: list[Errors | None] = []
    for step in steps:
        script.append(None if step in ("drop", "late") else Errors.NONE if step == "ok" else Errors.NOT_COORDINATOR)
    s.brokers[1].script = script
    outcomes: dict[int, list[str]] = {}
    ids = []
    for i, step in enumerate(steps):
        cid = s.client.send_request(1, "Ping", i, lambda r, i=i: outcomes.setdefault(i, []).append("r"),
                                    lambda i=i: outcomes.setdefault(i, []).append("t"))
        ids.append(cid)
        if step == "late":  # an answer after the timeout
            s.scheduler.post(60, s.network.send, "b1", "c1", "PingResponse", Envelope(cid, (Errors.NONE, i)))
    if pause_at is not None:
        s.scheduler.post(pause_at, s.client.pause, 50)
    s.scheduler.run(until=1_000)
    assert sorted(outcomes) == list(range(len(steps)))
    for i, step in enumerate(steps):
        assert len(outcomes[i]) == 1
        if step == "drop" or (step == "late" and pause_at is None):
            assert outcomes[i] == ["t"]
        elif step in ("ok", "error"):
            assert outcomes[i] == ["r"]
        # "late" under a pause: if both the timeout and the answer fell in the pause, the
        # answer wins (held messages are handled before held timers, as Kafka's NetworkClient does).


def test_a_request_timeout_closes_the_connection_and_fails_what_is_in_flight_on_it() -> None:
    """Kafka's NetworkClient: a request timeout closes the connection to that broker, so every request
    in flight on it fails at once (the timed-out one first); another broker's connection is untouched;
    the broker learns of the close one latency later; the retry goes out on a new connection."""
    s = Setup(request_timeout_ms=40)
    s.brokers[1].unanswered = {"lost", "also lost"}
    outcome: dict[str, tuple[int, str]] = {}

    def send(broker: int, body: str) -> None:
        s.client.send_request(broker, "Ping", body, lambda r: outcome.setdefault(body, (s.scheduler.now_ms, "r")),
                              lambda: outcome.setdefault(body, (s.scheduler.now_ms, "t")))

    send(1, "lost")
    s.scheduler.post(30, send, 1, "also lost")
    s.scheduler.post(39, send, 1, "in flight")  # its answer would come at 43
    s.scheduler.post(39, send, 2, "other broker")
    s.scheduler.post(40, send, 1, "after")  # sent in the same ms as the close, but after it: a new connection
    s.scheduler.run(until=200)
    assert outcome == {"lost": (40, "t"), "also lost": (40, "t"), "in flight": (40, "t"),
                       "other broker": (43, "r"), "after": (44, "r")}
    assert (s.client.metrics.requests_timed_out, s.client.metrics.requests_disconnected) == (1, 2)
    assert s.brokers[1].closed == [(42, "c1", 0)] and s.brokers[2].closed == []
    assert s.network.connection("c1", "b1") == 1 and s.network.connection("c1", "b2") == 0


def _timeouts_reference(plan: list[tuple[int, bool]], timeout_ms: int, round_trip_ms: int) -> list[tuple[int, int]]:
    """When each request's no-answer callback runs: at the first deadline among the requests in flight
    to the broker when it is (a timeout closes the connection and fails all of them)."""
    failed: list[tuple[int, int]] = []
    in_flight: list[tuple[int, int, bool]] = []  # (index, sent, answered)
    for now in range(plan[-1][0] + timeout_ms + 1):
        in_flight += [(i, at, answered) for i, (at, answered) in enumerate(plan) if at == now]
        in_flight = [r for r in in_flight if not (r[2] and r[1] + round_trip_ms == now)]
        if any(sent + timeout_ms == now for _, sent, _ in in_flight):
            failed += [(now, i) for i, _, _ in in_flight]
            in_flight = []
    return failed


@settings(max_examples=80, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(0, 30), st.booleans()), min_size=1, max_size=25))
def test_each_unanswered_request_times_out_exactly_at_its_deadline(plan: list[tuple[int, bool]]) -> None:
    """One timer serves every request's deadline: the oldest request left unanswered times out exactly
    request_timeout_ms after it was sent, and the close fails what else was in flight with it; a
    request sent after the close starts a new connection and its own deadline. (Sends fall on
    multiples of 5 ms and answers 4 ms later, so nothing ties in a millisecond.)"""
    s = Setup(request_timeout_ms=40)
    plan = sorted((at_ms * 5, answered) for at_ms, answered in plan)  # sent in this order, so they arrive in it
    s.brokers[1].unanswered = {i for i, (_, answered) in enumerate(plan) if not answered}
    timeouts: list[tuple[int, int]] = []
    for i, (at_ms, _) in enumerate(plan):
        s.scheduler.post(at_ms, s.client.send_request, 1, "Ping", i, lambda r: None,
                         lambda i=i: timeouts.append((s.scheduler.now_ms, i)))
    s.scheduler.run(until=1_000)
    assert timeouts == _timeouts_reference(plan, 40, 4)
    assert s.client.requests_in_flight == 0
