"""A misbehaving client of the share coordinators (the ``hostile_state_request`` fault kind, issue 24):
its requests fire, the coordinator refuses those with a negative epoch (INVALID_REQUEST, no record)
and keeps the higher start offset against a replayed write, every invariant holds; with the
coordinator of Kafka 4.3 and earlier (the mutants) the two invariants of those checks catch it."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from invariants.monitors import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.share_coordinator import ShareCoordinatorShard, ShareGroupState
from model.core.share_state import WriteShareGroupStateRequest
from model.sim.cluster import Cluster
from model.sim.faults import HOSTILE_STATE_REQUESTS
from model.sim.runner import run, run_cluster
from scenarios import library


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
