"""What a monitor reports when an invariant breaks (DESIGN.md principle 3).

A violation names the invariant it breaks by its catalogue id
(``invariants/catalogue.py``, e.g. "spso-monotonic") with the SPEC.md rule ids
that invariant protects, when (simulated time) and in which run (seed) it
happened, the event that broke it (a short string: "acquire c3",
"write accepted", "liveness deadline" …), a readable message, and a compact
excerpt of the state that shows it (plain JSON values only: a few offsets,
epochs and member ids, never a whole window).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    invariant: str  # a catalogue id, e.g. "spso-monotonic"
    time_ms: int
    seed: int
    message: str
    state: Mapping[str, Any] = field(default_factory=dict)
    event: str = ""  # the step that broke it
    spec: tuple[str, ...] = ()  # the SPEC.md rule ids the invariant protects

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "spec": list(self.spec),
            "time_ms": self.time_ms,
            "seed": self.seed,
            "event": self.event,
            "message": self.message,
            "state": dict(self.state),
        }

    def describe(self) -> str:
        return f"{self.invariant} at {self.time_ms} ms: {self.message}"
