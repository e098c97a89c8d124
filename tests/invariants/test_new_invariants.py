"""Issue 25's new invariants: release-on-session-end, archive-only-for-reason, ack-own-session-only and
subscribed-records-delivered. Each is caught by its mutant in a library scenario, where the correct model
holds every invariant (and, for three of them, nothing else catches the mutant there); the session facts
and the acknowledgement check are driven step by step; settling_runs is checked against a per-offset
reading with Hypothesis."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invariants.fan_out import Monitors
from invariants.ledger import SessionFacts, settling_runs
from invariants.session_checks import RELEASE_BOUND_MS, AckDisciplineMonitor
from invariants.sink import Monitor, ViolationSink
from model import mutants
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords
from model.core.share_state import AcknowledgeType, SharePartitionKey
from model.sim.runner import run, run_cluster
from scenarios import library
from scenarios.toml_format import load_file

# mutant -> (the invariant that catches it, the scenario, a seed where it does); in each, nothing else is violated
CAUGHT = {
    "no-release-on-session-end": ("release-on-session-end", "paused_session_evicted", 0),
    "archive-below-limit": ("archive-only-for-reason", "all_slow_consumers", 0),
    "ack-across-sessions": ("ack-own-session-only", "ack_after_session_reset", 2),
    "offset-reset-ignored": ("subscribed-records-delivered", "small", 0),
}

# Since the oracles were rewritten (issue 25), spso-monotonic asks every offset an SPSO passes for a protocol
# reason, and E-1 counts from the producers' acks: both also see an archive without a reason, once the SPSO
# passes it (2 ms later here). The new invariant sees it first, when the write is accepted.
ALSO = {"archive-below-limit": {"spso-monotonic", "eventual-resolution"}}


@pytest.mark.parametrize("mutant", sorted(CAUGHT))
def test_the_mutant_is_caught_by_its_new_invariant_alone_and_the_correct_model_holds(mutant: str) -> None:
    invariant, scenario, seed = CAUGHT[mutant]
    assert mutants.get(mutant).expected_invariant == invariant and mutants.get(mutant).scenario == scenario
    result = run(library.get(scenario), seed, mutant=mutant, stop_on_first_violation=False)
    seen = {v.invariant for v in result.violations}
    described = [v.describe() for v in result.violations]
    assert invariant in seen and seen <= {invariant} | ALSO.get(mutant, set()), described
    assert result.violations[0].invariant == invariant, "the new invariant is the first to see it"
    clean = run(library.get(scenario), seed)
    assert clean.violations == [], [v.describe() for v in clean.violations]


def test_ack_after_session_reset_resets_a_session_the_broker_never_heard_end() -> None:
    """The scenario of ack-across-sessions reaches its situation: the consumer's session starts over while
    the broker, cut off, never hears the old connection close (no share session is disconnected then)."""
    result = run(library.get("ack_after_session_reset"), 2)
    assert result.ok
    assert result.faults_fired == {"network_partition": 1}
    assert result.metrics["share_session_resets"] >= 1


class _LateOpenings(Monitor):
    """The acknowledgements leaders took after an epoch-0 ShareFetch came on an older connection of its
    client than an earlier opening of the same member's session at that broker (a request the client had
    given up on), per member."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self._opened_on: dict[tuple[int, str, str], tuple[str, int]] = {}
        self.late: set[str] = set()  # members whose session a late opening replaced
        self.acks_after: dict[str, int] = {}

    def on_share_fetch_session(self, broker: int, group_id: str, member_id: str, epoch: int,
                               partitions: tuple[tuple[str, int], ...], forgotten: tuple[tuple[str, int], ...],
                               connection: tuple[str, int], now_ms: int) -> None:
        if epoch != 0:
            return
        newest = self._opened_on.get((broker, group_id, member_id))
        if newest is not None and newest[0] == connection[0] and connection[1] < newest[1]:
            self.late.add(member_id)
        else:
            self._opened_on[(broker, group_id, member_id)] = connection

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        if member_id in self.late:
            self.acks_after[member_id] = self.acks_after.get(member_id, 0) + len(batches)


def test_a_late_session_opening_replaces_the_brokers_session_and_the_clients_acks_are_taken() -> None:
    """The shrunk run of the finding (tests/invariants/late_share_session_opening.toml): a ShareFetch that
    opened a session, timed out and was given up arrives after the client's next session was opened on a
    new connection, and the client's acknowledgements of what that next session acquired are taken. The
    correct model holds every invariant there."""
    late = _LateOpenings()
    result, _ = run_cluster(load_file(Path(__file__).with_name("late_share_session_opening.toml")), 2560,
                            extra_monitors=[late])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert "m0.1.2" in late.late and late.acks_after.get("m0.1.2", 0) > 0


class _LateRequests(Monitor):
    """The acknowledgements leaders took from requests on an older connection of their client than the one
    the member's latest session at that broker was opened on (a request the client had given up on), per
    member."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self._opened_on: dict[tuple[int, str, str], tuple[str, int]] = {}
        self._broker: dict[tuple[SharePartitionKey, int], int] = {}
        self.late_acks: dict[str, int] = {}

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        self._broker[(key, leader_epoch)] = broker

    def on_share_fetch_session(self, broker: int, group_id: str, member_id: str, epoch: int,
                               partitions: tuple[tuple[str, int], ...], forgotten: tuple[tuple[str, int], ...],
                               connection: tuple[str, int], now_ms: int) -> None:
        newest = self._opened_on.get((broker, group_id, member_id))
        if epoch == 0 and (newest is None or newest[0] != connection[0] or connection[1] >= newest[1]):
            self._opened_on[(broker, group_id, member_id)] = connection

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        broker = self._broker.get((key, leader_epoch))
        newest = self._opened_on.get((broker, key.group_id, member_id)) if broker is not None else None
        if newest is not None and newest[0] == connection[0] and connection[1] < newest[1]:
            self.late_acks[member_id] = self.late_acks.get(member_id, 0) + len(batches)


def test_a_late_request_of_a_given_up_session_meets_the_new_sessions_epoch_and_its_acks_are_taken() -> None:
    """The shrunk run of the finding (tests/invariants/late_share_session_request.toml): an epoch-3 ShareFetch
    that timed out and was given up arrives on its old connection after the client's next session, on a new
    connection, reached epoch 3; the broker takes its acknowledgement of what the old session acquired. The
    correct model holds every invariant there."""
    late = _LateRequests()
    result, _ = run_cluster(load_file(Path(__file__).with_name("late_share_session_request.toml")),
                            5903737319531068551, extra_monitors=[late])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert late.late_acks.get("m2.1.3", 0) > 0


class _ReacquiredLateAcks(SessionFacts):
    """Session facts that also count, per member, the acknowledgements leaders took from a late request (on an
    older connection than the member's latest session there) of offsets its session on that connection
    acquired and the member has held, unacknowledged, since a later acquisition of them."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.acks: dict[str, int] = {}

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        session = self.session_of(key, leader_epoch, member_id)
        late_gen = self.late_gen(session, connection) if session is not None else None
        holdings = self.holdings.get(key)
        if late_gen is not None and holdings is not None:
            for batch in batches:
                for _, _, h in holdings.overlapping(batch.first_offset, batch.last_offset):
                    if h.member_id == member_id and late_gen in h.earlier_gens:
                        self.acks[member_id] = self.acks.get(member_id, 0) + 1
        super().on_acknowledge(key, member_id, batches, leader_epoch, now_ms, connection)


@pytest.mark.parametrize(("file", "seed"), [("late_share_session_reacquired.toml", 1892937664778353340),
                                            ("late_share_session_reacquired_by_late_opening.toml",
                                             5916929530947768637)])
def test_a_late_request_acknowledges_what_its_session_acquired_and_the_member_acquired_again(file: str,
                                                                                              seed: int) -> None:
    """The shrunk runs of two swarm_clients seeds (tests/invariants/late_share_session_reacquired*.toml): an
    epoch-1 ShareFetch acknowledging what its session acquired is given up and arrives late on its old
    connection when the client's newest session is at epoch 1; meanwhile the records were acquired again for
    the same member by a ShareFetch the client had also given up on (after its session ended), and the leader
    takes the late acknowledgement for that acquisition, as trunk does. The correct model holds every invariant
    there."""
    late = _ReacquiredLateAcks()
    result, _ = run_cluster(load_file(Path(__file__).with_name(file)), seed, extra_monitors=[late])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert late.acks.get("m2.1.2", 0) > 0


# -- the session facts and ack-own-session-only, step by step --------------------------------------------

KEY = SharePartitionKey("g", "t-id", 0)
PART = ("t-id", 0)
ACCEPT = int(AcknowledgeType.ACCEPT)


def _monitors() -> tuple[Monitors, ViolationSink]:
    sink = ViolationSink(0)
    facts = SessionFacts(sink)
    return Monitors((AckDisciplineMonitor(sink, facts), facts), sink), sink


def _open(m: Monitors, now: int, broker: int = 1, member: str = "m1", connection: int = 0) -> None:
    m.on_share_session(broker, "g", member, 0, now)
    m.on_share_fetch_session(broker, "g", member, 0, (PART,), (), ("c1", connection), now)


def _ack(m: Monitors, first: int, last: int, now: int, member: str = "m1", leader_epoch: int = 3) -> None:
    m.on_acknowledge(KEY, member, (AcknowledgementBatch(first, last, (ACCEPT,)),), leader_epoch, now)


def test_an_acknowledgement_in_the_session_that_acquired_passes() -> None:
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    m.on_share_session(1, "g", "m1", 1, 3)
    _ack(m, 0, 9, 3)
    assert sink.violations == []


def test_the_closing_request_acknowledges_in_the_session_it_closes() -> None:
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    m.on_share_session(1, "g", "m1", -1, 10)
    _ack(m, 0, 4, 10 + RELEASE_BOUND_MS)
    assert sink.violations == []


@pytest.mark.parametrize("case", ["new session", "evicted", "other member", "other leader epoch", "never acquired"])
def test_an_acknowledgement_outside_the_acquiring_session_is_a_violation(case: str) -> None:
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    m.on_leader_start(KEY, 1, 4, 0)
    _open(m, 1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    member, epoch, first = "m1", 3, 0
    if case == "new session":
        _open(m, 5)
    elif case == "evicted":
        m.on_share_session_evicted(1, "g", "m1", 5)
    elif case == "other member":
        _open(m, 5, member="m2")
        member = "m2"
    elif case == "other leader epoch":
        epoch = 4
    else:
        first = 10
    _ack(m, first, first + 2, 6, member=member, leader_epoch=epoch)
    assert [v.invariant for v in sink.violations] == ["ack-own-session-only"]
    assert sink.violations[0].state["offset"] == first


@pytest.mark.parametrize("late", [True, False])
def test_a_late_opening_on_an_older_connection_starts_no_session_of_the_client(late: bool) -> None:
    """The client opened a session on connection 0, gave up on it (timed out, closed it) and opened another
    on connection 1, where it acquired 0..9; its first opening arrives only now and replaces the broker's
    session (trunk's newContext), then its acknowledgement of 0..9 meets the replacement's epoch 1: the
    client acknowledges in the session it acquired in. The same opening on connection 1 is a new session
    of the client's, and the acknowledgement is of an earlier one."""
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1, connection=1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    _open(m, 5, connection=0 if late else 1)
    m.on_share_session(1, "g", "m1", 1, 6)
    _ack(m, 0, 9, 6)
    assert [v.invariant for v in sink.violations] == ([] if late else ["ack-own-session-only"])


@pytest.mark.parametrize("late", [True, False])
def test_a_late_request_of_an_older_connections_session_acknowledges_in_that_session(late: bool) -> None:
    """The client opened a session on connection 0 and acquired 0..9 in it; its epoch-1 ShareFetch carrying
    their acknowledgement timed out, the client closed that connection and opened a new session on connection
    1 (the broker's session starts over at epoch 1, keeping the member's records: trunk's newContext); the
    given-up request arrives only now, meets epoch 1, and trunk takes its acknowledgement (SharePartition
    checks the member id): it is of the session it was sent in. The same acknowledgement on connection 1 is
    one of the new session's of records an earlier session acquired (the mutant ack-across-sessions)."""
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1, connection=0)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    _open(m, 5, connection=1)
    m.on_share_session(1, "g", "m1", 1, 6)
    m.on_share_fetch_session(1, "g", "m1", 1, (PART,), (), ("c1", 0 if late else 1), 6)
    m.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 9, (ACCEPT,)),), 3, 6, ("c1", 0 if late else 1))
    assert [v.invariant for v in sink.violations] == ([] if late else ["ack-own-session-only"])


def test_a_late_request_acknowledges_only_what_its_own_session_acquired() -> None:
    """A late request on an older connection is judged in the session opened on that connection: records a
    later session (opened on connection 1, since evicted) acquired are not that session's."""
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1, connection=0)
    _open(m, 5, connection=1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 6)
    m.on_share_session_evicted(1, "g", "m1", 8)
    _open(m, 9, connection=2)
    m.on_share_session(1, "g", "m1", 1, 10)
    m.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 9, (ACCEPT,)),), 3, 10, ("c1", 0))
    assert [v.invariant for v in sink.violations] == ["ack-own-session-only"]


@pytest.mark.parametrize("between", ["none", "other member", "acknowledged", "acknowledged after"])
def test_a_late_request_acknowledges_what_its_session_acquired_and_the_member_holds_since(between: str) -> None:
    """The client acquired 0..9 in its session on connection 0; their lock timed out, a session it opened on
    connection 1 ended, and a ShareFetch of that session it had given up on acquired 0..9 again for the member
    (the response lost); the client opened a session on connection 2, and the late epoch-1 request of
    connection 0 acknowledges 0..9: trunk applies it to the new acquisition (SharePartition.acknowledge checks
    the member id). Not if another member acquired them in between, nor if the member had acknowledged them
    (before the second acquisition; or by this late request already, so that a second one finds them no
    longer acquired)."""
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1, connection=0)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    if between == "other member":
        m.on_acquire(KEY, "m2", [AcquiredRecords(0, 9, 2)], 3, 3)
    elif between == "acknowledged":
        m.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 9, (int(AcknowledgeType.RELEASE),)),), 3, 3,
                         ("c1", 0))
    _open(m, 5, connection=1)
    m.on_share_session_evicted(1, "g", "m1", 7)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 3 if between == "other member" else 2)], 3, 8)
    _open(m, 9, connection=2)
    m.on_share_session(1, "g", "m1", 1, 10)
    if between == "acknowledged after":  # the late request's acknowledgement was taken once: not again
        m.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 9, (ACCEPT,)),), 3, 10, ("c1", 0))
        assert sink.violations == []
    m.on_acknowledge(KEY, "m1", (AcknowledgementBatch(0, 9, (ACCEPT,)),), 3, 10, ("c1", 0))
    assert [v.invariant for v in sink.violations] == ([] if between == "none" else ["ack-own-session-only"])


def test_a_broker_crash_ends_its_sessions() -> None:
    m, sink = _monitors()
    m.on_leader_start(KEY, 1, 3, 0)
    _open(m, 1)
    m.on_acquire(KEY, "m1", [AcquiredRecords(0, 9, 1)], 3, 2)
    m.on_event("broker.crash", 3, broker=1)
    _ack(m, 0, 0, 4)
    assert [v.invariant for v in sink.violations] == ["ack-own-session-only"]


@given(st.integers(0, 50), st.lists(st.sampled_from([int(t) for t in AcknowledgeType]), min_size=1, max_size=12))
def test_settling_runs_are_exactly_the_offsets_acknowledged_with_a_type_other_than_renew(
        first: int, types: list[int]) -> None:
    renew = int(AcknowledgeType.RENEW)
    single = len(types) == 1
    batch = AcknowledgementBatch(first, first + (4 if single else len(types) - 1), tuple(types))
    runs = list(settling_runs(batch))
    offsets = [o for lo, hi in runs for o in range(lo, hi + 1)]
    if single:
        expected = [] if types[0] == renew else list(range(first, first + 5))
    else:
        expected = [first + i for i, t in enumerate(types) if t != renew]
    assert offsets == expected
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(runs))  # maximal, disjoint runs


class _GroupDeletions(Monitor):
    """Counts the share-partitions leaders dropped with their group's deletion."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.dropped = 0

    def on_event(self, kind: str, now_ms: int, **fields: object) -> None:
        if kind == "share.group_deleted":
            self.dropped += int(fields.get("share_partitions", 0))  # type: ignore[call-overload]


def test_records_of_a_leader_dropped_with_its_group_are_not_judged_on_its_dropped_object() -> None:
    """The shrunk run of the triage (tests/invariants/group_deleted_leader_dropped.toml): a member acquires from
    a leader after the group's share state was deleted, and the group's deletion then ends its session and drops
    the leader with the acquisition, with no later leader elected. Nothing is left to release; the correct model
    holds every invariant there (release-on-session-end used to judge the dropped leader's stale state)."""
    deletions = _GroupDeletions()
    result, _ = run_cluster(load_file(Path(__file__).with_name("group_deleted_leader_dropped.toml")),
                            6914384353555793494, extra_monitors=[deletions])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert deletions.dropped >= 2


class _SameCountReacquired(Monitor):
    """Counts acquisitions, by a member whose share session ended, of offsets it held unacknowledged at the end,
    at the same delivery count as then: possible only when the leader lost the earlier acquisition."""

    def __init__(self, facts: SessionFacts) -> None:
        super().__init__(ViolationSink(0))
        self.facts = facts
        self.held_at_end: dict[tuple[SharePartitionKey, str, int], int] = {}  # (key, member, offset) -> count
        self.reacquired = 0

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        for key, holdings in sorted(self.facts.holdings.items()):
            if key.group_id == group_id:
                for lo, hi, h in holdings.overlapping(0, 2**62):
                    if h.member_id == member_id and not h.acked:
                        for offset in range(lo, hi + 1):
                            self.held_at_end[(key, member_id, offset)] = h.delivery_count

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):
                if self.held_at_end.pop((key, member_id, offset), None) == a.delivery_count:
                    self.reacquired += 1


def test_records_acquired_again_after_the_leader_read_its_state_again_are_a_new_acquisition() -> None:
    """The shrunk run of the triage (tests/invariants/fenced_leader_reacquired.toml): an admin reset fences a
    share-partition leader, which reads its state again and so drops its acquisitions; the member's session ends
    with those records unacknowledged, and its next session acquires them again at the same delivery count.
    That acquisition is not the one the ended session held: the correct model holds every invariant there
    (release-on-session-end used to judge it as the old one, still ACQUIRED after the session's end)."""
    facts = SessionFacts(ViolationSink(0))
    reacquired = _SameCountReacquired(facts)
    result, _ = run_cluster(load_file(Path(__file__).with_name("fenced_leader_reacquired.toml")),
                            635975582913849506, extra_monitors=[facts, reacquired])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.situations.get("write-fenced-state-epoch", 0) >= 1
    assert reacquired.reacquired >= 1
