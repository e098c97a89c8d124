"""ShareGroupAssignmentBuilderTest, against the model's reconciliation (``ShareGroupManager._reconcile``).

Kafka's ShareGroupAssignmentBuilder moves a share-group member straight to its target assignment
and epoch (no revocation barrier, GC-4). The model does the same inside its group manager;
``builders.reconciled_member`` replays a group with the member's current and target assignment
and reconciles it once.
"""

from __future__ import annotations

import pytest

from model.core.metadata import TopicPartition
from tests.conformance.builders import reconciled_member


def _tps(topic: str, *partitions: int) -> set[TopicPartition]:
    return {TopicPartition(topic, p) for p in partitions}


def test_stable_to_stable() -> None:
    """ShareGroupAssignmentBuilderTest.testStableToStable: same partitions, epoch 10 → 11."""
    assigned = _tps("topic1", 1, 2, 3) | _tps("topic2", 4, 5, 6)
    member = reconciled_member(10, ["topic1", "topic2"], assigned, 11, assigned)
    assert (member.member_epoch, member.previous_member_epoch) == (11, 10)
    assert member.assigned_partitions == assigned


def test_stable_to_stable_with_new_partitions() -> None:
    """ShareGroupAssignmentBuilderTest.testStableToStableWithNewPartitions: the new partitions come at once."""
    target = _tps("topic1", 1, 2, 3, 4) | _tps("topic2", 4, 5, 6, 7)
    member = reconciled_member(10, ["topic1", "topic2"], _tps("topic1", 1, 2, 3) | _tps("topic2", 4, 5, 6),
                               11, target)
    assert (member.member_epoch, member.previous_member_epoch) == (11, 10)
    assert member.assigned_partitions == target


@pytest.mark.parametrize(("member_epoch", "target_epoch"), [
    pytest.param(10, 11, id="new-target"),
    pytest.param(10, 10, id="same-target-subscription-changed"),
])
def test_stable_to_stable_with_assignment_topics_no_longer_in_subscription(member_epoch: int,
                                                                          target_epoch: int) -> None:
    """ShareGroupAssignmentBuilderTest.testStableToStableWithAssignmentTopicsNoLongerInSubscription: the
    member now subscribes to topic2 only; topic1's partitions are dropped even if the target has them."""
    assigned = _tps("topic1", 1, 2, 3) | _tps("topic2", 4, 5, 6)
    member = reconciled_member(member_epoch, ["topic2"], assigned, target_epoch, assigned)
    assert (member.member_epoch, member.previous_member_epoch) == (target_epoch, member_epoch)
    assert member.assigned_partitions == _tps("topic2", 4, 5, 6)
