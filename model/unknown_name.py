"""The one error for a name looked up in a registry (scenario, mutant, invariant) that is not there."""

from __future__ import annotations

from collections.abc import Iterable


class UnknownName(KeyError):
    """``unknown <kind> 'x'; known: a, b, c`` — the message lists what would have been accepted."""

    kind = "name"

    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(name)
        self.name = name
        self.known = list(known)

    def __str__(self) -> str:
        return f"unknown {self.kind} {self.name!r}; known: {', '.join(self.known)}"
