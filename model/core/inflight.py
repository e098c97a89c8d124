"""The in-flight window of a share-partition as ranges of offsets.

The window [SPSO, SPEO) is tiled by ``InFlightRange`` objects in offset order,
with no holes. A range holds offsets that agree on everything the leader keeps
per record: state, delivery count, owner, lock deadline, the pending durable
write they are in (if any) and the state that write will give them, and the
delivery count last made durable. A range splits only where records diverge and
neighbours that agree again are merged, so a fetch of 500 records accepted as
one batch costs one object, not 500.

Ranges are mutable and owned by the window; nothing outside the share-partition
leader holds on to them.
"""

from __future__ import annotations

from bisect import bisect_right
from operator import attrgetter

from model.core.share_state import RecordState

NO_DEADLINE = -1  # lock deadline of records that are not ACQUIRED
NO_WRITE = 0  # write id of records not in transition

_first = attrgetter("first")


class InFlightRange:
    """Offsets ``first..last`` (inclusive) in one state.

    ``write_id`` ≠ 0 means the range is in transition (SP-9): ``state`` is still
    the state the records had before the change and ``target`` the state they
    get when write ``write_id`` succeeds.
    """

    __slots__ = ("delivery_count", "durable_count", "first", "last", "lock_deadline_ms", "owner", "state",
                 "target", "write_id")

    def __init__(
        self,
        first: int,
        last: int,
        state: RecordState,
        delivery_count: int,
        owner: str | None = None,
        lock_deadline_ms: int = NO_DEADLINE,
        write_id: int = NO_WRITE,
        target: RecordState | None = None,
        durable_count: int = 0,
    ) -> None:
        self.first = first
        self.last = last
        self.state = state
        self.delivery_count = delivery_count
        self.owner = owner
        self.lock_deadline_ms = lock_deadline_ms
        self.write_id = write_id
        self.target = state if target is None else target
        self.durable_count = durable_count

    def __repr__(self) -> str:
        extra = f" -> {self.target.name} (write {self.write_id})" if self.write_id else ""
        owner = f" owner={self.owner} until {self.lock_deadline_ms}" if self.owner is not None else ""
        return (f"InFlightRange({self.first}-{self.last} {self.state.name} count={self.delivery_count}"
                f"{owner}{extra} durable={self.durable_count})")

    def agrees_with(self, other: InFlightRange) -> bool:
        """Same everything but the offsets: the two may be one range."""
        return (
            self.state == other.state
            and self.delivery_count == other.delivery_count
            and self.write_id == other.write_id
            and self.target == other.target
            and self.owner == other.owner
            and self.lock_deadline_ms == other.lock_deadline_ms
            and self.durable_count == other.durable_count
        )

    def split_off(self, offset: int) -> InFlightRange:
        """Cut at ``offset``: this range keeps [first, offset-1], the returned one [offset, last]."""
        tail = InFlightRange(offset, self.last, self.state, self.delivery_count, self.owner,
                             self.lock_deadline_ms, self.write_id, self.target, self.durable_count)
        self.last = offset - 1
        return tail

    @property
    def size(self) -> int:
        return self.last - self.first + 1


class InFlightWindow:
    """The ranges tiling [SPSO, SPEO), in offset order."""

    __slots__ = ("ranges",)

    def __init__(self) -> None:
        self.ranges: list[InFlightRange] = []

    def __len__(self) -> int:
        return len(self.ranges)

    def clear(self) -> None:
        self.ranges.clear()

    def index_of(self, offset: int) -> int:
        """Index of the range holding ``offset`` (the caller knows it is in the window)."""
        return bisect_right(self.ranges, offset, key=_first) - 1

    def find(self, offset: int) -> InFlightRange | None:
        ranges = self.ranges
        i = bisect_right(ranges, offset, key=_first) - 1
        if i < 0 or ranges[i].last < offset:
            return None
        return ranges[i]

    def split_at(self, offset: int) -> int:
        """Make ``offset`` start a range (if it is inside one); return that range's index."""
        ranges = self.ranges
        i = bisect_right(ranges, offset, key=_first) - 1
        if i < 0:
            return 0
        r = ranges[i]
        if r.first == offset:
            return i
        if offset > r.last:
            return i + 1
        ranges.insert(i + 1, r.split_off(offset))
        return i + 1

    def isolate(self, first: int, last: int) -> tuple[int, int]:
        """Split so that [first, last] is exactly ranges[i:j]; returns (i, j)."""
        i = self.split_at(first)
        j = self.split_at(last + 1)
        return i, j

    def merge(self, first: int, last: int) -> None:
        """Merge agreeing neighbours among the ranges around [first, last]."""
        ranges = self.ranges
        if not ranges:
            return
        low = max(self.index_of(first) - 1, 0)
        high = min(self.index_of(last) + 1, len(ranges) - 1)
        k = high
        while k > low:
            left, right = ranges[k - 1], ranges[k]
            # Cheap tests first: most neighbours differ in state or count.
            if (left.state == right.state and left.delivery_count == right.delivery_count
                    and left.agrees_with(right)):
                left.last = right.last
                del ranges[k]
            k -= 1

    def merge_indices(self, low: int, high: int) -> int:
        """Merge agreeing neighbours among ranges[low..high] (clamped); returns how many went."""
        ranges = self.ranges
        low = max(low, 0)
        k = min(high, len(ranges) - 1)
        gone = 0
        while k > low:
            left, right = ranges[k - 1], ranges[k]
            if (left.state == right.state and left.delivery_count == right.delivery_count
                    and left.agrees_with(right)):
                left.last = right.last
                del ranges[k]
                gone += 1
            k -= 1
        return gone

    def append(self, r: InFlightRange) -> None:
        ranges = self.ranges
        if ranges and ranges[-1].agrees_with(r) and ranges[-1].last + 1 == r.first:
            ranges[-1].last = r.last
        else:
            ranges.append(r)

    def drop_below(self, offset: int) -> None:
        """Remove every offset below ``offset`` (log start moved, SPSO jumped)."""
        ranges = self.ranges
        if not ranges or ranges[0].first >= offset:
            return
        if ranges[-1].last < offset:
            ranges.clear()
            return
        i = self.split_at(offset)
        del ranges[:i]
