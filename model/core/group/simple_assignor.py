"""The SimpleAssignor: the server-side assignor of share groups (GC-5).

It balances members over the partitions of the topics they subscribe to,
treating every member as equally able to consume, and lets several members
share a partition (GC-4). Only assignable (initialized) partitions are given
out. Two algorithms, by the protocol switch:

**Kafka trunk** (``protocol = "kafka"``, the default; ``SimpleAssignor``,
``SimpleHomogeneousAssignmentBuilder`` and ``SimpleHeterogeneousAssignmentBuilder``
at the pinned commit). Balance first, then stickiness, no hashing. With P
assignable partitions and k members (per topic and its subscribers when the
members subscribe to different topics), each partition is wanted by
``ceil(k / P)`` members ("desired sharing") and member i (in member order)
wants ``ceil(s(i + 1)) - ceil(s·i)`` partitions, s = sharing · P / k. Then:
1. revoke the previous partitions of topics no longer subscribed;
2. revoke from each member holding more than it wants (lowest partitions first);
3. revoke from partitions shared by more members than desired (lowest members first);
4. fill: each partition below its desired sharing, in partition order, goes to
   the members still wanting partitions, taken round-robin.
Every member keeps what it can of its previous target. Kafka iterates Java hash
maps and sets; the model iterates members by id, topics by name and partitions
ascending (the orders those maps have for the small numbers Kafka's tests use).
A member subscribed to a topic the assignor does not know is an error
(``PartitionAssignorError``, trunk's PartitionAssignorException).

**The KIP's worked table** (``protocol = "kip"``): the worked table of
003_cf42721e0e7b2a9a.txt is its specification; the rules below reproduce it
row by row (tests/model/core/group/test_simple_assignor_golden.py). Each topic
is assigned on its own, over its subscribers and its assignable partitions, in
ascending partition order:

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
(the table's ``memberId.hashCode()``), deterministic in every process.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Collection, Mapping, Sequence

from model import mutants as _mutants
from model.core.metadata import TopicPartition

SIMPLE_ASSIGNOR_NAME = "simple"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


class PartitionAssignorError(Exception):
    """A member subscribes to a topic the assignor was not told about (trunk's PartitionAssignorException)."""


class SimpleAssignor:
    name = SIMPLE_ASSIGNOR_NAME

    def __init__(self, member_hash: Callable[[str], int] = java_string_hash, *, kafka: bool = True) -> None:
        """``kafka``: Kafka trunk's algorithm (the default), else the KIP's worked table (``member_hash`` is
        used by the latter only)."""
        self._member_hash = member_hash
        self._kafka = kafka

    def assign(
        self,
        subscriptions: Mapping[str, Collection[str]],
        assignable: Mapping[str, Sequence[int]],
        current: Mapping[str, Collection[TopicPartition]],
        *,
        topics: Mapping[str, int] | None = None,
    ) -> dict[str, frozenset[TopicPartition]]:
        """The target assignment of every member.

        ``subscriptions``: member id → subscribed topic names; ``assignable``:
        topic → its assignable partition indexes (only initialized partitions,
        GC-5); ``current``: the previous target assignment; ``topics``: the
        topics that exist (name → partition count, trunk's SubscribedTopicDescriber),
        if given: a subscription to any other raises ``PartitionAssignorError``.
        """
        if topics is not None:
            for member in sorted(subscriptions):
                unknown = sorted(set(subscriptions[member]) - topics.keys())
                if unknown:
                    raise PartitionAssignorError(
                        f"member {member} subscribes to {unknown[0]}, which is not in the topic metadata")
        if self._kafka:
            return _assign_trunk(subscriptions, assignable, current)
        return self._assign_kip(subscriptions, assignable, current)

    def _assign_kip(
        self,
        subscriptions: Mapping[str, Collection[str]],
        assignable: Mapping[str, Sequence[int]],
        current: Mapping[str, Collection[TopicPartition]],
    ) -> dict[str, frozenset[TopicPartition]]:
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


# --- Kafka trunk's algorithm ----------------------------------------------------------------------


def _desired_counts(members: Sequence[int], partitions: int) -> tuple[int, dict[int, int]]:
    """(desired sharing, member → desired partition count), as trunk's builders compute them (in doubles)."""
    if not members:
        return 0, {}
    sharing = -(-len(members) // partitions) if partitions else 0
    precise = sharing * partitions / len(members)
    return sharing, {m: math.ceil(precise * (k + 1)) - math.ceil(precise * k) for k, m in enumerate(members)}


class _Fill:
    """The revoke and fill steps over one set of target partitions (a homogeneous group's, or one topic's in
    a heterogeneous group): trunk's revokeOverfilledMembers, revokeOversharedPartitions and
    assignRemainingPartitions, over ``held`` (member index → partitions it holds, edited in place)."""

    def __init__(self, targets: Sequence[TopicPartition], held: dict[int, set[TopicPartition]],
                 desired: Mapping[int, int], sharing: int) -> None:
        self.held = held
        self.desired = desired
        self.sharing = sharing
        self.by_partition: dict[TopicPartition, set[int]] = {}
        self.by_member: dict[int, set[TopicPartition]] = {}
        self.unfilled: set[int] = set()
        self.targets = targets
        for m in sorted(held):
            for tp in held[m]:
                self.by_partition.setdefault(tp, set()).add(m)
                self.by_member.setdefault(m, set()).add(tp)

    def run(self) -> None:
        for m, tps in sorted(self.by_member.items()):  # revoke from overfilled members
            if _mutants.ACTIVE == "simple-assignor-unbalanced":
                break  # mutant: members keep everything they held, however many joined
            for tp in sorted(tps):
                if len(tps) <= self.desired.get(m, 0):
                    break
                tps.discard(tp)
                self.held[m].discard(tp)
                self.by_partition[tp].discard(m)
        for tp, holders in sorted(self.by_partition.items()):  # revoke from overshared partitions
            count = len(holders)
            if count <= self.sharing:
                continue
            for m in sorted(holders):
                if tp in self.held[m]:
                    self.held[m].discard(tp)
                    holders.discard(m)
                    self.by_member[m].discard(tp)
                    self.unfilled.add(m)
                    count -= 1
                if count <= self.sharing:
                    break
        for tp in self.targets:
            self.by_partition.setdefault(tp, set())
        for m in sorted(self.desired):
            if len(self.by_member.get(m, ())) < self.desired[m]:
                self.unfilled.add(m)
        self._fill()

    def _fill(self) -> None:
        """Round-robin over the members still wanting partitions, one iterator carried across partitions."""
        if not self.unfilled:
            return
        order, at, assigned_this_round = sorted(self.unfilled), 0, False
        for tp, holders in sorted(self.by_partition.items()):
            to_make = self.sharing - len(holders)
            while to_make > 0:
                if at >= len(order):
                    if not assigned_this_round:
                        break
                    order, at, assigned_this_round = sorted(self.unfilled), 0, False
                    if not order:
                        break
                m = order[at]
                at += 1
                if m in holders:
                    continue
                holders.add(m)
                self.held.setdefault(m, set()).add(tp)
                mine = self.by_member.setdefault(m, set())
                mine.add(tp)
                to_make -= 1
                assigned_this_round = True
                if len(mine) >= self.desired.get(m, 0):
                    self.unfilled.discard(m)
            if not self.unfilled:
                break


def _assign_trunk(
    subscriptions: Mapping[str, Collection[str]],
    assignable: Mapping[str, Sequence[int]],
    current: Mapping[str, Collection[TopicPartition]],
) -> dict[str, frozenset[TopicPartition]]:
    """Trunk's SimpleAssignor.assign: the homogeneous builder when every member subscribes to the same
    topics, else the heterogeneous one, topic by topic."""
    members = sorted(subscriptions)
    if not members:
        return {}
    subscribed = [set(subscriptions[m]) for m in members]
    allowed = {t: sorted(set(ps)) for t, ps in assignable.items()}
    # The previous target, without partitions no longer assignable (trunk's topic ids make a deleted and
    # re-created topic a different one; the model names topics, so it drops what is not assignable) and
    # without topics the member no longer subscribes to (revokeUnassignablePartitions).
    held: dict[int, set[TopicPartition]] = {
        i: {tp for tp in current.get(m, ()) if tp.partition in allowed.get(tp.topic, ()) and tp.topic in subscribed[i]}
        for i, m in enumerate(members)
    }
    if all(s == subscribed[0] for s in subscribed):  # SimpleHomogeneousAssignmentBuilder
        targets = [TopicPartition(t, p) for t in sorted(subscribed[0]) for p in allowed.get(t, ())]
        sharing, desired = _desired_counts(range(len(members)), len(targets))
        _Fill(targets, held, desired, sharing).run()
    else:  # SimpleHeterogeneousAssignmentBuilder: each topic over its subscribers
        for topic in sorted(set().union(*subscribed)):
            subscribers = [i for i in range(len(members)) if topic in subscribed[i]]
            targets = [TopicPartition(topic, p) for p in allowed.get(topic, ())]
            sharing, desired = _desired_counts(subscribers, len(targets))
            mine = {i: {tp for tp in held[i] if tp.topic == topic} for i in range(len(members))}
            _Fill(targets, mine, desired, sharing).run()
            for i in range(len(members)):
                held[i] = {tp for tp in held[i] if tp.topic != topic} | mine[i]
    return {m: frozenset(held[i]) for i, m in enumerate(members)}


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
