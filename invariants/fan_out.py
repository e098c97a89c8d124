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
                 "on_share_fetch_session", "on_share_fetch_waiting")


class Monitors(Observer):
    """Calls each hook on the monitors that override it."""

    def __init__(self, monitors: Sequence[Monitor], sink: ViolationSink) -> None:
        self.monitors = tuple(monitors)
        self.sink = sink
        overrides = [(m, _overridden(type(m))) for m in self.monitors]
        for hook in _HOOKS:
            targets = tuple(getattr(m, hook) for m, hooks in overrides if hook in hooks)
            if not targets:
                setattr(self, hook, getattr(Observer, hook).__get__(self))
            else:
                setattr(self, hook, targets[0] if len(targets) == 1 else FanOut(targets))

    @property
    def violations(self) -> list[Violation]:
        return self.sink.violations

    def finish(self, now_ms: int) -> None:
        for monitor in self.monitors:
            monitor.finish(now_ms)


_OVERRIDDEN: Final[dict[type, frozenset[str]]] = {}


def _overridden(monitor_type: type) -> frozenset[str]:
    """The hooks ``monitor_type`` overrides; worked out once per class (every run builds its monitors)."""
    hooks = _OVERRIDDEN.get(monitor_type)
    if hooks is None:
        hooks = _OVERRIDDEN[monitor_type] = frozenset(
            hook for hook in _HOOKS if getattr(monitor_type, hook) is not getattr(Observer, hook))
    return hooks
