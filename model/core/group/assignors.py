"""The server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range`` (CG-7).

An assignor is a pure function from the group's members (with their
subscriptions), the topics' partition counts and the current target
assignment to the next target assignment. Every subscribed partition that
exists is assigned exactly once, and only to a member subscribed to its topic.
Both assignors are sticky, as Kafka's are: a member keeps what it already had
up to its fair share, so a rebalance moves as few partitions as it can.

- ``uniform`` (Kafka's UniformAssignor) balances the number of partitions
  per member. When every member subscribes to the same topics (homogeneous)
  counts differ by at most one; otherwise no partition can move to another
  member subscribed to its topic that has two or more fewer partitions.
- ``range`` (Kafka's server-side RangeAssignor) assigns each topic on its
  own: its subscribers, in member-id order, get ``n // m`` partitions and the
  first ``n % m`` one more, as contiguous ranges when nothing is retained, so
  co-partitioned topics line up.

Determinism: members are visited in member-id order and partitions in
(topic, partition) order; no set is iterated unsorted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from model.core.metadata import MetadataImage, TopicPartition

UNIFORM = "uniform"
RANGE = "range"


@dataclass(frozen=True, slots=True)
class AssignmentMemberSpec:
    """What an assignor knows of a member."""

    subscribed_topics: frozenset[str]
    instance_id: str | None = None
    rack_id: str | None = None


Assignment = dict[str, frozenset[TopicPartition]]


class Assignor(Protocol):
    def __call__(
        self,
        members: Mapping[str, AssignmentMemberSpec],
        metadata: MetadataImage,
        current: Mapping[str, frozenset[TopicPartition]],
    ) -> Assignment: ...


def _subscriptions(
    members: Mapping[str, AssignmentMemberSpec], metadata: MetadataImage
) -> dict[str, frozenset[str]]:
    """Each member's subscribed topics that exist and have partitions."""
    return {
        m: frozenset(t for t in spec.subscribed_topics if metadata.partition_count(t) > 0)
        for m, spec in members.items()
    }


# --- uniform ---------------------------------------------------------------------------------


def uniform_assign(
    members: Mapping[str, AssignmentMemberSpec],
    metadata: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    subscriptions = _subscriptions(members, metadata)
    if not subscriptions:
        return {}
    if len(set(subscriptions.values())) == 1:
        return _uniform_homogeneous(subscriptions, metadata, current)
    return _uniform_heterogeneous(subscriptions, metadata, current)


def _uniform_homogeneous(
    subscriptions: dict[str, frozenset[str]],
    metadata: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    """Quotas over all partitions: everyone gets q or q + 1, retaining what it can."""
    member_ids = sorted(subscriptions)
    topics = next(iter(subscriptions.values()))
    partitions = metadata.topic_partitions(sorted(topics))
    valid = set(partitions)
    quota, extra = divmod(len(partitions), len(member_ids))

    result: dict[str, list[TopicPartition]] = {}
    taken: set[TopicPartition] = set()
    for member_id in member_ids:
        retained = [p for p in sorted(current.get(member_id, ())) if p in valid and p not in taken]
        keep = retained[:quota]
        # A member already above its quota keeps one extra while extras last (sticky).
        if len(retained) > quota and extra > 0:
            keep = retained[: quota + 1]
            extra -= 1
        result[member_id] = keep
        taken.update(keep)

    unassigned = iter([p for p in partitions if p not in taken])
    for member_id in member_ids:
        keep = result[member_id]
        while len(keep) < quota:
            keep.append(next(unassigned))
    for member_id in member_ids:
        if extra == 0:
            break
        keep = result[member_id]
        if len(keep) == quota:
            keep.append(next(unassigned))
            extra -= 1
    assert next(unassigned, None) is None, "uniform: partitions left unassigned"
    return {m: frozenset(ps) for m, ps in result.items()}


def _uniform_heterogeneous(
    subscriptions: dict[str, frozenset[str]],
    metadata: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    """Retain, hand out the rest to the least loaded eligible member, then even out."""
    member_ids = sorted(subscriptions)
    topics = sorted(set().union(*subscriptions.values()))
    eligible = {t: [m for m in member_ids if t in subscriptions[m]] for t in topics}
    partitions = metadata.topic_partitions(topics)
    valid = set(partitions)

    result: dict[str, set[TopicPartition]] = {m: set() for m in member_ids}
    taken: set[TopicPartition] = set()
    for member_id in member_ids:
        for p in sorted(current.get(member_id, ())):
            if p in valid and p.topic in subscriptions[member_id] and p not in taken:
                result[member_id].add(p)
                taken.add(p)

    # The most constrained partitions first: they have the fewest places to go.
    unassigned = sorted((p for p in partitions if p not in taken), key=lambda p: (len(eligible[p.topic]), p))
    for p in unassigned:
        target = min(eligible[p.topic], key=lambda m: (len(result[m]), m))
        result[target].add(p)

    # Move a partition while that narrows a gap of two or more; each move lowers
    # the sum of squared counts, so this ends.
    while (move := _imbalanced_move(result, eligible)) is not None:
        p, source, target = move
        result[source].discard(p)
        result[target].add(p)
    return {m: frozenset(ps) for m, ps in result.items()}


def _imbalanced_move(
    result: dict[str, set[TopicPartition]], eligible: dict[str, list[str]]
) -> tuple[TopicPartition, str, str] | None:
    for source in sorted(result, key=lambda m: (-len(result[m]), m)):
        for p in sorted(result[source], reverse=True):
            candidates = [m for m in eligible[p.topic] if m != source]
            if not candidates:
                continue
            target = min(candidates, key=lambda m: (len(result[m]), m))
            if len(result[source]) - len(result[target]) > 1:
                return p, source, target
    return None


# --- range -----------------------------------------------------------------------------------


def range_assign(
    members: Mapping[str, AssignmentMemberSpec],
    metadata: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> Assignment:
    subscriptions = _subscriptions(members, metadata)
    result: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    for topic in sorted(set().union(*subscriptions.values()) if subscriptions else set()):
        subscribers = sorted(m for m, topics in subscriptions.items() if topic in topics)
        for member_id, partitions in _range_topic(topic, subscribers, metadata, current).items():
            result[member_id].update(partitions)
    return {m: frozenset(ps) for m, ps in result.items()}


def _range_topic(
    topic: str,
    subscribers: list[str],
    metadata: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    """One topic: quotas q or q + 1 in member order, retaining the lowest partitions held."""
    count = metadata.partition_count(topic)
    quota, extra = divmod(count, len(subscribers))
    result: dict[str, list[int]] = {}
    taken: set[int] = set()
    unfilled: list[tuple[str, int]] = []  # (member, partitions still owed below its quota)
    for member_id in subscribers:
        held = sorted(
            {p.partition for p in current.get(member_id, ()) if p.topic == topic and p.partition < count} - taken
        )
        keep = held[:quota]
        if len(held) > quota and extra > 0:
            keep = held[: quota + 1]
            extra -= 1
            result[member_id] = keep
        else:
            result[member_id] = keep
            unfilled.append((member_id, quota - len(keep)))
        taken.update(keep)

    free = [p for p in range(count) if p not in taken]
    start = 0
    for member_id, owed in unfilled:
        if extra > 0:
            owed += 1
            extra -= 1
        result[member_id] = result[member_id] + free[start : start + owed]
        start += owed
    assert start == len(free), "range: partitions left unassigned"
    return {m: [TopicPartition(topic, p) for p in ps] for m, ps in result.items()}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform_assign, RANGE: range_assign}
