"""Cancellable timers without a SimPy process per timer.

``Scheduler`` *is* a ``simpy.Environment``: actors that want processes,
``timeout``s and events still have them, and SimPy keeps the clock. Beside
SimPy's event queue it keeps its own heap of timers, entries
``[due_ms, seq, callback, args]``, and its ``run``/``step`` merge the two
queues in time order. A timer therefore costs a heap push and a heap pop; no
SimPy ``Event``, no generator, no callback list. That is what makes a
message delivery or a lock expiry cheap (issue 4: "no SimPy process per
message; cancellable timers").

Ordering (deterministic by construction):

* timers fire in ``(due_ms, seq)`` order; ``seq`` is the insertion sequence,
  so timers due at the same millisecond fire in the order they were set
  (a rescheduled timer takes a new ``seq``);
* at equal times SimPy's queue goes first, then the timers. This keeps
  ``run(until=t)`` meaning what it means in SimPy: nothing due at ``t`` runs.

Cancellation is O(1) and lazy: the entry's callback slot is cleared and the
entry is skipped when it reaches the top of the heap. When cancelled entries
outnumber live ones the heap is compacted (order is unaffected: keys are unique).

Time is integer milliseconds. SimPy keeps ``now`` an int as long as every delay
is an int, which ``timer``/``post`` and ``run(until=...)`` enforce.

Use it as the simulator's event loop: message deliveries and protocol timers
(acquisition locks, session and rebalance timeouts, heartbeat intervals,
append linger) as timers; SimPy processes only where an actor reads best as a
sequential script. ``bench/sim_core.py`` measures a posted timer at about 1.7×
and a cancellable timer at 1.4× (compiled: 1.8×) the rate of a bare SimPy timeout.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Container
from heapq import heapify, heappop, heappush
from typing import Any, Final

import simpy
from simpy.core import EmptySchedule, StopSimulation
from simpy.events import URGENT, Event

# Heap entry slots. A list, not an object: list comparison runs in C and the
# (due, seq) prefix is unique, so the callback is never compared.
_DUE: Final = 0
_SEQ: Final = 1
_FN: Final = 2
_ARGS: Final = 3

_COMPACT_MIN: Final = 1024  # don't bother compacting small heaps

TimerCallback = Callable[..., object]
# (the timer's callback, or None for a SimPy step; the callback's arguments; the nanoseconds it took)
EventObserver = Callable[[TimerCallback | None, tuple[Any, ...], int], object]


class Timer:
    """A handle on one scheduled callback: ``cancel()``, ``reschedule()``, ``active``."""

    __slots__ = ("_args", "_entry", "_fn", "_scheduler")

    def __init__(self, scheduler: Scheduler, entry: list[Any], fn: TimerCallback, args: tuple[Any, ...]) -> None:
        self._scheduler = scheduler
        self._entry = entry
        # Kept here too, so a fired or cancelled timer can be re-armed.
        self._fn = fn
        self._args = args

    @property
    def due_ms(self) -> int:
        """When it fires (or fired, or would have fired)."""
        due: int = self._entry[_DUE]
        return due

    @property
    def active(self) -> bool:
        """Scheduled and neither fired nor cancelled."""
        return self._entry[_FN] is not None

    def cancel(self) -> bool:
        """Stop it from firing. Returns whether it was still pending. O(1)."""
        entry = self._entry
        if entry[_FN] is None:
            return False
        entry[_FN] = None
        entry[_ARGS] = ()
        self._scheduler._note_cancelled()
        return True

    def reschedule(self, delay_ms: int) -> None:
        """Fire ``delay_ms`` from now instead; re-arms a fired or cancelled timer too.

        Keeps the callback and arguments and takes a fresh insertion sequence.
        """
        self.reschedule_at(self._scheduler._now + delay_ms)

    def reschedule_at(self, due_ms: int) -> None:
        self.cancel()
        self._entry = self._scheduler._push_checked(due_ms, self._fn, self._args)

    def __repr__(self) -> str:
        state = "active" if self.active else "inactive"
        return f"<Timer due_ms={self.due_ms} {state} {getattr(self._fn, '__qualname__', self._fn)!s}>"


class Scheduler(simpy.Environment):
    """A SimPy environment with a timer heap merged into its event loop.

    ``timer(delay_ms, fn, *args)`` returns a cancellable ``Timer`` (the name
    mirrors ``timeout``; ``schedule`` stays SimPy's own, which SimPy's events
    call); ``post(delay_ms, fn, *args)`` is the handle-free fast path (message
    deliveries, which are never cancelled).
    """

    def __init__(self, initial_ms: int = 0) -> None:
        if isinstance(initial_ms, bool) or not isinstance(initial_ms, int) or initial_ms < 0:
            raise ValueError(f"initial_ms = {initial_ms!r}: must be an integer >= 0")
        super().__init__(initial_ms)
        self._now: int = initial_ms
        self._timers: list[list[Any]] = []
        self._seq = itertools.count(1)
        self._cancelled = 0
        # Event counts (timers fired + SimPy steps = the simulator's events); run() adds its share on return.
        self.timers_fired = 0
        self.simpy_steps = 0
        # Told of every event and the wall time it took, if set (bench/event_costs.py); None costs one test
        # an event.
        self.on_event: EventObserver | None = None

    @property
    def now_ms(self) -> int:
        return self._now

    # -- scheduling -------------------------------------------------------------

    def timer(self, delay_ms: int, fn: TimerCallback, *args: Any) -> Timer:
        """Call ``fn(*args)`` in ``delay_ms`` milliseconds (>= 0). Cancellable."""
        if type(delay_ms) is not int or delay_ms < 0:
            raise _bad_delay(delay_ms)
        entry = [self._now + delay_ms, next(self._seq), fn, args]
        heappush(self._timers, entry)
        return Timer(self, entry, fn, args)

    def timer_at(self, due_ms: int, fn: TimerCallback, *args: Any) -> Timer:
        """Call ``fn(*args)`` at ``due_ms`` (>= now). Cancellable."""
        return Timer(self, self._push_checked(due_ms, fn, args), fn, args)

    def post(self, delay_ms: int, fn: TimerCallback, *args: Any) -> None:
        """Call ``fn(*args)`` in ``delay_ms`` milliseconds; no handle, cannot be cancelled."""
        if type(delay_ms) is not int or delay_ms < 0:
            raise _bad_delay(delay_ms)
        heappush(self._timers, [self._now + delay_ms, next(self._seq), fn, args])

    def post_at(self, due_ms: int, fn: TimerCallback, *args: Any) -> None:
        """Call ``fn(*args)`` at ``due_ms`` (>= now); no handle, cannot be cancelled."""
        if type(due_ms) is not int or due_ms < self._now:
            raise ValueError(f"due_ms = {due_ms!r}: must be an integer >= now ({self._now})")
        heappush(self._timers, [due_ms, next(self._seq), fn, args])

    def reserve_seq(self) -> int:
        """A place among the timers due in the same millisecond, taken now for a timer set later with
        ``timer_at_seq`` (it then fires where a timer set now would have)."""
        return next(self._seq)

    def timer_at_seq(self, due_ms: int, seq: int, fn: TimerCallback, *args: Any) -> Timer:
        """``timer_at`` with the place ``seq`` from ``reserve_seq`` (each place used once)."""
        if type(due_ms) is not int or due_ms < self._now:
            raise ValueError(f"due_ms = {due_ms!r}: must be an integer >= now ({self._now})")
        entry = [due_ms, seq, fn, args]
        heappush(self._timers, entry)
        return Timer(self, entry, fn, args)

    def _push_checked(self, due_ms: int, fn: TimerCallback, args: tuple[Any, ...]) -> list[Any]:
        if type(due_ms) is not int or due_ms < self._now:
            raise ValueError(f"due_ms = {due_ms!r}: must be an integer >= now ({self._now})")
        entry = [due_ms, next(self._seq), fn, args]
        heappush(self._timers, entry)
        return entry

    def _note_cancelled(self) -> None:
        self._cancelled += 1
        timers = self._timers
        if self._cancelled > _COMPACT_MIN and self._cancelled * 2 > len(timers):
            # In place: run() holds a reference to this list.
            timers[:] = [entry for entry in timers if entry[_FN] is not None]
            heapify(timers)
            self._cancelled = 0

    # -- inspection ---------------------------------------------------------------

    @property
    def pending_timers(self) -> int:
        """Timers scheduled and neither fired nor cancelled."""
        return len(self._timers) - self._cancelled

    def next_timer_ms(self) -> int | None:
        """When the earliest live timer is due, or None."""
        timers = self._timers
        while timers and timers[0][_FN] is None:
            heappop(timers)
            self._cancelled -= 1
        return timers[0][_DUE] if timers else None

    def peek(self) -> float:
        """The time of the next SimPy event or timer (``simpy.core.Infinity`` if none)."""
        due = self.next_timer_ms()
        simpy_next = super().peek()
        return simpy_next if due is None or simpy_next <= due else due

    # -- running ------------------------------------------------------------------

    def step(self) -> None:
        """Process the next SimPy event or fire the next timer, whichever is earlier."""
        due = self.next_timer_ms()
        if due is not None and (not self._queue or due < self._queue[0][0]):
            entry = heappop(self._timers)
            fn, args = entry[_FN], entry[_ARGS]
            entry[_FN] = None
            self._now = due
            self.timers_fired += 1
            fn(*args)
            return
        super().step()
        self.simpy_steps += 1

    def run(self, until: int | float | Event | None = None) -> Any:
        """Like ``simpy.Environment.run``, with the timer heap merged in.

        ``until`` may be a time in integer ms (nothing due at that time runs) or an
        event; a float time is refused, it would turn the clock into a float.
        """
        if until is not None:
            if not isinstance(until, Event):
                if type(until) is not int:
                    raise ValueError(f"until = {until!r}: must be an integer time in ms (or an event)")
                at = until
                if at <= self._now:
                    raise ValueError(f"until ({at}) must be greater than the current simulation time")
                until = Event(self)
                until._ok = True
                until._value = None
                self.schedule(until, URGENT, at - self._now)
            elif until.callbacks is None:
                return until.value
            until.callbacks.append(StopSimulation.callback)
        try:
            self._loop()
        except StopSimulation as stop:
            return stop.args[0]
        except EmptySchedule:
            if until is not None:
                assert not until.triggered
                raise RuntimeError(f'No scheduled events left but "until" event was not triggered: {until}') from None
        return None

    def _loop(self) -> None:
        # The hot loop: timers inline, SimPy events through SimPy's own step().
        timers = self._timers
        queue = self._queue
        simpy_step = super().step
        on_event = self.on_event
        clock = time.perf_counter_ns
        fired = 0
        steps = 0
        try:
            while True:
                while timers:
                    entry = timers[0]
                    if queue and queue[0][0] <= entry[0]:
                        break
                    heappop(timers)
                    fn = entry[2]
                    if fn is None:
                        self._cancelled -= 1
                        continue
                    entry[2] = None
                    self._now = entry[0]
                    fired += 1
                    if on_event is None:
                        fn(*entry[3])
                    else:
                        started = clock()
                        fn(*entry[3])
                        on_event(fn, entry[3], clock() - started)
                if on_event is None:
                    simpy_step()
                else:
                    started = clock()
                    simpy_step()  # (a step that stops the run is not reported)
                    on_event(None, (), clock() - started)
                steps += 1
        finally:
            self.timers_fired += fired
            self.simpy_steps += steps


class DeadlineQueue:
    """Deadlines set in the order they fall due (one fixed timeout), under one timer.

    A request timeout is set for every request and nearly always cancelled by the answer. With a
    fixed timeout the deadlines come in the order the requests were sent, so they can wait in a
    queue with one timer, armed for the oldest whose key is still ``live``: a request costs an
    append, not a timer that stays in the heap long after it is cancelled.

    It behaves as a timer per key would: ``add`` takes the key's place among the timers due in the
    same millisecond (``Scheduler.reserve_seq``) and the queue's timer is armed at that place, so
    ``expire(key)`` runs exactly ``timeout_ms`` after ``add``, in the same order relative to every
    other timer, for each key still live then. The one difference: a key answered after the timer
    was armed for it lets the timer fire and do nothing (an event with no effect and no trace).
    """

    __slots__ = ("_entries", "_expire", "_live", "_scheduler", "_timer", "timeout_ms")

    def __init__(self, scheduler: Scheduler, timeout_ms: int, live: Container[int],
                 expire: Callable[[int], object]) -> None:
        self._scheduler = scheduler
        self.timeout_ms = timeout_ms
        self._live = live
        self._expire = expire
        self._entries: deque[tuple[int, int, int]] = deque()  # (due_ms, seq, key), in (due, seq) order
        self._timer: Timer | None = None

    def add(self, key: int) -> None:
        """``key``'s deadline is ``timeout_ms`` from now."""
        scheduler = self._scheduler
        entry = (scheduler._now + self.timeout_ms, scheduler.reserve_seq(), key)
        self._entries.append(entry)
        if self._timer is None:
            self._arm(entry)

    def clear(self) -> None:
        self._entries.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, entry: tuple[int, int, int]) -> None:
        self._timer = self._scheduler.timer_at_seq(entry[0], entry[1], self._fire)

    def _fire(self) -> None:
        # The front entry is the one this timer was armed for: entries leave only from the front.
        # ``_timer`` stays this (fired) timer while the callback runs, so a key it adds, due after the
        # ones still queued, arms nothing; a ``clear`` in it drops the timer, and the ``add`` after
        # that arms one for the new front.
        fired = self._timer
        entries, live = self._entries, self._live
        key = entries.popleft()[2]
        if key in live:
            self._expire(key)
        if self._timer is not fired:
            return
        self._timer = None
        while entries and entries[0][2] not in live:
            entries.popleft()
        if entries:
            self._arm(entries[0])


def _bad_delay(delay_ms: object) -> ValueError:
    return ValueError(f"delay_ms = {delay_ms!r}: must be an integer >= 0")
