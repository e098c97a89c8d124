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
share group is read_committed over a transactional producer (SP-13): its leaders archive aborted records
instead of delivering them (the spec's ArchiveAborted, Aborted from the log) and its clients acknowledge
transaction markers with GAP (the spec's Gaps); a few seeds are accepted, and the same trace with an
aborted record delivered instead of archived is rejected at that event.

The rejections of the first 1 000-run validated swarm campaign that were the projection's: a write a
coordinator handled but never committed (taken as applied), a group deleted and re-created and an admin
reset (each a new life of the state, validated from Init: tla/README.md). Each reproducer is accepted, and
attacked: the write taken as applied again, a life's boundary moved one event either way. swarm seed 14, found
on the way: a write's answer overtaken by a later write's (its coordinator moved); the spec's writes are taken in
the order the coordinator committed them, and taken in the order of their answers the trace is rejected.
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
from tla.trace_project import Event, Projection, aborted_and_markers, act
from tla.trace_validate import Validation, project, split_lives, validate

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


def test_a_session_closing_in_the_step_a_write_is_answered_is_projected() -> None:
    """swarm seed 20: a share session closed while the leader's step in progress held a write's answer (its
    durable state); the projection read that entry as a spec action and raised (KeyError)."""
    projection, key, _ = project(library.get("swarm"), 20)
    assert len(projection.events[key]) > 50


def test_swarm_wide_aborted_records_are_projected_as_archived_never_acquired() -> None:
    """swarm_wide seed 1: the read_committed leader of partition 0 archives the aborted records 5, 6, 12,
    13 and 19 as it fetches them (SP-13), and the client acknowledges the markers 20, 36, 50 and 83 with
    GAP; the projection gives the spec those offsets as Aborted and Gaps."""
    projection, key, _ = project(library.load("swarm_wide"), 1)
    assert key in projection.read_committed
    events = projection.events[key]
    aborted, markers = aborted_and_markers(projection.logs[key], max(ev.hwm for ev in events), True)
    assert aborted == [5, 6, 12, 13, 19] and markers == [20, 36, 50, 83]
    archived = [a["o"] for ev in events for a in ev.acts if a["a"] == "ArchiveAborted"]
    acquired = {a["o"] for ev in events for a in ev.acts if a["a"] == "Acquire"}
    gap_acks = {a["o"] for ev in events for a in ev.acts if a["a"] == "Ack" and a["t"] == "GAP"}
    assert archived == aborted and not acquired & set(aborted)
    assert gap_acks == set(markers)


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

    def test_an_aborted_record_delivered_is_rejected_at_that_event(self) -> None:
        """swarm_wide seed 1, attacked: at the fetch that archives aborted offset 5 (SP-13), the trace says
        the fetching member acquired it instead (the simulator's mutant deliver-aborted would do so)."""
        changed: list[tuple[int, int]] = []

        def corrupt(events: list[Event]) -> list[Event]:
            i = next(i for i, ev in enumerate(events) if any(a["a"] == "ArchiveAborted" for a in ev.acts))
            ev = events[i]
            j = next(j for j, a in enumerate(ev.acts) if a["a"] == "ArchiveAborted")
            member = next(a["m"] for a in ev.acts if a["a"] == "Acquire")
            o = ev.acts[j]["o"]
            acts = [*ev.acts[:j], act("Acquire", m=member, o=o), *ev.acts[j + 1:]]
            mem = list(ev.mem)
            mem[o - ev.spso] = ("ACQUIRED", 1, "NONE")
            changed.append((i, j))
            return [*events[:i], dataclasses.replace(ev, acts=acts, mem=mem), *events[i + 1:]]

        v = validate(library.load("swarm_wide"), 1, corrupt=corrupt)
        assert not v.accepted
        assert (v.first_unmatched, v.action) == changed[0]  # the Acquire of an aborted offset is not enabled


UNCOMMITTED_WRITE_SEED = 8416748903950899237  # swarm: a write handled by a coordinator, never made durable


def _failover_with_the_uncommitted_write_applied(events: list[Event]) -> list[Event]:
    """The projection before the fix: the deposed leader's acknowledgement write of 22..24, which its share
    coordinator handled but whose append was refused (the state partition had lost its in-sync replicas),
    taken as applied (CoordWrite) before the Failover."""
    i = next(i for i, ev in enumerate(events) if any(a["a"] == "Failover" for a in ev.acts))
    assert not any(a["a"] == "CoordWrite" for a in events[i].acts)
    wrong = [act("CoordWrite", e=1)] * 3 + list(events[i].acts)
    return [*events[:i], dataclasses.replace(events[i], acts=wrong), *events[i + 1:]]


def test_a_write_handled_but_never_committed_is_not_applied_at_the_failover() -> None:
    """swarm seed 8416748903950899237 (rejected in the first 1 000-run validated campaign): the write of
    22..24 was handled three times by a share coordinator whose appends were refused (fewer in-sync replicas
    than min.insync.replicas), so it never became durable; the new leader reads SPSO 22."""
    projection, key, _ = project(library.get("swarm"), UNCOMMITTED_WRITE_SEED)
    events = projection.events[key]
    [failover] = [ev for ev in events if any(a["a"] == "Failover" for a in ev.acts)]
    assert [a["a"] for a in failover.acts] == ["Failover"]
    load = events[events.index(failover) + 1]
    assert load.what == "state read" and load.spso == 22


OVERTAKEN_ANSWER_SEED = 14  # swarm: a write's answer from a coordinator that moved, overtaken by later ones


def _overtaken(events: list[Event]) -> tuple[int, int]:
    """The event of the answer that overtook an earlier-committed write's (its CoordWrite taken first), and
    the event of that write's own answer."""
    i = next(i for i, ev in enumerate(events) if ev.hidden and any(a["a"] == "CoordWrite" for a in ev.acts))
    j = next(j for j in range(i + 1, len(events)) if not events[j].hidden)
    return i, j


def test_writes_are_applied_in_the_order_the_coordinator_committed_them() -> None:
    """swarm seed 14 (rejected at event 68 before): the acknowledgement of 52 was committed by the share
    coordinator on b2 at 2 224 ms, whose answer a message delay held until 3 850 ms; the coordinator moved to
    b1 meanwhile, which committed and answered the acknowledgement of 55..57 (3 126 ms) and a release (3 843
    ms) first. The spec applies the writes in commit order: the acknowledgement of 52 at the answer of 55..57,
    before it (no WriteRetry); the leader's memory, which has not had that answer, is not observed until it
    arrives, and its arrival is no spec action."""
    projection, key, _ = project(library.get("swarm"), OVERTAKEN_ANSWER_SEED)
    events = projection.events[key]
    i, j = _overtaken(events)
    assert [a["a"] for a in events[i].acts] == ["CoordWrite"] * 4 and events[i].time_ms == 3126
    assert events[i].durable and (52, "ACKNOWLEDGED", 1) in events[i].dbatch  # the state right after 55..57
    assert all(ev.e == 0 and not ev.mem for ev in events[i:j])
    assert events[j].time_ms == 3850 and events[j].acts == [] and events[j].e == 1 and not events[j].durable
    assert not any(a["a"] == "WriteRetry" for ev in events for a in ev.acts)


def _answer_order(events: list[Event]) -> list[Event]:
    """The projection before the fix: the writes taken in the order of their answers, the acknowledgement of
    52 brought behind the later ones by WriteRetry and applied at its own answer."""
    i, j = _overtaken(events)
    out = list(events)
    out[i] = dataclasses.replace(events[i], acts=[act("WriteRetry", e=1), *events[i].acts[1:]])
    for k in range(i + 1, j):
        if any(a["a"] == "CoordWrite" for a in events[k].acts):
            out[k] = dataclasses.replace(events[k], acts=[act("WriteRetry", e=1), *events[k].acts])
    out[j] = dataclasses.replace(events[j], acts=[act("CoordWrite", e=1)])
    return out


RECREATED_SEED = 202866078520279459  # swarm: the group deleted and re-created, its state initialized at epoch 9
RESET_SEED = 7499615321764922368  # swarm: an admin reset to 962; the leader's write fenced, its state dropped


def test_a_group_deleted_and_re_created_starts_a_new_life_of_the_state() -> None:
    """swarm seed 202866078520279459 (rejected in the first validated campaign): the group was deleted, its
    share-partition rebuilt at the same leader epoch, and its state initialized again at state epoch 9; the
    rebuilt leader's read starts the second life, validated from Init with the 60 records produced so far."""
    projection, key, _ = project(library.get("swarm"), RECREATED_SEED)
    first, second = projection.lives[key]
    assert (first.state_epoch, second.state_epoch, second.start_offset) == (2, 9, -1)
    events = projection.events[key]
    assert events[second.first].what == "state read" and events[second.first].time_ms > 30_000
    assert [ev.life for ev in events] == [0] * second.first + [1] * (len(events) - second.first)
    assert not projection.gaps
    _, life = split_lives(events, projection.lives[key])
    setup = [a["a"] for a in life[0].acts]
    assert setup == ["Produce"] * 60 + ["LeaderLoad"] and life[0].e == 1


def test_an_admin_reset_ends_the_life_where_the_leader_drops_its_state() -> None:
    """swarm seed 7499615321764922368 (rejected in the same campaign): an admin reset initialized the state at
    state epoch 9 with start offset 962; the leader's next write was fenced (FENCED_STATE_EPOCH), it dropped
    its state (its memory is not observed there) and read the new life, which starts with that offset."""
    projection, key, _ = project(library.get("swarm"), RESET_SEED)
    second = projection.lives[key][1]
    assert (second.state_epoch, second.start_offset) == (9, 962)
    events = projection.events[key]
    end = events[second.first - 1]
    assert end.what.endswith("state dropped") and end.e == 0 and {a["a"] for a in end.acts} == {"WriteError"}
    _, life = split_lives(events, projection.lives[key])
    assert life[0].acts[0] == act("Initialize", o=962) and life[0].spso == 962


def _moved_boundary(later: bool) -> Callable[[list[Event]], list[Event]]:
    """The first event of the second life moved into the first (``later``), or the last of the first into
    the second."""
    def corrupt(events: list[Event]) -> list[Event]:
        i = next(i for i, ev in enumerate(events) if ev.life == 1) - (0 if later else 1)
        return [*events[:i], dataclasses.replace(events[i], life=0 if later else 1), *events[i + 1:]]
    return corrupt


def _first_unmatched(v: Validation) -> Event:
    """The event a rejected validation could not match."""
    assert not v.accepted and v.first_unmatched is not None
    return v.events[v.first_unmatched]


# (scenario, seed, events validated: None for all). swarm 1 and 4 were rejected before CacheBatchRest.
# swarm_wide (read_committed, SP-13; rejected before ArchiveAborted): SWARM_WIDE_SEEDS below.
LIBRARY_RUNS = [("swarm", 1, None), ("swarm", 4, None), ("swarm", 5, None), ("kip932_example", 3, None),
                ("standard", 1, 150), ("swarm", 2433669991742305874, None), ("swarm", 7190881427140721698, None),
                ("swarm", UNCOMMITTED_WRITE_SEED, None), ("swarm", RECREATED_SEED, None), ("swarm", RESET_SEED, None),
                ("swarm", OVERTAKEN_ANSWER_SEED, None),
                # event 7: an acknowledgement's write failed after its records' locks lapsed (ExpireLock first)
                ("state_partition_under_min_isr", 1, 8)]


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
@pytest.mark.parametrize(("scenario", "seed", "events"), LIBRARY_RUNS)
def test_library_runs_are_accepted(scenario: str, seed: int, events: int | None) -> None:
    v = validate(library.load(scenario), seed, corrupt=(lambda evs: evs[:events]) if events else None)
    assert v.accepted, (v.message, v.first_unmatched, v.spec_state)
    if scenario == "swarm" and seed in (1, 4):
        assert any(a["a"] == "CacheBatchRest" for ev in v.events for a in ev.acts)
    assert v.lives == (2 if seed in (RECREATED_SEED, RESET_SEED) else 1)


# swarm_wide seeds validated in CI, each because its busiest partition archives aborted records (SP-13,
# ArchiveAborted) and acknowledges transaction markers with GAP: 1 with no fault on that partition (the
# plain case); 18, aborted 72..74 archived in the middle of a fetch (one ARCHIVE write, three spec writes)
# while the answers of writes its share coordinator had committed were held up (applied in commit order,
# the leader's memory unobserved until they arrive); and (seed, a further spec action it must take): 17,
# a failover, then the new leader's SPSO sits on aborted offset 21 until its archive is durable and 15
# aborted offsets are archived among acquisitions and marker acquisitions; 34, writes committed out of
# the order they were sent (WriteRetry).
SWARM_WIDE_SEEDS = [1, 18]
SWARM_WIDE_FAULTED = [(17, "Failover"), (34, "WriteRetry")]


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
@pytest.mark.parametrize("seed", SWARM_WIDE_SEEDS + [s for s, _ in SWARM_WIDE_FAULTED])
def test_swarm_wide_runs_are_accepted(seed: int) -> None:
    v = validate(library.load("swarm_wide"), seed)
    assert v.accepted, (v.message, v.first_unmatched, v.spec_state)
    kinds = {(a["a"], a["t"]) for ev in v.events for a in ev.acts}
    assert ("ArchiveAborted", "") in kinds and ("Ack", "GAP") in kinds
    further = dict(SWARM_WIDE_FAULTED).get(seed)
    if further:
        assert any(a["a"] == further for ev in v.events for a in ev.acts)


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
    event = _first_unmatched(v)
    assert event.what.startswith("acquire") and event.time_ms < 1_000
    assert v.run.violations and v.run.violations[0].time_ms > 10 * event.time_ms


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
def test_an_uncommitted_write_taken_as_applied_is_rejected_at_the_next_read() -> None:
    event = _first_unmatched(validate(library.load("swarm"), UNCOMMITTED_WRITE_SEED,
                                      corrupt=_failover_with_the_uncommitted_write_applied))
    assert event.what == "state read" and event.spso == 22  # the spec's durable SPSO is 25 there


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
def test_writes_taken_in_the_order_of_their_answers_are_rejected() -> None:
    # Taken at the answer of 55..57 without the acknowledgement of 52, the spec's durable state lacks 52,
    # which the coordinator had committed before 55..57.
    v = validate(library.load("swarm"), OVERTAKEN_ANSWER_SEED, corrupt=_answer_order)
    event = _first_unmatched(v)
    assert event.time_ms == 3126 and event.what.startswith("write answered") and v.action == len(event.acts)
    assert (52, "ACKNOWLEDGED", 1) in event.dbatch


@pytest.mark.tlc
@pytest.mark.xdist_group("tlc")
@pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")
@pytest.mark.parametrize(("seed", "later", "life", "step", "message"), [
    # The re-created group's first read taken in the old life: LeaderLoad is not enabled (its leader is active).
    (RECREATED_SEED, True, 1, ("state read", "LeaderLoad"), "life 1 of 2 (from event #1)"),
    # The fenced write's failure taken in the new life: its leader has no write in flight there.
    (RESET_SEED, False, 2, ("write failed; state dropped", "WriteError"), "life 2 of 2 (from event #9)"),
])
def test_a_life_boundary_moved_is_rejected_in_its_life(seed: int, later: bool, life: int, step: tuple[str, str],
                                                       message: str) -> None:
    v = validate(library.load("swarm"), seed, corrupt=_moved_boundary(later))
    assert not v.accepted and v.first_unmatched is not None and v.action is not None and v.life == life
    event = v.events[v.first_unmatched]
    assert (event.what, event.acts[v.action]["a"]) == step
    assert v.message.startswith(message)
