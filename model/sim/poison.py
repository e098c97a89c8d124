"""Which records are poison: their processing always fails, so they are released on every delivery
until the delivery-count limit archives them (SP-4, SP-5).

Each offset of a partition is poison with probability ``poison_rate``, independently of every
other (a Bernoulli process). The poison offsets are drawn in offset order as geometric gaps from a
stream seeded by (run seed, topic, partition), so

* the same records are poison in every process and for every consumer that asks, in any order;
* the cost is per poison record, not per record: a consumer asks for the poison offsets of each
  acquired batch (``poison_between``), two bisections once the stream has reached the batch.
"""

from __future__ import annotations

import functools
import math
import random
from bisect import bisect_left, bisect_right
from typing import Final

from model.sim.rng import derive_seed


class _PoisonStream:
    """The poison offsets of one partition, drawn as far as anybody has asked."""

    __slots__ = ("_log_keep", "_rng", "offsets")

    def __init__(self, seed: int, topic: str, partition: int, poison_rate: float) -> None:
        self._rng = random.Random(derive_seed(seed, "poison", topic, partition))
        # log(1 - p): the gap before the next poison offset is floor(log(U) / log(1 - p)), a
        # geometric draw; -inf when p = 1 (every offset), which makes every gap 0.
        self._log_keep = math.log1p(-poison_rate) if poison_rate < 1 else -math.inf
        self.offsets: list[int] = []

    def through(self, last: int) -> list[int]:
        """The poison offsets, drawn at least past ``last``."""
        offsets, rng, log_keep = self.offsets, self._rng, self._log_keep
        previous = offsets[-1] if offsets else -1
        while previous <= last:
            gap = math.log(1.0 - rng.random()) / log_keep
            # A rate so small that the gap is past any log (or infinite): no further poison.
            previous = _NEVER if gap >= _NEVER else previous + 1 + int(gap)
            offsets.append(previous)
        return offsets


_NEVER: Final = 1 << 62  # beyond every offset


@functools.lru_cache(maxsize=4096)  # per (run, partition); a campaign worker runs many
def _stream(seed: int, topic: str, partition: int, poison_rate: float) -> _PoisonStream:
    return _PoisonStream(seed, topic, partition, poison_rate)


def poison_between(seed: int, topic: str, partition: int, first: int, last: int, poison_rate: float) -> list[int]:
    """The poison offsets in ``first..last`` (inclusive), in order."""
    if poison_rate <= 0:
        return []
    offsets = _stream(seed, topic, partition, poison_rate).through(last)
    return offsets[bisect_left(offsets, first):bisect_right(offsets, last)]


def is_poison(seed: int, topic: str, partition: int, offset: int, poison_rate: float) -> bool:
    """Whether the record at ``offset`` is poison."""
    return bool(poison_between(seed, topic, partition, offset, offset, poison_rate))
