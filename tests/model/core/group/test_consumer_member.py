"""The client-side consumer group member (004_32d84b698b32e157.txt, "Response Handling").

Full heartbeats on join and after an error or a lost response, deltas
otherwise; revoke-then-assign reconciliation acknowledged by the next
heartbeat (CG-2); losing everything and rejoining with epoch 0 when fenced
(CG-4); fatal errors; leaving, statically or not (CG-5).
"""

from __future__ import annotations

from collections.abc import Iterator

from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_member import ConsumerMember, MemberStatus, ReconcileStep
from model.core.group.consumer_messages import (
    ConsumerGroupHeartbeatResponse,
    HeartbeatAssignment,
    OffsetCommitResponse,
)
from model.core.metadata import MetadataImage, TopicPartition

G = "g"


def tps(*partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition("foo", p) for p in partitions)


def ok(epoch: int, assigned: frozenset[TopicPartition] | None = None, member_id: str = "m1") -> (
    ConsumerGroupHeartbeatResponse
):
    return ConsumerGroupHeartbeatResponse(
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval_ms=5_000,
        assignment=None if assigned is None else HeartbeatAssignment(assigned),
    )


def joined(owned: frozenset[TopicPartition] = tps(0, 1)) -> ConsumerMember:
    member = ConsumerMember(G, ["foo"], rebalance_timeout_ms=60_000)
    member.build_heartbeat()
    member.on_response(ok(3, owned))
    return member


def test_first_heartbeat_is_a_full_join() -> None:
    member = ConsumerMember(G, ["foo", "bar", "foo"], rebalance_timeout_ms=60_000, server_assignor="range")
    req = member.build_heartbeat()
    assert req is not None and req.member_epoch == 0 and req.member_id == ""
    assert req.is_full and req.subscribed_topic_names == ("bar", "foo") and req.topic_partitions == ()
    assert req.rebalance_timeout_ms == 60_000 and req.server_assignor == "range"


def test_applies_member_id_epoch_and_assignment() -> None:
    member = joined(tps(0, 1))
    assert (member.member_id, member.member_epoch, member.owned) == ("m1", 3, tps(0, 1))
    assert member.status == MemberStatus.STABLE and member.heartbeat_interval_ms == 5_000


def test_heartbeats_after_the_first_send_only_changes() -> None:
    member = joined(tps(0, 1))
    req = member.build_heartbeat()
    assert req is not None and not req.is_full
    # The owned partitions changed since the join request (which said ()), so they are sent once.
    assert req.topic_partitions == tuple(sorted(tps(0, 1)))
    assert req.subscribed_topic_names is None and req.rebalance_timeout_ms == -1
    member.on_response(ok(3))
    req = member.build_heartbeat()
    assert req is not None and req.topic_partitions is None and req.subscribed_topic_names is None
    member.on_response(ok(3))
    member.subscribe(["foo", "baz"])
    req = member.build_heartbeat()
    assert req is not None and req.subscribed_topic_names == ("baz", "foo")


def test_revocation_is_acknowledged_by_the_heartbeat_after_it_is_done() -> None:
    member = joined(tps(0, 1, 2))
    member.build_heartbeat()
    member.on_response(ok(3))
    member.build_heartbeat()
    step = member.on_response(ok(3, tps(0, 1)))
    assert step == ReconcileStep(revoked=tps(2))
    assert member.owned == tps(0, 1) and member.revoking == tps(2) and not member.heartbeat_now
    # Heartbeats go on while the application lets go (commits); they still report the revoked one (CG-2).
    req = member.build_heartbeat()
    assert req is not None and req.member_epoch == 3 and req.topic_partitions is None  # unchanged: not sent
    member.on_response(ok(3))
    member.revocation_done()
    assert member.revoking == frozenset() and member.heartbeat_now
    req = member.build_heartbeat()
    assert req is not None and req.member_epoch == 3 and req.topic_partitions == tuple(sorted(tps(0, 1)))
    step = member.on_response(ok(4, tps(0, 1, 5)))
    assert step == ReconcileStep(assigned=tps(5))
    assert member.member_epoch == 4


def test_a_revocation_in_progress_is_lost_with_the_rest_when_fenced() -> None:
    member = joined(tps(0, 1, 2))
    member.build_heartbeat()
    member.on_response(ok(3, tps(0, 1)))
    assert member.revoking == tps(2)
    member.build_heartbeat()
    step = member.on_response(ConsumerGroupHeartbeatResponse(error_code=Errors.FENCED_MEMBER_EPOCH))
    assert step.lost == tps(0, 1, 2) and member.owned == member.revoking == frozenset()
    member.revocation_done()  # the application's commit ends later: nothing left to acknowledge
    assert member.revoking == frozenset()


def test_preparing_to_leave_heartbeats_ignores_assignments_and_a_fence_ends_it() -> None:
    member = joined(tps(0, 1))
    member.prepare_leaving()
    req = member.build_heartbeat()
    assert req is not None and req.member_epoch == 3  # still a member: heartbeats go on
    step = member.on_response(ok(5, tps(0, 1, 2)))
    assert step == ReconcileStep() and member.owned == tps(0, 1) and member.member_epoch == 5
    member.build_heartbeat()
    member.on_response(ConsumerGroupHeartbeatResponse(error_code=Errors.FENCED_MEMBER_EPOCH))
    assert member.status == MemberStatus.LEFT and member.build_heartbeat() is None  # no rejoin, no leave
    assert member.owned == frozenset()  # lost with the fence


def test_leave_gives_up_the_partitions_still_being_revoked_too() -> None:
    member = joined(tps(0, 1, 2))
    member.build_heartbeat()
    member.on_response(ok(3, tps(0, 1)))
    assert member.leave() == tps(0, 1, 2)
    assert member.owned == member.revoking == frozenset()


def test_fenced_or_unknown_member_loses_everything_and_rejoins_with_its_id() -> None:
    for error in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
        member = joined(tps(0, 1))
        member.build_heartbeat()
        step = member.on_response(ConsumerGroupHeartbeatResponse(error_code=error))
        assert step.lost == tps(0, 1) and member.owned == frozenset()
        assert member.status == MemberStatus.JOINING
        req = member.build_heartbeat()
        assert req is not None and req.member_epoch == 0 and req.member_id == "m1" and req.is_full


def test_fatal_errors() -> None:
    for error in (Errors.UNRELEASED_INSTANCE_ID, Errors.FENCED_INSTANCE_ID, Errors.GROUP_MAX_SIZE_REACHED):
        member = joined(tps(0))
        member.build_heartbeat()
        member.on_response(ConsumerGroupHeartbeatResponse(error_code=error))
        assert member.status == MemberStatus.FATAL and member.owned == frozenset()
        assert member.build_heartbeat() is None


def test_retriable_error_and_lost_response_make_the_next_heartbeat_full() -> None:
    member = joined(tps(0))
    member.build_heartbeat()
    member.on_response(ConsumerGroupHeartbeatResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE))
    req = member.build_heartbeat()
    assert req is not None and req.is_full and req.member_epoch == 3 and member.owned == tps(0)
    member.on_response_lost()
    req = member.build_heartbeat()
    assert req is not None and req.is_full
    step = member.on_response(ok(4))
    assert step.after_lost_response


def test_leave_and_static_leave() -> None:
    member = joined(tps(0, 1))
    assert member.leave() == tps(0, 1) and member.owned == frozenset()
    req = member.build_heartbeat()
    assert req is not None and req.member_epoch == -1 and req.member_id == "m1"
    assert member.status == MemberStatus.LEFT and member.build_heartbeat() is None

    static = ConsumerMember(G, ["foo"], instance_id="i1", rebalance_timeout_ms=60_000)
    static.build_heartbeat()
    static.on_response(ok(1, tps(0)))
    static.leave(static=True)
    req = static.build_heartbeat()
    assert req is not None and req.member_epoch == -2 and req.instance_id == "i1"
    try:
        joined().leave(static=True)
    except ValueError:
        pass
    else:
        raise AssertionError("a dynamic member cannot leave with -2")


def test_commit_request_carries_member_epoch() -> None:
    member = joined(tps(0))
    req = member.commit_request({TopicPartition("foo", 0): 17})
    assert (req.member_id, req.generation_id_or_member_epoch, req.partitions[0].committed_offset) == ("m1", 3, 17)


def test_members_converge_against_the_coordinator() -> None:
    ids: Iterator[str] = (f"m{i}" for i in range(100))
    mgr = ConsumerGroupManager(BrokerConfig(), MetadataImage().with_topic("foo", 5), lambda: next(ids))
    members = [ConsumerMember(G, ["foo"], rebalance_timeout_ms=60_000) for _ in range(3)]
    for _ in range(6):
        for m in members:
            req = m.build_heartbeat()
            assert req is not None
            result = mgr.heartbeat(req, 0)
            assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
            step = m.on_response(result.response)
            assert not (step.revoked and step.assigned), "CG-2: revoke and assign in one response"
            m.revocation_done()  # the application lets go at once
            owners = [p for x in members for p in x.owned]
            assert len(owners) == len(set(owners)), "CG-3"
    group = mgr.group(G)
    assert group is not None
    assert {m.member_id: m.owned for m in members} == group.target_assignment
    assert all(m.member_epoch == group.assignment_epoch for m in members)
    commit = mgr.commit_offsets(members[0].commit_request({p: 1 for p in members[0].owned}), 0).response
    assert isinstance(commit, OffsetCommitResponse) and commit.error_codes <= {Errors.NONE}
