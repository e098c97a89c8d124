"""Offset sets and offset maps kept as ranges, so a monitor's memory grows with
the number of distinct runs of offsets, not with the number of records.

* ``IntervalSet``: disjoint inclusive ranges, adjacent ones merged
  (e.g. "every offset whose accept was confirmed").
* ``RangeMap``: disjoint inclusive ranges each carrying a value
  (e.g. "offset → the live acquisition that holds it"); not merged.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")


class IntervalSet:
    """A set of integers as sorted, disjoint, non-adjacent inclusive ranges."""

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def __len__(self) -> int:
        return len(self._starts)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(zip(self._starts, self._ends, strict=True))

    def add(self, first: int, last: int) -> None:
        if last < first:
            return
        starts, ends = self._starts, self._ends
        i = bisect_left(ends, first - 1)  # first range ending at or after first - 1 (touching merges)
        j = bisect_right(starts, last + 1)  # ranges starting at or before last + 1
        if i < j:
            first = min(first, starts[i])
            last = max(last, ends[j - 1])
        starts[i:j] = [first]
        ends[i:j] = [last]

    def first_missing(self, first: int, last: int) -> int | None:
        """The lowest offset of ``first..last`` not in the set, or None if all are."""
        if last < first:
            return None
        i = bisect_right(self._starts, first) - 1
        if i < 0 or self._ends[i] < first:
            return first
        end = self._ends[i]
        return None if end >= last else end + 1

    def missing_runs(self, first: int, last: int) -> Iterator[tuple[int, int]]:
        """The maximal sub-ranges of ``first..last`` not in the set, ascending."""
        at = first
        while at <= last:
            missing = self.first_missing(at, last)
            if missing is None:
                return
            covered = self.first_overlap(missing, last)
            end = covered[0] - 1 if covered is not None else last
            yield missing, end
            at = end + 1

    def first_overlap(self, first: int, last: int) -> tuple[int, int] | None:
        """The lowest sub-range of ``first..last`` that is in the set, or None."""
        i = bisect_left(self._ends, first)
        if i < len(self._starts) and self._starts[i] <= last:
            return max(self._starts[i], first), min(self._ends[i], last)
        return None

    def discard_below(self, offset: int) -> None:
        starts, ends = self._starts, self._ends
        i = bisect_left(ends, offset)  # ranges before i end below offset
        del starts[:i], ends[:i]
        if starts and starts[0] < offset:
            starts[0] = offset

    def clear(self) -> None:
        self._starts.clear()
        self._ends.clear()


class RangeMap(Generic[V]):
    """Disjoint inclusive offset ranges, each mapped to a value. Assigning overwrites."""

    __slots__ = ("_firsts", "_lasts", "_values")

    def __init__(self) -> None:
        self._firsts: list[int] = []
        self._lasts: list[int] = []
        self._values: list[V] = []

    def __len__(self) -> int:
        return len(self._firsts)

    def __iter__(self) -> Iterator[tuple[int, int, V]]:
        return iter(zip(self._firsts, self._lasts, self._values, strict=True))

    def overlapping(self, first: int, last: int) -> list[tuple[int, int, V]]:
        """The parts of ``first..last`` that carry a value, clipped to it, in order."""
        out = []
        i = bisect_left(self._lasts, first)
        firsts, lasts, values = self._firsts, self._lasts, self._values
        while i < len(firsts) and firsts[i] <= last:
            out.append((max(firsts[i], first), min(lasts[i], last), values[i]))
            i += 1
        return out

    def remove(self, first: int, last: int) -> None:
        """Forget ``first..last``, splitting ranges that stick out on either side."""
        if last < first:
            return
        firsts, lasts, values = self._firsts, self._lasts, self._values
        i = bisect_left(lasts, first)
        j = i
        keep_f: list[int] = []
        keep_l: list[int] = []
        keep_v: list[V] = []
        while j < len(firsts) and firsts[j] <= last:
            if firsts[j] < first:
                keep_f.append(firsts[j])
                keep_l.append(first - 1)
                keep_v.append(values[j])
            if lasts[j] > last:
                keep_f.append(last + 1)
                keep_l.append(lasts[j])
                keep_v.append(values[j])
            j += 1
        firsts[i:j] = keep_f
        lasts[i:j] = keep_l
        values[i:j] = keep_v

    def assign(self, first: int, last: int, value: V) -> None:
        if last < first:
            return
        self.remove(first, last)
        i = bisect_left(self._firsts, first)
        self._firsts.insert(i, first)
        self._lasts.insert(i, last)
        self._values.insert(i, value)

    def update(self, first: int, last: int, fn: Callable[[V | None], V]) -> list[tuple[int, int, V]]:
        """Give every part of ``first..last`` the value ``fn(old value)`` (``fn(None)`` where it has
        none), in one splice; returns the new parts, in order."""
        parts: list[tuple[int, int, V]] = []
        at = first
        for lo, hi, value in self.overlapping(first, last):
            if at < lo:
                parts.append((at, lo - 1, fn(None)))
            parts.append((lo, hi, fn(value)))
            at = hi + 1
        if at <= last:
            parts.append((at, last, fn(None)))
        self.remove(first, last)
        i = bisect_left(self._firsts, first)
        self._firsts[i:i] = [lo for lo, _, _ in parts]
        self._lasts[i:i] = [hi for _, hi, _ in parts]
        self._values[i:i] = [value for _, _, value in parts]
        return parts

    def discard_below(self, offset: int) -> None:
        if self._firsts and self._firsts[0] < offset:
            self.remove(self._firsts[0], offset - 1)

    def clear(self) -> None:
        self._firsts.clear()
        self._lasts.clear()
        self._values.clear()
