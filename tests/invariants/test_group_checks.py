"""The group checks (GC-2..GC-5, CG-1..CG-3) on hand-built coordinator states and consumer traces:
each fires with exactly its catalogue id on a bad step and stays quiet on the good one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from invariants.group_checks import (
    AssignInitializedMonitor,
    ExclusiveOwnershipMonitor,
    GroupEpochMonitor,
    NoAssignAndRevokeMonitor,
    TargetBalanceMonitor,
)
from invariants.sink import Monitor, ViolationSink
from model.core.group.consumer_group import ConsumerGroup, ConsumerGroupMember
from model.core.group.consumer_records import ConsumerGroupMetadata
from model.core.group.share_group import ShareGroup, ShareGroupMember
from model.core.group.share_records import (
    RecordKey,
    ShareGroupMetadata,
    ShareGroupTargetAssignmentMetadata,
    Tombstone,
    TopicMetadata,
)
from model.core.metadata import TopicPartition
from model.core.share_records import ShareSnapshot, ShareTombstone
from model.core.share_state import SharePartitionKey

P0, P1, P2 = (TopicPartition("t", p) for p in range(3))

NONE: frozenset[TopicPartition] = frozenset()


class _Manager:
    def __init__(self, groups: dict[str, ShareGroup | ConsumerGroup], kafka: bool = True) -> None:
        self.groups = groups
        self.kafka = kafka  # the protocol switch (ShareGroupManager.kafka)

    def group(self, group_id: str) -> ShareGroup | ConsumerGroup | None:
        return self.groups.get(group_id)

    def group_ids(self) -> list[str]:
        return sorted(self.groups)


class _Shard:
    """What the checks read of a GroupCoordinatorShard: its two group managers."""

    def __init__(self) -> None:
        self.share = _Manager({})
        self.consumer = _Manager({})


def _step(monitor: Monitor, shard: _Shard, group_id: str | None = "g", leader_epoch: int = 1, now: int = 0) -> None:
    monitor.on_group_coordinator_step(0, leader_epoch, shard, group_id, now)  # type: ignore[arg-type]


def _ids(sink: ViolationSink) -> list[str]:
    return [v.invariant for v in sink.violations]


# -- group-epoch-order (GC-2..GC-4, CG-1) -----------------------------------------------------------------


def test_assignment_epoch_above_the_group_epoch() -> None:
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    group = ShareGroup("g", group_epoch=3, assignment_epoch=3, members={"m1": ShareGroupMember("m1", member_epoch=3)})
    shard.share.groups["g"] = group
    _step(monitor, shard)
    group.group_epoch = 4  # a member joined: the group epoch leads
    _step(monitor, shard)
    assert sink.violations == []
    group.assignment_epoch = 5
    _step(monitor, shard)
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["assignment_epoch"] == 5


def test_a_member_epoch_above_the_assignment_epoch() -> None:
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    member = ConsumerGroupMember("m1", member_epoch=2)
    group = ConsumerGroup("g", group_epoch=3, assignment_epoch=2, members={"m1": member})
    shard.consumer.groups["g"] = group
    _step(monitor, shard)
    assert sink.violations == []
    group.members["m1"] = replace(member, member_epoch=3)
    _step(monitor, shard)
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["member"] == "m1"


def test_an_assignment_epoch_that_moves_under_unchanged_members() -> None:
    # A new coordinator's replay rebuilds the group with a lower assignment epoch (not below what was
    # committed) and the member as it was: the member did not change, the epoch under it did.
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    shard.share.groups["g"] = ShareGroup("g", 5, 5, members={"m1": ShareGroupMember("m1", member_epoch=5)})
    _step(monitor, shard)
    assert sink.violations == []
    shard.share.groups["g"] = ShareGroup("g", 5, 4, members={"m1": ShareGroupMember("m1", member_epoch=5)})
    _step(monitor, shard, leader_epoch=2)
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["member_epoch"] == 5


def test_a_share_member_at_the_initial_epoch_under_kafka() -> None:
    """Kafka trunk creates a share group at epoch 1 with an empty target at 1 (KAFKA-20268): a member joining
    gets epoch 2, never 1 (the mutant group-epoch-from-zero); the KIP's group starts at 0, its first is 1."""
    for kafka, expected in ((True, ["group-epoch-order"]), (False, [])):
        sink = ViolationSink(1)
        monitor, shard = GroupEpochMonitor(sink), _Shard()
        shard.share.kafka = kafka
        shard.share.groups["g"] = ShareGroup("g", 1, 1, members={"m1": ShareGroupMember("m1", member_epoch=1)})
        _step(monitor, shard)
        assert _ids(sink) == expected
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    shard.share.groups["g"] = ShareGroup("g", 2, 2, members={"m1": ShareGroupMember("m1", member_epoch=2)})
    _step(monitor, shard)
    assert sink.violations == []


def _targeted(kafka: bool, subscriptions: dict[str, tuple[str, ...]], target: dict[str, list[tuple[str, int]]],
              epochs: tuple[int, int] = (4, 4)) -> list[str]:
    """What target-assignment-balanced says of a share group with these members and target."""
    sink = ViolationSink(1)
    monitor, shard = TargetBalanceMonitor(sink), _Shard()
    shard.share.kafka = kafka
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    shard.share.groups["g"] = ShareGroup(
        "g", *epochs,
        members={m: ShareGroupMember(m, subscribed_topic_names=ts) for m, ts in subscriptions.items()},
        target_assignment={m: frozenset(TopicPartition(t, p) for t, p in tps) for m, tps in target.items()},
        subscription_metadata=tuple(TopicMetadata(f"{t}-id", t, 4) for t in topics))
    _step(monitor, shard)
    return _ids(sink)


def test_an_unbalanced_current_target() -> None:
    both = {"a": ("T1", "T2"), "b": ("T1", "T2")}
    # Trunk's homogeneous builder balances over all topics: 2 + 1 against 0 + 2 is fine, one topic each too.
    assert _targeted(True, both, {"a": [("T1", 0), ("T1", 1), ("T2", 0)], "b": [("T2", 1), ("T2", 2)]}) == []
    assert _targeted(True, both, {"a": [("T1", 0), ("T1", 1)], "b": [("T2", 0), ("T2", 1)]}) == []
    # ... 3 against 1 is not (the mutant simple-assignor-unbalanced: the joiner got nothing).
    assert _targeted(True, both, {"a": [("T1", 0), ("T1", 1), ("T2", 0)], "b": []}) == ["target-assignment-balanced"]
    # The KIP's algorithm (and trunk's with different subscriptions) balances topic by topic.
    assert _targeted(False, both, {"a": [("T1", 0), ("T1", 1)], "b": [("T2", 0), ("T2", 1)]}) == [
        "target-assignment-balanced"]
    assert _targeted(True, {"a": ("T1",), "b": ("T1", "T2")}, {"a": [("T1", 0), ("T1", 1)], "b": [("T2", 0)]}) == [
        "target-assignment-balanced"]
    # A target not current yet (a member left; the next heartbeat computes it) is not judged.
    assert _targeted(True, both, {"a": [("T1", 0), ("T1", 1), ("T2", 0)], "b": []}, epochs=(5, 4)) == []


def _commit(monitor: GroupEpochMonitor, *records: object) -> None:
    monitor.on_group_records_committed(0, records, 0)


def _epochs(group_epoch: int, assignment_epoch: int) -> tuple[object, object]:
    """The records that make a share group's epochs durable."""
    return ShareGroupMetadata("g", group_epoch), ShareGroupTargetAssignmentMetadata("g", assignment_epoch)


GROUP_DELETED = Tombstone(RecordKey("ShareGroupMetadata", "g"))


def test_epochs_that_go_back_below_the_committed_ones_after_a_coordinator_failover() -> None:
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    shard.share.groups["g"] = ShareGroup("g", group_epoch=7, assignment_epoch=7)
    _step(monitor, shard, leader_epoch=1)
    _commit(monitor, *_epochs(7, 7))
    shard.share.groups["g"] = ShareGroup("g", group_epoch=3, assignment_epoch=3)
    _step(monitor, shard, leader_epoch=0)  # a stale coordinator about to retire: not judged
    del shard.share.groups["g"]
    _step(monitor, shard, group_id=None, leader_epoch=2)  # deleted ...
    _commit(monitor, GROUP_DELETED)
    shard.share.groups["g"] = ShareGroup("g", group_epoch=1, assignment_epoch=1)
    _step(monitor, shard, leader_epoch=2)  # ... and created afresh
    _commit(monitor, *_epochs(1, 1))
    assert sink.violations == []
    shard.share.groups["g"] = ShareGroup("g", group_epoch=0, assignment_epoch=0)
    _step(monitor, shard, group_id=None, leader_epoch=3)  # a new coordinator that lost the committed epochs
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["previous_group_epoch"] == 1


def test_an_uncommitted_bump_undone_is_not_a_step_back() -> None:
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    group = ShareGroup("g", group_epoch=3, assignment_epoch=3)
    shard.share.groups["g"] = group
    _step(monitor, shard, leader_epoch=2)
    _commit(monitor, *_epochs(3, 3))
    group.group_epoch = 4  # bumped in memory; its write fails to replicate ...
    _step(monitor, shard, leader_epoch=2)
    group.group_epoch = 3  # ... and the coordinator replays its log: nobody heard of epoch 4
    _step(monitor, shard, leader_epoch=2)
    assert sink.violations == []
    group.group_epoch = 4
    _step(monitor, shard, leader_epoch=2)
    _commit(monitor, ShareGroupMetadata("g", 4))  # 4 committed this time (other writes may still wait)
    group.group_epoch = 3
    _step(monitor, shard, leader_epoch=2)
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["previous_group_epoch"] == 4


def _deleted_in_memory(group_epoch: int, assignment_epoch: int) -> tuple[ViolationSink, GroupEpochMonitor, _Shard]:
    """Group "g" with these epochs committed, then deleted in the shard's memory (its tombstone not committed)."""
    sink = ViolationSink(1)
    monitor, shard = GroupEpochMonitor(sink), _Shard()
    shard.share.groups["g"] = ShareGroup("g", group_epoch=group_epoch, assignment_epoch=assignment_epoch)
    _step(monitor, shard)
    _commit(monitor, *_epochs(group_epoch, assignment_epoch))
    del shard.share.groups["g"]
    _step(monitor, shard, group_id=None)
    return sink, monitor, shard


def test_a_deletion_that_never_committed_keeps_the_committed_epochs() -> None:
    sink, monitor, shard = _deleted_in_memory(5, 5)  # the tombstone's write fails
    shard = _Shard()  # the host rebuilds its shard from the log (a new object, as GroupCoordinatorHost does)
    shard.share.groups["g"] = ShareGroup("g", group_epoch=2, assignment_epoch=2)
    _step(monitor, shard, group_id=None)
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["previous_group_epoch"] == 5


def test_a_committed_epoch_below_an_earlier_committed_one() -> None:
    sink = ViolationSink(1)
    monitor = GroupEpochMonitor(sink)
    _commit(monitor, *_epochs(6, 6))
    _commit(monitor, ConsumerGroupMetadata("g", 2))  # another kind of group: its own epochs
    assert sink.violations == []
    _commit(monitor, ShareGroupTargetAssignmentMetadata("g", 5))
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["previous_assignment_epoch"] == 6


# -- assign-initialized-only (GC-5) ---------------------------------------------------------------------------


def _assign_initialized_with_m1(**group_fields: Any) -> tuple[
        ViolationSink, AssignInitializedMonitor, _Shard, ShareGroupMember, ShareGroup]:
    """Share group g with one member m1 (epoch 2, holding P0), looked at once without a violation."""
    sink = ViolationSink(1)
    monitor, shard = AssignInitializedMonitor(sink), _Shard()
    monitor.on_share_state_committed(0, [_state_snapshot(P0)], 0)  # P0's share-group state is on the state log
    member = ShareGroupMember("m1", member_epoch=2, assigned_partitions=frozenset({P0}))
    group = ShareGroup("g", 2, 2, members={"m1": member}, **group_fields)
    shard.share.groups["g"] = group
    _step(monitor, shard)
    assert sink.violations == []
    return sink, monitor, shard, member, group


def test_a_share_member_assigned_a_partition_still_initializing() -> None:
    sink, monitor, shard, member, _ = _assign_initialized_with_m1(initializing={P1: -1}, initialized={P0})
    member.assigned_partitions = frozenset({P0, P1})
    _step(monitor, shard)
    assert _ids(sink) == ["assign-initialized-only"] and sink.violations[0].state["partition"] == "t-1"


def _state_snapshot(tp: TopicPartition) -> ShareSnapshot:
    return ShareSnapshot(SharePartitionKey("g", f"{tp.topic}-id", tp.partition), 0, 2, -1, 0, ())


def test_a_newly_assigned_partition_needs_its_state_committed_on_the_state_log() -> None:
    """Issue 25: the group coordinator's initialized set is its own word; the committed ShareSnapshot
    is the share coordinators'. P1 is in the set but no snapshot of it committed, then one did, then a
    tombstone."""
    sink, monitor, shard, member, _ = _assign_initialized_with_m1(initialized={P0, P1, P2})
    member.assigned_partitions = frozenset({P0, P1})
    _step(monitor, shard)
    assert _ids(sink) == ["assign-initialized-only"] and sink.violations[0].state["partition"] == "t-1"
    assert "no share coordinator has committed" in sink.violations[0].message
    monitor.on_share_state_committed(0, [_state_snapshot(P1), _state_snapshot(P2)], 1)
    member.assigned_partitions = frozenset({P0, P1, P2})
    _step(monitor, shard)
    assert len(sink.violations) == 1
    monitor.on_share_state_committed(0, [ShareTombstone(_state_snapshot(P1).key)], 2)
    member.assigned_partitions = frozenset({P0})
    _step(monitor, shard)
    member.assigned_partitions = frozenset({P0, P1})  # assigned again after its state was deleted
    _step(monitor, shard)
    assert len(sink.violations) == 2


def test_a_partition_leaving_the_initialized_set_under_an_unchanged_member() -> None:
    # A re-initialize (GC-7) takes P0 out of the initialized set while m1, unchanged, still holds it.
    sink, monitor, shard, _, group = _assign_initialized_with_m1(initialized={P0})
    group.initialized.discard(P0)
    group.initializing[P0] = -1
    _step(monitor, shard)
    assert _ids(sink) == ["assign-initialized-only"] and sink.violations[0].state["member"] == "m1"


def test_a_member_rebuilt_with_equal_holdings_is_unchanged() -> None:
    # A new coordinator replays the group: new objects, the same epochs and partitions; nothing to judge.
    sink = ViolationSink(1)
    monitor, shard = ExclusiveOwnershipMonitor(sink), _Shard()
    first = ConsumerGroupMember("m1", member_epoch=2, assigned_partitions=frozenset({P0}))
    shard.consumer.groups["g"] = ConsumerGroup("g", 2, 2, members={"m1": first})
    _step(monitor, shard)
    judged: list[object] = []
    monitor.check = lambda *args: judged.append(args[4])  # type: ignore[method-assign]
    rebuilt = ConsumerGroupMember("m1", member_epoch=2, assigned_partitions=frozenset({P0}))
    shard.consumer.groups["g"] = ConsumerGroup("g", 2, 2, members={"m1": rebuilt})
    _step(monitor, shard)
    assert judged == [[]]


# -- exclusive-ownership (CG-3) --------------------------------------------------------------------------------


def test_the_coordinator_hands_a_partition_over_before_it_is_revoked() -> None:
    sink = ViolationSink(1)
    monitor, shard = ExclusiveOwnershipMonitor(sink), _Shard()
    m1 = ConsumerGroupMember("m1", member_epoch=1, assigned_partitions=frozenset({P0, P1}))
    group = ConsumerGroup("g", 2, assignment_epoch=2, members={"m1": m1, "m2": ConsumerGroupMember("m2")})
    shard.consumer.groups["g"] = group
    _step(monitor, shard)
    # m1 is asked to revoke P1 (still pending); m2 gets P2 only: fine.
    group.members["m1"] = replace(m1, assigned_partitions=frozenset({P0}),
                                  partitions_pending_revocation=frozenset({P1}))
    group.members["m2"] = ConsumerGroupMember("m2", member_epoch=2, assigned_partitions=frozenset({P2}))
    _step(monitor, shard)
    assert sink.violations == []
    group.members["m2"] = ConsumerGroupMember("m2", member_epoch=2, assigned_partitions=frozenset({P1, P2}))
    _step(monitor, shard)
    assert _ids(sink) == ["exclusive-ownership"]
    assert (sink.violations[0].state["member"], sink.violations[0].state["holder"]) == ("m2", "m1")


def test_a_group_lost_with_its_uncommitted_tail_owns_nothing() -> None:
    # swarm_wide seed 1886069722351558784: m1 joins and gets P0, P1, but the records never commit (the
    # coordinator fails over); the new coordinator replays a log without the group, and the next join
    # creates it afresh, giving P0, P1 to m2. Nobody heard of m1's assignment: no double ownership.
    sink = ViolationSink(1)
    monitor, shard = ExclusiveOwnershipMonitor(sink), _Shard()
    m1 = ConsumerGroupMember("m1", member_epoch=1, assigned_partitions=frozenset({P0, P1}))
    shard.consumer.groups["g"] = ConsumerGroup("g", 1, assignment_epoch=1, members={"m1": m1})
    _step(monitor, shard)
    del shard.consumer.groups["g"]
    _step(monitor, shard, group_id=None, leader_epoch=3)  # the new coordinator loaded: no group
    m2 = ConsumerGroupMember("m2", member_epoch=1, assigned_partitions=frozenset({P0, P1}))
    shard.consumer.groups["g"] = ConsumerGroup("g", 1, assignment_epoch=1, members={"m2": m2})
    _step(monitor, shard, leader_epoch=3)
    assert sink.violations == []


def test_a_consumer_told_it_is_fenced_keeps_a_partition_another_owns() -> None:
    sink = ViolationSink(1)
    monitor = ExclusiveOwnershipMonitor(sink)
    monitor.on_consumer_reconciled("c1", "g", NONE, frozenset({P0}), frozenset({P0}), False, 0)
    # c1 is cut off and removed; c2 gets P0 while c1 does not know yet (the accepted zombie window).
    monitor.on_consumer_reconciled("c2", "g", NONE, frozenset({P0}), frozenset({P0}), False, 10)
    # c3 is fenced and drops everything, as it must.
    monitor.on_consumer_reconciled("c3", "g", NONE, frozenset({P1}), frozenset({P1}), False, 11)
    monitor.on_consumer_reconciled("c3", "g", NONE, NONE, NONE, True, 12)
    assert sink.violations == []
    monitor.on_consumer_reconciled("c1", "g", NONE, NONE, frozenset({P0}), True, 20)  # fenced, keeps P0
    assert _ids(sink) == ["exclusive-ownership"] and sink.violations[0].state["fenced"] == "c1"
    monitor.on_consumer_reconciled("c4", "g", NONE, frozenset({P0}), frozenset({P0}), False, 21)
    assert _ids(sink) == ["exclusive-ownership"] * 2 and sink.violations[1].state["holder"] == "c1"


# -- no-assign-and-revoke (CG-2) ---------------------------------------------------------------------------------


def test_one_heartbeat_response_assigns_and_revokes() -> None:
    sink = ViolationSink(1)
    monitor = NoAssignAndRevokeMonitor(sink)
    monitor.on_consumer_reconciled("c1", "g", NONE, frozenset({P0, P1}), frozenset({P0, P1}), False, 0)
    monitor.on_consumer_reconciled("c1", "g", frozenset({P1}), NONE, frozenset({P0}), False, 1)
    monitor.on_consumer_reconciled("c1", "g", NONE, frozenset({P2}), frozenset({P0, P2}), False, 2)
    assert sink.violations == []
    monitor.on_consumer_reconciled("c1", "g", frozenset({P0}), frozenset({P1}), frozenset({P1, P2}), False, 3)
    assert _ids(sink) == ["no-assign-and-revoke"]
    assert sink.violations[0].state["assigned"] == ["t-1"] and sink.violations[0].state["revoked"] == ["t-0"]


def test_a_group_created_afresh_on_a_deletion_still_replicating() -> None:
    # swarm_wide seed 6440920623302742870: DeleteGroups tombstones "readers" (committed at 4 / 2); a member
    # rejoins 2 ms later and the same shard creates the group afresh at 1 / 1 before the tombstone commits.
    sink, monitor, shard = _deleted_in_memory(4, 2)  # the tombstone is appended, not yet committed
    shard.share.groups["g"] = ShareGroup("g", group_epoch=1, assignment_epoch=1)
    _step(monitor, shard)  # a new life on top of the tombstone
    assert sink.violations == []
    replayed = _Shard()  # the append fails: the host rebuilds its shard from the log, the old life is back ...
    replayed.share.groups["g"] = ShareGroup("g", group_epoch=3, assignment_epoch=2)
    _step(monitor, replayed, group_id=None)  # ... below its committed epochs: judged again
    assert _ids(sink) == ["group-epoch-order"] and sink.violations[0].state["previous_group_epoch"] == 4
