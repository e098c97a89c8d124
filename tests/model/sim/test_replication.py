"""ReplicatedLog (commit after the replication round trip, min.insync.replicas, a leader change
drops the uncommitted tail) and DataLog (committed = high-water mark, produce times)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from model.core.errors import Errors
from model.core.produce_fetch import UNKNOWN_PRODUCE_TIME
from model.sim.replication import REJECTED, DataLog, ProduceBatch, ReplicatedLog, TxnMarker
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler

FIVE_MS = Distribution.constant(5)


def make_log(latency: Distribution = FIVE_MS, min_isr: int = 2, isr: tuple[int, ...] = (1, 2, 3),
             reachable: Any = None, **kwargs: Any) -> tuple[Scheduler, ReplicatedLog]:
    sched = Scheduler()
    log = ReplicatedLog("t", 0, sched, RandomStreams(7), latency, min_insync_replicas=min_isr, reachable=reachable,
                        **kwargs)
    log.set_leader(1, 1, isr)
    return sched, log


class Done:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Errors, int, int]] = []

    def cb(self, name: str, sched: Scheduler) -> Any:
        return lambda error, offset: self.calls.append((name, error, offset, sched.now_ms))


def test_commit_after_the_round_trip_to_the_slowest_follower() -> None:
    sched, log = make_log(Distribution.uniform(1, 20))
    done = Done()
    assert log.append(["a"], done.cb("a", sched)) == Errors.NONE
    assert log.committed == [] and log.pending_count == 1 and log.end_offset == 1
    sched.run(until=100)
    ((_, error, offset, at),) = done.calls
    assert error == Errors.NONE and offset == 0 and log.committed == ["a"]
    assert 2 <= at <= 40  # two followers, each a round trip of two draws in [1, 20]


def test_a_single_replica_commits_at_once() -> None:
    sched, log = make_log(min_isr=1, isr=(1,))
    done = Done()
    log.append(["a", "b"], done.cb("ab", sched))
    sched.run(until=1)
    assert done.calls == [("ab", Errors.NONE, 0, 0)]
    assert log.committed_count == 2


def test_not_enough_replicas_when_the_isr_or_the_network_falls_short() -> None:
    _, log = make_log(min_isr=2, isr=(1,))
    assert log.writable() == Errors.NOT_ENOUGH_REPLICAS
    assert log.append(["a"], lambda e, o: None) == Errors.NOT_ENOUGH_REPLICAS
    assert log.pending_count == 0
    _, cut = make_log(min_isr=2, reachable=lambda leader, follower: False)
    assert cut.append(["a"], lambda e, o: None) == Errors.NOT_ENOUGH_REPLICAS
    _, one_way = make_log(min_isr=2, reachable=lambda leader, follower: follower == 3)
    assert one_way.writable() == Errors.NONE
    _, leaderless = make_log()
    leaderless.set_leader(-1, 1, (2,))
    assert leaderless.append(["a"], lambda e, o: None) == Errors.NOT_LEADER_OR_FOLLOWER


def test_a_leader_change_drops_the_uncommitted_tail() -> None:
    sched, log = make_log()
    done = Done()
    log.append(["a"], done.cb("a", sched))
    sched.run(until=20)
    log.append(["b"], done.cb("b", sched))
    log.append(["c"], done.cb("c", sched))
    log.set_leader(2, 2, (2, 3))
    assert [(n, e) for n, e, _, _ in done.calls] == [
        ("a", Errors.NONE), ("b", Errors.NOT_LEADER_OR_FOLLOWER), ("c", Errors.NOT_LEADER_OR_FOLLOWER)]
    sched.run(until=100)
    assert log.committed == ["a"] and len(done.calls) == 3  # the old timers do nothing
    # An ISR change alone keeps the tail.
    log.append(["d"], done.cb("d", sched))
    log.set_leader(2, 2, (2,))
    sched.run(until=200)
    assert log.committed == ["a", "d"]


def test_commits_keep_append_order() -> None:
    sched, log = make_log(Distribution.uniform(1, 30))
    done = Done()
    for name in "abcdefgh":
        log.append([name], done.cb(name, sched))
        sched.run(until=sched.now_ms + 1)
    sched.run(until=500)
    assert [c[0] for c in done.calls] == list("abcdefgh")
    assert [c[3] for c in done.calls] == sorted(c[3] for c in done.calls)
    assert log.committed == list("abcdefgh")


def test_delete_records_moves_the_log_start_within_the_committed_records() -> None:
    sched, log = make_log()
    log.append(["a", "b", "c"], Done().cb("abc", sched))
    sched.run(until=100)
    log.append(["d"], Done().cb("d", sched))  # still in flight: not deletable
    assert log.delete_records(2) == ["a", "b"]
    assert log.log_start_offset == 2 and log.committed == ["c"] and log.committed_count == 3
    assert log.delete_records(2) == []
    for bad in (1, 4):
        with pytest.raises(ValueError, match=r"within \[2, 3\]"):
            log.delete_records(bad)
    sched.run(until=200)
    assert log.committed == ["c", "d"] and log.end_offset == 4


def test_after_pending_waits_for_everything_appended_so_far() -> None:
    sched, log = make_log()
    calls: list[tuple[str, Errors, int]] = []
    log.after_pending(lambda error: calls.append(("idle", error, sched.now_ms)))  # nothing waits: at once
    log.append(["a"], Done().cb("a", sched))
    log.append(["b"], Done().cb("b", sched))
    log.after_pending(lambda error: calls.append(("read", error, sched.now_ms)))
    assert calls == [("idle", Errors.NONE, 0)]
    sched.run(until=100)
    assert calls[1] == ("read", Errors.NONE, 10) and log.committed == ["a", "b"]
    log.append(["c"], Done().cb("c", sched))
    log.after_pending(lambda error: calls.append(("lost", error, sched.now_ms)))
    log.set_leader(2, 2, (1, 2, 3))  # a new leader drops the tail: the read fails with it
    assert calls[2] == ("lost", Errors.NOT_LEADER_OR_FOLLOWER, 100)


def test_data_log_committed_is_the_high_water_mark() -> None:
    data = DataLog()
    assert data.apply([ProduceBatch(3, None, False, 100)]) == 0
    assert data.log.high_watermark == data.log.log_end_offset == 3
    assert data.apply([ProduceBatch(2, 9, True, 200)]) == 3
    assert data.log.last_stable_offset == 3
    assert data.apply([TxnMarker(9, True)]) == 5
    assert data.log.last_stable_offset == 6
    assert list(data.produce_times) == [100, 100, 100, 200, 200, UNKNOWN_PRODUCE_TIME]
    assert data.produce_times_of([(1, 1), (3, 4)]) == (100, 200, 200)
    assert data.apply([TxnMarker(9, False)]) == REJECTED  # no open transaction
    assert data.log.log_end_offset == 6


class ReplicationMachine(RuleBasedStateMachine):
    """Whatever the appends, delays, ISR and leader changes: every append is answered at most
    once; NONE exactly for the records now committed, in append order; a leader change fails
    every append still pending."""

    def __init__(self) -> None:
        super().__init__()
        self.sched, self.log = make_log(Distribution.uniform(0, 15), min_isr=2)
        self.epoch = 1
        self.appended: list[str] = []
        self.answers: dict[str, list[Errors]] = {}
        self.next = 0

    @rule(size=st.integers(1, 3))
    def append(self, size: int) -> None:
        names = [f"r{self.next + k}" for k in range(size)]
        self.next += size
        for n in names:
            self.answers[n] = []

        def answered(error: Errors, offset: int) -> None:
            for n in names:
                self.answers[n].append(error)

        if self.log.append(names, answered) == Errors.NONE:
            self.appended.extend(names)
        else:
            for n in names:
                self.answers[n].append(Errors.NOT_ENOUGH_REPLICAS)

    @rule(ms=st.integers(0, 20))
    def time_passes(self, ms: int) -> None:
        self.sched.run(until=self.sched.now_ms + ms + 1)

    @rule(leader=st.sampled_from([1, 2, 3]))
    def new_leader(self, leader: int) -> None:
        self.epoch += 1
        self.log.set_leader(leader, self.epoch, tuple(sorted({leader, 1, 2, 3})))
        unanswered = [n for n in self.appended if not self.answers[n]]
        assert not unanswered, f"{unanswered} still unanswered after a leader change"

    @rule(isr=st.sampled_from([(1,), (1, 2), (1, 2, 3)]))
    def isr_changes(self, isr: tuple[int, ...]) -> None:
        leader = self.log.leader
        self.log.set_leader(leader, self.epoch, tuple(sorted({leader, *isr})))

    @invariant()
    def answered_once_and_committed_in_order(self) -> None:
        assert all(len(a) <= 1 for a in self.answers.values())
        succeeded = [n for n, a in sorted(self.answers.items(), key=lambda kv: int(kv[0][1:])) if a == [Errors.NONE]]
        assert self.log.committed == succeeded
        assert self.log.committed == [n for n in self.appended if n in set(succeeded)]
        assert self.log.committed_count == len(self.log.committed)
        pending = self.log.uncommitted()
        assert all(not self.answers[str(n)] for n in pending)


ReplicationMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestReplicationProperties = ReplicationMachine.TestCase


# -- keep_tail: a new leader keeps the tail it had fetched (the coordinators' internal topics) -------


def test_a_new_leader_keeps_the_prefix_of_the_tail_it_had_fetched_and_commits_it_later() -> None:
    sched, log = make_log(keep_tail=True)  # one way 5 ms, a round trip 10 ms
    heard: list[tuple[Errors, list[object], int]] = []
    log.tail_listener = lambda error, records: heard.append((error, list(records), sched.now_ms))
    done = Done()
    log.append(["a"], done.cb("a", sched))  # reaches 2 and 3 at 5 ms
    sched.run(until=6)
    log.append(["b"], done.cb("b", sched))  # reaches them at 11 ms
    sched.run(until=7)
    log.set_leader(2, 2, (1, 2, 3))
    # The old leader's callers never learn the outcome; the new leader has "a" above its high-water mark.
    assert [(n, e) for n, e, _, _ in done.calls] == [("a", Errors.NOT_LEADER_OR_FOLLOWER),
                                                     ("b", Errors.NOT_LEADER_OR_FOLLOWER)]
    assert log.uncommitted() == ["a"] and log.committed == [] and log.end_offset == 1
    assert log.inherited_appends == 1
    sched.run(until=100)
    assert log.committed == ["a"] and heard == [(Errors.NONE, ["a"], 17)]  # 7 ms + a round trip


def test_an_inherited_tail_is_truncated_by_a_leader_that_had_not_fetched_it() -> None:
    cut = {(1, 3)}  # 1 cannot reach 3
    sched, log = make_log(keep_tail=True, reachable=lambda leader, follower: (leader, follower) not in cut)
    heard: list[tuple[Errors, list[object]]] = []
    log.tail_listener = lambda error, records: heard.append((error, list(records)))
    log.append(["a"], Done().cb("a", sched))
    sched.run(until=5)
    log.set_leader(2, 2, (1, 2, 3))  # 2 has "a"; 3 has not
    sched.run(until=6)
    log.set_leader(3, 3, (1, 2, 3))  # 2's copy reaches 3 only at 10 ms: truncated
    assert heard == [(Errors.NOT_LEADER_OR_FOLLOWER, ["a"])] and log.end_offset == 0
    sched.run(until=100)
    assert log.committed == []


def test_the_tail_waits_while_no_replica_leads_and_goes_to_the_next_leader_that_has_it() -> None:
    sched, log = make_log(keep_tail=True)
    log.append(["a"], Done().cb("a", sched))
    sched.run(until=5)
    log.set_leader(-1, 1, (2, 3))
    assert log.end_offset == 0
    sched.run(until=50)
    log.set_leader(3, 2, (2, 3))
    assert log.uncommitted() == ["a"]
    sched.run(until=100)
    assert log.committed == ["a"]


def test_a_replica_that_fetched_the_tail_from_an_earlier_leader_keeps_it() -> None:
    sched, log = make_log(keep_tail=True)
    log.append(["a"], Done().cb("a", sched))
    sched.run(until=5)  # 2 and 3 both have "a"
    log.set_leader(2, 2, (1, 2, 3))
    sched.run(until=6)
    log.set_leader(3, 3, (1, 2, 3))  # before 2's copy would reach it, but it has 1's
    assert log.uncommitted() == ["a"] and log.inherited_appends == 2
    sched.run(until=100)
    assert log.committed == ["a"]


def test_a_log_without_keep_tail_records_no_arrivals() -> None:
    sched, log = make_log()
    log.append(["a"], Done().cb("a", sched))
    sched.run(until=5)
    log.set_leader(2, 2, (1, 2, 3))
    assert log.end_offset == 0 and log.inherited_appends == 0
    assert all(p.arrivals is None for p in log._pending)


class KeepTailMachine(RuleBasedStateMachine):
    """keep_tail: whatever the appends, delays and leader changes, the committed records are appended
    ones, each once, in append order; a record answered NONE is committed; every append is answered
    once, and an append still pending on a leader change is answered NOT_LEADER_OR_FOLLOWER then (it
    may still commit later: the tail the new leader inherited)."""

    def __init__(self) -> None:
        super().__init__()
        self.sched, self.log = make_log(Distribution.uniform(0, 15), min_isr=2, keep_tail=True)
        self.epoch = 1
        self.appended: list[str] = []
        self.answers: dict[str, list[Errors]] = {}
        self.next = 0

    @rule(size=st.integers(1, 3))
    def append(self, size: int) -> None:
        names = [f"r{self.next + k}" for k in range(size)]
        self.next += size

        def answered(error: Errors, offset: int) -> None:
            for n in names:
                self.answers[n].append(error)

        for n in names:
            self.answers[n] = []
        if self.log.append(names, answered) == Errors.NONE:
            self.appended.extend(names)

    @rule(ms=st.integers(0, 20))
    def time_passes(self, ms: int) -> None:
        self.sched.run(until=self.sched.now_ms + ms + 1)

    @rule(leader=st.sampled_from([-1, 1, 2, 3]))
    def new_leader(self, leader: int) -> None:
        self.epoch += 1
        self.log.set_leader(leader, self.epoch, (1, 2, 3))
        assert all(self.answers[n] for n in self.appended), "an append unanswered after a leader change"

    @invariant()
    def committed_in_append_order_once(self) -> None:
        committed = [str(r) for r in self.log.committed]
        assert len(set(committed)) == len(committed)
        order = {n: i for i, n in enumerate(self.appended)}
        assert [order[n] for n in committed] == sorted(order[n] for n in committed)
        assert all(len(a) <= 1 for a in self.answers.values())
        assert {n for n, a in self.answers.items() if a == [Errors.NONE]} <= set(committed)
        tail = [str(r) for r in self.log.uncommitted()]
        assert not set(tail) & set(committed)
        assert self.log.end_offset == len(committed) + len(tail)


KeepTailMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestKeepTailProperties = KeepTailMachine.TestCase
