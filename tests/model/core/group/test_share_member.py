"""Unit tests of ShareMember, the client side of ShareGroupHeartbeat (GC-1, GC-4, CL-3)."""

from __future__ import annotations

import pytest

from model.core.errors import Errors
from model.core.group.share_member import MemberState, ShareMember
from model.core.group.share_messages import Assignment, ShareGroupHeartbeatResponse, TopicPartitions
from model.core.metadata import TopicPartition

T1_0 = TopicPartition("T1", 0)


def ok(member_id: str = "m1", epoch: int = 3, partitions: tuple[int, ...] | None = (0,)) -> ShareGroupHeartbeatResponse:
    assignment = None if partitions is None else Assignment((TopicPartitions("T1-id", "T1", partitions),))
    return ShareGroupHeartbeatResponse(member_id=member_id, member_epoch=epoch, heartbeat_interval_ms=5_000,
                                       assignment=assignment)


def joined() -> ShareMember:
    member = ShareMember("g", ["T1"], rack_id="r1", client_id="c", client_host="h")
    member.heartbeat()
    member.on_response(ok())
    return member


def test_join_sends_every_field_with_epoch_zero() -> None:
    member = ShareMember("g", ["T2", "T1", "T1"], rack_id="r1", client_id="c", client_host="h")
    req = member.heartbeat()
    assert (req.group_id, req.member_id, req.member_epoch) == ("g", "", 0)
    assert req.subscribed_topic_names == ("T1", "T2") and req.rack_id == "r1"
    assert (req.client_id, req.client_host) == ("c", "h")


def test_response_sets_member_id_epoch_assignment_and_interval() -> None:
    member = joined()
    assert (member.member_id, member.member_epoch, member.state) == ("m1", 3, MemberState.STABLE)
    assert member.assignment == {T1_0} and member.heartbeat_interval_ms == 5_000


def test_later_heartbeats_carry_only_what_changed() -> None:
    member = joined()
    req = member.heartbeat()
    assert (req.member_id, req.member_epoch, req.subscribed_topic_names, req.rack_id) == ("m1", 3, None, None)
    member.on_response(ok(epoch=4, partitions=None))
    assert member.assignment == {T1_0}  # no Assignment field: unchanged
    member.subscribe(["T1", "T3"])
    assert member.heartbeat().subscribed_topic_names == ("T1", "T3")
    member.on_request_lost()
    assert member.heartbeat().subscribed_topic_names == ("T1", "T3")  # repeated until confirmed
    member.on_response(ok(epoch=5))
    assert member.heartbeat().subscribed_topic_names is None


def test_a_new_assignment_replaces_the_old_one_at_once() -> None:
    member = joined()
    member.heartbeat()
    member.on_response(ok(epoch=4, partitions=(1, 2)))  # GC-4: no revocation step
    assert member.assignment == {TopicPartition("T1", 1), TopicPartition("T1", 2)} and member.member_epoch == 4
    member.heartbeat()
    member.on_response(ok(epoch=5, partitions=()))
    assert member.assignment == frozenset() and member.member_epoch == 5


def test_a_lost_response_resends_every_unconfirmed_field() -> None:
    member = joined()
    member.heartbeat()
    member.on_request_lost()
    req = member.heartbeat()
    assert req.subscribed_topic_names == ("T1",) and req.rack_id == "r1" and req.member_epoch == 3


@pytest.mark.parametrize("error", [Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH, Errors.GROUP_ID_NOT_FOUND])
def test_fenced_or_unknown_member_drops_its_assignment_and_rejoins_with_the_same_id(error: Errors) -> None:
    member = joined()
    member.heartbeat()
    member.on_response(ShareGroupHeartbeatResponse(error))
    assert member.assignment == frozenset() and member.state is MemberState.JOINING
    req = member.heartbeat()
    assert (req.member_id, req.member_epoch, req.subscribed_topic_names) == ("m1", 0, ("T1",))


@pytest.mark.parametrize("error", [Errors.GROUP_MAX_SIZE_REACHED, Errors.INVALID_REQUEST])
def test_fatal_errors_fail_the_member(error: Errors) -> None:
    member = ShareMember("g", ["T1"])
    member.heartbeat()
    member.on_response(ShareGroupHeartbeatResponse(error))
    assert member.state is MemberState.FAILED and member.error == error and not member.active
    assert member.heartbeat().member_epoch == 0  # trying again is a fresh join


def test_retriable_errors_keep_the_member_and_resend_fields() -> None:
    member = joined()
    member.heartbeat()
    member.on_response(ShareGroupHeartbeatResponse(Errors.COORDINATOR_NOT_AVAILABLE))
    assert member.assignment == {T1_0} and member.member_epoch == 3
    assert member.heartbeat().subscribed_topic_names == ("T1",)


def test_leave_sends_epoch_minus_one_and_drops_the_assignment() -> None:
    member = joined()
    req = member.leave()
    assert (req.member_id, req.member_epoch) == ("m1", -1)
    assert member.assignment == frozenset() and member.state is MemberState.LEAVING
    member.on_response(ShareGroupHeartbeatResponse(member_id="m1", member_epoch=-1))
    assert member.state is MemberState.LEFT and not member.active
    rejoin = member.heartbeat()
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.subscribed_topic_names) == ("m1", 0, ("T1",))


def test_a_lost_leave_counts_as_left() -> None:
    member = joined()
    member.leave()
    member.on_request_lost()
    assert member.state is MemberState.LEFT


def test_a_response_with_nothing_in_flight_is_ignored() -> None:
    member = joined()
    member.on_response(ok(epoch=99))
    assert member.member_epoch == 3


def test_a_lost_join_repeats_the_join() -> None:
    member = ShareMember("g", ["T1"])
    member.heartbeat()
    member.on_request_lost()
    req = member.heartbeat()
    assert (req.member_id, req.member_epoch, req.subscribed_topic_names) == ("", 0, ("T1",))
