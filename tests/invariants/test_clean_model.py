"""With every check of the catalogue on, the correct model violates nothing: every named library
scenario on a few seeds, and the 20 000-record ``swarm_standard`` on some of its known-clean seeds (the rest
are in ``tests/model/sim/test_swarm_clean.py``, which runs the same monitors)."""

from __future__ import annotations

import pytest

from model.sim.runner import run
from scenarios import library

SEEDS = (1, 2)
SWARM_SEEDS = (2, 11, 35)  # known clean (tests/model/sim/test_swarm_clean.py), quick ones
LONG = {"swarm_standard", "standard", "happy", "consumer_group"}  # 20 000-record scenarios: one seed each


def _cases() -> list[tuple[str, int]]:
    cases = [(name, seed) for name in library.names() if name not in LONG for seed in SEEDS]
    cases += [(name, 1) for name in sorted(LONG - {"swarm_standard"})]
    return cases + [("swarm_standard", seed) for seed in SWARM_SEEDS]


@pytest.mark.parametrize(("name", "seed"), _cases())
def test_the_correct_model_violates_no_invariant(name: str, seed: int) -> None:
    result = run(library.get(name), seed, stop_on_first_violation=False)
    assert result.violations == [], [f"{v.invariant} ({v.event}): {v.message}" for v in result.violations]
