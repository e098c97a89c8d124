"""The cluster metadata a coordinator sees: topics, their ids and partition counts.

Group coordinators assign from it (GC-5, CG-7); partitions added to a topic
show up here first and then as a group-epoch bump (GC-2).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final


class TopicPartition:
    """A partition of a topic; immutable, hashable, ordered by (topic, partition).

    Written out rather than a frozen dataclass: it keys dicts on every message, and mypyc compiles
    these methods where a dataclass's generated ones stay interpreted (about ten times slower to
    construct). The hash is computed once."""

    __slots__ = ("_hash", "partition", "topic")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic: Final = topic
        self.partition: Final = partition
        self._hash: Final = hash((topic, partition))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self.partition == other.partition and self.topic == other.topic

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __le__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) <= (other.topic, other.partition)

    def __reduce__(self) -> tuple[type[TopicPartition], tuple[str, int]]:
        return TopicPartition, (self.topic, self.partition)  # pickle and copy by the constructor (compiled too)

    def __repr__(self) -> str:
        return f"TopicPartition(topic={self.topic!r}, partition={self.partition!r})"

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    name: str
    topic_id: str
    partitions: int


@dataclass(frozen=True)
class MetadataImage:
    """An immutable snapshot of topics; a change makes a new image."""

    topics: Mapping[str, TopicMetadata] = field(default_factory=dict)

    def partition_count(self, topic: str) -> int:
        meta = self.topics.get(topic)
        return meta.partitions if meta else 0

    def topic_id(self, topic: str) -> str | None:
        meta = self.topics.get(topic)
        return meta.topic_id if meta else None

    def topic_partitions(self, topics: Iterator[str] | list[str] | tuple[str, ...]) -> list[TopicPartition]:
        """Every partition of the given topics that exist, in (topic, partition) order."""
        return [
            TopicPartition(t, p) for t in sorted(set(topics)) for p in range(self.partition_count(t))
        ]

    def with_topic(self, name: str, partitions: int, topic_id: str | None = None) -> MetadataImage:
        old = self.topics.get(name)
        tid = topic_id or (old.topic_id if old else f"{name}-id")
        return MetadataImage({**self.topics, name: TopicMetadata(name, tid, partitions)})
