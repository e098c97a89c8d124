"""Hostile or buggy ShareFetch / ShareAcknowledge requests to share-partition leaders (fault kind
``hostile_share_request``, issue 25): each gets the error Kafka trunk gives it and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from model.core.errors import Errors
from model.sim.faults import HOSTILE_SHARE_REQUESTS, FaultEvent, FaultPlanError, swarm_plan
from model.sim.hostile import HostileShareResult
from model.sim.runner import run_cluster
from scenarios import library

KIND = "hostile_share_request"


def _results(scenario: str, seed: int, mutant: str | None = None) -> tuple[Any, list[HostileShareResult]]:
    result, cluster = run_cluster(library.get(scenario), seed, stop_on_first_violation=False, mutant=mutant)
    assert cluster.hostile_share is not None
    return result, cluster.hostile_share.results


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_hostile_request_is_refused_as_trunk_refuses_it_and_the_run_stays_clean(seed: int) -> None:
    result, answers = _results(KIND, seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {KIND: 3}
    by_name: dict[str, list[HostileShareResult]] = {}
    for answer in answers:
        by_name.setdefault(answer.request, []).append(answer)
        assert answer.refused_as_expected(), answer
    assert set(by_name) == set(HOSTILE_SHARE_REQUESTS)  # duplicated_acks: once a real member acknowledged
    for answer in by_name["acks_on_fresh_session"]:
        assert answer.error == Errors.INVALID_REQUEST and answer.epoch == 0
    for answer in by_name["unknown_session"]:
        assert answer.error == Errors.SHARE_SESSION_NOT_FOUND
    for name in ("stale_session_epoch", "negative_session_epoch"):
        assert {a.error for a in by_name[name]} == {Errors.INVALID_SHARE_SESSION_EPOCH}
    for answer in by_name["invalid_ack_batches"]:
        assert answer.error == Errors.NONE and answer.partition_errors == (Errors.INVALID_REQUEST,)
    for name in ("acks_never_acquired", "duplicated_acks"):
        for answer in by_name[name]:
            assert answer.error == Errors.NONE and answer.partition_errors == (Errors.INVALID_RECORD_STATE,)
    assert {a.error for a in by_name["member_negative_epoch"]} <= {Errors.INVALID_SHARE_SESSION_EPOCH,
                                                                  Errors.SHARE_SESSION_NOT_FOUND}


def test_the_mutant_that_serves_acknowledgements_on_a_fresh_session_is_caught() -> None:
    result, answers = _results(KIND, 1, mutant="fresh-session-acks-accepted")
    assert {v.invariant for v in result.violations} == {"refused-share-request-changes-nothing"}
    fresh = [a for a in answers if a.request == "acks_on_fresh_session"]
    assert fresh and all(a.error == Errors.NONE for a in fresh)


@pytest.mark.parametrize("seed", [3, 8, 9])
def test_the_swarm_draws_the_fault_and_catches_the_mutant(seed: int) -> None:
    # Pinned seeds of swarm_failovers: re-search them if the swarm's draws change.
    clean, answers = _results("swarm_failovers", seed)
    assert clean.ok, [v.describe() for v in clean.violations]
    assert clean.faults_fired.get(KIND, 0) >= 1 and answers
    caught, _ = _results("swarm_failovers", seed, mutant="fresh-session-acks-accepted")
    assert "refused-share-request-changes-nothing" in {v.invariant for v in caught.violations}


def test_the_swarm_generator_draws_a_partition_of_the_group() -> None:
    targets = library.get("swarm_failovers").fault_targets()
    events = [e for seed in range(30) for e in swarm_plan(seed, 60_000, [KIND], targets).events]
    assert events and all(e.target == "g" and e.param("partition") in (0, 1) and e.param("request") is None
                          for e in events)


@pytest.mark.parametrize(("params", "message"), [
    ({"request": "acks_twice"}, "params.request = 'acks_twice': must be one of acks_on_fresh_session, "),
    ({"partition": "x"}, "params.partition = 'x': must be an integer >= 0 (or absent: partition 0)"),
    ({"offset": 3}, "params.offset = 3: not a parameter of hostile_share_request (allowed: topic, partition, "
                    "request)"),
])
def test_bad_params_are_named_with_what_is_allowed(params: dict[str, Any], message: str) -> None:
    with pytest.raises(FaultPlanError) as info:
        FaultEvent(0, KIND, "g", params=tuple(params.items()))
    assert any(message in p for p in info.value.problems), info.value.problems
