"""Trace validation of a KIP-848 consumer group against tla/ConsumerGroup.tla (issue 27;
tla/consumer_trace_project.py, tla/consumer_trace_validate.py, tla/ConsumerGroupTrace.tla,
`sharesim validate --consumer-group`).

A hand-written trace of CG-2 (two members join, the first revokes before the second gets its
partition) is accepted, and the same trace with the second member given its partition at its join
is rejected at that event. The projection is an observer (a run's trace hash is the same with it).
Library runs accepted whole: swarm_wide 2 (a crash, a session expiry, a target computed for it),
4 (a request and a response lost) and 16 (a heartbeat while a revocation is committed), consumer_group 1
(six static members, a group coordinator failover that reloads the group unchanged).
kip848_fenced_member 1 leaves the abstraction when the paused member's session expires while it still
owns partitions: its prefix is accepted and validate exits 2.
The mutant handover-before-revoke (model/mutants.py: CG-2's pending partitions ignored, the spec's
assign_before_revoke) is rejected at the join that hands the partitions over.
"""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from model.sim.runner import run, run_cluster
from scenarios import library
from scenarios.cli import main
from tla import run as tlc_run
from tla.consumer_trace_project import CEvent, ConsumerProjection, act
from tla.consumer_trace_validate import project, run_tlc, validate

P0, P1 = "t-0", "t-1"
NONE: frozenset[str] = frozenset()


def _coord(ge: int, ae: int, *members: tuple[str, int, set[str], set[str], set[str]]) -> dict[str, object]:
    return {"coord": True, "ge": ge, "ae": ae,
            "mem": frozenset((m, e, frozenset(a), frozenset(r), frozenset(t)) for m, e, a, r, t in members)}


def _client(m: str, epoch: int, owns: set[str]) -> dict[str, object]:
    return {"cli": frozenset({(m, True, epoch, frozenset(owns))})}


def _ev(what: str, acts: list[dict[str, object]], **observed: object) -> CEvent:
    return CEvent(0, what, acts, **observed)  # type: ignore[arg-type]


def hand_trace() -> list[CEvent]:
    """m1 joins and gets both partitions; m2 joins, its target is t-1, still owned by m1 (pending);
    m1 revokes t-1 first (it stays at epoch 1), then moves to epoch 2; only then does m2 get t-1 (CG-2)."""
    both = frozenset({(P0, "m1"), (P1, "m1")})
    split = frozenset({(P0, "m1"), (P1, "m2")})
    return [
        _ev("m1 joins", [act("SendHeartbeat", "m1"), act("JoinAssign", "m1", both)],
            **_coord(1, 1, ("m1", 1, {P0, P1}, set(), {P0, P1}))),
        _ev("m1 applies", [act("ReceiveResponse", "m1")], **_client("m1", 1, {P0, P1})),
        _ev("m2 joins", [act("SendHeartbeat", "m2"), act("JoinAssign", "m2", split)],
            **_coord(2, 2, ("m1", 1, {P0, P1}, set(), {P0}), ("m2", 2, set(), set(), {P1}))),
        _ev("m2 applies", [act("ReceiveResponse", "m2")], **_client("m2", 2, set())),
        _ev("m1 heartbeats", [act("SendHeartbeat", "m1")], **_client("m1", 1, {P0, P1})),
        _ev("m1 told to revoke t-1", [act("HandleHeartbeat", "m1")],
            **_coord(2, 2, ("m1", 1, {P0}, {P1}, {P0}), ("m2", 2, set(), set(), {P1}))),
        _ev("m1 revokes", [act("ReceiveResponse", "m1")], **_client("m1", 1, {P0})),
        _ev("m1 heartbeats", [act("SendHeartbeat", "m1")], **_client("m1", 1, {P0})),
        _ev("m1 moves to epoch 2", [act("HandleHeartbeat", "m1")],
            **_coord(2, 2, ("m1", 2, {P0}, set(), {P0}), ("m2", 2, set(), set(), {P1}))),
        _ev("m1 applies", [act("ReceiveResponse", "m1")], **_client("m1", 2, {P0})),
        _ev("m2 heartbeats", [act("SendHeartbeat", "m2")], **_client("m2", 2, set())),
        _ev("m2 gets t-1", [act("HandleHeartbeat", "m2")],
            **_coord(2, 2, ("m1", 2, {P0}, set(), {P0}), ("m2", 2, {P1}, set(), {P1}))),
        _ev("m2 applies", [act("ReceiveResponse", "m2")], **_client("m2", 2, {P1})),
    ]


def test_projection_leaves_the_trace_hash() -> None:
    scenario = library.load("swarm_wide")
    projection = ConsumerProjection()
    with_projection, _ = run_cluster(scenario, 2, extra_monitors=[projection])
    assert with_projection.trace_hash == run(scenario, 2).trace_hash
    kinds = {a["a"] for ev in projection.groups["readers"].events for a in ev.acts}
    assert {"SendHeartbeat", "JoinAssign", "HandleHeartbeat", "ReceiveResponse", "Crash", "Expire",
            "ComputeTarget"} <= kinds


def test_a_paused_members_expiry_stops_the_projection_with_its_reason() -> None:
    projection, _ = project(library.load("kip848_fenced_member"), 1, "readers")
    g = projection.groups["readers"]
    assert "still owns" in g.gap and "paused" in g.gap
    assert g.events and g.events[-1].time_ms <= g.gap_ms and g.after_gap > 0


def test_a_heartbeat_during_a_revocation_is_no_spec_step() -> None:
    """swarm_wide 16: c3's revocation commit lost its answer, so it heartbeat (reporting the revoked
    partition still owned) before it had let go; the spec's client has not taken that answer yet, and the
    heartbeat changed nothing: no spec step, and the projection goes on (it stopped there before)."""
    projection, _ = project(library.load("swarm_wide"), 16, "readers")
    g = projection.groups["readers"]
    assert g.stutters and not g.gap, g.gap


def test_validate_names_the_consumer_groups() -> None:
    result = CliRunner().invoke(main, ["validate", "kip848_fenced_member", "--seed", "1", "--consumer-group", "nope"])
    assert result.exit_code == 2, result.output
    assert "no KIP-848 consumer group 'nope'" in result.output and "readers" in result.output
    result = CliRunner().invoke(main, ["validate", "kip932_example", "--consumer-group", "g"])
    assert result.exit_code == 2, result.output
    result = CliRunner().invoke(main, ["validate", "kip848_fenced_member", "--seed", "1"])  # no share group
    assert result.exit_code == 2 and "--consumer-group readers" in result.output, result.output


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
class TestWithTLC:
    def test_the_hand_written_trace_is_accepted(self) -> None:
        accepted, pos, sub, state, _, message = run_tlc(hand_trace())
        assert accepted, (message, pos, sub, state)

    def test_a_partition_handed_over_before_its_revocation_is_rejected_there(self) -> None:
        events = hand_trace()
        early = dataclasses.replace(events[2], **_coord(2, 2, ("m1", 1, {P0, P1}, set(), {P0}),  # type: ignore[arg-type]
                                                       ("m2", 2, {P1}, set(), {P1})))
        accepted, pos, sub, state, _, _ = run_tlc([*events[:2], early, *events[3:]])
        assert not accepted
        assert (pos, sub) == (3, 2)  # event 3, both its actions taken: the observed state differs
        assert '<<"m2", 2, {}, {}, {"t-1"}>>' in state  # the spec's m2 still waits for t-1

    def test_a_member_that_keeps_a_revoked_partition_is_rejected(self) -> None:
        events = hand_trace()
        kept = dataclasses.replace(events[6], **_client("m1", 1, {P0, P1}))  # type: ignore[arg-type]
        accepted, pos, _, _, _, _ = run_tlc([*events[:6], kept, *events[7:]])
        assert not accepted and pos == 7

    def test_the_mutant_handover_before_revoke_is_rejected_at_the_handover(self) -> None:
        v = validate(library.load("kip848_fenced_member"), 1, "readers", mutant="handover-before-revoke")
        assert not v.accepted and v.first_unmatched is not None
        event = v.events[v.first_unmatched]
        assert "joins" in event.what and any(a["a"] == "JoinAssign" for a in event.acts)
        joined = event.acts[-1]["m"]
        assert any(m == joined and assigned for m, _, assigned, _, _ in event.mem)  # given partitions at once
        assert v.run.violations and v.run.violations[0].invariant == "exclusive-ownership"

    def test_a_run_that_leaves_the_abstraction_is_no_acceptance(self) -> None:
        result = CliRunner().invoke(main, ["validate", "kip848_fenced_member", "--seed", "1",
                                           "--consumer-group", "readers"])
        assert result.exit_code == 2, result.output
        assert "trace accepted up to event" in result.output and "still owns" in result.output
        assert "NOT the whole run" in result.output


# (scenario, seed, group): accepted whole, no gap.
LIBRARY_RUNS = [("swarm_wide", 2, "readers"), ("swarm_wide", 4, "readers"), ("swarm_wide", 16, "readers"),
                ("consumer_group", 1, "order-readers")]


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
@pytest.mark.parametrize(("scenario", "seed", "group"), LIBRARY_RUNS)
def test_library_runs_are_accepted(scenario: str, seed: int, group: str) -> None:
    v = validate(library.load(scenario), seed, group)
    assert v.accepted and not v.partial, (v.message, v.first_unmatched, v.spec_state, v.gap)
    if scenario == "swarm_wide" and seed == 4:
        assert {"LoseRequest", "LoseResponse"} <= {a["a"] for ev in v.events for a in ev.acts}
    if scenario == "consumer_group":
        assert any("new group coordinator" in note for note in v.notes)
