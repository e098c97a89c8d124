"""Unit tests of the KIP-848 consumer-group coordinator (CG-1 .. CG-7, GC-6).

Request validation, fencing (incl. the lost-response case), static membership,
leaving, timeouts, offset commits, metadata changes, failover and describe.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import Errors
from model.core.group.assignors import AssignmentMemberSpec
from model.core.group.consumer_group import (
    REBALANCE_TIMER,
    SESSION_TIMER,
    ConsumerGroupManager,
)
from model.core.group.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
)
from model.core.group.consumer_records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerTombstone,
    MemberState,
)
from model.core.group.result import CoordinatorResult
from model.core.metadata import MetadataImage, TopicPartition

G = "g"
RT = 60_000  # rebalance timeout used by the members here
SESSION = BrokerConfig().consumer_session_timeout_ms
# These tests count epochs as KIP-848 does (a group starts at 0); Kafka trunk's start at 1 (KAFKA-20268) is
# tested by test_kafka_group_starts_at_epoch_one.
KIP = BrokerConfig(protocol="kip")


def tps(topic: str, *partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition(topic, p) for p in partitions)


class Harness:
    def __init__(self, partitions: int = 4, **kwargs: object) -> None:
        self.metadata = MetadataImage().with_topic("foo", partitions).with_topic("bar", 2)
        self.ids: Iterator[str] = (f"m{i}" for i in range(1000))
        self.mgr = ConsumerGroupManager(KIP, self.metadata, lambda: next(self.ids), **kwargs)  # type: ignore[arg-type]
        self.log: list[object] = []

    def send(self, req: ConsumerGroupHeartbeatRequest, now: int = 0) -> ConsumerGroupHeartbeatResponse:
        result = self.mgr.heartbeat(req, now)
        self.log.extend(result.records)
        assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
        return result.response

    def join(self, topics: tuple[str, ...] = ("foo",), now: int = 0, member_id: str = "",
             instance_id: str | None = None, assignor: str | None = None) -> ConsumerGroupHeartbeatResponse:
        return self.send(
            ConsumerGroupHeartbeatRequest(
                G, member_id, 0, instance_id=instance_id, rebalance_timeout_ms=RT,
                subscribed_topic_names=topics, topic_partitions=(), server_assignor=assignor,
            ),
            now,
        )

    def hb(self, member_id: str, epoch: int, owned: tuple[TopicPartition, ...] | None = None, now: int = 0,
           **fields: object) -> ConsumerGroupHeartbeatResponse:
        return self.send(ConsumerGroupHeartbeatRequest(G, member_id, epoch, topic_partitions=owned, **fields), now)  # type: ignore[arg-type]

    def converge(self, now: int = 0) -> None:
        """Every member heartbeats, reporting what it owns, until nothing changes."""
        for _ in range(10):
            group = self.mgr.group(G)
            assert group is not None
            changed = False
            for member_id in sorted(group.members):
                member = group.members[member_id]
                if member.member_epoch < 0:
                    continue
                before = len(self.log)
                self.hb(member_id, member.member_epoch, tuple(sorted(member.assigned_partitions)), now)
                changed |= len(self.log) != before
            if not changed:
                return
        raise AssertionError("did not converge")

    def member(self, member_id: str):  # type: ignore[no-untyped-def]
        group = self.mgr.group(G)
        assert group is not None
        return group.members[member_id]

    def rebuilt(self) -> ConsumerGroupManager:
        mgr = ConsumerGroupManager(KIP, self.metadata, lambda: "x")
        for record in self.log:
            mgr.replay(record)
        return mgr


# --- request validation ----------------------------------------------------------------------


JOIN = {"rebalance_timeout_ms": RT, "subscribed_topic_names": ("foo",), "topic_partitions": ()}


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        (ConsumerGroupHeartbeatRequest(" ", "", 0, **JOIN), "GroupId"),  # type: ignore[arg-type]
        (ConsumerGroupHeartbeatRequest(G, "", 3), "MemberId"),
        (ConsumerGroupHeartbeatRequest(G, "", -1), "MemberId"),
        (ConsumerGroupHeartbeatRequest(G, "m", -3), "MemberEpoch"),
        (ConsumerGroupHeartbeatRequest(G, "", 0, instance_id="", **JOIN), "InstanceId"),  # type: ignore[arg-type]
        (ConsumerGroupHeartbeatRequest(G, "", 0, rack_id=" ", **JOIN), "RackId"),  # type: ignore[arg-type]
        (ConsumerGroupHeartbeatRequest(G, "", 0, subscribed_topic_names=("foo",), topic_partitions=()),
         "RebalanceTimeoutMs"),
        (ConsumerGroupHeartbeatRequest(G, "m", 2, rebalance_timeout_ms=0), "RebalanceTimeoutMs"),
        (ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, subscribed_topic_names=("foo",)),
         "TopicPartitions"),
        (ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, subscribed_topic_names=("foo",),
                                       topic_partitions=tps("foo", 1)), "TopicPartitions"),
        (ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, topic_partitions=()),
         "SubscribedTopicNames"),
        (ConsumerGroupHeartbeatRequest(G, "m", -2), "InstanceId"),
        (ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, subscribed_topic_regex="(",
                                       topic_partitions=()), "SubscribedTopicRegex"),
    ],
)
def test_invalid_requests_name_the_field(request_: ConsumerGroupHeartbeatRequest, field: str) -> None:
    h = Harness()
    result = h.mgr.heartbeat(request_, 0)
    response = result.response
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    assert response.error_code == Errors.INVALID_REQUEST
    assert response.error_message is not None and field in response.error_message
    assert result.records == () and h.mgr.group_ids() == []


def test_unsupported_assignor() -> None:
    h = Harness()
    response = h.join(assignor="sticky")
    assert response.error_code == Errors.UNSUPPORTED_ASSIGNOR
    assert "uniform" in (response.error_message or "")


def test_unknown_member_and_unknown_group() -> None:
    h = Harness()
    assert h.hb("ghost", 3).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.mgr.group_ids() == []  # nothing created by a stray heartbeat
    h.join()
    assert h.hb("ghost", 3).error_code == Errors.UNKNOWN_MEMBER_ID
    assert h.hb("ghost", -1).error_code == Errors.UNKNOWN_MEMBER_ID


def test_join_generates_member_id_and_client_may_rejoin_with_its_own() -> None:
    h = Harness()
    response = h.join()
    assert response.member_id == "m0" and response.member_epoch == 1
    response = h.join(member_id="mine")
    assert response.member_id == "mine"
    assert sorted(h.mgr.group(G).members) == ["m0", "mine"]  # type: ignore[union-attr]


@pytest.mark.parametrize(("protocol", "first"), [("kafka", 2), ("kip", 1)])
def test_kafka_group_starts_at_epoch_one(protocol: str, first: int) -> None:
    """Kafka trunk creates a consumer group at epoch 1 with an empty target at epoch 1 (KAFKA-20268): the first
    member's join makes epoch 2 and the member moves to it with its partitions; KIP-848's example starts at 0."""
    h = Harness()
    h.mgr = ConsumerGroupManager(BrokerConfig(protocol=protocol), h.metadata, lambda: next(h.ids))
    response = h.join()
    group = h.mgr.group(G)
    assert group is not None and (group.group_epoch, group.assignment_epoch) == (first, first)
    assert response.member_epoch == first and response.assignment is not None


def test_group_max_size() -> None:
    h = Harness()
    h.mgr = ConsumerGroupManager(BrokerConfig(consumer_max_size=2, protocol="kip"), h.metadata, lambda: next(h.ids))
    assert h.join().error_code == Errors.NONE
    assert h.join().error_code == Errors.NONE
    response = h.join()
    assert response.error_code == Errors.GROUP_MAX_SIZE_REACHED
    # An existing member may still rejoin.
    assert h.join(member_id="m0").error_code == Errors.NONE


# --- epochs and reconciliation ---------------------------------------------------------------


def test_subscription_change_bumps_epoch_and_reassigns() -> None:
    h = Harness()
    h.join()
    h.join()
    h.converge()
    epoch = h.mgr.group(G).group_epoch  # type: ignore[union-attr]
    m0 = h.member("m0")
    response = h.hb("m0", m0.member_epoch, subscribed_topic_names=("foo", "bar"))
    group = h.mgr.group(G)
    assert group is not None and group.group_epoch == epoch + 1 == group.assignment_epoch
    assert response.error_code == Errors.NONE
    h.converge()
    assert TopicPartition("bar", 0) in h.member("m0").assigned_partitions
    assert all(p.topic == "foo" for p in h.member("m1").assigned_partitions)
    # An unchanged heartbeat does not bump.
    h.hb("m1", h.member("m1").member_epoch)
    assert h.mgr.group(G).group_epoch == epoch + 1  # type: ignore[union-attr]


def test_assignment_only_sent_when_changed_or_full() -> None:
    h = Harness()
    h.join()
    assert h.hb("m0", 1).assignment is None
    full = h.hb("m0", 1, tps("foo", 0, 1, 2, 3), rebalance_timeout_ms=RT, subscribed_topic_names=("foo",))
    assert full.assignment is not None
    assert full.assignment.assigned_topic_partitions == frozenset(tps("foo", 0, 1, 2, 3))


def test_revocation_response_never_assigns_and_member_waits_in_its_epoch() -> None:
    h = Harness()
    h.join()
    h.join()  # m1 joins; m0 must give up half
    response = h.hb("m0", 1, tps("foo", 0, 1, 2, 3))
    assert response.member_epoch == 1
    assert response.assignment is not None and response.assignment.assigned_topic_partitions == frozenset(
        tps("foo", 0, 1)
    )
    assert h.member("m0").state == MemberState.UNREVOKED_PARTITIONS
    # Still owning a revoked partition: no progress.
    assert h.hb("m0", 1, tps("foo", 0, 1, 3)).member_epoch == 1
    # Not saying what it owns: presumed to still own everything.
    assert h.hb("m0", 1).member_epoch == 1
    assert h.hb("m0", 1, tps("foo", 0, 1)).member_epoch == 2


# --- fencing (CG-4) --------------------------------------------------------------------------


def test_greater_or_older_epoch_is_fenced_but_member_stays() -> None:
    h = Harness()
    h.join()
    assert h.hb("m0", 2, tps("foo", 0)).error_code == Errors.FENCED_MEMBER_EPOCH
    h.join()  # group epoch 2; m0 revokes and moves to 2
    h.hb("m0", 1, tps("foo", 0, 1, 2, 3))
    h.hb("m0", 1, tps("foo", 0, 1))
    assert h.member("m0").member_epoch == 2
    h.join()  # group epoch 3
    h.converge()
    assert h.member("m0").member_epoch == 3
    response = h.hb("m0", 1, ())
    assert response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert "m0" in h.mgr.group(G).members  # type: ignore[union-attr]
    # The fenced member rejoins with epoch 0 and its id and gets its assignment back.
    mine = h.member("m0").assigned_partitions
    response = h.join(member_id="m0")
    assert response.member_epoch == 3 and response.assignment is not None
    assert response.assignment.assigned_topic_partitions == mine


def test_lost_response_previous_epoch_accepted_when_owning_a_subset() -> None:
    h = Harness()
    h.join()
    h.join()
    h.hb("m0", 1, tps("foo", 0, 1, 2, 3))
    h.hb("m0", 1, tps("foo", 0, 1))  # moved to epoch 2; suppose this response is lost
    assert (h.member("m0").member_epoch, h.member("m0").previous_member_epoch) == (2, 1)
    response = h.hb("m0", 1, tps("foo", 0, 1))
    assert response.error_code == Errors.NONE and response.member_epoch == 2
    # The previous epoch with more than the assignment, or without saying, is fenced.
    assert h.hb("m0", 1, tps("foo", 0, 1, 2)).error_code == Errors.FENCED_MEMBER_EPOCH
    assert h.hb("m0", 1).error_code == Errors.FENCED_MEMBER_EPOCH


def test_remove_member_on_fence_option_follows_the_kip_text() -> None:
    h = Harness(remove_member_on_fence=True)
    h.join()
    epoch = h.mgr.group(G).group_epoch  # type: ignore[union-attr]
    result = h.mgr.heartbeat(ConsumerGroupHeartbeatRequest(G, "m0", 7, topic_partitions=()), 0)
    assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
    assert result.response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert any(isinstance(r, ConsumerTombstone) for r in result.records)
    group = h.mgr.group(G)
    assert group is not None and "m0" not in group.members and group.group_epoch == epoch + 1


# --- leaving and static membership (CG-5) ----------------------------------------------------


def test_leave_removes_member_frees_partitions_and_bumps() -> None:
    h = Harness()
    h.join()
    h.join()
    h.converge()
    group = h.mgr.group(G)
    assert group is not None
    epoch = group.group_epoch
    result = h.mgr.heartbeat(ConsumerGroupHeartbeatRequest(G, "m1", -1), 0)
    response = result.response
    assert isinstance(response, ConsumerGroupHeartbeatResponse) and response.member_epoch == -1
    kinds = [type(r).__name__ if not isinstance(r, ConsumerTombstone) else r.key.kind for r in result.records]
    assert kinds[:2] == ["ConsumerGroupCurrentMemberAssignment", "ConsumerGroupMemberMetadata"]
    assert isinstance(result.records[-1], ConsumerGroupMetadata) and result.records[-1].epoch == epoch + 1
    assert "m1" not in group.members and all(owner == "m0" for owner in group.partition_owner.values())
    h.log.extend(result.records)
    h.converge()
    assert h.member("m0").assigned_partitions == frozenset(tps("foo", 0, 1, 2, 3))


def test_static_member_temporary_leave_and_takeover() -> None:
    h = Harness()
    h.join(instance_id="i1")
    h.join()
    h.converge()
    group = h.mgr.group(G)
    assert group is not None
    owned = h.member("m0").assigned_partitions
    epoch = group.group_epoch
    response = h.send(ConsumerGroupHeartbeatRequest(G, "m0", -2, instance_id="i1"), 1_000)
    assert response.member_epoch == -2
    assert h.member("m0").member_epoch == -2 and group.group_epoch == epoch  # no rebalance
    assert h.member("m0").assigned_partitions == owned  # kept for the rejoin
    # A second instance with the same id would be UNRELEASED while m0 is live; now it takes over.
    response = h.join(instance_id="i1", now=20_000)
    assert response.error_code == Errors.NONE and response.member_id == "m2"
    assert response.assignment is not None and response.assignment.assigned_topic_partitions == owned
    assert "m0" not in group.members and group.static_members == {"i1": "m2"}
    assert group.group_epoch == epoch  # took over without a rebalance
    assert h.mgr.timer_deadline(SESSION_TIMER, G, "m0") is None


def test_unreleased_and_fenced_instance_id() -> None:
    h = Harness()
    h.join(instance_id="i1")
    response = h.join(instance_id="i1")
    assert response.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert h.hb("m1", 1, (), instance_id="i1").error_code == Errors.FENCED_INSTANCE_ID
    assert h.hb("m0", 1, (), instance_id="i2").error_code == Errors.UNKNOWN_MEMBER_ID
    # The same member rejoining with its own id is not a second member.
    assert h.join(member_id="m0", instance_id="i1").error_code == Errors.NONE


def test_static_member_that_does_not_return_is_removed_after_session_timeout() -> None:
    h = Harness()
    h.join(instance_id="i1", now=0)
    h.send(ConsumerGroupHeartbeatRequest(G, "m0", -2, instance_id="i1"), 1_000)
    assert h.mgr.next_deadline_ms() == SESSION
    result = h.mgr.expire(SESSION)
    assert result.records and h.mgr.group(G).members == {}  # type: ignore[union-attr]


# --- timeouts (CG-6) -------------------------------------------------------------------------


def test_session_timeout_removes_silent_member_only() -> None:
    h = Harness()
    h.join(now=0)
    h.join(now=0)
    h.converge()
    h.hb("m1", h.member("m1").member_epoch, now=30_000)
    assert h.mgr.next_deadline_ms() == SESSION
    assert h.mgr.expire(SESSION - 1).records == ()
    result = h.mgr.expire(SESSION)
    group = h.mgr.group(G)
    assert group is not None and sorted(group.members) == ["m1"]
    assert result.records and h.mgr.next_deadline_ms() == 30_000 + SESSION


def test_rebalance_timeout_removes_member_that_does_not_revoke() -> None:
    h = Harness()
    h.join(now=0)
    h.join(now=0)
    h.hb("m0", 1, tps("foo", 0, 1, 2, 3), now=1_000)  # told to revoke at t=1000
    assert h.mgr.timer_deadline(REBALANCE_TIMER, G, "m0") == 1_000 + RT
    for t in range(5_000, RT, 5_000):  # keeps heartbeating but never revokes
        h.hb("m0", 1, tps("foo", 0, 1, 2, 3), now=t)
        h.hb("m1", 2, now=t)
    h.mgr.expire(1_000 + RT)
    group = h.mgr.group(G)
    assert group is not None and "m0" not in group.members


def test_rebalance_timer_cancelled_once_revoked() -> None:
    h = Harness(group_configs={G: GroupConfig(consumer_session_timeout_ms=120_000)})
    h.join(now=0)
    h.join(now=0)
    h.hb("m0", 1, tps("foo", 0, 1, 2, 3), now=1_000)
    h.hb("m0", 1, tps("foo", 0, 1), now=2_000)
    assert h.mgr.timer_deadline(REBALANCE_TIMER, G, "m0") is None
    h.mgr.expire(1_000 + RT)
    assert "m0" in h.mgr.group(G).members  # type: ignore[union-attr]


def test_group_config_overrides_session_timeout_and_interval() -> None:
    h = Harness(group_configs={G: GroupConfig(consumer_session_timeout_ms=50_000,
                                              consumer_heartbeat_interval_ms=7_000)})
    assert h.join(now=0).heartbeat_interval_ms == 7_000
    assert h.mgr.next_deadline_ms() == 50_000


# --- offset commits --------------------------------------------------------------------------


def commit(h: Harness, member_id: str, epoch: int, group: str = G) -> OffsetCommitResponse:
    result = h.mgr.commit_offsets(
        OffsetCommitRequest(group, epoch, member_id, (OffsetCommitRequestPartition("foo", 0, 42),)), 5
    )
    h.log.extend(result.records)
    assert isinstance(result.response, OffsetCommitResponse)
    return result.response


def test_offset_commit_checks_member_and_epoch() -> None:
    h = Harness()
    assert commit(h, "m0", 1).error_codes == {Errors.GROUP_ID_NOT_FOUND}
    h.join()
    assert commit(h, "m0", 1).error_codes == {Errors.NONE}
    assert h.mgr.committed_offset(G, TopicPartition("foo", 0)) == 42
    assert commit(h, "m0", 0).error_codes == {Errors.STALE_MEMBER_EPOCH}
    assert commit(h, "ghost", 1).error_codes == {Errors.UNKNOWN_MEMBER_ID}
    assert commit(h, "", -1).error_codes == {Errors.UNKNOWN_MEMBER_ID}  # group is not empty
    assert commit(h, "", -1, group="simple").error_codes == {Errors.NONE}  # outside group management
    assert h.rebuilt().snapshot() == h.mgr.snapshot()


# --- metadata, regex, assignor choice --------------------------------------------------------


def test_partitions_added_bump_the_epoch_and_regex_follows_new_topics() -> None:
    h = Harness()
    h.send(ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, subscribed_topic_regex="ba.*",
                                         topic_partitions=()))
    h.converge()
    assert h.member("m0").assigned_partitions == frozenset(tps("bar", 0, 1))
    epoch = h.mgr.group(G).group_epoch  # type: ignore[union-attr]
    h.metadata = h.metadata.with_topic("baz", 1)
    h.log.extend(h.mgr.on_metadata(h.metadata, 0).records)
    assert h.mgr.group(G).group_epoch == epoch + 1  # type: ignore[union-attr]
    h.converge()
    assert h.member("m0").assigned_partitions == frozenset(tps("bar", 0, 1) + tps("baz", 0))
    # A topic nobody subscribes to changes nothing.
    assert h.mgr.on_metadata(h.metadata.with_topic("other", 3), 0).records == ()


def test_range_assignor_chosen_by_the_members() -> None:
    h = Harness(partitions=5)
    h.join(assignor="range")
    h.join(assignor="range")
    h.converge()
    assert h.mgr.preferred_assignor(h.mgr.group(G)) == "range"  # type: ignore[arg-type]
    assert h.member("m0").assigned_partitions == frozenset(tps("foo", 0, 1, 2))
    assert h.member("m1").assigned_partitions == frozenset(tps("foo", 3, 4))


def test_injected_assignor_is_used() -> None:
    def everything_to_last(members, image, current):  # type: ignore[no-untyped-def]
        last = max(members)
        return {m: frozenset(image.topic_partitions(["foo"])) if m == last else frozenset() for m in members}

    metadata = MetadataImage().with_topic("foo", 2)
    ids = iter(["a", "b"])
    mgr = ConsumerGroupManager(KIP, metadata, lambda: next(ids), assignors={"uniform": everything_to_last})
    req = ConsumerGroupHeartbeatRequest(G, "", 0, rebalance_timeout_ms=RT, subscribed_topic_names=("foo",),
                                        topic_partitions=())
    mgr.heartbeat(req, 0)
    mgr.heartbeat(req, 0)
    assert mgr.group(G).target_assignment == {"a": frozenset(), "b": frozenset(tps("foo", 0, 1))}  # type: ignore[union-attr]
    assert AssignmentMemberSpec(frozenset()) is not None


# --- failover (GC-6) -------------------------------------------------------------------------


def test_replay_equals_live_and_on_loaded_rearms_timers_and_checks_metadata() -> None:
    h = Harness()
    h.join(now=0)
    h.join(now=0, instance_id="i9")
    h.hb("m0", 1, tps("foo", 0, 1, 2, 3), now=100)  # m0 left revoking
    rebuilt = h.rebuilt()
    assert rebuilt.snapshot() == h.mgr.snapshot()
    assert rebuilt.next_deadline_ms() is None
    # The topic grew while the coordinator was away.
    rebuilt.metadata = h.metadata.with_topic("foo", 6)
    result: CoordinatorResult = rebuilt.on_loaded(10_000)
    group = rebuilt.group(G)
    assert group is not None and group.group_epoch == h.mgr.group(G).group_epoch + 1  # type: ignore[union-attr]
    assert rebuilt.timer_deadline(SESSION_TIMER, G, "m0") == 10_000 + SESSION
    assert rebuilt.timer_deadline(REBALANCE_TIMER, G, "m0") == 10_000 + RT
    assert any(isinstance(r, ConsumerGroupMetadata) for r in result.records)
    # Without a metadata change, loading writes nothing.
    assert h.rebuilt().on_loaded(10_000).records == ()


def test_every_change_is_a_record_of_the_kip_kinds() -> None:
    h = Harness()
    h.join()
    kinds = {type(r) for r in h.log}
    assert ConsumerGroupMemberMetadata in kinds and ConsumerGroupCurrentMemberAssignment in kinds
    before = len(h.log)
    h.hb("m0", 1)
    assert len(h.log) == before  # an idle heartbeat writes nothing


# --- describe --------------------------------------------------------------------------------


def test_describe_states() -> None:
    h = Harness()
    h.join()
    h.join()
    described = h.mgr.describe([G, "nope"]).groups
    assert described[1].error_code == Errors.GROUP_ID_NOT_FOUND
    group = described[0]
    assert group.group_state == "Reconciling" and group.group_epoch == 2 and group.assignment_epoch == 2
    assert [m.member_id for m in group.members] == ["m0", "m1"]
    assert group.members[1].pending_partitions == frozenset(tps("foo", 2, 3))
    h.converge()
    assert h.mgr.describe([G]).groups[0].group_state == "Stable"
    h.mgr.heartbeat(ConsumerGroupHeartbeatRequest(G, "m0", -1), 0)
    assert h.mgr.describe([G]).groups[0].group_state == "Assigning"
    h.mgr.heartbeat(ConsumerGroupHeartbeatRequest(G, "m1", -1), 0)
    assert h.mgr.describe([G]).groups[0].group_state == "Empty"


# --- determinism (DESIGN.md principle 2) -----------------------------------------------------

SCENARIO = """
import hashlib, itertools, random
from model.core.config import BrokerConfig
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_member import ConsumerMember
from model.core.metadata import MetadataImage
rnd = random.Random(3)
md = MetadataImage().with_topic("a", 7).with_topic("b", 5).with_topic("c", 3)
ids = itertools.count()
mgr = ConsumerGroupManager(BrokerConfig(), md, lambda: f"m{next(ids)}")
log, clients, now = [], [], 0
for step in range(400):
    now += rnd.choice([0, 500, 2000])
    log.extend(mgr.expire(now).records)
    if rnd.random() < 0.1 and sum(c.active for c in clients) < 8:
        group = rnd.choice(["homogeneous", "heterogeneous"])
        topics = ["a", "b", "c"] if group == "homogeneous" else rnd.sample(["a", "b", "c"], rnd.randint(1, 3))
        clients.append(ConsumerMember(group, topics, rebalance_timeout_ms=60000,
                                      server_assignor=None if group == "homogeneous" else rnd.choice([None, "range"])))
    active = [c for c in clients if c.active]
    if not active:
        continue
    c = rnd.choice(active)
    if rnd.random() < 0.03:
        c.leave()
    req = c.build_heartbeat()
    result = mgr.heartbeat(req, now)
    log.extend(result.records)
    c.on_response(result.response)
print(hashlib.sha256(repr(log).encode()).hexdigest(), len(log))
"""


def test_record_log_is_independent_of_the_hash_seed() -> None:
    import os
    import subprocess
    import sys

    outputs = {
        subprocess.run(
            [sys.executable, "-c", SCENARIO],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "31337")
    }
    assert len(outputs) == 1, outputs
    assert int(next(iter(outputs)).split()[1]) > 50  # the scenario did something
