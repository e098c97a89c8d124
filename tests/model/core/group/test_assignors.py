"""The server-side assignors ``uniform`` and ``range`` (CG-7), as Hypothesis properties.

Every subscribed partition is assigned exactly once, only to a member subscribed
to its topic; ``uniform`` balances counts (within one for homogeneous
subscriptions, no improving move otherwise); ``range`` follows Kafka's range
semantics per topic; both are sticky, idempotent and deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.group.assignors import (
    ASSIGNORS,
    Assignment,
    AssignmentMemberSpec,
    range_assign,
    uniform_assign,
)
from model.core.metadata import MetadataImage, TopicPartition

TOPICS = ("t0", "t1", "t2", "t3")


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool | None = None) -> tuple[
    dict[str, AssignmentMemberSpec], MetadataImage, dict[str, frozenset[TopicPartition]]
]:
    image = MetadataImage()
    for topic in TOPICS[: draw(st.integers(1, len(TOPICS)))]:
        image = image.with_topic(topic, draw(st.integers(0, 12)))
    topic_pool = [*sorted(image.topics), "ghost"]  # "ghost" does not exist
    n_members = draw(st.integers(0, 7))
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    shared = frozenset(draw(st.lists(st.sampled_from(topic_pool), min_size=1, unique=True)))
    members = {
        f"m{i}": AssignmentMemberSpec(
            shared if homogeneous else frozenset(draw(st.lists(st.sampled_from(topic_pool), min_size=1, unique=True)))
        )
        for i in range(n_members)
    }
    # A previous target: disjoint, possibly stale (unsubscribed topics, partitions that no longer exist).
    candidates = [TopicPartition(t, p) for t in sorted(image.topics) for p in range(image.partition_count(t) + 2)]
    owners = draw(st.lists(st.sampled_from([None, *sorted(members)]), min_size=len(candidates),
                           max_size=len(candidates))) if members else []
    current: dict[str, set[TopicPartition]] = {m: set() for m in members}
    for tp, owner in zip(candidates, owners):
        if owner is not None:
            current[owner].add(tp)
    return members, image, {m: frozenset(ps) for m, ps in current.items()}


def subscribed_partitions(members: Mapping[str, AssignmentMemberSpec], image: MetadataImage) -> set[TopicPartition]:
    topics = set().union(*(spec.subscribed_topics for spec in members.values())) if members else set()
    return set(image.topic_partitions(sorted(t for t in topics if t in image.topics)))


def check_exactly_once_to_subscribers(
    members: Mapping[str, AssignmentMemberSpec], image: MetadataImage, result: Assignment
) -> None:
    seen: list[TopicPartition] = [p for ps in result.values() for p in ps]
    assert len(seen) == len(set(seen)), "a partition assigned twice"
    assert set(seen) == subscribed_partitions(members, image), "a subscribed partition left out, or an extra one"
    for member_id, partitions in result.items():
        assert member_id in members
        for p in partitions:
            assert p.topic in members[member_id].subscribed_topics, f"{p} given to {member_id}, not subscribed"


def valid_current(
    member_id: str, members: Mapping[str, AssignmentMemberSpec], image: MetadataImage,
    current: Mapping[str, frozenset[TopicPartition]],
) -> set[TopicPartition]:
    return {
        p for p in current.get(member_id, frozenset())
        if p.topic in members[member_id].subscribed_topics and p.partition < image.partition_count(p.topic)
    }


# --- both ------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(groups(), st.sampled_from(sorted(ASSIGNORS)))
def test_every_subscribed_partition_exactly_once_and_only_to_subscribers(group, name) -> None:  # type: ignore[no-untyped-def]
    members, image, current = group
    check_exactly_once_to_subscribers(members, image, ASSIGNORS[name](members, image, current))


@settings(max_examples=200, deadline=None)
@given(groups(), st.sampled_from(sorted(ASSIGNORS)), st.randoms(use_true_random=False))
def test_idempotent_and_independent_of_member_order(group, name, rnd) -> None:  # type: ignore[no-untyped-def]
    members, image, current = group
    assign = ASSIGNORS[name]
    result = assign(members, image, current)
    assert assign(members, image, result) == result, "a stable group must keep its assignment"
    shuffled_ids = list(members)
    rnd.shuffle(shuffled_ids)
    shuffled = {m: members[m] for m in shuffled_ids}
    assert assign(shuffled, image, {m: current[m] for m in reversed(shuffled_ids)}) == result


# --- uniform ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=True))
def test_uniform_homogeneous_counts_differ_by_at_most_one_and_is_sticky(group) -> None:  # type: ignore[no-untyped-def]
    members, image, current = group
    result = uniform_assign(members, image, current)
    if not members:
        assert result == {}
        return
    counts = [len(result[m]) for m in members]
    assert max(counts) - min(counts) <= 1
    quota = len(subscribed_partitions(members, image)) // len(members)
    for member_id in members:
        kept = valid_current(member_id, members, image, current) & result[member_id]
        assert len(kept) >= min(len(valid_current(member_id, members, image, current)), quota), "not sticky"


@settings(max_examples=300, deadline=None)
@given(groups(homogeneous=False))
def test_uniform_heterogeneous_no_move_narrows_a_gap_of_two(group) -> None:  # type: ignore[no-untyped-def]
    members, image, current = group
    result = uniform_assign(members, image, current)
    for source, partitions in result.items():
        for p in partitions:
            for target, spec in members.items():
                if target != source and p.topic in spec.subscribed_topics:
                    assert len(result[source]) - len(result[target]) <= 1, f"{p} should move {source}->{target}"


def test_uniform_case_study_assignments() -> None:
    image = MetadataImage().with_topic("foo", 6)
    spec = AssignmentMemberSpec(frozenset({"foo"}))
    foo = {p: TopicPartition("foo", p) for p in range(6)}
    # 004 "21 -> 22": C joins A [0,1,2], B [3,4,5].
    result = uniform_assign(
        {"A": spec, "B": spec, "C": spec}, image,
        {"A": frozenset({foo[0], foo[1], foo[2]}), "B": frozenset({foo[3], foo[4], foo[5]})},
    )
    assert result == {
        "A": frozenset({foo[0], foo[1]}), "B": frozenset({foo[3], foo[4]}), "C": frozenset({foo[2], foo[5]})
    }
    # 004 "Member Failure": A leaves.
    result = uniform_assign({"B": spec, "C": spec}, image, result)
    assert result == {"B": frozenset({foo[3], foo[4], foo[0]}), "C": frozenset({foo[2], foo[5], foo[1]})}


# --- range -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(groups())
def test_range_quotas_per_topic_and_sticky(group) -> None:  # type: ignore[no-untyped-def]
    members, image, current = group
    result = range_assign(members, image, current)
    for topic in sorted(image.topics):
        subscribers = sorted(m for m, s in members.items() if topic in s.subscribed_topics)
        count = image.partition_count(topic)
        if not subscribers or count == 0:
            continue
        quota, extra = divmod(count, len(subscribers))
        per_member = {m: {p for p in result[m] if p.topic == topic} for m in subscribers}
        sizes = sorted(len(ps) for ps in per_member.values())
        assert sizes == [quota] * (len(subscribers) - extra) + [quota + 1] * extra
        for m in subscribers:
            held = {p for p in valid_current(m, members, image, current) if p.topic == topic}
            assert len(held & per_member[m]) >= min(len(held), quota), "not sticky"


@settings(max_examples=200, deadline=None)
@given(groups())
def test_range_from_scratch_is_kafkas_contiguous_ranges(group) -> None:  # type: ignore[no-untyped-def]
    members, image, _ = group
    result = range_assign(members, image, {})
    for topic in sorted(image.topics):
        subscribers = sorted(m for m, s in members.items() if topic in s.subscribed_topics)
        count = image.partition_count(topic)
        if not subscribers:
            continue
        quota, extra = divmod(count, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            assert {p.partition for p in result[m] if p.topic == topic} == set(range(start, start + size))
            start += size


def test_range_co_partitions_topics() -> None:
    image = MetadataImage().with_topic("a", 5).with_topic("b", 5)
    spec = AssignmentMemberSpec(frozenset({"a", "b"}))
    result = range_assign({"m1": spec, "m2": spec}, image, {})
    assert {p.partition for p in result["m1"] if p.topic == "a"} == {0, 1, 2}
    assert {p.partition for p in result["m1"] if p.topic == "b"} == {0, 1, 2}
    assert {p.partition for p in result["m2"]} == {3, 4}
