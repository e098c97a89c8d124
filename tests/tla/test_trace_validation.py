"""Trace validation against tla/ShareGroup.tla (issue 27; tla/trace_project.py, tla/trace_validate.py,
tla/ShareGroupTrace.tla, `sharesim validate`).

The projection is an observer: a run's trace hash is the same with it. The library's
kip932_example (one partition, 21 records, three consumers, locks timing out) seed 1 is accepted;
the same trace with one delivery count changed, or with one acquisition left out, is rejected at
that event; and the run of the mutant spso-before-durable (the SPSO passes acknowledged records
before their write is durable, which ShareGroup.tla forbids) is rejected at the acknowledgement.
The TLC tests are marked like tests/tla/test_tlc.py (one worker, one xdist group).

Library scenarios validated in CI (issue 27), one JVM each: swarm seeds whose leaders cache the rest of a
fetched batch (KIP-1206 record_limit, the spec's CacheBatchRest), kip932_example, and a prefix of a
standard run (its 3 333-record partitions make a whole-trace TLC run minutes long). swarm_wide's only
share group is read_committed over a transactional producer, outside the spec (SP-13): validate says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from click.testing import CliRunner

from model.core.share_state import SharePartitionKey
from model.sim.runner import run, run_cluster
from scenarios import library
from scenarios.cli import main
from tla import run as tlc_run
from tla.trace_project import Event, Projection
from tla.trace_validate import NoSharePartition, Validation, project, validate

SCENARIO = "kip932_example"
SEED = 1


def _validate(corrupt: Callable[[list[Event]], list[Event]] | None = None, mutant: str | None = None) -> Validation:
    return validate(library.load(SCENARIO), SEED, mutant=mutant, corrupt=corrupt)


def test_projection_leaves_the_trace_hash() -> None:
    scenario = library.load(SCENARIO)
    projection = Projection()
    with_projection, _ = run_cluster(scenario, SEED, extra_monitors=[projection])
    assert with_projection.trace_hash == run(scenario, SEED).trace_hash
    events = max(projection.events.values(), key=len)
    kinds = {a["a"] for ev in events for a in ev.acts}
    assert {"LeaderLoad", "Produce", "Acquire", "Ack", "CoordWrite"} <= kinds


def test_a_share_session_closing_on_another_broker_releases_nothing_here() -> None:
    """swarm seed 2433669991742305874 (rejected in the first 1 000-run validated campaign): m0.1.1's
    session on another broker closed in the step where the locks of 20..21 expired at this leader; the
    projection took those releases for m0.1.1's (ReleaseMember) instead of ExpireLock."""
    projection, key, _ = project(library.get("swarm"), 2433669991742305874)
    [step] = [ev for ev in projection.events[key] if ev.time_ms == 2906]
    assert [(a["a"], a["o"]) for a in step.acts] == [("ExpireLock", 20), ("ExpireLock", 21)]


def test_two_sessions_of_a_member_closing_in_one_step_release_once() -> None:
    """swarm seed 7190881427140721698 (rejected in the same campaign): two share sessions of m0.1.2 on
    the leader's broker closed in one step; the second ReleaseMember had nothing left to release."""
    projection, key, _ = project(library.get("swarm"), 7190881427140721698)
    for ev in projection.events[key]:
        released = [a["m"] for a in ev.acts if a["a"] == "ReleaseMember"]
        assert len(released) == len(set(released)), (ev.time_ms, ev.what)


def test_a_deposed_leaders_late_read_answer_is_no_leader_load() -> None:
    """A leader deposed while loading is dead in the spec (Failover from a loading leader): were its
    ReadShareGroupState answered after its successor started (the simulator drops that answer once the
    leader no longer serves), no LeaderLoad may be projected, neither for it nor for its successor."""
    projection = Projection()
    key = SharePartitionKey("g", "t", 0)
    projection.on_leader_start(key, 1, 5, 0)
    projection.on_leader_start(key, 2, 6, 10)
    projection.on_state_read(key, 5, 20)
    assert [a["a"] for ev in projection.events[key] for a in ev.acts] == ["Failover"]
    assert projection.leaders[(key, 6)].pending == []


def test_swarm_wide_is_outside_the_spec_and_validate_says_why() -> None:
    # Its leaders archive aborted records as they fetch them (transactions, SP-13: an abstraction gap).
    with pytest.raises(NoSharePartition, match="read_committed"):
        validate(library.load("swarm_wide"), 1)


def test_validate_needs_a_share_group() -> None:
    result = CliRunner().invoke(main, ["validate", "consumer_group", "--seed", "1"])
    assert result.exit_code == 2, result.output
    assert "has no share group" in result.output


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
class TestWithTLC:
    def test_accepted(self) -> None:
        v = _validate()
        assert v.accepted, (v.message, v.first_unmatched, v.spec_state)
        assert len(v.events) >= 10

    def test_a_changed_delivery_count_is_rejected_at_that_event(self) -> None:
        changed: list[int] = []

        def corrupt(events: list[Event]) -> list[Event]:
            i = next(i for i, ev in enumerate(events) if i > 3 and len(ev.mem) > 2)
            mem = list(events[i].mem)
            state, count, pending = mem[1]
            mem[1] = (state, count + 1, pending)
            changed.append(i)
            return [*events[:i], dataclasses.replace(events[i], mem=mem), *events[i + 1:]]

        v = _validate(corrupt)
        assert not v.accepted
        assert v.first_unmatched == changed[0]
        assert v.action == len(v.events[changed[0]].acts)  # every action taken; the observation differs
        assert "window" in v.spec_state

    def test_a_skipped_acquisition_is_rejected_at_that_event(self) -> None:
        skipped: list[int] = []

        def corrupt(events: list[Event]) -> list[Event]:
            i = next(i for i, ev in enumerate(events) if sum(a["a"] == "Acquire" for a in ev.acts) > 1)
            acts = list(events[i].acts)
            first = next(j for j, a in enumerate(acts) if a["a"] == "Acquire")
            del acts[first]  # the first record of the batch is never acquired in the spec
            skipped.append(i)
            return [*events[:i], dataclasses.replace(events[i], acts=acts), *events[i + 1:]]

        v = _validate(corrupt)
        assert not v.accepted
        assert v.first_unmatched == skipped[0]

    def test_a_mutant_the_spec_forbids_is_rejected(self) -> None:
        v = _validate(mutant="spso-before-durable")
        assert not v.accepted
        assert v.first_unmatched is not None
        event = v.events[v.first_unmatched]
        assert event.what.startswith("acknowledge")
        assert event.spso > 0  # the simulator's SPSO moved before the write; the spec's did not


# (scenario, seed, events validated: None for all). swarm 1 and 4 were rejected before CacheBatchRest.
LIBRARY_RUNS = [("swarm", 1, None), ("swarm", 4, None), ("swarm", 5, None), ("kip932_example", 3, None),
                ("standard", 1, 150), ("swarm", 2433669991742305874, None), ("swarm", 7190881427140721698, None)]


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
@pytest.mark.parametrize(("scenario", "seed", "events"), LIBRARY_RUNS)
def test_library_runs_are_accepted(scenario: str, seed: int, events: int | None) -> None:
    v = validate(library.load(scenario), seed, corrupt=(lambda evs: evs[:events]) if events else None)
    assert v.accepted, (v.message, v.first_unmatched, v.spec_state)
    if scenario == "swarm" and seed in (1, 4):
        assert any(a["a"] == "CacheBatchRest" for ev in v.events for a in ev.acts)


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
def test_leadership_moving_from_a_loading_leader_is_accepted() -> None:
    """swarm seed 3426542257535461806 (23 rejections of the first 1 000-run validated campaign): the
    partition's leadership moved while its first leader was still loading its state (its
    ReadShareGroupState unanswered); ShareGroup.tla's Failover needed an active leader until it was
    widened. The trace must hold that shape: a Failover with no LeaderLoad since the last leader began."""
    v = validate(library.load("swarm"), 3426542257535461806)
    assert v.accepted, (v.message, v.first_unmatched, v.spec_state)
    loading, from_loading = True, 0  # the first leader begins by loading
    for ev in v.events:
        for a in ev.acts:
            if a["a"] == "Failover":
                from_loading += 1 if loading else 0
                loading = True
            elif a["a"] == "LeaderLoad":
                loading = False
    assert from_loading


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
def test_a_batch_rest_cached_acquired_is_rejected_long_before_its_invariant() -> None:
    # The mutant record-limit-rest-locked caches the rest of a record_limit batch ACQUIRED by no one; the
    # spec's CacheBatchRest caches it AVAILABLE: rejected at 640 ms, eventual-resolution fires at 51 000 ms.
    v = validate(library.load("record_limit_acquire"), 1, mutant="record-limit-rest-locked")
    assert not v.accepted and v.first_unmatched is not None
    event = v.events[v.first_unmatched]
    assert event.what.startswith("acquire") and event.time_ms < 1_000
    assert v.run.violations and v.run.violations[0].time_ms > 10 * event.time_ms
