"""SimpleAssignorTest, against ``model.core.group.simple_assignor.SimpleAssignor``.

Kafka's assignor takes a GroupSpec (members with subscribed topic ids and current assignment,
and an optional map of the partitions each topic may assign) and the topic metadata. Ours takes
the subscriptions by topic name, the assignable partitions of each topic (the initialized ones,
which is what Kafka's allowed map carries) and the previous target assignment; a topic that is
not assignable is left out of that map, and the topics that exist come as ``topics``. The
default is Kafka trunk's algorithm (``protocol = "kafka"``); the worked table of 003 is the
``kip`` algorithm, tested in tests/model/core/group/test_simple_assignor_golden.py.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from model.core.group.simple_assignor import PartitionAssignorError, SimpleAssignor
from model.core.metadata import TopicPartition

T1, T2, T3, T4 = "topic1", "topic2", "topic3", "topic4"
A, B, C = "A", "B", "C"

Assignment = dict[str, frozenset[TopicPartition]]


def _all(**partitions: int) -> dict[str, list[int]]:
    return {topic: list(range(n)) for topic, n in partitions.items()}


def _assigned(assignment: Assignment) -> set[TopicPartition]:
    return {tp for tps in assignment.values() for tp in tps}


def _assign(subscriptions: Mapping[str, set[str]], assignable: Mapping[str, list[int]],
            current: Mapping[str, frozenset[TopicPartition]] | None = None) -> Assignment:
    return SimpleAssignor().assign(subscriptions, assignable, current or {})


def _tps(topic: str, *partitions: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


def test_name() -> None:
    """SimpleAssignorTest.testName"""
    assert SimpleAssignor().name == "simple"


def test_assign_with_empty_members() -> None:
    """SimpleAssignorTest.testAssignWithEmptyMembers"""
    assert _assign({}, {}) == {}
    assert _assign({}, _all(topic1=3)) == {}


def test_assign_with_no_subscribed_topic() -> None:
    """SimpleAssignorTest.testAssignWithNoSubscribedTopic: nothing is assigned (Kafka's answer has no
    member entries; ours names A with no partitions, the same assignment)."""
    assert _assigned(_assign({A: set()}, _all(topic1=3))) == set()


def test_assign_with_subscribed_to_non_existent_topic() -> None:
    """SimpleAssignorTest.testAssignWithSubscribedToNonExistentTopic: the assignor throws (the topic metadata,
    trunk's SubscribedTopicDescriber, knows topic1 only)."""
    with pytest.raises(PartitionAssignorError):
        SimpleAssignor().assign({A: {T2}}, _all(topic1=3), {}, topics={T1: 3})


def test_assign_with_two_members_and_two_topics_homogeneous() -> None:
    """SimpleAssignorTest.testAssignWithTwoMembersAndTwoTopicsHomogeneous"""
    result = _assign({A: {T1, T3}, B: {T1, T3}}, _all(topic1=3, topic3=2))
    assert len(_assigned(result)) == 5


def test_assign_with_two_members_and_two_topics_homogeneous_with_allowed_map() -> None:
    """SimpleAssignorTest.testAssignWithTwoMembersAndTwoTopicsHomogeneousWithAllowedMap: topic3 has 3
    partitions of which 0 and 1 are allowed."""
    result = _assign({A: {T1, T3}, B: {T1, T3}}, {T1: [0, 1, 2], T3: [0, 1]})
    assert len(_assigned(result)) == 5 and TopicPartition(T3, 2) not in _assigned(result)


def test_assign_with_two_members_and_two_topics_homogeneous_with_non_assignable_topic() -> None:
    """SimpleAssignorTest.testAssignWithTwoMembersAndTwoTopicsHomogeneousWithNonAssignableTopic"""
    result = _assign({A: {T1, T3}, B: {T1, T3}}, {T1: [0, 1, 2]})
    assert _assigned(result) == _tps(T1, 0, 1, 2)


def test_assign_with_three_members_three_topics_heterogeneous() -> None:
    """SimpleAssignorTest.testAssignWithThreeMembersThreeTopicsHeterogeneous"""
    subscriptions = {A: {T1, T2}, B: {T3}, C: {T2, T3}}
    result = _assign(subscriptions, _all(topic1=3, topic2=3, topic3=2))
    assert len(_assigned(result)) == 8
    for member, tps in result.items():  # and only to subscribers
        assert {tp.topic for tp in tps} <= subscriptions[member]


def test_assign_with_three_members_three_topics_heterogeneous_with_allowed_map() -> None:
    """SimpleAssignorTest.testAssignWithThreeMembersThreeTopicsHeterogeneousWithAllowedMap"""
    result = _assign({A: {T1, T2}, B: {T3}, C: {T2, T3}}, {T1: [0, 1], T2: [0, 2], T3: [1]})
    assert _assigned(result) == _tps(T1, 0, 1) | _tps(T2, 0, 2) | _tps(T3, 1)


def test_assign_with_three_members_three_topics_heterogeneous_with_non_assignable_topic() -> None:
    """SimpleAssignorTest.testAssignWithThreeMembersThreeTopicsHeterogeneousWithNonAssignableTopic"""
    result = _assign({A: {T1, T2}, B: {T3}, C: {T2, T3}}, _all(topic1=3, topic2=3))
    assert len(_assigned(result)) == 6
    assert result == {A: frozenset(_tps(T1, 0, 1, 2) | _tps(T2, 0, 2)), B: frozenset(),
                      C: frozenset(_tps(T2, 1))}


def test_assign_with_one_member_no_assigned_topic_heterogeneous() -> None:
    """SimpleAssignorTest.testAssignWithOneMemberNoAssignedTopicHeterogeneous"""
    result = _assign({A: {T1, T2}, B: set()}, _all(topic1=3, topic2=2))
    assert result == {A: frozenset(_tps(T1, 0, 1, 2) | _tps(T2, 0, 1)), B: frozenset()}


def _grow_then_shrink(subscription_of: list[set[str]], assignable: dict[str, list[int]], members: int,
                      shrink: bool) -> None:
    """Add members one at a time (each round from the last round's assignment), then, if asked,
    remove them again; every round assigns every partition."""
    total = sum(len(p) for p in assignable.values())
    subscriptions: dict[str, set[str]] = {}
    current: Assignment = {}
    for m in range(members):
        subscriptions[f"M{m}"] = subscription_of[m % len(subscription_of)]
        if shrink and m < members - 1:
            continue  # the decreasing tests add every member before the first assignment
        current = _assign(subscriptions, assignable, current)
        assert len(_assigned(current)) == total, (m, current)
    if shrink:
        for m in range(members - 1, 0, -1):
            del subscriptions[f"M{m}"]
            current = {k: v for k, v in current.items() if k in subscriptions}
            current = _assign(subscriptions, assignable, current)
            assert len(_assigned(current)) == total, (m, current)


def test_incremental_assignment_increasing_members_homogeneous() -> None:
    """SimpleAssignorTest.testIncrementalAssignmentIncreasingMembersHomogeneous: 24 partitions, 1 to 101 members."""
    _grow_then_shrink([{T1}], _all(topic1=24), 101, shrink=False)


def test_incremental_assignment_decreasing_members_homogeneous() -> None:
    """SimpleAssignorTest.testIncrementalAssignmentDecreasingMembersHomogeneous: 101 members down to 1."""
    _grow_then_shrink([{T1}], _all(topic1=24), 101, shrink=True)


HETEROGENEOUS_SUBSCRIPTIONS = [{T1, T2, T3}, {T2}, {T3}, {T1, T2}]


def test_incremental_assignment_increasing_members_heterogeneous() -> None:
    """SimpleAssignorTest.testIncrementalAssignmentIncreasingMembersHeterogeneous: 12 + 8 + 4 partitions."""
    _grow_then_shrink(HETEROGENEOUS_SUBSCRIPTIONS, _all(topic1=12, topic2=8, topic3=4), 101, shrink=False)


def test_incremental_assignment_decreasing_members_heterogeneous() -> None:
    """SimpleAssignorTest.testIncrementalAssignmentDecreasingMembersHeterogeneous"""
    _grow_then_shrink(HETEROGENEOUS_SUBSCRIPTIONS, _all(topic1=12, topic2=8, topic3=4), 101, shrink=True)


def test_assign_with_current_assignment_heterogeneous() -> None:
    """SimpleAssignorTest.testAssignWithCurrentAssignmentHeterogeneous: A, B, C over 8 partitions; then
    C leaves, A adds topic3, B adds topic4 (1 partition): all 9 assigned from the earlier placement."""
    first = _assign({A: {T1, T2}, B: {T3}, C: {T2, T3}}, _all(topic1=3, topic2=3, topic3=2))
    assert len(_assigned(first)) == 8
    current = {A: frozenset(_tps(T1, 0, 1, 2) | _tps(T2, 0, 2)), B: frozenset(_tps(T3, 0, 1))}
    second = _assign({A: {T1, T2, T3}, B: {T3, T4}}, _all(topic1=3, topic2=3, topic3=2, topic4=1), current)
    assert len(_assigned(second)) == 9
