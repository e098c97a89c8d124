"""Where monitors report: the ``ViolationSink`` of a run, and the ``Monitor`` base class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mypy_extensions import mypyc_attr

from invariants.ids import spec_of
from invariants.violation import Violation
from model.sim.protocol import Observer


class ViolationSink:
    """Collects violations for a run; ``on_violation`` lets the runner stop at the first."""

    def __init__(self, seed: int, on_violation: Callable[[Violation], None] | None = None) -> None:
        self.seed = seed
        self.violations: list[Violation] = []
        self.on_violation = on_violation

    def report(self, invariant: str, now_ms: int, message: str, *, event: str = "", **state: Any) -> None:
        """``invariant``: a catalogue id; ``event``: the step that broke it; ``state``: a compact excerpt."""
        violation = Violation(invariant, now_ms, self.seed, message, state, event, spec_of(invariant))
        self.violations.append(violation)
        if self.on_violation is not None:
            self.on_violation(violation)


@mypyc_attr(allow_interpreted_subclasses=True)  # a monitor of a test or a user needs no compiling
class Monitor(Observer):
    """A monitor reports to ``sink``; ``finish`` runs the end-of-run checks."""

    def __init__(self, sink: ViolationSink) -> None:
        self.sink = sink

    def finish(self, now_ms: int) -> None:
        pass
