"""Cancellable timers merged into SimPy's event loop (issue 4: no SimPy process per timer)."""

from typing import Any

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.sim.timers import DeadlineQueue, Scheduler, Timer


def _recorder(scheduler: Scheduler, log: list[tuple[int, str]]) -> Any:
    def fire(name: str) -> None:
        log.append((scheduler.now_ms, name))

    return fire


def _process_and_posts(scheduler: Scheduler, log: list[tuple[int, str]], timeouts: int, posts: range) -> None:
    """A SimPy process logging after each of ``timeouts`` 2 ms timeouts, and a timer posted at each of ``posts``."""
    fire = _recorder(scheduler, log)

    def process(env: simpy.Environment) -> Any:
        for _ in range(timeouts):
            yield env.timeout(2)
            log.append((scheduler.now_ms, "proc"))

    scheduler.process(process(scheduler))
    for t in posts:
        scheduler.post(t, fire, f"t{t}")


def test_fires_in_due_then_insertion_order() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    scheduler.timer(5, fire, "b")
    scheduler.timer(3, fire, "a")
    scheduler.post(5, fire, "c")
    scheduler.timer_at(5, fire, "d")
    scheduler.post_at(0, fire, "now")
    scheduler.run()
    assert log == [(0, "now"), (3, "a"), (5, "b"), (5, "c"), (5, "d")]
    assert scheduler.timers_fired == 5
    assert scheduler.now == 5
    assert type(scheduler.now) is int


def test_cancel() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    keep = scheduler.timer(2, fire, "keep")
    drop = scheduler.timer(1, fire, "drop")
    assert drop.active
    assert drop.cancel() is True
    assert drop.cancel() is False
    assert not drop.active
    assert scheduler.pending_timers == 1
    scheduler.run()
    assert log == [(2, "keep")]
    assert keep.cancel() is False  # already fired
    assert not keep.active


def test_reschedule_moves_and_rearms() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    timer = scheduler.timer(10, fire, "t")
    scheduler.timer(4, fire, "other")
    timer.reschedule(4)  # same due as "other", set later: fires after it
    assert timer.due_ms == 4
    scheduler.run()
    assert log == [(4, "other"), (4, "t")]
    timer.reschedule(6)  # re-arm a fired timer
    scheduler.run()
    assert log[-1] == (10, "t")
    timer.cancel()
    timer.reschedule_at(20)  # re-arm a cancelled timer
    scheduler.run()
    assert log[-1] == (20, "t")


def test_a_callback_can_rearm_its_own_timer() -> None:
    scheduler = Scheduler()
    beats: list[int] = []
    holder: list[Timer] = []

    def heartbeat() -> None:
        beats.append(scheduler.now_ms)
        if len(beats) < 4:
            holder[0].reschedule(5)

    holder.append(scheduler.timer(5, heartbeat))
    scheduler.run()
    assert beats == [5, 10, 15, 20]


def test_zero_delay_from_a_callback_runs_after_timers_already_due() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)

    def first() -> None:
        fire("first")
        scheduler.post(0, fire, "spawned")

    scheduler.post(1, first)
    scheduler.post(1, fire, "second")
    scheduler.run()
    assert log == [(1, "first"), (1, "second"), (1, "spawned")]


def test_simpy_processes_and_timers_interleave_simpy_first_at_equal_times() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    _process_and_posts(scheduler, log, timeouts=3, posts=range(1, 5))
    scheduler.run()
    assert log == [(1, "t1"), (2, "proc"), (2, "t2"), (3, "t3"), (4, "proc"), (4, "t4"), (6, "proc")]


def test_on_event_is_told_of_every_event_in_order_and_changes_nothing() -> None:
    plain, timed = Scheduler(), Scheduler()
    plain_log: list[tuple[int, str]] = []
    timed_log: list[tuple[int, str]] = []
    for scheduler, log in ((plain, plain_log), (timed, timed_log)):
        _process_and_posts(scheduler, log, timeouts=2, posts=range(1, 4))
        scheduler.timer(5, _recorder(scheduler, log), "cancelled").cancel()
    seen: list[tuple[str, tuple[Any, ...]]] = []

    def observe(fn: Any, args: tuple[Any, ...], elapsed_ns: int) -> None:
        assert type(elapsed_ns) is int and elapsed_ns >= 0
        seen.append(("step" if fn is None else "timer", args))

    timed.on_event = observe
    plain.run()
    timed.run()
    assert timed_log == plain_log
    assert (timed.timers_fired, timed.simpy_steps) == (plain.timers_fired, plain.simpy_steps) == (3, 4)
    assert [args for kind, args in seen if kind == "timer"] == [("t1",), ("t2",), ("t3",)]  # not the cancelled one
    assert [kind for kind, _ in seen].count("step") == 4  # the process's start, two timeouts, its end


def test_a_timer_can_trigger_a_simpy_event() -> None:
    scheduler = Scheduler()
    done = scheduler.event()
    seen: list[int] = []

    def waiter(env: simpy.Environment) -> Any:
        value = yield done
        seen.append(value)
        seen.append(scheduler.now_ms)

    scheduler.process(waiter(scheduler))
    scheduler.post(7, done.succeed, 42)
    scheduler.run()
    assert seen == [42, 7]


def test_run_until_excludes_the_until_time_like_simpy() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    for t in (4, 5, 6):
        scheduler.post(t, fire, f"t{t}")
    scheduler.run(until=5)
    assert log == [(4, "t4")]
    assert scheduler.now == 5
    scheduler.run(until=100)
    assert log == [(4, "t4"), (5, "t5"), (6, "t6")]
    assert scheduler.now == 100
    with pytest.raises(ValueError, match="until"):
        scheduler.run(until=50)
    with pytest.raises(ValueError, match="integer time"):
        scheduler.run(until=150.5)


def test_run_until_an_event() -> None:
    scheduler = Scheduler()
    stop = scheduler.event()
    log: list[tuple[int, str]] = []
    scheduler.post(3, stop.succeed, "done")
    scheduler.post(9, _recorder(scheduler, log), "late")
    assert scheduler.run(until=stop) == "done"
    assert scheduler.now == 3
    assert log == []


def test_step_and_peek_merge_both_queues() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    cancelled = scheduler.timer(1, fire, "cancelled")
    scheduler.post(3, fire, "timer")
    scheduler.timeout(2)
    cancelled.cancel()
    assert scheduler.next_timer_ms() == 3
    assert scheduler.peek() == 2
    scheduler.step()
    assert scheduler.now == 2
    assert scheduler.peek() == 3
    scheduler.step()
    assert log == [(3, "timer")]
    with pytest.raises(simpy.core.EmptySchedule):
        scheduler.step()
    assert scheduler.peek() == simpy.core.Infinity


@pytest.mark.parametrize("delay", [-1, 1.5, True, "3"])
def test_delays_are_non_negative_ints(delay: Any) -> None:
    scheduler = Scheduler()
    with pytest.raises(ValueError, match="delay_ms"):
        scheduler.timer(delay, print)
    with pytest.raises(ValueError, match="delay_ms"):
        scheduler.post(delay, print)


def test_due_times_are_not_in_the_past() -> None:
    scheduler = Scheduler(initial_ms=10)
    with pytest.raises(ValueError, match="due_ms"):
        scheduler.timer_at(9, print)
    with pytest.raises(ValueError, match="due_ms"):
        scheduler.post_at(9, print)
    with pytest.raises(ValueError, match="initial_ms"):
        Scheduler(initial_ms=-1)


def test_compaction_keeps_order() -> None:
    scheduler = Scheduler()
    log: list[tuple[int, str]] = []
    fire = _recorder(scheduler, log)
    timers = [scheduler.timer(1 + i % 50, fire, str(i)) for i in range(5000)]
    for i, timer in enumerate(timers):
        if i % 10:
            timer.cancel()
    assert len(scheduler._timers) < 5000  # compacted at least once
    assert scheduler.pending_timers == 500
    scheduler.run()
    expected = sorted((1 + i % 50, i) for i in range(0, 5000, 10))
    assert log == [(due, str(i)) for due, i in expected]


# -- the property: random set / cancel / reschedule / advance --------------------------


class TimerMachine(RuleBasedStateMachine):
    """Callbacks fire exactly at their due time, in (due, set-order) order; cancelled ones never fire."""

    @initialize()
    def start(self) -> None:
        self.scheduler = Scheduler()
        self.timers: list[Timer] = []
        self.model: dict[int, tuple[int, int]] = {}  # timer index -> (due, order) while pending
        self.order = 0
        self.fired: list[tuple[int, int]] = []  # (time, index)

    def _fire(self, index: int) -> None:
        self.fired.append((self.scheduler.now_ms, index))

    @rule(delay=st.integers(0, 50))
    def set_timer(self, delay: int) -> None:
        index = len(self.timers)
        self.timers.append(self.scheduler.timer(delay, self._fire, index))
        self.order += 1
        self.model[index] = (self.scheduler.now_ms + delay, self.order)

    @precondition(lambda self: self.timers)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.timers) - 1))
        assert self.timers[index].cancel() == (index in self.model)
        self.model.pop(index, None)

    @precondition(lambda self: self.timers)
    @rule(data=st.data(), delay=st.integers(0, 50))
    def reschedule(self, data: st.DataObject, delay: int) -> None:
        index = data.draw(st.integers(0, len(self.timers) - 1))
        self.timers[index].reschedule(delay)
        self.order += 1
        self.model[index] = (self.scheduler.now_ms + delay, self.order)

    @rule(ms=st.integers(1, 40))
    def advance(self, ms: int) -> None:
        until = self.scheduler.now_ms + ms
        due = sorted((when, order, index) for index, (when, order) in self.model.items() if when < until)
        before = len(self.fired)
        self.scheduler.run(until=until)
        assert self.fired[before:] == [(when, index) for when, _, index in due]
        for _, _, index in due:
            del self.model[index]

    @invariant()
    def pending_matches_model(self) -> None:
        assert self.scheduler.pending_timers == len(self.model)
        assert all(self.timers[i].active for i in self.model)


TimerMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_timer_machine = TimerMachine.TestCase


# -- DeadlineQueue -------------------------------------------------------------------------------


def _deadline_script(scheduler: Scheduler, plan: list[tuple[int, int]], others: list[int],
                     add: Any, answer: Any, log: list[tuple[int, str, int]]) -> None:
    for key, (at, answer_after) in enumerate(plan):
        scheduler.post_at(at, add, key)
        if answer_after >= 0:
            scheduler.post_at(at + answer_after, answer, key)
    for index, at in enumerate(others):
        scheduler.post_at(at, lambda index=index: log.append((scheduler.now_ms, "other", index)))


@settings(max_examples=150, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(0, 100), st.integers(-1, 120)), max_size=30),
       others=st.lists(st.integers(0, 200), max_size=20))
def test_deadline_queue_fires_exactly_as_a_timer_per_key_would(plan: list[tuple[int, int]], others: list[int]) -> None:
    """Keys added at ``at`` and answered ``answer_after`` ms later (-1: never): the queue expires the
    unanswered ones at the same times and in the same order, among other timers due in the same
    millisecond too, as one cancellable timer per key does."""
    plan = sorted(plan, key=lambda step: step[0])

    def with_queue() -> list[tuple[int, str, int]]:
        scheduler, live, log = Scheduler(), {}, []

        def expire(key: int) -> None:
            del live[key]
            log.append((scheduler.now_ms, "expired", key))

        queue = DeadlineQueue(scheduler, 50, live, expire)
        _deadline_script(scheduler, plan, others, lambda key: (live.__setitem__(key, key), queue.add(key)),
                         lambda key: live.pop(key, None), log)
        scheduler.run(until=1_000)
        assert scheduler.pending_timers == 0
        return log

    def with_timers() -> list[tuple[int, str, int]]:
        scheduler, timers, log = Scheduler(), {}, []

        def add(key: int) -> None:
            timers[key] = scheduler.timer(50, lambda: log.append((scheduler.now_ms, "expired", key)))

        _deadline_script(scheduler, plan, others, add, lambda key: timers[key].cancel(), log)
        scheduler.run(until=1_000)
        return log

    assert with_queue() == with_timers()


def test_deadline_queue_callbacks_may_clear_and_add_without_a_second_timer() -> None:
    scheduler = Scheduler()
    live = {1: 1}
    expired: list[int] = []
    queue: DeadlineQueue

    def expire(key: int) -> None:  # a crash and a restart inside the callback
        del live[key]
        expired.append(key)
        queue.clear()
        live[2] = 2
        queue.add(2)

    queue = DeadlineQueue(scheduler, 10, live, expire)
    queue.add(1)
    scheduler.run(until=15)
    assert expired == [1] and scheduler.pending_timers == 1
    live.clear()
    queue.clear()
    assert scheduler.pending_timers == 0


def test_deadline_queue_clear_cancels_its_timer() -> None:
    scheduler = Scheduler()
    live = {1: 1}
    expired: list[int] = []
    queue = DeadlineQueue(scheduler, 10, live, expired.append)
    queue.add(1)
    queue.clear()
    scheduler.run(until=100)
    assert expired == [] and scheduler.pending_timers == 0
