"""A misbehaving client of the share coordinators (the ``hostile_state_request`` fault kind, issue 24):
its requests fire, the coordinator refuses those with a negative epoch (INVALID_REQUEST, no record)
and keeps the higher start offset against a replayed write, every invariant holds; with the
coordinator of Kafka 4.3 and earlier (the mutants) the two invariants of those checks catch it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from invariants.monitors import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.share_coordinator import ShareCoordinatorShard, ShareGroupState
from model.core.share_state import InitializeShareGroupStateRequest, WriteShareGroupStateRequest
from model.sim.cluster import Cluster
from model.sim.faults import HOSTILE_STATE_REQUESTS, FaultEvent, FaultPlanError
from model.sim.network import Message
from model.sim.runner import run, run_cluster
from scenarios import library
from scenarios.spec import Scenario


class _Served(Monitor):
    """Every share-state request a coordinator served: (request, answer, records appended), and for
    the writes that wrote, the stored start offset before and after."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.served: list[tuple[object, Errors, int]] = []
        self.starts: dict[int, tuple[int, int]] = {}  # id(write) -> (stored start before, after)

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        self.served.append((request, Errors(getattr(response, "error_code", Errors.NONE)), len(records)))

    def on_share_state_handled(self, shard: ShareCoordinatorShard, request: object,
                               previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        current = shard.state(getattr(request, "key", None))  # type: ignore[arg-type]
        if isinstance(request, WriteShareGroupStateRequest) and previous is not None and current is not None:
            self.starts[id(request)] = (previous.start_offset, current.start_offset)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hostile_requests_are_refused_or_change_nothing_and_every_invariant_holds(seed: int) -> None:
    served = _Served()
    result, cluster = run_cluster(library.get("hostile_state_requests"), seed, extra_monitors=[served])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.faults_fired == {"hostile_state_request": 3}
    assert result.metrics["records_unresolved"] == 0
    hostile = cluster.hostile
    assert hostile is not None
    # Every request of the kind, three times, each answered by a coordinator.
    assert sorted(r.request for r in hostile.results) == sorted(HOSTILE_STATE_REQUESTS * 3)
    answers = {(r.request, r.error) for r in hostile.results}
    assert answers == {("replayed_write", Errors.NONE), ("write_negative_leader_epoch", Errors.INVALID_REQUEST),
                       ("write_negative_state_epoch", Errors.INVALID_REQUEST),
                       ("read_negative_leader_epoch", Errors.INVALID_REQUEST)}
    by_body = {id(request): (error, records) for request, error, records in served.served}
    for name, body in hostile.sent:
        error, records = by_body[id(body)]
        if name == "replayed_write":
            assert error == Errors.NONE
            before, after = served.starts[id(body)]
            assert isinstance(body, WriteShareGroupStateRequest) and body.start_offset < before == after
        else:  # refused, and nothing appended: the state is as before
            assert (error, records) == (Errors.INVALID_REQUEST, 0)


@pytest.mark.parametrize(("mutant", "invariant"), [
    ("negative-epoch-accepted", "negative-epoch-changes-nothing"),
    ("start-offset-regression", "stored-start-offset-monotonic"),
    # Kafka 4.3's coordinator with trunk's payload: the replay shows it before any client is harmed.
    ("start-offset-every-write", "stored-start-offset-monotonic"),
])
def test_the_coordinator_of_kafka_4_3_is_caught_on_the_first_seed(mutant: str, invariant: str) -> None:
    scenario = library.get("hostile_state_requests")
    assert run(scenario, 0).ok
    result = run(scenario, 0, mutant=mutant)
    assert [v.invariant for v in result.violations] == [invariant]
    assert result.violations[0].time_ms >= 900  # the first hostile request


def test_a_swarm_draws_the_kind_and_holds() -> None:
    scenario = library.get("swarm_failovers")
    assert "hostile_state_request" in scenario.fault_kinds
    seed = next(s for s in range(50) if "hostile_state_request" in Cluster(scenario, s).plan.kinds())
    result, cluster = run_cluster(scenario, seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired.get("hostile_state_request", 0) >= 1
    assert cluster.hostile is not None and cluster.hostile.results


def test_without_the_kind_nothing_taps_the_wire() -> None:
    cluster = Cluster(library.get("small"), 0)
    assert "hostile_state_request" not in cluster.plan.kinds() and cluster.hostile is None
    assert not cluster.network._faults_on


# --- the repeated initialize at rest (params.rest_ms; the swarm swarm_at_rest) ---------------------------------


def _at_rest(at_ms: int, rest_ms: int) -> Scenario:
    """duplicate_initialize with its two repeated initializes fired at ``at_ms`` and guarded by ``rest_ms``."""
    scenario = library.get("duplicate_initialize")
    plan = tuple(replace(e, at_ms=at_ms, params=(*e.params, ("rest_ms", rest_ms)))
                 if e.kind == "hostile_state_request" else e for e in scenario.faults.plan)
    return replace(scenario, faults=replace(scenario.faults, plan=plan))


def test_a_repeated_initialize_at_rest_waits_until_nothing_was_written_for_rest_ms() -> None:
    """Fired at 700 ms, while both consumers acknowledge: the client waits for a share-partition at rest
    (both consumers pause at 1 200 ms; their locks expire about 2 s later and those writes land), asks the
    summary and sends the initialize only once nothing was written for 500 ms: a duplicate, answered
    without writing, and the run holds. Each initialize is sent 500 ms or more after the last write of its
    share-partition, and none lands while the summary is out."""
    writes: dict[object, list[int]] = {}
    sends: list[tuple[int, object, str]] = []

    def watch(cluster: Cluster) -> None:
        def capture(message: Message) -> None:
            body = getattr(message.payload, "body", None)
            if isinstance(body, WriteShareGroupStateRequest | InitializeShareGroupStateRequest):
                if message.src == "admin":
                    sends.append((cluster.scheduler.now_ms, body.key, type(body).__name__))
                else:
                    writes.setdefault(body.key, []).append(cluster.scheduler.now_ms)
        cluster.network.tap("WriteShareGroupState", capture)
        cluster.network.tap("InitializeShareGroupState", capture)

    result, cluster = run_cluster(_at_rest(700, 500), 1, before_run=watch)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.situations.get("initialize-duplicate") == 2
    initializes = [(at, key) for at, key, kind in sends if kind == "InitializeShareGroupStateRequest"]
    assert len(initializes) == 2 and all(at > 1_200 for at, _ in initializes)  # not before the pause
    for at, key in initializes:
        before = [w for w in writes[key] if w <= at]
        assert before and at - before[-1] >= 500 - 3, (at, before[-3:])  # at rest: the summary's round trip
    hostile = cluster.hostile
    assert hostile is not None
    assert sorted((r.request, r.error) for r in hostile.results) == [
        ("repeated_initialize", Errors.NONE), ("repeated_initialize", Errors.NONE),
        ("state_summary", Errors.NONE), ("state_summary", Errors.NONE)]


def test_a_share_partition_never_at_rest_gets_no_initialize() -> None:
    """A rest longer than any quiet spell of the run: nothing is sent, not even the summary, and the run holds."""
    result, cluster = run_cluster(_at_rest(700, 30_000), 1)
    assert result.ok
    hostile = cluster.hostile
    assert hostile is not None and hostile.sent == [] and hostile.results == []
    assert result.faults_fired == {"consumer_pause": 2, "hostile_state_request": 2}


@pytest.mark.parametrize(("params", "problem"), [
    ((("rest_ms", 500),), "params.rest_ms = 500: only with params.request = 'repeated_initialize'"),
    ((("request", "repeated_initialize"), ("rest_ms", 0)),
     "params.rest_ms = 0: must be an integer >= 1 (milliseconds)"),
])
def test_rest_ms_belongs_to_the_repeated_initialize(params: tuple[tuple[str, int | str], ...], problem: str) -> None:
    with pytest.raises(FaultPlanError) as raised:
        FaultEvent(0, "hostile_state_request", "g", params=(("topic", "events"), *params))
    assert raised.value.problems == [f"hostile_state_request at 0 ms: {problem}"]


def test_swarm_at_rest_repeats_initializes_at_rest_holds_and_catches_the_overwriting_coordinator() -> None:
    """Every drawn hostile request is the guarded repeat (the swarm's params, a rest of 2 s: longer than a
    1 s lock and a fetch's 500 ms wait). Seed 14, the first of the swarm to reach a duplicate: the correct
    model holds and answers three duplicates; a coordinator that writes a fresh snapshot for a duplicate
    (initialize-overwrites) lowers a stored delivery complete count."""
    scenario = library.get("swarm_at_rest")
    for seed in range(4):
        cluster = Cluster(scenario, seed)
        assert all(dict(e.params).get("request") == "repeated_initialize" and dict(e.params)["rest_ms"] == 2_000
                   for e in cluster.plan.events if e.kind == "hostile_state_request")
    result = run(scenario, 14)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.situations.get("initialize-duplicate") == 3
    caught = run(scenario, 14, mutant="initialize-overwrites")
    assert [v.invariant for v in caught.violations] == ["stored-delivery-complete-count"]
