"""GroupCoordinatorShard: routing to the two managers over one log, loading, replay (GC-6),
deferred answers (GC-8 DeleteGroups, DescribeShareGroupOffsets) and OffsetFetch."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
)
from model.core.group.coordinator import (
    GroupCoordinatorShard,
    OffsetFetchRequest,
    OffsetFetchResponse,
    ShardResult,
    error_response,
    group_id_of,
)
from model.core.group.share_group import DEFAULT_STATE_REQUEST_TIMEOUT_MS
from model.core.group.share_member import ShareMember
from model.core.group.share_messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ListGroupsRequest,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from model.core.metadata import MetadataImage, TopicPartition
from model.core.share_state import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
)

METADATA = MetadataImage().with_topic("T1", 2).with_topic("T2", 2)
CONFIG = BrokerConfig()


class Harness:
    def __init__(self) -> None:
        counter = itertools.count(1)
        self.factory = lambda: f"m{next(counter)}"
        self.shard = GroupCoordinatorShard(CONFIG, METADATA, self.factory)
        self.log: list[object] = []  # what the caller appended to the replicated log
        self.outputs: list[object] = []

    def take(self, result: ShardResult) -> ShardResult:
        self.log.extend(result.records)
        self.outputs.extend(result.outputs)
        return result

    def handle(self, request: object, now: int = 0, token: int = 0) -> object:
        return self.take(self.shard.handle(request, now, token)).response

    def share_join(self, group: str = "sg", now: int = 0) -> ShareMember:
        member = ShareMember(group, ("T1",))
        resp = self.handle(member.heartbeat(), now)
        assert isinstance(resp, ShareGroupHeartbeatResponse)
        member.on_response(resp)
        return member

    def consumer_join(self, group: str = "cg", now: int = 0) -> ConsumerGroupHeartbeatResponse:
        resp = self.handle(ConsumerGroupHeartbeatRequest(
            group, "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("T2",), topic_partitions=()), now)
        assert isinstance(resp, ConsumerGroupHeartbeatResponse)
        return resp

    def answer_inits(self, now: int = 0) -> int:
        inits = [o for o in self.outputs if isinstance(o, InitializeShareGroupStateRequest)]
        self.outputs = [o for o in self.outputs if not isinstance(o, InitializeShareGroupStateRequest)]
        for req in inits:
            self.take(self.shard.on_state_response(InitializeShareGroupStateResponse(req.key), now))
        return len(inits)

    def replayed(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard.replay(self.log, CONFIG, METADATA, self.factory)


# --- routing ---------------------------------------------------------------------------------


def test_share_and_consumer_groups_share_one_log() -> None:
    h = Harness()
    h.share_join()
    assert h.answer_inits() == 2  # T1-0, T1-1 (GC-7)
    joined = h.consumer_join()
    assert joined.error_code == Errors.NONE and joined.member_epoch == 2  # created at 1 (KAFKA-20268)
    assert h.shard.share.group("sg") is not None and h.shard.consumer.group("cg") is not None
    assert h.shard.records == h.log
    assert h.replayed().durable_view() == h.shard.durable_view()


def test_a_group_id_names_one_group_type() -> None:
    h = Harness()
    h.share_join("g")
    resp = h.handle(ConsumerGroupHeartbeatRequest(
        "g", "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("T2",), topic_partitions=()))
    assert isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error_code == Errors.GROUP_ID_NOT_FOUND
    h.consumer_join("c")
    share = h.handle(ShareGroupHeartbeatRequest("c", "", 0, subscribed_topic_names=("T1",)))
    assert isinstance(share, ShareGroupHeartbeatResponse) and share.error_code == Errors.GROUP_ID_NOT_FOUND
    commit = h.handle(OffsetCommitRequest("g", -1, "", (OffsetCommitRequestPartition("T1", 0, 5),)))
    assert isinstance(commit, OffsetCommitResponse)
    assert commit.error_codes == {Errors.GROUP_ID_NOT_FOUND}


def test_loading_answers_load_in_progress_and_writes_nothing() -> None:
    h = Harness()
    h.shard.begin_load()
    resp = h.handle(ShareGroupHeartbeatRequest("sg", "", 0, subscribed_topic_names=("T1",)))
    assert isinstance(resp, ShareGroupHeartbeatResponse)
    assert resp.error_code == Errors.COORDINATOR_LOAD_IN_PROGRESS
    assert h.log == [] and h.shard.records == []
    assert h.shard.expire(10**9).records == ()
    h.shard.complete_load()
    h.share_join()
    assert h.log


def test_on_loaded_restarts_timers_and_resends_no_initialization() -> None:
    """GC-6 / GC-7: a new coordinator restarts the session timers and resends none of the initializations in
    progress: as in Kafka trunk, a share heartbeat retries them a retry interval after the load
    (test_share_group.py); as trunk's onLoaded, it leaves the group epoch alone (the KIP's bump and immediate
    re-send: ``protocol = "kip"``, tested in test_share_group.py)."""
    h = Harness()
    h.share_join()
    h.consumer_join()
    share_epoch = h.shard.share.group("sg").group_epoch  # type: ignore[union-attr]
    fresh = h.replayed()
    result = fresh.on_loaded(1_000)
    assert fresh.share.group("sg").group_epoch == share_epoch  # type: ignore[union-attr]
    assert not any(isinstance(o, InitializeShareGroupStateRequest) for o in result.outputs)
    # The session timers of both group types restarted from now, and they are the earliest deadline.
    sessions = fresh.share.group("sg").session_deadline_ms  # type: ignore[union-attr]
    assert set(sessions.values()) == {1_000 + CONFIG.share_session_timeout_ms}
    assert fresh.next_deadline_ms() == 1_000 + min(CONFIG.share_session_timeout_ms,
                                                   CONFIG.consumer_session_timeout_ms)
    assert fresh.expire(1_000 + DEFAULT_STATE_REQUEST_TIMEOUT_MS).outputs == ()


def test_one_deadline_drives_both_managers() -> None:
    h = Harness()
    h.share_join(now=0)
    h.answer_inits()
    h.consumer_join(now=10)
    share_deadline = CONFIG.share_session_timeout_ms
    assert h.shard.next_deadline_ms() == min(share_deadline, 10 + CONFIG.consumer_session_timeout_ms)
    result = h.take(h.shard.expire(10 + max(share_deadline, CONFIG.consumer_session_timeout_ms)))
    assert result.records  # both members timed out
    assert not h.shard.share.group("sg").members  # type: ignore[union-attr]
    assert not h.shard.consumer.group("cg").members  # type: ignore[union-attr]
    assert h.replayed().durable_view() == h.shard.durable_view()


# --- offsets -----------------------------------------------------------------------------------


def test_offset_fetch_reads_commits_and_checks_the_member_epoch() -> None:
    h = Harness()
    joined = h.consumer_join()
    member_id, epoch = joined.member_id, joined.member_epoch
    assert member_id is not None
    commit = h.handle(OffsetCommitRequest("cg", epoch, member_id, (OffsetCommitRequestPartition("T2", 0, 42, 3),)))
    assert isinstance(commit, OffsetCommitResponse) and commit.error_codes == {Errors.NONE}
    fetched = h.handle(OffsetFetchRequest("cg", (("T2", 0), ("T2", 1)), member_id, epoch))
    assert isinstance(fetched, OffsetFetchResponse) and fetched.error_code == Errors.NONE
    assert [(p.partition, p.committed_offset, p.committed_leader_epoch) for p in fetched.partitions] == [
        (0, 42, 3), (1, -1, -1)]
    stale = h.handle(OffsetFetchRequest("cg", None, member_id, epoch + 1))
    assert isinstance(stale, OffsetFetchResponse) and stale.error_code == Errors.STALE_MEMBER_EPOCH
    unknown = h.handle(OffsetFetchRequest("cg", None, "nobody", 1))
    assert isinstance(unknown, OffsetFetchResponse) and unknown.error_code == Errors.UNKNOWN_MEMBER_ID
    everything = h.handle(OffsetFetchRequest("cg"))
    assert isinstance(everything, OffsetFetchResponse) and len(everything.partitions) == 1
    # Replay keeps the commit (GC-6).
    assert h.replayed().consumer.committed_offset("cg", TopicPartition("T2", 0)) == 42


# --- deferred answers ----------------------------------------------------------------------------


def test_delete_groups_waits_for_the_share_coordinator() -> None:
    """GC-8: the DeleteGroups answer for a share group with state comes after its state is deleted."""
    h = Harness()
    member = h.share_join()
    h.answer_inits()
    h.handle(member.leave())
    h.consumer_join("cg")
    h.take(h.shard.expire(10**7))  # the consumer times out: both groups are empty
    assert h.handle(DeleteGroupsRequest(("sg", "cg")), token=7) is None
    deletes = [o for o in h.outputs if isinstance(o, DeleteShareGroupStateRequest)]
    assert len(deletes) == 2
    first = h.take(h.shard.on_state_response(DeleteShareGroupStateResponse(deletes[0].key), 0))
    assert first.completed == ()
    last = h.take(h.shard.on_state_response(DeleteShareGroupStateResponse(deletes[1].key), 0))
    ((token, answer),) = last.completed
    assert token == 7 and isinstance(answer, DeleteGroupsResponse)
    assert sorted((r.group_id, r.error_code) for r in answer.results) == [("cg", Errors.NONE), ("sg", Errors.NONE)]
    assert h.shard.share.group("sg") is None and h.shard.consumer.group("cg") is None
    replayed = h.replayed()
    assert replayed.share.group("sg") is None and replayed.consumer.group("cg") is None


def test_delete_groups_of_a_busy_consumer_group_is_refused() -> None:
    h = Harness()
    h.consumer_join("cg")
    answer = h.handle(DeleteGroupsRequest(("cg",)))
    assert isinstance(answer, DeleteGroupsResponse)
    assert [(r.group_id, r.error_code) for r in answer.results] == [("cg", Errors.GROUP_NOT_EMPTY)]


def test_describe_share_group_offsets_waits_for_summaries() -> None:
    h = Harness()
    h.share_join()
    h.answer_inits()
    assert h.handle(DescribeShareGroupOffsetsRequest("sg"), token=3) is None
    reads = [o for o in h.outputs if isinstance(o, ReadShareGroupStateSummaryRequest)]
    assert len(reads) == 2
    done: list[tuple[int, object]] = []
    for offset, req in enumerate(reads):
        done += h.shard.on_state_response(
            ReadShareGroupStateSummaryResponse(req.key, state_epoch=1, start_offset=10 + offset), 0).completed
    ((token, answer),) = done
    assert token == 3 and isinstance(answer, DescribeShareGroupOffsetsResponse)
    assert [(p.partition_index, p.start_offset) for t in answer.responses for p in t.partitions] == [(0, 10), (1, 11)]


def test_list_groups_lists_both_types() -> None:
    h = Harness()
    h.share_join("sg")
    h.consumer_join("cg")
    listed = h.shard.list_groups(ListGroupsRequest())
    assert [(g.group_id, g.group_type) for g in listed.groups] == [("cg", "consumer"), ("sg", "share")]
    only = h.shard.list_groups(ListGroupsRequest(types_filter=("consumer",)))
    assert [g.group_id for g in only.groups] == ["cg"]


@pytest.mark.parametrize("request_", [
    ShareGroupHeartbeatRequest("g", "", 0),
    ConsumerGroupHeartbeatRequest("g", "", 0),
    OffsetCommitRequest("g", 1, "m", (OffsetCommitRequestPartition("T", 0, 1),)),
    OffsetFetchRequest("g"),
    DeleteGroupsRequest(("g", "h")),
    DescribeShareGroupOffsetsRequest("g"),
])
def test_error_response_carries_the_code(request_: object) -> None:
    resp = error_response(request_, Errors.NOT_COORDINATOR)
    codes = {getattr(resp, "error_code", None)}
    codes |= {p.error_code for p in getattr(resp, "partitions", ())}
    codes |= {r.error_code for r in getattr(resp, "results", ())}
    assert Errors.NOT_COORDINATOR in codes
    assert group_id_of(request_) == (None if isinstance(request_, DeleteGroupsRequest) else "g")


# --- replay equals the live shard (GC-6) -----------------------------------------------------------


class ShardMachine(RuleBasedStateMachine):
    """Any interleaving of share- and consumer-group traffic: replaying the shard's
    log gives the same durable state as the live shard, and the log is what was returned."""

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness()
        self.now = 0
        self.share_members: dict[str, ShareMember] = {}
        self.consumers: dict[str, tuple[str, int]] = {}  # name -> (member id, epoch)

    @rule(name=st.sampled_from(["s1", "s2", "s3"]))
    def share_heartbeat(self, name: str) -> None:
        member = self.share_members.get(name)
        if member is None:
            member = self.share_members[name] = ShareMember("sg", ("T1", "T2")[: 1 + len(self.share_members) % 2])
        resp = self.h.handle(member.heartbeat(), self.now)
        assert isinstance(resp, ShareGroupHeartbeatResponse)
        member.on_response(resp)
        if resp.error_code != Errors.NONE:
            del self.share_members[name]

    @rule(name=st.sampled_from(["s1", "s2", "s3"]))
    def share_leave(self, name: str) -> None:
        member = self.share_members.pop(name, None)
        if member is not None and member.member_id:
            self.h.handle(ShareGroupHeartbeatRequest("sg", member.member_id, -1), self.now)

    @rule(name=st.sampled_from(["c1", "c2"]))
    def consumer_heartbeat(self, name: str) -> None:
        known = self.consumers.get(name)
        if known is None:
            resp = self.h.handle(ConsumerGroupHeartbeatRequest(
                "cg", "", 0, rebalance_timeout_ms=60_000, subscribed_topic_names=("T2",), topic_partitions=()),
                self.now)
        else:
            member_id, epoch = known
            group = self.h.shard.consumer.group("cg")
            member = group.members.get(member_id) if group else None
            owned = tuple(sorted(member.assigned_partitions)) if member else ()
            resp = self.h.handle(ConsumerGroupHeartbeatRequest("cg", member_id, epoch, topic_partitions=owned),
                                 self.now)
        assert isinstance(resp, ConsumerGroupHeartbeatResponse)
        if resp.error_code == Errors.NONE and resp.member_id:
            self.consumers[name] = (resp.member_id, resp.member_epoch)
        else:
            self.consumers.pop(name, None)

    @rule(name=st.sampled_from(["c1", "c2"]), offset=st.integers(0, 100))
    def commit(self, name: str, offset: int) -> None:
        known = self.consumers.get(name)
        if known is not None:
            partitions = (OffsetCommitRequestPartition("T2", 0, offset),)
            self.h.handle(OffsetCommitRequest("cg", known[1], known[0], partitions), self.now)

    @rule()
    def answer_inits(self) -> None:
        self.h.answer_inits(self.now)

    @rule(ms=st.integers(1, 50_000))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self.h.take(self.h.shard.expire(self.now))

    @invariant()
    def replay_equals_live(self) -> None:
        assert self.h.shard.records == self.h.log
        assert self.h.replayed().durable_view() == self.h.shard.durable_view()


ShardMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestShardReplay = ShardMachine.TestCase
