"""SC-4: combining persisted state batches.

The share coordinator keeps, per share-partition, a list of state batches
(offset range, delivery state, delivery count). A ShareUpdate is applied to it,
and a ShareSnapshot is built from it, by one rule, the one Kafka's
``PersisterStateBatchCombiner`` implements (*impl*):

1. Clip: with a start offset s ≠ -1, offsets below s are dropped (a batch that
   straddles s keeps ``[s, last]``). s = -1 means "start offset unchanged": no
   clipping.
2. Overlap: for each offset covered by several batches, the batch with the
   higher delivery count wins; on equal counts the higher delivery state wins
   (Available 0 < Acknowledged 2 < Archived 4). Which write came later does
   not matter. Durable counts therefore never fall (SP-11) and a terminal state
   is never overwritten by Available with the same count (SP-1).
3. Adjacent batches with the same state and count are merged.

The result is canonical: sorted, non-overlapping, no two adjacent batches with
equal state and count. Kafka's combiner can leave two such equal neighbours
unmerged in rare split cases; the offsets' states are the same either way, so
ours is the normal form of Kafka's answer.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterable, Sequence

from model.core.share_state import UNKNOWN_OFFSET, StateBatch


def batch_priority(batch: StateBatch) -> tuple[int, int]:
    """Where two batches overlap the one with the larger priority wins (rule 2)."""
    return batch.delivery_count, int(batch.delivery_state)


def clip_state_batches(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    """Rule 1: drop offsets below ``start_offset`` (nothing when it is -1)."""
    if start_offset == UNKNOWN_OFFSET:
        return list(batches)
    clipped: list[StateBatch] = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = StateBatch(start_offset, batch.last_offset, batch.delivery_state, batch.delivery_count)
        clipped.append(batch)
    return clipped


def combine_state_batches(
    current: Sequence[StateBatch],
    new: Sequence[StateBatch],
    start_offset: int = UNKNOWN_OFFSET,
) -> tuple[StateBatch, ...]:
    """The canonical batches after applying ``new`` over ``current`` (rules 1–3).

    Neither input needs to be canonical. The rule is a per-offset maximum, so
    the result does not depend on the order of the batches or of the inputs.
    """
    if not is_canonical(current):
        current = _sweep(list(current))
    return overlay_state_batches(current, new, start_offset)


def overlay_state_batches(
    state_batches: Sequence[StateBatch],
    new: Sequence[StateBatch],
    start_offset: int = UNKNOWN_OFFSET,
) -> tuple[StateBatch, ...]:
    """``combine_state_batches`` for ``state_batches`` already canonical (not checked).

    The coordinator's stored batches always are, so applying an update costs a
    binary search and a recomputation around each new batch, not a full pass.
    """
    result = _clip_canonical(state_batches, start_offset)
    for batch in clip_state_batches(new, start_offset):
        _overlay(result, batch)
    return tuple(result)


def _clip_canonical(batches: Sequence[StateBatch], start_offset: int) -> list[StateBatch]:
    """Rule 1 for sorted, non-overlapping batches: a binary search instead of a scan."""
    if start_offset == UNKNOWN_OFFSET:
        return list(batches)
    first_kept = bisect.bisect_left(batches, start_offset, key=_last_offset)
    clipped = list(batches[first_kept:])
    if clipped and clipped[0].first_offset < start_offset:
        head = clipped[0]
        clipped[0] = StateBatch(start_offset, head.last_offset, head.delivery_state, head.delivery_count)
    return clipped


def _overlay(batches: list[StateBatch], new: StateBatch) -> None:
    """Apply one batch over canonical ``batches`` in place, recomputing only where it lands.

    The recomputed region is every batch that overlaps or touches ``new``. Offsets
    outside ``new`` keep their state, so no other pair of neighbours can newly merge.
    """
    low = bisect.bisect_left(batches, new.first_offset - 1, key=_last_offset)
    high = bisect.bisect_right(batches, new.last_offset + 1, key=_first_offset)
    batches[low:high] = _sweep([*batches[low:high], new])


def _first_offset(batch: StateBatch) -> int:
    return batch.first_offset


def _last_offset(batch: StateBatch) -> int:
    return batch.last_offset


def _sweep(batches: list[StateBatch]) -> list[StateBatch]:
    """Rules 2–3 over any batches: the per-offset maximum, as canonical batches."""
    if not batches:
        return []
    batches.sort(key=_first_offset)
    bounds = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})

    # Sweep the elementary intervals between consecutive bounds; the heap holds
    # the batches covering the current interval, highest priority on top.
    active: list[tuple[int, int, int, int]] = []  # (-count, -state, end, index)
    result: list[StateBatch] = []
    next_batch = 0
    for low, high in itertools.pairwise(bounds):
        while next_batch < len(batches) and batches[next_batch].first_offset <= low:
            batch = batches[next_batch]
            count, state = batch_priority(batch)
            heapq.heappush(active, (-count, -state, batch.last_offset + 1, next_batch))
            next_batch += 1
        while active and active[0][2] <= low:
            heapq.heappop(active)
        if not active:
            continue
        winner = batches[active[0][3]]
        last = result[-1] if result else None
        if (
            last is not None
            and last.last_offset + 1 == low
            and last.delivery_state == winner.delivery_state
            and last.delivery_count == winner.delivery_count
        ):
            result[-1] = StateBatch(last.first_offset, high - 1, last.delivery_state, last.delivery_count)
        else:
            result.append(StateBatch(low, high - 1, winner.delivery_state, winner.delivery_count))
    return result


def is_canonical(batches: Sequence[StateBatch], start_offset: int = UNKNOWN_OFFSET) -> bool:
    """Sorted, non-overlapping, adjacent equal batches merged, nothing below the start offset."""
    for batch in batches:
        if batch.first_offset > batch.last_offset:
            return False
        if start_offset != UNKNOWN_OFFSET and batch.first_offset < start_offset:
            return False
    for left, right in itertools.pairwise(batches):
        if right.first_offset <= left.last_offset:
            return False
        if right.first_offset == left.last_offset + 1 and batch_priority(left) == batch_priority(right):
            return False
    return True
