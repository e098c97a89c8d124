"""The share-group parts of GroupMetadataManagerTest, against ``model.core.group.share_group.ShareGroupManager``.

``builders.GroupCoordinator`` plays GroupMetadataManagerTestContext: heartbeats at a clock, records
kept, state requests collected. Kafka's tests use a mock assignor that assigns what it is told;
the model's SimpleAssignor assigns only initialized partitions (GC-5), so where Kafka expects an
assignment the test first answers the InitializeShareGroupState requests. Kafka's groups record a
metadata hash in the epoch record; the model writes a ShareGroupPartitionMetadata record instead,
so record lists are compared by kind, in order, with that record left out.
"""

from __future__ import annotations

from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import Errors
from model.core.group.share_group import DEFAULT_STATE_REQUEST_TIMEOUT_MS
from model.core.group.share_messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    ShareGroupDescribeRequest,
)
from model.core.group.share_records import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupPartitionMetadata,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    TopicMetadata,
    TopicPartitionsInfo,
    tombstone,
)
from model.core.metadata import TopicPartition
from model.core.share_state import InitializeShareGroupStateResponse, SharePartitionKey
from tests.conformance.builders import GroupCoordinator, record_kind

GROUP = "fooup"
M1, M2 = "member-1", "member-2"


def _kinds(records: list[object]) -> list[str]:
    return [k for k in map(record_kind, records) if k.lstrip("-") != "ShareGroupPartitionMetadata"]


def _partitions(response_assignment: object) -> dict[str, tuple[int, ...]]:
    return {tps.topic_name: tps.partitions
            for tps in getattr(response_assignment, "topic_partitions", ())}


def _stable_group(gc: GroupCoordinator, epoch: int, members: dict[str, tuple[tuple[str, ...], dict[str, list[int]]]],
                  initialized: dict[str, int]) -> None:
    """ShareGroupBuilder(groupId, epoch).withMember(...).withAssignment(...).withAssignmentEpoch(epoch),
    with the share-partitions of ``initialized`` (topic → partition count) initialized."""
    gc.replay(ShareGroupStatePartitionMetadata(GROUP, initialized_topics=tuple(
        TopicPartitionsInfo(f"{topic}-id", topic, tuple(range(count))) for topic, count in initialized.items())))
    for member_id, (topics, assigned) in members.items():
        tps = tuple(sorted(TopicPartition(t, p) for t, ps in assigned.items() for p in ps))
        gc.replay(ShareGroupMemberMetadata(GROUP, member_id, None, "", "", topics),
                  ShareGroupTargetAssignmentMember(GROUP, member_id, tps),
                  ShareGroupCurrentMemberAssignment(GROUP, member_id, epoch, epoch - 1, tps))
    subscribed = sorted({t for topics, _ in members.values() for t in topics})
    metadata = gc.manager.metadata
    gc.replay(ShareGroupPartitionMetadata(GROUP, tuple(  # the subscription metadata, as the group last saw it
        TopicMetadata(f"{t}-id", t, metadata.partition_count(t)) for t in subscribed)))
    gc.replay(ShareGroupMetadata(GROUP, epoch), ShareGroupTargetAssignmentMetadata(GROUP, epoch))


# -- heartbeats ----------------------------------------------------------------------------------


def test_share_group_member_can_rejoin_with_epoch_zero() -> None:
    """GroupMetadataManagerTest.testShareGroupMemberCanRejoinWithEpochZero: a member at epoch 100 sends
    epoch 0 with its member id: it gets its epoch and assignment back."""
    gc = GroupCoordinator({"foo": 3})
    _stable_group(gc, 100, {M1: (("foo",), {"foo": [0, 1, 2]})}, {"foo": 3})
    response = gc.heartbeat(GROUP, M1, 0, ["foo"])
    assert (response.error_code, response.member_id, response.member_epoch) == (Errors.NONE, M1, 100)
    assert _partitions(response.assignment) == {"foo": (0, 1, 2)}
    assert response.heartbeat_interval_ms == 5000


def test_share_group_unknown_group_id() -> None:
    """GroupMetadataManagerTest.testShareGroupUnknownGroupId"""
    gc = GroupCoordinator()
    assert gc.heartbeat(GROUP, M1, 100, ["foo", "bar"]).error_code == Errors.GROUP_ID_NOT_FOUND


def test_share_group_unknown_member_id_joins() -> None:
    """GroupMetadataManagerTest.testShareGroupUnknownMemberIdJoins: a join initializes both topics' state;
    another member id at epoch 1 is unknown."""
    gc = GroupCoordinator({"foo": 1, "bar": 1})
    assert gc.heartbeat(GROUP, M1, 0, ["foo", "bar"]).error_code == Errors.NONE
    assert {t: ps for t, (_, ps) in gc.initialize_requests().items()} == {"foo-id": {0}, "bar-id": {0}}
    assert gc.heartbeat(GROUP, M2, 1, ["foo", "bar"]).error_code == Errors.UNKNOWN_MEMBER_ID


def test_share_group_member_joins_empty_group_with_assignments() -> None:
    """GroupMetadataManagerTest.testShareGroupMemberJoinsEmptyGroupWithAssignments: the first member of a
    new group gets epoch 2 and the state is initialized at state epoch 2."""
    gc = GroupCoordinator({"foo": 6, "bar": 3})
    response = gc.heartbeat(GROUP, M1, 0, ["foo", "bar"])
    assert gc.initialize_requests() == {"foo-id": (2, set(range(6))), "bar-id": (2, {0, 1, 2})}
    assert response.member_epoch == 2


def test_share_group_member_joins_empty_group_records() -> None:
    """GroupMetadataManagerTest.testShareGroupMemberJoinsEmptyGroupWithAssignments, the records: the
    subscription, the new epoch, the target assignment and its epoch, the current assignment, and the
    share-partitions now initializing (the group created at epoch 1 as trunk does). The model writes the
    state metadata before the target assignment; the kinds are compared regardless of order."""
    gc = GroupCoordinator({"foo": 6, "bar": 3})
    gc.create_group(GROUP)
    response = gc.heartbeat(GROUP, M1, 0, ["foo", "bar"])
    assert response.member_epoch == 2
    assert gc.initialize_requests() == {"foo-id": (2, set(range(6))), "bar-id": (2, {0, 1, 2})}
    assert sorted(_kinds(gc.records)) == sorted([
        "ShareGroupMemberMetadata", "ShareGroupMetadata", "ShareGroupTargetAssignmentMember",
        "ShareGroupTargetAssignmentMetadata", "ShareGroupCurrentMemberAssignment", "ShareGroupStatePartitionMetadata"])


def test_share_group_leaving_member_bumps_group_epoch() -> None:
    """GroupMetadataManagerTest.testShareGroupLeavingMemberBumpsGroupEpoch: epoch -1 answers -1 and writes
    the member's three tombstones and epoch 11."""
    gc = GroupCoordinator({"foo": 6, "bar": 3, "zar": 1})
    _stable_group(gc, 10, {M1: (("bar", "foo"), {"foo": [0, 1, 2], "bar": [0, 1]}),
                           M2: (("bar", "foo", "zar"), {"foo": [3, 4, 5], "bar": [2]})},
                  {"foo": 6, "bar": 3, "zar": 1})
    response = gc.heartbeat(GROUP, M2, -1, ["foo", "bar"])
    assert (response.error_code, response.member_id, response.member_epoch) == (Errors.NONE, M2, -1)
    assert _kinds(gc.records) == ["-ShareGroupCurrentMemberAssignment", "-ShareGroupTargetAssignmentMember",
                                  "-ShareGroupMemberMetadata", "ShareGroupMetadata"]
    assert gc.records[-1] == ShareGroupMetadata(GROUP, 11)
    assert gc.initialize_requests() == {}


def test_share_group_new_member_is_rejected_with_maximum_members_is_reached() -> None:
    """GroupMetadataManagerTest.testShareGroupNewMemberIsRejectedWithMaximumMembersIsReached: with
    group.share.max.size 1, the first member joins at epoch 101, the second is refused."""
    gc = GroupCoordinator({"foo": 1, "bar": 1}, BrokerConfig(share_max_size=1))
    gc.create_group(GROUP, 100)
    assert gc.heartbeat(GROUP, M1, 0, ["foo", "bar"]).member_epoch == 101
    assert gc.initialize_requests() == {"foo-id": (101, {0}), "bar-id": (101, {0})}
    assert gc.heartbeat(GROUP, M2, 0, ["foo", "bar"]).error_code == Errors.GROUP_MAX_SIZE_REACHED


def test_share_group_states() -> None:
    """GroupMetadataManagerTest.testShareGroupStates: Empty without members, Stable with one, whatever its
    assignment."""
    gc = GroupCoordinator({"foo": 4})
    gc.create_group(GROUP, 10)
    group = gc.manager.group(GROUP)
    assert group is not None and group.state == "Empty"
    gc.replay(ShareGroupMemberMetadata(GROUP, M1, None, "", "", ("foo",)), ShareGroupMetadata(GROUP, 11))
    assert group.state == "Stable"
    gc.replay(ShareGroupTargetAssignmentMember(GROUP, M1, tuple(TopicPartition("foo", p) for p in (1, 2, 3))),
              ShareGroupTargetAssignmentMetadata(GROUP, 11))
    assert group.state == "Stable"
    gc.replay(ShareGroupCurrentMemberAssignment(GROUP, M1, 11, 10,
                                                (TopicPartition("foo", 1), TopicPartition("foo", 2))))
    assert group.state == "Stable"


def test_share_group_heartbeat_initialize_on_partition_update() -> None:
    """GroupMetadataManagerTest.testShareGroupHeartbeatInitializeOnPartitionUpdate: partitions added to a
    subscribed topic are initialized, and only they (trunk sends them with the next heartbeat, the model
    as soon as it sees the new metadata)."""
    gc = GroupCoordinator({"foo": 2})
    gc.create_group(GROUP)
    gc.heartbeat(GROUP, M1, 0, ["foo"])
    gc.initialize_all()
    gc.take(gc.manager.on_metadata(gc.manager.metadata.with_topic("foo", 4), gc.now))
    assert {t: ps for t, (_, ps) in gc.initialize_requests().items()} == {"foo-id": {2, 3}}


def test_share_group_initialize_success() -> None:
    """GroupMetadataManagerTest.testShareGroupInitializeSuccess: the share coordinator initialized both
    initializing partitions: one record, the state metadata with them initialized."""
    gc = GroupCoordinator({"topic": 2})
    gc.create_group(GROUP, 0)
    gc.replay(ShareGroupStatePartitionMetadata(
        GROUP, initializing_topics=(TopicPartitionsInfo("topic-id", "topic", (0, 1), (-1, -1)),)))
    gc.take(gc.manager.on_loaded(gc.now))  # a replayed group with no member: nothing retries them, and ...
    assert gc.manager.expire(gc.now + DEFAULT_STATE_REQUEST_TIMEOUT_MS).outputs == ()
    gc.records.clear()
    for partition in (0, 1):  # ... the share coordinator's answers come in (trunk: initializeShareGroupState)
        key = SharePartitionKey(GROUP, "topic-id", partition)
        gc.take(gc.manager.on_initialize_response(InitializeShareGroupStateResponse(key), gc.now))
    assert [record_kind(r) for r in gc.records] == ["ShareGroupStatePartitionMetadata"]
    group = gc.manager.group(GROUP)
    assert group is not None and group.initialized == {TopicPartition("topic", 0), TopicPartition("topic", 1)}


def test_share_group_initialize_success_assigns() -> None:
    """GroupMetadataManagerTest.testShareGroupInitializeSuccess: once initialized, the partitions are
    recorded initialized (the model then assigns them on the next heartbeat)."""
    gc = GroupCoordinator({"foo": 2})
    gc.create_group(GROUP)
    response = gc.heartbeat(GROUP, M1, 0, ["foo"])
    assert _partitions(response.assignment) == {}
    gc.initialize_all()
    group = gc.manager.group(GROUP)
    assert group is not None and group.initialized == {TopicPartition("foo", 0), TopicPartition("foo", 1)}
    response = gc.heartbeat(GROUP, M1, response.member_epoch)
    assert _partitions(response.assignment) == {"foo": (0, 1)}


def test_share_group_dynamic_configs() -> None:
    """GroupMetadataManagerTest.testShareGroupDynamicConfigs: the group's session timeout and heartbeat
    interval take effect on the next heartbeat; leaving ends the session timer."""
    gc = GroupCoordinator({"foo": 6})
    gc.create_group(GROUP)
    response = gc.heartbeat(GROUP, M1, 0, ["foo"])
    assert (response.member_epoch, response.heartbeat_interval_ms) == (2, 5000)
    group = gc.manager.group(GROUP)
    assert group is not None and group.session_deadline_ms[M1] == gc.now + 45_000
    gc.manager.set_group_config(GROUP, GroupConfig(share_session_timeout_ms=50_000,
                                                   share_heartbeat_interval_ms=10_000))
    gc.initialize_all()
    response = gc.heartbeat(GROUP, M1, response.member_epoch)
    assert response.heartbeat_interval_ms == 10_000 and group.session_deadline_ms[M1] == gc.now + 50_000
    assert gc.heartbeat(GROUP, M1, -1).member_epoch == -1
    assert M1 not in group.members and gc.sleep(60_000).records == ()


def test_session_timeout_expiration_for_share_member() -> None:
    """GroupMetadataManagerTest.testSessionTimeoutExpirationForShareMember: 45 s without a heartbeat: the
    member's tombstones and epoch 3."""
    gc = GroupCoordinator({"foo": 6})
    gc.create_group(GROUP)
    assert gc.heartbeat(GROUP, M1, 0, ["foo"]).member_epoch == 2
    gc.records.clear()
    assert gc.sleep(45_000 + 1).records
    assert _kinds(gc.records)[:4] == ["-ShareGroupCurrentMemberAssignment", "-ShareGroupTargetAssignmentMember",
                                      "-ShareGroupMemberMetadata", "ShareGroupMetadata"]
    assert ShareGroupMetadata(GROUP, 3) in gc.records


def test_session_timeout_expiration_for_share_member_target_assignment() -> None:
    """GroupMetadataManagerTest.testSessionTimeoutExpirationForShareMember: the expiry also writes the new
    target assignment's epoch (3)."""
    gc = GroupCoordinator({"foo": 6})
    gc.create_group(GROUP)
    gc.heartbeat(GROUP, M1, 0, ["foo"])
    gc.records.clear()
    gc.sleep(45_000 + 1)
    assert _kinds(gc.records)[-1] == "ShareGroupTargetAssignmentMetadata"


def test_on_loaded_session_timeout_expiration_for_share_member() -> None:
    """GroupMetadataManagerTest.testOnLoadedSessionTimeoutExpirationForShareMember: a coordinator that loaded
    the group (epoch 10) starts its members' session timers; the expiry writes the member's tombstones and
    epoch 11."""
    gc = GroupCoordinator({"foo": 6})
    _stable_group(gc, 10, {M1: (("foo",), {"foo": [0, 1, 2, 3, 4, 5]})}, {"foo": 6})
    gc.take(gc.manager.on_loaded(gc.now))
    group = gc.manager.group(GROUP)
    assert group is not None and group.session_deadline_ms[M1] == gc.now + 45_000
    gc.records.clear()
    gc.sleep(45_000 + 1)
    assert M1 not in group.members
    assert _kinds(gc.records)[:4] == ["-ShareGroupCurrentMemberAssignment", "-ShareGroupTargetAssignmentMember",
                                      "-ShareGroupMemberMetadata", "ShareGroupMetadata"]
    assert ShareGroupMetadata(GROUP, 11) in gc.records


# -- describe, delete, admin ---------------------------------------------------------------------


def test_share_group_describe_request() -> None:
    """GroupMetadataManagerTest.testShareGroupDescribeRequest"""
    gc = GroupCoordinator()
    assert gc.manager.describe(ShareGroupDescribeRequest(())).groups == ()
    described = gc.manager.describe(ShareGroupDescribeRequest(("unknown-group",))).groups
    assert len(described) == 1 and described[0].error_code == Errors.GROUP_ID_NOT_FOUND


def test_share_group_describe_no_errors() -> None:
    """GroupMetadataManagerTest.testShareGroupDescribeNoErrors: group-id-1 at epoch 100 (no members) and
    group-id-2 at 15, joined by one member (epoch 16, its state initialized at 16), described together.
    (Kafka also expects assignment epoch 1 for group-id-1, created by its epoch record alone; the
    model's is 0, not compared.)"""
    gc = GroupCoordinator({"topic": 1})
    gc.create_group("group-id-1", 100)
    gc.create_group("group-id-2", 15)
    response = gc.heartbeat("group-id-2", "", 0, ["topic"])
    assert gc.initialize_requests() == {"topic-id": (16, {0})}
    first, second = gc.manager.describe(ShareGroupDescribeRequest(("group-id-1", "group-id-2"))).groups
    assert (first.error_code, first.group_epoch, first.group_state, first.members) == (Errors.NONE, 100, "Empty", ())
    assert (second.group_epoch, second.assignment_epoch, second.group_state) == (16, 16, "Stable")
    assert [(m.member_id, m.member_epoch, m.subscribed_topic_names) for m in second.members] == \
        [(response.member_id, 16, ("topic",))]


def test_share_group_delete_tombstones() -> None:
    """GroupMetadataManagerTest.testShareGroupDeleteTombstones: deleting an empty group tombstones its
    target assignment metadata, state metadata and epoch record (the model also its partition metadata)."""
    gc = GroupCoordinator()
    gc.create_group(GROUP, 10)
    result = gc.take(gc.manager.delete_group(GROUP, gc.now))
    assert result.response is not None and result.response.error_code == Errors.NONE
    assert _kinds(gc.records) == ["-ShareGroupStatePartitionMetadata", "-ShareGroupTargetAssignmentMetadata",
                                  "-ShareGroupMetadata"]


def test_alter_share_group_offsets_bumps_group_epoch() -> None:
    """GroupMetadataManagerTest.testAlterShareGroupOffsetsBumpsGroupEpoch: epoch 5 → 6, and the partition's
    state initialized at state epoch 6 with start offset 10."""
    gc = GroupCoordinator({"topic": 3})
    gc.create_group(GROUP, 5)
    request = AlterShareGroupOffsetsRequest(GROUP, (AlterShareGroupOffsetsRequestTopic(
        "topic", (AlterShareGroupOffsetsRequestPartition(0, 10),)),))
    gc.take(gc.manager.alter_offsets(request, gc.now))
    assert ShareGroupMetadata(GROUP, 6) in gc.records
    (initialize,) = gc.state_requests
    assert (initialize.key.partition, initialize.state_epoch, initialize.start_offset) == (0, 6, 10)


def test_alter_share_group_offsets_erroneous_call_does_not_bump_group_epoch() -> None:
    """GroupMetadataManagerTest.testAlterShareGroupOffsetsErroneousCallDoesNotBumpGroupEpoch: a group with a
    member: GROUP_NOT_EMPTY, epoch still 5."""
    gc = GroupCoordinator({"topic": 3})
    _stable_group(gc, 5, {M1: (("topic",), {})}, {"topic": 3})
    request = AlterShareGroupOffsetsRequest(GROUP, (AlterShareGroupOffsetsRequestTopic(
        "topic", (AlterShareGroupOffsetsRequestPartition(0, 10),)),))
    result = gc.take(gc.manager.alter_offsets(request, gc.now))
    assert result.response.error_code == Errors.GROUP_NOT_EMPTY
    group = gc.manager.group(GROUP)
    assert group is not None and group.group_epoch == 5 and gc.state_requests == []


def test_share_group_member_id_generation() -> None:
    """GroupMetadataManagerTest.testShareGroupMemberIdGeneration: the member id the client chose is kept
    (KIP-1082); epoch 2, nothing assigned yet, both topics' state initializing at state epoch 2."""
    gc = GroupCoordinator({"foo": 1, "bar": 1})
    gc.create_group("group-foo")
    response = gc.heartbeat("group-foo", "client-chosen-id", 0, ["foo", "bar"])
    assert (response.member_id, response.member_epoch, response.heartbeat_interval_ms) == \
        ("client-chosen-id", 2, 5000)
    assert _partitions(response.assignment) == {}
    assert gc.initialize_requests() == {"foo-id": (2, {0}), "bar-id": (2, {0})}


def test_share_group_delete_request_no_deleting_topics() -> None:
    """GroupMetadataManagerTest.testShareGroupDeleteRequestNoDeletingTopics: deleting a group whose t1 is
    initializing and t2 initialized moves both to deleting and asks to delete all four share-partitions."""
    gc = GroupCoordinator({"t1": 2, "t2": 2})
    gc.create_group(GROUP, 0)
    gc.replay(ShareGroupStatePartitionMetadata(
        GROUP, initializing_topics=(TopicPartitionsInfo("t1-id", "t1", (0, 1), (-1, -1)),),
        initialized_topics=(TopicPartitionsInfo("t2-id", "t2", (0, 1)),)))
    gc.take(gc.manager.delete_group(GROUP, gc.now))
    (state,) = [r for r in gc.records if isinstance(r, ShareGroupStatePartitionMetadata)]
    assert (state.initializing_topics, state.initialized_topics) == ((), ())
    assert sorted((t.topic_name, t.partitions) for t in state.deleting_topics) == [("t1", (0, 1)), ("t2", (0, 1))]
    assert sorted((r.key.topic_id, r.key.partition) for r in gc.state_requests) == \
        [("t1-id", 0), ("t1-id", 1), ("t2-id", 0), ("t2-id", 1)]


def test_replay_share_group_target_assignment_metadata() -> None:
    """GroupMetadataManagerTest.testReplayShareGroupTargetAssignmentMetadata"""
    gc = GroupCoordinator()
    gc.replay(ShareGroupTargetAssignmentMetadata("foo", 10))
    group = gc.manager.group("foo")
    assert group is not None and group.assignment_epoch == 10


def test_replay_share_group_target_assignment_metadata_tombstone() -> None:
    """GroupMetadataManagerTest.testReplayShareGroupTargetAssignmentMetadataTombstone: a tombstone for a
    group never seen creates nothing."""
    gc = GroupCoordinator()
    gc.replay(tombstone(ShareGroupTargetAssignmentMetadata, "foo"))
    assert gc.manager.group("foo") is None
