"""The invariants a run checks, for the tables of the reports: the catalogue (``invariants/catalogue.py``)."""

from __future__ import annotations

from typing import NamedTuple


class Checked(NamedTuple):
    id: str  # the catalogue id a violation names
    kind: str  # "state", "transition" or "liveness"
    statement: str
    spec: str  # the SPEC.md rule ids it protects, e.g. "SP-5, E-4"


def checked_invariants() -> list[Checked]:
    """Every catalogue entry, in catalogue order."""
    from invariants.catalogue import CATALOGUE

    return [Checked(entry.id, entry.kind, entry.statement, ", ".join(entry.spec)) for entry in CATALOGUE]


def find(invariant: str) -> Checked | None:
    """The entry of ``invariant``: by its id, else the first that protects that SPEC rule."""
    entries = checked_invariants()
    return (next((c for c in entries if c.id == invariant), None)
            or next((c for c in entries if invariant in c.spec.replace(" ", "").split(",")), None))
