"""SC-4: clipping, overlap resolution and adjacent merge of persisted state batches."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.share_state import PERSISTED_STATES, UNKNOWN_OFFSET, RecordState, StateBatch
from model.core.state_batches import clip_state_batches, combine_state_batches, is_canonical, overlay_state_batches

AVAILABLE = RecordState.AVAILABLE
ACKED = RecordState.ACKNOWLEDGED
ARCHIVED = RecordState.ARCHIVED


def b(first: int, last: int, state: RecordState, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


# --- clipping to the start offset ---------------------------------------------------------


def test_clip_drops_batches_below_start_and_trims_the_straddler() -> None:
    batches = [b(0, 4, AVAILABLE, 1), b(5, 9, ACKED, 1), b(10, 12, ARCHIVED, 2)]
    assert clip_state_batches(batches, 7) == [b(7, 9, ACKED, 1), b(10, 12, ARCHIVED, 2)]
    assert clip_state_batches(batches, 10) == [b(10, 12, ARCHIVED, 2)]
    assert clip_state_batches(batches, 13) == []


def test_start_offset_minus_one_clips_nothing() -> None:
    batches = [b(0, 4, AVAILABLE, 1)]
    assert clip_state_batches(batches, UNKNOWN_OFFSET) == batches
    assert combine_state_batches(batches, [], UNKNOWN_OFFSET) == tuple(batches)


def test_clip_applies_to_the_new_batches_too() -> None:
    assert combine_state_batches([b(0, 9, AVAILABLE, 1)], [b(3, 12, ACKED, 1)], 11) == (b(11, 12, ACKED, 1),)


# --- overlap: higher delivery count wins, then the higher state (Kafka's combiner) ----------


def test_higher_delivery_count_wins_whichever_write_is_newer() -> None:
    # The newer batch has the lower count: the stored (older) one keeps those offsets.
    assert combine_state_batches([b(0, 9, AVAILABLE, 3)], [b(2, 4, ACKED, 2)]) == (b(0, 9, AVAILABLE, 3),)
    # The newer batch has the higher count: it replaces the middle and splits the old one.
    assert combine_state_batches([b(0, 9, AVAILABLE, 1)], [b(2, 4, AVAILABLE, 2)]) == (
        b(0, 1, AVAILABLE, 1),
        b(2, 4, AVAILABLE, 2),
        b(5, 9, AVAILABLE, 1),
    )


def test_equal_counts_the_higher_state_wins() -> None:
    # Archived (4) > Acknowledged (2) > Available (0).
    assert combine_state_batches([b(0, 5, ARCHIVED, 1)], [b(3, 8, AVAILABLE, 1)]) == (
        b(0, 5, ARCHIVED, 1),
        b(6, 8, AVAILABLE, 1),
    )
    assert combine_state_batches([b(3, 8, AVAILABLE, 1)], [b(0, 5, ACKED, 1)]) == (
        b(0, 5, ACKED, 1),
        b(6, 8, AVAILABLE, 1),
    )
    assert combine_state_batches([b(0, 4, ACKED, 2)], [b(0, 4, ARCHIVED, 2)]) == (b(0, 4, ARCHIVED, 2),)


def test_the_cases_of_kafkas_combiner() -> None:
    # Same first offset, candidate longer and weaker: prev kept, candidate's tail kept.
    assert combine_state_batches([b(0, 4, ACKED, 2)], [b(0, 9, AVAILABLE, 1)]) == (
        b(0, 4, ACKED, 2),
        b(5, 9, AVAILABLE, 1),
    )
    # Same last offset, candidate stronger: prev keeps only its head.
    assert combine_state_batches([b(0, 9, AVAILABLE, 1)], [b(5, 9, ARCHIVED, 1)]) == (
        b(0, 4, AVAILABLE, 1),
        b(5, 9, ARCHIVED, 1),
    )
    # Partial overlap, candidate weaker: candidate keeps only what prev does not cover.
    assert combine_state_batches([b(0, 6, AVAILABLE, 3)], [b(4, 9, ACKED, 1)]) == (
        b(0, 6, AVAILABLE, 3),
        b(7, 9, ACKED, 1),
    )


def test_overlapping_batches_within_one_write_are_combined() -> None:
    assert combine_state_batches([], [b(0, 5, AVAILABLE, 1), b(3, 7, AVAILABLE, 2), b(6, 9, AVAILABLE, 1)]) == (
        b(0, 2, AVAILABLE, 1),
        b(3, 7, AVAILABLE, 2),
        b(8, 9, AVAILABLE, 1),
    )


# --- adjacent equal ranges merge --------------------------------------------------------------


def test_adjacent_equal_batches_merge_and_unequal_ones_do_not() -> None:
    assert combine_state_batches([b(0, 4, ACKED, 1)], [b(5, 9, ACKED, 1)]) == (b(0, 9, ACKED, 1),)
    assert combine_state_batches([b(0, 4, ACKED, 1)], [b(5, 9, ACKED, 2)]) == (b(0, 4, ACKED, 1), b(5, 9, ACKED, 2))
    assert combine_state_batches([b(0, 4, ACKED, 1)], [b(6, 9, ACKED, 1)]) == (b(0, 4, ACKED, 1), b(6, 9, ACKED, 1))


def test_a_split_piece_merges_with_its_equal_neighbour() -> None:
    # Kafka's combiner can leave [0-4] and [5-6] apart here; the canonical form joins them.
    current = [b(0, 4, ACKED, 1), b(5, 9, AVAILABLE, 1)]
    assert combine_state_batches(current, [b(5, 6, ACKED, 1)]) == (b(0, 6, ACKED, 1), b(7, 9, AVAILABLE, 1))


# --- the rule as a whole: a per-offset maximum -------------------------------------------------

batches_st = st.lists(
    st.builds(
        lambda first, length, state, count: StateBatch(first, first + length, state, count),
        st.integers(0, 40),
        st.integers(0, 8),
        st.sampled_from(PERSISTED_STATES),
        st.integers(0, 4),
    ),
    max_size=6,
)


def per_offset(batches: list[StateBatch] | tuple[StateBatch, ...], start_offset: int) -> dict[int, tuple[int, int]]:
    """The reference semantics: offset → max (delivery count, state) over every batch covering it."""
    offsets: dict[int, tuple[int, int]] = {}
    for batch in batches:
        for offset in range(batch.first_offset, batch.last_offset + 1):
            if start_offset != UNKNOWN_OFFSET and offset < start_offset:
                continue
            value = (batch.delivery_count, int(batch.delivery_state))
            offsets[offset] = max(offsets.get(offset, value), value)
    return offsets


@settings(max_examples=300, deadline=None)
@given(current=batches_st, new=batches_st, start_offset=st.integers(-1, 45))
def test_combine_is_the_per_offset_maximum_in_canonical_form(
    current: list[StateBatch], new: list[StateBatch], start_offset: int
) -> None:
    combined = combine_state_batches(current, new, start_offset)
    assert per_offset(combined, UNKNOWN_OFFSET) == per_offset(current + new, start_offset)
    assert is_canonical(combined, start_offset)


@settings(max_examples=300, deadline=None)
@given(stored=batches_st, new=batches_st, start_offset=st.integers(-1, 45))
def test_overlay_on_canonical_batches_is_the_per_offset_maximum(
    stored: list[StateBatch], new: list[StateBatch], start_offset: int
) -> None:
    # The coordinator's fast path: the stored batches are canonical, each new batch is laid over them.
    current = combine_state_batches([], stored)
    overlaid = overlay_state_batches(current, new, start_offset)
    assert per_offset(overlaid, UNKNOWN_OFFSET) == per_offset(list(current) + new, start_offset)
    assert is_canonical(overlaid, start_offset)


@settings(max_examples=200, deadline=None)
@given(first=batches_st, second=batches_st, third=batches_st)
def test_applying_updates_one_by_one_equals_applying_them_together(
    first: list[StateBatch], second: list[StateBatch], third: list[StateBatch]
) -> None:
    # Replay applies updates one at a time; a snapshot combines them at once. Same answer.
    stepwise = combine_state_batches(combine_state_batches(first, second), third)
    assert stepwise == combine_state_batches([], first + second + third)


def test_is_canonical_rejects_each_defect() -> None:
    assert is_canonical([b(0, 4, ACKED, 1), b(6, 9, ACKED, 1)])
    assert not is_canonical([b(0, 4, ACKED, 1), b(4, 9, ACKED, 2)])  # overlap
    assert not is_canonical([b(5, 9, ACKED, 1), b(0, 3, ACKED, 2)])  # unsorted
    assert not is_canonical([b(0, 4, ACKED, 1), b(5, 9, ACKED, 1)])  # adjacent equal
    assert not is_canonical([b(0, 4, ACKED, 1)], start_offset=2)  # below the start offset
    assert not is_canonical([b(4, 0, ACKED, 1)])  # empty range
