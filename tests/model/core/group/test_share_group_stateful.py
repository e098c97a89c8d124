"""Stateful property test of the share-group coordinator with its members (GC-1 … GC-7, E-5).

A ``ShareGroupManager``, the ``ShareMember`` clients of one group, a share
coordinator that answers (or fails, or loses) each InitializeShareGroupState,
and a network that loses heartbeats and responses. Hypothesis drives joins,
leaves, subscription changes, partitions and topics appearing and topics being
deleted, time passing (session timeouts, retries), the admin operations
(offsets reset, offsets deleted, group deleted) and coordinator failovers (the
log replayed into a fresh manager, then ``on_loaded``). The share coordinator
serves its requests in the order they were sent (one connection), answering,
failing or losing each.

After every step:
- GC-2/GC-3: group epoch ≥ assignment epoch ≥ every member epoch, and none of
  them goes down, across failovers too;
- GC-5: every partition in a target or current assignment at the group epoch
  is initialized, and every initialized partition was initialized by the
  share coordinator and not deleted since; none is initialized and being
  deleted at once;
- GC-4: a member holding the epoch the coordinator has for it holds exactly
  the assignment the coordinator has for it;
- GC-7/SP-12: a share-partition's state epoch never goes backwards, and an
  offsets reset raises it;
- GC-6: replaying the log rebuilds the live coordinator's durable state.
At the end the faults stop and every member heartbeats until quiet: then every
live member is at the group's epoch with its target assignment, and every
subscribed partition is initialized and assigned (E-5).
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.result import CoordinatorResult
from model.core.group.share_group import ShareGroupManager
from model.core.group.share_member import MemberState, ShareMember
from model.core.group.share_messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    DeletableGroupResult,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    ShareGroupHeartbeatResponse,
)
from model.core.group.share_records import RecordKey, Tombstone
from model.core.metadata import MetadataImage, TopicPartition
from model.core.share_state import (
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    SharePartitionKey,
)

GROUP = "g"
GROUP_DELETED = Tombstone(RecordKey("ShareGroupMetadata", GROUP))
TOPICS = ("T1", "T2", "T3")
SESSION_TIMEOUT_MS = 45_000
RETRY_BACKOFF_MS = 1_000
REQUEST_TIMEOUT_MS = 30_000

subscriptions = st.sets(st.sampled_from(TOPICS), min_size=1).map(lambda s: tuple(sorted(s)))
network = st.sampled_from(["ok", "ok", "ok", "lost request", "lost response"])
# Disruptive rules act on a fraction of their draws, so that the everyday ones
# (joins, heartbeats, leaves) still make up most runs.
sometimes = st.integers(0, 3).map(lambda n: n == 0)
often = st.booleans()


class ShareGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        # T3 does not exist yet: a member may subscribe to it before it is created.
        self.metadata = MetadataImage().with_topic("T1", 1).with_topic("T2", 2)
        counter = itertools.count(1)
        self.factory = lambda: f"member-{next(counter)}"
        self.config = BrokerConfig()
        self.mgr = self._new_manager()
        self.log: list[object] = []
        self.members: list[ShareMember] = []
        self.sc_inflight: list[InitializeShareGroupStateRequest | DeleteShareGroupStateRequest] = []
        self.sc_initialized: set[SharePartitionKey] = set()  # state the share coordinator holds
        self.state_epochs: dict[SharePartitionKey, int] = {}
        self.initializes_sent: set[InitializeShareGroupStateRequest] = set()
        self.last_group_epoch = 0
        self.last_assignment_epoch = 0
        self.last_member_epochs: dict[str, int] = {}
        # Which incarnation of the group each member id last heard from: a deleted and
        # re-created group starts its epochs over, so a member of an older one is not bound by them.
        self.incarnation = 0
        self.heard_in: dict[str, int] = {}

    def _new_manager(self) -> ShareGroupManager:
        return ShareGroupManager(
            self.config, self.metadata, self.factory,
            state_retry_backoff_ms=RETRY_BACKOFF_MS, state_request_timeout_ms=REQUEST_TIMEOUT_MS,
        )

    # --- plumbing ---------------------------------------------------------------------------

    def _take(self, result: CoordinatorResult, altered: bool = False) -> CoordinatorResult:
        self.log.extend(result.records)
        if GROUP_DELETED in result.records:
            # A group created again starts from epoch 0 (its state was deleted first).
            self.last_group_epoch = self.last_assignment_epoch = 0
            self.last_member_epochs = {}
            self.incarnation += 1
        for out in result.outputs:
            if isinstance(out, DeleteShareGroupStateRequest):
                self.sc_inflight.append(out)
            if isinstance(out, InitializeShareGroupStateRequest):
                # GC-7: the state epoch is the group epoch; SP-12: it never goes back,
                # and an offsets reset raises it.
                # Under trunk's protocol a resend is the persister's, of the request as first sent.
                group = self.mgr.group(GROUP)
                resend = self.mgr.kafka and out in self.initializes_sent
                assert group is not None and (out.state_epoch == group.group_epoch or resend), out
                self.initializes_sent.add(out)
                previous = self.state_epochs.get(out.key, -1)
                assert out.state_epoch >= previous, (out, previous)
                if altered:
                    assert out.state_epoch > previous, (out, previous)
                self.state_epochs[out.key] = out.state_epoch
                self.sc_inflight.append(out)
        return result

    def _heartbeat(self, member: ShareMember, fault: str, leave: bool = False) -> None:
        req = member.leave() if leave else member.heartbeat()
        if fault == "lost request":
            member.on_request_lost()
            return
        resp = self._take(self.mgr.heartbeat(req, self.now)).response
        assert isinstance(resp, ShareGroupHeartbeatResponse)
        assert resp.error_code in (Errors.NONE, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH,
                                   Errors.GROUP_ID_NOT_FOUND), resp
        if fault == "lost response":
            member.on_request_lost()
        else:
            member.on_response(resp)
            if resp.error_code == Errors.NONE:
                self.heard_in[member.member_id] = self.incarnation

    def _answer(self, req: InitializeShareGroupStateRequest | DeleteShareGroupStateRequest, error: Errors) -> None:
        if isinstance(req, DeleteShareGroupStateRequest):
            if error == Errors.NONE:
                self.sc_initialized.discard(req.key)
                self.state_epochs.pop(req.key, None)  # the state is gone: epochs may start over
            result = self._take(self.mgr.on_delete_response(DeleteShareGroupStateResponse(req.key, error), self.now))
            if result.response is not None:
                assert isinstance(result.response, DeletableGroupResult)
                assert (result.response.error_code == Errors.NONE) == (self.mgr.group(GROUP) is None)
            return
        if error == Errors.NONE:
            self.sc_initialized.add(req.key)
        self._take(self.mgr.on_initialize_response(InitializeShareGroupStateResponse(req.key, error), self.now))

    def _member(self, index: int) -> ShareMember | None:
        active = [m for m in self.members if m.active]
        return active[index % len(active)] if active else None

    # --- rules -------------------------------------------------------------------------------

    @rule(topics=subscriptions, fault=network)
    def join(self, topics: tuple[str, ...], fault: str) -> None:
        member = ShareMember(GROUP, topics)
        self.members.append(member)
        self._heartbeat(member, fault)

    @rule(index=st.integers(0, 50), fault=network)
    def heartbeat(self, index: int, fault: str) -> None:
        member = self._member(index)
        if member is not None:
            self._heartbeat(member, fault)

    @rule(index=st.integers(0, 50), fault=network)
    def leave(self, index: int, fault: str) -> None:
        member = self._member(index)
        if member is not None and member.member_id:
            self._heartbeat(member, fault, leave=True)

    @rule(index=st.integers(0, 50), topics=subscriptions)
    def subscribe(self, index: int, topics: tuple[str, ...]) -> None:
        member = self._member(index)
        if member is not None:
            member.subscribe(topics)

    @rule(topic=st.sampled_from(TOPICS), more=st.integers(1, 2))
    def add_partitions(self, topic: str, more: int) -> None:
        self.metadata = self.metadata.with_topic(topic, self.metadata.partition_count(topic) + more)
        self._take(self.mgr.on_metadata(self.metadata, self.now))

    @rule(outcome=st.sampled_from(["ok", "ok", "error", "lost"]))
    def share_coordinator_answers(self, outcome: str) -> None:
        if not self.sc_inflight:
            return
        req = self.sc_inflight.pop(0)
        if outcome != "lost":
            self._answer(req, Errors.NONE if outcome == "ok" else Errors.COORDINATOR_NOT_AVAILABLE)

    @rule(topic=st.sampled_from(TOPICS), act=sometimes)
    def delete_topic(self, topic: str, act: bool) -> None:
        if not act:
            return
        self.metadata = MetadataImage({t: m for t, m in self.metadata.topics.items() if t != topic})
        self._take(self.mgr.on_metadata(self.metadata, self.now))

    @rule(ms=st.sampled_from([100, 1_000, 5_000, 20_000, 50_000]))
    def time_passes(self, ms: int) -> None:
        self.now += ms
        self._take(self.mgr.expire(self.now))

    @rule(start_offset=st.integers(-1, 100), act=sometimes)
    def alter_offsets(self, start_offset: int, act: bool) -> None:
        if not act:
            return
        group = self.mgr.group(GROUP)
        req = AlterShareGroupOffsetsRequest(GROUP, (AlterShareGroupOffsetsRequestTopic(
            "T1", (AlterShareGroupOffsetsRequestPartition(0, start_offset),)
        ),))
        deleting = group is not None and TopicPartition("T1", 0) in group.deleting
        resp: Any = self._take(self.mgr.alter_offsets(req, self.now), altered=True).response
        if group is None or (group.delete_pending and not group.members):
            assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
        elif group.members:
            assert resp.error_code == Errors.GROUP_NOT_EMPTY
        elif "T1" not in self.metadata.topics:
            assert resp.responses[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        else:
            expected = Errors.INVALID_REQUEST if deleting else Errors.NONE
            assert resp.responses[0].partitions[0].error_code == expected

    @rule(topic=st.sampled_from(TOPICS), act=sometimes)
    def delete_offsets(self, topic: str, act: bool) -> None:
        if not act:
            return
        group = self.mgr.group(GROUP)
        req = DeleteShareGroupOffsetsRequest(GROUP, (DeleteShareGroupOffsetsRequestTopic(topic),))
        resp: Any = self._take(self.mgr.delete_offsets(req, self.now)).response
        if group is not None and group.members:
            assert resp.error_code == Errors.GROUP_NOT_EMPTY
        elif group is not None and not group.delete_pending:
            assert not any(tp.topic == topic for tp in group.initialized | group.initializing.keys())

    @rule(act=sometimes)
    def delete_group(self, act: bool) -> None:
        if not act:
            return
        group = self.mgr.group(GROUP)
        members = bool(group and group.members)
        resp = self._take(self.mgr.delete_group(GROUP, self.now)).response
        if group is None:
            assert resp == DeletableGroupResult(GROUP, Errors.GROUP_ID_NOT_FOUND, f"share group {GROUP} does not exist")
        elif members:
            assert isinstance(resp, DeletableGroupResult) and resp.error_code == Errors.GROUP_NOT_EMPTY
        elif resp is not None:
            assert resp == DeletableGroupResult(GROUP) and self.mgr.group(GROUP) is None
        else:
            assert group.delete_pending and group.deleting and not group.initialized and not group.initializing

    @rule(act=often)
    def coordinator_failover(self, act: bool) -> None:
        if not act:
            return
        fresh = self._new_manager()
        for record in self.log:
            fresh.replay(record)
        assert fresh.durable_view() == self.mgr.durable_view()  # GC-6
        self.mgr = fresh
        self._take(self.mgr.on_loaded(self.now))

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def epochs_are_ordered_and_monotonic(self) -> None:
        group = self.mgr.group(GROUP)
        if group is None:
            return
        assert group.group_epoch >= group.assignment_epoch  # GC-3
        assert group.group_epoch >= self.last_group_epoch
        assert group.assignment_epoch >= self.last_assignment_epoch
        self.last_group_epoch, self.last_assignment_epoch = group.group_epoch, group.assignment_epoch
        for member_id, member in group.members.items():
            assert member.member_epoch <= group.assignment_epoch
            assert member.member_epoch >= self.last_member_epochs.get(member_id, 0)
        self.last_member_epochs = {mid: m.member_epoch for mid, m in group.members.items()}

    @invariant()
    def only_initialized_partitions_are_assigned(self) -> None:
        group = self.mgr.group(GROUP)
        if group is None:
            return
        # GC-5. A partition leaving the initialized set (its topic deleted) always bumps
        # the group epoch, so only an assignment at the group epoch must be all initialized.
        if group.assignment_epoch == group.group_epoch:
            for tps in group.target_assignment.values():
                assert tps <= group.initialized
        for member in group.members.values():
            if member.member_epoch == group.group_epoch:
                assert member.assigned_partitions <= group.initialized
        for tp in group.initialized:
            key = SharePartitionKey(GROUP, group.state_topic_ids[tp.topic], tp.partition)
            assert key in self.sc_initialized  # GC-7: recorded only after the share coordinator did it
        assert not group.deleting & (group.initialized | group.initializing.keys())  # GC-8

    @invariant()
    def members_hold_what_the_coordinator_gave_them_at_their_epoch(self) -> None:
        group = self.mgr.group(GROUP)
        for client in self.members:
            if client.state is not MemberState.STABLE:
                continue
            if self.heard_in.get(client.member_id) != self.incarnation:
                continue  # a zombie of a deleted incarnation; UNKNOWN_MEMBER_ID on its next heartbeat
            if group is not None:
                assert client.member_epoch <= group.assignment_epoch
            known = group.members.get(client.member_id) if group is not None else None
            if known is not None and known.member_epoch == client.member_epoch:
                assert client.assignment == known.assigned_partitions  # GC-4

    @invariant()
    def replay_rebuilds_the_live_state(self) -> None:
        fresh = self._new_manager()
        for record in self.log:
            fresh.replay(record)
        assert fresh.durable_view() == self.mgr.durable_view()  # GC-6

    # --- the faults stop: convergence (E-5) ---------------------------------------------------

    def teardown(self) -> None:
        for _ in range((SESSION_TIMEOUT_MS + REQUEST_TIMEOUT_MS) // 5_000 + 10):
            self.now += 5_000
            self._take(self.mgr.expire(self.now))
            self._quiet_round()
        group = self.mgr.group(GROUP)
        live = [m for m in self.members if m.active]
        if group is None:
            assert not live
            return
        assert not group.deleting, group.deleting
        # Under trunk's protocol only a heartbeat retries an initialize a new coordinator inherited, and only
        # for a topic a member subscribes to: one nobody subscribes to may stay initializing (GC-7).
        wanted = {t for m in live for t in m.subscribed_topic_names}
        stuck = {tp: s for tp, s in group.initializing.items() if tp.topic in wanted or not self.mgr.kafka}
        assert not stuck, stuck
        assert {m.member_id for m in live} == set(group.members)  # zombies timed out
        if live:  # an empty group computes no new target: nobody heartbeats
            assert group.group_epoch == group.assignment_epoch
        subscribed: dict[str, set[str]] = {}
        for m in live:
            assert m.state is MemberState.STABLE
            assert m.member_epoch == group.assignment_epoch
            assert m.assignment == group.target_assignment[m.member_id]
            assert m.assignment == group.members[m.member_id].assigned_partitions
            for topic in m.subscribed_topic_names:
                subscribed.setdefault(topic, set()).add(m.member_id)
        for topic, who in subscribed.items():
            for p in range(self.metadata.partition_count(topic)):
                tp = TopicPartition(topic, p)
                assert tp in group.initialized
                assert any(tp in group.target_assignment[mid] for mid in who), tp

    def _quiet_round(self) -> bool:
        before = len(self.log)
        while self.sc_inflight:
            self._answer(self.sc_inflight.pop(0), Errors.NONE)
        for member in self.members:
            if member.active:
                self._heartbeat(member, "ok")
        while self.sc_inflight:
            self._answer(self.sc_inflight.pop(0), Errors.NONE)
        return len(self.log) == before


ShareGroupMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestShareGroupStateful = ShareGroupMachine.TestCase
