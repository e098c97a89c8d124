"""What a monitor reports when an invariant breaks (DESIGN.md principle 3).

A violation names the rule it breaks by its SPEC.md id, when (simulated time)
and in which run (seed) it happened, a readable message, and a compact excerpt
of the state that shows it (plain JSON values only: a few offsets, epochs and
member ids, never a whole window).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Violation:
    invariant: str  # a SPEC.md id, e.g. "SP-6"
    time_ms: int
    seed: int
    message: str
    state: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "time_ms": self.time_ms,
            "seed": self.seed,
            "message": self.message,
            "state": dict(self.state),
        }

    def describe(self) -> str:
        return f"{self.invariant} at {self.time_ms} ms: {self.message}"
