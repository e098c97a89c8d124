"""The SimpleAssignor: the server-side assignor of share groups (GC-5).

It balances members over the partitions of the topics they subscribe to,
treating every member as equally able to consume, and lets several members
share a partition (GC-4). The worked table of 003_cf42721e0e7b2a9a.txt is its
specification; the rules below reproduce it row by row
(tests/model/core/group/test_simple_assignor_golden.py). Each topic is
assigned on its own, over its subscribers and its assignable (initialized)
partitions, in ascending partition order:

1. Hash: each subscriber gets the partition at index
   ``hash(member_id) mod n`` (n assignable partitions). With more members than
   partitions this is the whole assignment: members spread over partitions
   and partitions are shared ("M5 … M8 join": T1:0 … T1:3 again).
2. Keep: a partition no member hashes to stays with one subscriber that had
   it in the previous target (stickiness: "M3 joins" leaves T1:3 on M2), the
   least loaded one, unless that takes the subscriber past its fair share
   ``ceil((members + unhashed partitions) / members)``. A partition some
   member hashes to is taken from everyone else ("Revoke T1:2 from M1").
3. Fill: each partition still without a member goes to the subscriber with
   the fewest partitions of the topic, then the fewest overall, then the
   smallest member id ("Add 3 partitions": T1:2 to M1, T1:3 to M2).
4. Balance: while one subscriber holds two partitions of the topic more than
   another, its highest partition not hashed to it moves to the least loaded
   one.

So no subscriber holds two partitions of a topic more than another, and
assigning again from the result changes nothing: a recomputation with the
same members and partitions (after a failover, say) moves no partition.

The table prints each member's hash as "hash k" and hash k selects the k-th
partition, i.e. index k − 1; the default hash is Java's ``String.hashCode``
(Kafka's SimpleAssignor uses ``memberId.hashCode()``), deterministic in every
process.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Collection, Mapping, Sequence

from model.core.metadata import TopicPartition

SIMPLE_ASSIGNOR_NAME = "simple"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


class SimpleAssignor:
    name = SIMPLE_ASSIGNOR_NAME

    def __init__(self, member_hash: Callable[[str], int] = java_string_hash) -> None:
        self._member_hash = member_hash

    def assign(
        self,
        subscriptions: Mapping[str, Collection[str]],
        assignable: Mapping[str, Sequence[int]],
        current: Mapping[str, Collection[TopicPartition]],
    ) -> dict[str, frozenset[TopicPartition]]:
        """The target assignment of every member.

        ``subscriptions``: member id → subscribed topic names; ``assignable``:
        topic → its assignable partition indexes (only initialized partitions,
        GC-5); ``current``: the previous target assignment.
        """
        members = sorted(subscriptions)
        result: dict[str, list[TopicPartition]] = {m: [] for m in members}
        total_load = dict.fromkeys(members, 0)
        hashes = {m: abs(self._member_hash(m)) for m in members}
        previous: dict[str, dict[int, list[str]]] = {}  # topic → partition → previous holders
        for m in sorted(current):
            for tp in current[m]:
                previous.setdefault(tp.topic, {}).setdefault(tp.partition, []).append(m)
        for topic in sorted(assignable):
            subscribers = [m for m in members if topic in subscriptions[m]]
            partitions = sorted(set(assignable[topic]))
            if not subscribers or not partitions:
                continue
            holders = _assign_topic(subscribers, partitions, hashes, previous.get(topic, {}), total_load)
            for p in partitions:
                for m in holders[p]:
                    result[m].append(TopicPartition(topic, p))
        return {m: frozenset(tps) for m, tps in result.items()}


def _assign_topic(
    subscribers: list[str],
    partitions: list[int],
    hashes: Mapping[str, int],
    previous: Mapping[int, list[str]],
    total_load: dict[str, int],
) -> dict[int, list[str]]:
    """One topic: partition → its members (steps 1-4 above)."""
    n, k = len(partitions), len(subscribers)
    holders: dict[int, list[str]] = {p: [] for p in partitions}
    hashed: dict[str, int] = {}
    load = dict.fromkeys(subscribers, 0)

    # 1. Hash.
    for m in subscribers:
        p = partitions[hashes[m] % n]
        hashed[m] = p
        holders[p].append(m)
        load[m] += 1

    # 2. Keep what no member hashes to with one previous holder, within the fair share.
    unhashed = n - len(set(hashed.values()))
    fair_share = -(-(k + unhashed) // k)
    for p in partitions:
        if holders[p]:
            continue
        keepers = [m for m in previous.get(p, ()) if m in load and load[m] < fair_share]
        if keepers:
            m = min(keepers, key=lambda s: (load[s], s))
            holders[p].append(m)
            load[m] += 1

    # 3. Fill the rest, least loaded first (only the member just chosen changes load).
    heap = [(load[m], total_load[m] + load[m], m) for m in subscribers]
    heapq.heapify(heap)
    for p in partitions:
        if not holders[p]:
            _, _, m = heapq.heappop(heap)
            holders[p].append(m)
            load[m] += 1
            heapq.heappush(heap, (load[m], total_load[m] + load[m], m))

    # 4. Balance within one partition: move a partition held by the most loaded
    # member alone (and not hashed to it) to the least loaded one.
    movable: dict[str, list[int]] = {m: [] for m in subscribers}
    for p in partitions:
        if len(holders[p]) == 1 and hashed[holders[p][0]] != p:
            movable[holders[p][0]].append(p)
    while True:
        least = min(subscribers, key=lambda s: (load[s], s))
        most = next(
            (m for m in sorted(subscribers, key=lambda s: (-load[s], s))
             if load[m] - load[least] > 1 and movable[m]),
            None,
        )
        if most is None:
            break
        p = movable[most].pop()
        holders[p] = [least]
        bisect.insort(movable[least], p)
        load[most] -= 1
        load[least] += 1

    for m in subscribers:
        total_load[m] += load[m]
    return holders
