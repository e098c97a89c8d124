"""PersisterStateBatchCombinerTest, against ``model.core.state_batches.combine_state_batches``.

Kafka's four test methods each run a table of cases (batches so far, new batches, start offset,
expected result). The tables are restated here as data, one pytest case per row, named by the
row's own description; each row's batch is (first, last, delivery state, delivery count).
"""

from __future__ import annotations

import pytest

from model.core.state_batches import combine_state_batches
from tests.conformance.builders import as_tuples, batch

Row = tuple[str, list[tuple[int, int, int, int]], list[tuple[int, int, int, int]],
            list[tuple[int, int, int, int]], int]


def _combine(so_far: list[tuple[int, int, int, int]], new: list[tuple[int, int, int, int]],
             start: int) -> list[tuple[int, int, int, int]]:
    return as_tuples(combine_state_batches([batch(*b) for b in so_far], [batch(*b) for b in new], start))


DIFFERENT_STATES: list[Row] = [
    ("new higher, same range", [(100, 110, 0, 1)], [(100, 110, 0, 2)], [(100, 110, 0, 2)], -1),
    ("new lower, same range", [(100, 110, 0, 3)], [(100, 110, 0, 1)], [(100, 110, 0, 3)], -1),
    ("new higher, same first, shorter", [(100, 110, 0, 1)], [(100, 105, 0, 2)],
     [(100, 105, 0, 2), (106, 110, 0, 1)], -1),
    ("new lower, same first, shorter", [(100, 110, 0, 3)], [(100, 105, 0, 1)], [(100, 110, 0, 3)], -1),
    ("new higher, same first, longer", [(100, 110, 0, 1)], [(100, 115, 0, 2)], [(100, 115, 0, 2)], -1),
    ("new lower, same first, longer", [(100, 110, 0, 3)], [(100, 115, 0, 1)],
     [(100, 110, 0, 3), (111, 115, 0, 1)], -1),
    ("new higher, strictly inside", [(100, 115, 0, 1)], [(105, 110, 1, 1)],
     [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)], -1),
    ("new lower, strictly inside", [(100, 115, 1, 1)], [(105, 110, 0, 1)], [(100, 115, 1, 1)], -1),
    ("new higher, later first, same last", [(100, 110, 0, 1)], [(105, 110, 0, 2)],
     [(100, 104, 0, 1), (105, 110, 0, 2)], -1),
    ("new lower, later first, same last", [(100, 110, 0, 2)], [(105, 110, 0, 1)], [(100, 110, 0, 2)], -1),
    ("new higher, later first, later last", [(100, 110, 0, 1)], [(105, 115, 0, 2)],
     [(100, 104, 0, 1), (105, 115, 0, 2)], -1),
    ("new lower, later first, later last", [(100, 110, 0, 2)], [(105, 115, 0, 1)],
     [(100, 110, 0, 2), (111, 115, 0, 1)], -1),
]

SAME_STATE: list[Row] = [
    ("same range", [(100, 110, 0, 1)], [(100, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ("same first, new shorter", [(100, 110, 0, 1)], [(100, 105, 0, 1)], [(100, 110, 0, 1)], -1),
    ("same first, new longer", [(100, 110, 0, 1)], [(100, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ("new strictly inside", [(100, 110, 0, 1)], [(105, 108, 0, 1)], [(100, 110, 0, 1)], -1),
    ("new later first, same last", [(100, 110, 0, 1)], [(105, 110, 0, 1)], [(100, 110, 0, 1)], -1),
    ("new later first, later last", [(100, 110, 0, 1)], [(105, 115, 0, 1)], [(100, 115, 0, 1)], -1),
    ("new contiguous after", [(100, 110, 0, 1)], [(111, 115, 0, 1)], [(100, 115, 0, 1)], -1),
]

COMPLEX: list[Row] = [
    ("overlapping new batches, same state", [(100, 110, 0, 1), (121, 130, 0, 1)],
     [(111, 119, 2, 2), (116, 123, 2, 2)], [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)], -1),
    ("overlapping new batches, different priority", [(100, 110, 0, 1)],
     [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)], [(100, 100, 0, 1), (101, 120, 3, 2)], -1),
    ("overlapping new batches, with pruning", [(100, 110, 0, 1), (121, 130, 0, 1)],
     [(111, 119, 2, 2), (116, 123, 2, 2)], [(120, 123, 2, 2), (124, 130, 0, 1)], 120),
    ("several higher-state updates", [(111, 120, 0, 1)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)],
     [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)], -1),
]

CORNER: list[Row] = [
    ("current pruned at a start offset midway", [(100, 130, 0, 1)], [], [(120, 130, 0, 1)], 120),
    ("new pruned at a start offset midway", [], [(100, 130, 0, 1)], [(120, 130, 0, 1)], 120),
    ("both empty", [], [], [], 120),
    ("null (empty) current and new", [], [], [], -1),
    ("duplicate equal batches before a later one leave the gap", [(100, 110, 0, 1)],
     [(100, 110, 0, 1), (120, 130, 2, 1)], [(100, 110, 0, 1), (120, 130, 2, 1)], -1),
    ("duplicate state-2 batches before a later state-0 one leave the gap", [(0, 5, 2, 1)],
     [(0, 5, 2, 1), (11, 15, 0, 1)], [(0, 5, 2, 1), (11, 15, 0, 1)], -1),
    ("duplicate state-0 batches before a later state-0 one leave the gap", [(0, 5, 0, 1)],
     [(0, 5, 0, 1), (11, 15, 0, 1)], [(0, 5, 0, 1), (11, 15, 0, 1)], -1),
]


def _ids(rows: list[Row]) -> list[str]:
    return [row[0] for row in rows]


@pytest.mark.parametrize("row", DIFFERENT_STATES, ids=_ids(DIFFERENT_STATES))
def test_state_batch_combine_different_states(row: Row) -> None:
    """PersisterStateBatchCombinerTest.testStateBatchCombineDifferentStates"""
    _, so_far, new, expected, start = row
    assert _combine(so_far, new, start) == expected


@pytest.mark.parametrize("row", SAME_STATE, ids=_ids(SAME_STATE))
def test_state_batch_combine_same_state(row: Row) -> None:
    """PersisterStateBatchCombinerTest.testStateBatchCombineSameState"""
    _, so_far, new, expected, start = row
    assert _combine(so_far, new, start) == expected


@pytest.mark.parametrize("row", COMPLEX, ids=_ids(COMPLEX))
def test_state_batch_combine_complex_cases(row: Row) -> None:
    """PersisterStateBatchCombinerTest.testStateBatchCombineComplexCases"""
    _, so_far, new, expected, start = row
    assert _combine(so_far, new, start) == expected


@pytest.mark.parametrize("row", CORNER, ids=_ids(CORNER))
def test_state_batch_combine_corner_cases(row: Row) -> None:
    """PersisterStateBatchCombinerTest.testStateBatchCombineCornerCases"""
    _, so_far, new, expected, start = row
    assert _combine(so_far, new, start) == expected
