"""``Monitors`` calls each hook on exactly the monitors that override it, in their order. The plan of who
overrides what is worked out once per list of monitor classes: a second set of monitors of the same
classes (the next run's) must be called, never the first set's, and another list of classes gets its own."""

from __future__ import annotations

import inspect
from typing import Any

from invariants.fan_out import HOOKS, Monitors
from invariants.sink import Monitor, ViolationSink
from model.sim.protocol import Observer

_ANY: Any = None  # the hooks' arguments, which these monitors do not look at


class _Steps(Monitor):
    def __init__(self, sink: ViolationSink, calls: list[tuple[Any, ...]]) -> None:
        super().__init__(sink)
        self.calls = calls

    def on_share_partition_step(self, partition: Any, bound: int, now_ms: int) -> None:
        self.calls.append((self, "step", bound, now_ms))


class _Events(Monitor):
    def __init__(self, sink: ViolationSink, calls: list[tuple[Any, ...]]) -> None:
        super().__init__(sink)
        self.calls = calls

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        self.calls.append((self, kind, now_ms, fields))


def test_each_set_of_monitors_of_the_same_classes_gets_the_calls_of_its_own_run() -> None:
    calls: list[tuple[Any, ...]] = []
    sink = ViolationSink(0)
    first = [_Steps(sink, calls), _Events(sink, calls), _Steps(sink, calls)]
    Monitors(first, sink).on_share_partition_step(_ANY, 7, 1)
    second = [_Steps(sink, calls), _Events(sink, calls), _Steps(sink, calls)]
    observer = Monitors(second, sink)
    calls.clear()
    observer.on_share_partition_step(_ANY, 8, 2)
    observer.on_event("leader.elect", 3, broker=1)
    observer.on_acquire(_ANY, "m", [], 0, 4)  # nobody overrides it: a no-op
    assert calls == [(second[0], "step", 8, 2), (second[2], "step", 8, 2),
                     (second[1], "leader.elect", 3, {"broker": 1})]


def test_another_list_of_classes_gets_its_own_plan() -> None:
    calls: list[tuple[Any, ...]] = []
    sink = ViolationSink(0)
    Monitors([_Steps(sink, calls), _Events(sink, calls)], sink)
    events_first = [_Events(sink, calls), _Steps(sink, calls)]
    Monitors(events_first, sink).on_share_partition_step(_ANY, 5, 6)
    Monitors(events_first, sink).on_event("x", 6)
    assert calls == [(events_first[1], "step", 5, 6), (events_first[0], "x", 6, {})]


def test_monitors_passes_on_every_hook_of_the_observer() -> None:
    # A hook Observer gains must reach the monitors: Monitors overrides each, and HOOKS names each.
    hooks = sorted(name for name in dir(Observer) if name.startswith("on_"))
    assert sorted(HOOKS) == hooks
    assert all(getattr(Monitors, hook) is not getattr(Observer, hook) for hook in hooks)
    # ... with the very signature (names, kinds, defaults): a caller's default is the monitors' default.
    assert all(inspect.signature(getattr(Monitors, hook)) == inspect.signature(getattr(Observer, hook))
               for hook in hooks)


def test_every_hook_reaches_a_monitor_that_overrides_it_with_its_arguments() -> None:
    # Each hook is written out by hand in Monitors: one that passed an argument in the wrong place (or
    # dropped a keyword) would go unnoticed by every run whose monitor ignores that argument.
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class _All(Monitor):
        pass

    for hook in HOOKS:
        def record(self: Any, *args: Any, _hook: str = hook, **kwargs: Any) -> None:
            calls.append((_hook, args, kwargs))
        setattr(_All, hook, record)
    sink = ViolationSink(0)
    observer = Monitors([_All(sink)], sink)
    for hook in HOOKS:
        parameters = list(inspect.signature(getattr(Observer, hook)).parameters.values())[1:]
        args = tuple(f"{hook}:{p.name}" for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD)
        kwargs = {p.name: f"{hook}:{p.name}" for p in parameters if p.kind is p.KEYWORD_ONLY}
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            kwargs["extra"] = "field"
        getattr(observer, hook)(*args, **kwargs)
        assert calls[-1] == (hook, args, kwargs)
    assert len(calls) == len(HOOKS)
