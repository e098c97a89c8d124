"""``Monitors``: the one ``Observer`` the cluster is given; it fans each hook out to the monitors
that override it.

Each hook is bound once, per instance, to the overriding monitors' methods (or to a single one
directly), so a hook no monitor watches costs one no-op call. Setting methods per instance is
what a mypyc native class cannot do, so this module stays interpreted in the compiled build
(``setup.py``); ``Observer`` allows interpreted subclasses for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from invariants.sink import FanOut, Monitor, ViolationSink
from invariants.violation import Violation
from model.sim.protocol import Observer

_HOOKS: Final = ("on_acquire", "on_ack_confirmed", "on_share_partition_step", "on_write_accepted",
                 "on_leader_start", "on_event", "on_acknowledge", "on_write_completed", "on_state_read",
                 "on_records_committed", "on_transaction_ended", "on_share_state_handled", "on_share_state_created",
                 "on_share_state_request", "on_share_state_committed",
                 "on_share_coordinator_loaded", "on_share_state_pruning",
                 "on_group_coordinator_step", "on_group_records_committed", "on_consumer_reconciled",
                 "on_share_session", "on_share_session_evicted", "on_dlq_committed", "on_dlq_given_up",
                 "on_share_fetch_session", "on_share_fetch_waiting", "on_consumer_heartbeat", "on_group_request")


class Monitors(Observer):
    """Calls each hook on the monitors that override it."""

    def __init__(self, monitors: Sequence[Monitor], sink: ViolationSink) -> None:
        self.monitors = tuple(monitors)
        self.sink = sink
        for hook, indexes in _plan(tuple(type(m) for m in self.monitors)):
            if not indexes:
                setattr(self, hook, getattr(Observer, hook).__get__(self))
            elif len(indexes) == 1:
                setattr(self, hook, getattr(self.monitors[indexes[0]], hook))
            else:
                setattr(self, hook, FanOut(tuple(getattr(self.monitors[i], hook) for i in indexes)))

    @property
    def violations(self) -> list[Violation]:
        return self.sink.violations

    def finish(self, now_ms: int) -> None:
        for monitor in self.monitors:
            monitor.finish(now_ms)


# Monitor classes -> for each hook, the positions of the monitors that override it. Every run builds its
# monitors (twice: standard_monitors, then the cluster with its tracker), always of the same classes;
# working out who overrides what was a third of building a cluster on the compiled build.
_PLANS: Final[dict[tuple[type, ...], tuple[tuple[str, tuple[int, ...]], ...]]] = {}


def _plan(monitor_types: tuple[type, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    plan = _PLANS.get(monitor_types)
    if plan is None:
        overrides = [_overridden(t) for t in monitor_types]
        plan = _PLANS[monitor_types] = tuple(
            (hook, tuple(i for i, hooks in enumerate(overrides) if hook in hooks)) for hook in _HOOKS)
    return plan


def _overridden(monitor_type: type) -> frozenset[str]:
    """The hooks ``monitor_type`` overrides."""
    return frozenset(hook for hook in _HOOKS if getattr(monitor_type, hook) is not getattr(Observer, hook))
