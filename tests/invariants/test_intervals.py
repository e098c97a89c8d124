"""IntervalSet's queries against a plain set of offsets (Hypothesis)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from invariants.intervals import IntervalSet

ranges = st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=8)


@given(ranges, st.integers(0, 70), st.integers(0, 70))
def test_missing_runs_are_the_maximal_runs_of_offsets_not_in_the_set(added: list[tuple[int, int]], first: int,
                                                                     last: int) -> None:
    intervals, plain = IntervalSet(), set[int]()
    for start, length in added:
        intervals.add(start, start + length)
        plain.update(range(start, start + length + 1))
    runs = list(intervals.missing_runs(first, last))
    expected = [o for o in range(first, last + 1) if o not in plain]
    assert [o for lo, hi in runs for o in range(lo, hi + 1)] == expected
    for (_, hi), (lo, _) in pairwise(runs):
        assert lo > hi + 1, "runs are maximal: a covered offset lies between two"
    for lo, hi in runs:
        assert lo <= hi
        assert intervals.first_missing(lo, hi) == lo
