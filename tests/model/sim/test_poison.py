"""Poison records: a Bernoulli process per partition, the same whoever asks and in whatever order."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from model.sim.poison import _PoisonStream, is_poison, poison_between


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    rate=st.floats(0.001, 0.5),
    queries=st.lists(st.tuples(st.integers(0, 3_000), st.integers(0, 200)), min_size=1, max_size=12),
)
def test_answers_do_not_depend_on_who_asked_before(seed: int, rate: float, queries: list[tuple[int, int]]) -> None:
    # The cached stream is extended by whichever query reaches furthest first; a fresh stream drawn
    # in one go must give the same offsets.
    whole = _PoisonStream(seed, "t", 3, rate).through(3_300)
    for first, span in queries:
        last = first + span
        assert poison_between(seed, "t", 3, first, last, rate) == [o for o in whole if first <= o <= last]


def test_offsets_are_poison_at_the_rate_independently_of_the_partition() -> None:
    rate, n = 0.01, 200_000
    for partition in (0, 1):
        count = len(poison_between(7, "t", partition, 0, n - 1, rate))
        assert abs(count - rate * n) < 5 * math.sqrt(n * rate * (1 - rate))
    assert poison_between(7, "t", 0, 0, 999, rate) != poison_between(7, "t", 1, 0, 999, rate)


def test_rate_zero_and_one() -> None:
    assert poison_between(1, "t", 0, 0, 99, 0.0) == []
    assert poison_between(1, "t", 0, 10, 19, 1.0) == list(range(10, 20))
    assert is_poison(1, "t", 0, 5, 1.0) and not is_poison(1, "t", 0, 5, 0.0)


def test_a_vanishing_rate_has_no_poison_and_does_not_overflow() -> None:
    for rate in (1e-310, 5e-324, 1e-300):
        assert poison_between(5, "t", 0, 0, 10**12, rate) == []


def test_is_poison_agrees_with_poison_between() -> None:
    listed = set(poison_between(3, "t", 0, 0, 2_000, 0.05))
    assert {o for o in range(2_001) if is_poison(3, "t", 0, o, 0.05)} == listed
