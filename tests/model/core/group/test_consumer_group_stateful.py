"""Stateful property test: a consumer-group coordinator and its members under faults.

A ``ConsumerGroupManager`` and several ``ConsumerMember`` clients run random
joins, leaves (dynamic and static), static restarts, lost heartbeats and lost
responses, revocations the application finishes later (heartbeats go on
meanwhile), subscription changes, partition and topic additions, offset
commits, time passing (session and rebalance timeouts) and coordinator
failovers (a fresh manager replays the record log, then ``on_loaded``).

After every step:

- CG-1: group epoch >= assignment epoch >= every member epoch; the group and
  assignment epochs never go back (across failovers too), nor does a member's
  epoch while it stays in the group;
- CG-2: the coordinator never gives a member new partitions in the step that
  asks it to revoke some; a member never revokes and assigns on one response
  unless it missed the previous one;
- CG-3: no partition is owned by two members at once, as the members believe
  it, among the members the coordinator still has (a member removed behind its
  back is a zombie until it hears so; its offset commits are refused, which the
  commit rule checks) — and what a member believes it owns, the coordinator
  has it owning;
- CG-7: a fresh target assigns every subscribed partition exactly once, to a
  subscriber;
- GC-6: a manager rebuilt from the log equals the live one;
- every member has a running session timer.

At the end faults stop, time advances in heartbeat intervals and every member
heartbeats: every live member reaches the assignment epoch and owns exactly its
target (E-5).
"""

from __future__ import annotations

import itertools

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.consumer_group import SESSION_TIMER, ConsumerGroup, ConsumerGroupManager, ConsumerGroupMember
from model.core.group.consumer_member import ConsumerMember, MemberStatus
from model.core.group.consumer_messages import ConsumerGroupHeartbeatResponse, OffsetCommitResponse
from model.core.group.result import CoordinatorResult
from model.core.metadata import MetadataImage, TopicPartition

G = "g"
TOPICS = ("t0", "t1", "t2")
INSTANCES = ("i0", "i1", "i2", "i3")
MAX_ACTIVE = 6
CONFIG = BrokerConfig()
INTERVAL = CONFIG.consumer_heartbeat_interval_ms

DELIVERED, REQUEST_LOST, RESPONSE_LOST = "delivered", "request lost", "response lost"


class ConsumerGroupMachine(RuleBasedStateMachine):
    remove_member_on_fence = False

    def __init__(self) -> None:
        super().__init__()
        self.metadata = MetadataImage().with_topic("t0", 3).with_topic("t1", 2)
        self.ids = itertools.count()
        self.mgr = self._manager()
        self.log: list[object] = []
        self.now = 0
        self.clients: list[ConsumerMember] = []
        self.epochs: tuple[int, int] = (0, 0)
        self.member_epochs: dict[str, int] = {}
        self.members_before: dict[str, ConsumerGroupMember] = {}

    def _manager(self) -> ConsumerGroupManager:
        return ConsumerGroupManager(
            CONFIG, self.metadata, lambda: f"m{next(self.ids)}", remove_member_on_fence=self.remove_member_on_fence
        )

    # --- plumbing -----------------------------------------------------------------------------

    def record(self, result: CoordinatorResult) -> CoordinatorResult:
        self.log.extend(result.records)
        return result

    def group(self) -> ConsumerGroup | None:
        return self.mgr.group(G)

    def active(self) -> list[ConsumerMember]:
        return [c for c in self.clients if c.active]

    def exchange(self, client: ConsumerMember, fate: str = DELIVERED) -> None:
        req = client.build_heartbeat()
        if req is None:
            return
        if fate == REQUEST_LOST:
            client.on_response_lost()
            return
        result = self.record(self.mgr.heartbeat(req, self.now))
        if fate == RESPONSE_LOST:
            client.on_response_lost()
            return
        assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
        if result.response.error_code != Errors.NONE:
            event(f"heartbeat error {result.response.error_code.name}")
        step = client.on_response(result.response)
        if step.after_lost_response:
            event("member caught up after a lost response")
        assert not (step.revoked and step.assigned) or step.after_lost_response, (
            f"CG-2: {client.member_id} told to revoke {step.revoked} and take {step.assigned} at once"
        )

    # --- rules --------------------------------------------------------------------------------

    @initialize()
    def start(self) -> None:
        self.snapshot_epochs()

    @precondition(lambda self: len(self.active()) < MAX_ACTIVE)
    @rule(
        topics=st.sets(st.sampled_from(TOPICS), min_size=1),
        instance=st.none() | st.sampled_from(INSTANCES),
        rebalance_timeout=st.sampled_from([20_000, 60_000]),
        assignor=st.sampled_from([None, "uniform", "range"]),
    )
    def join(self, topics: set[str], instance: str | None, rebalance_timeout: int, assignor: str | None) -> None:
        client = ConsumerMember(
            G, sorted(topics), instance_id=instance, rebalance_timeout_ms=rebalance_timeout, server_assignor=assignor
        )
        self.clients.append(client)
        self.exchange(client)

    @precondition(
        lambda self: len(self.active()) < MAX_ACTIVE
        and any(c.status == MemberStatus.LEFT and c.instance_id for c in self.clients)
    )
    @rule(pick=st.integers(0, 99))
    def restart_static(self, pick: int) -> None:
        """A static member that left comes back: a new client with the same instance id (CG-5)."""
        left = [c for c in self.clients if c.status == MemberStatus.LEFT and c.instance_id]
        old = left[pick % len(left)]
        client = ConsumerMember(
            G, old.subscribed_topic_names, instance_id=old.instance_id, rebalance_timeout_ms=old.rebalance_timeout_ms
        )
        self.clients.append(client)
        self.exchange(client)
        if client.owned:
            event("a restarted static member took over its assignment")

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 99), fate=st.sampled_from([DELIVERED, DELIVERED, REQUEST_LOST, RESPONSE_LOST]))
    def heartbeat(self, pick: int, fate: str) -> None:
        active = self.active()
        self.exchange(active[pick % len(active)], fate)

    @precondition(lambda self: any(c.revoking for c in self.active()))
    @rule(pick=st.integers(0, 99))
    def finish_revocation(self, pick: int) -> None:
        """The application of a member told to revoke has committed and let go (CG-2); until now its
        heartbeats still reported the revoked partitions owned."""
        revoking = [c for c in self.active() if c.revoking]
        client = revoking[pick % len(revoking)]
        client.revocation_done()
        event("a revocation finished")
        self.exchange(client)

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 99), static=st.booleans(), delivered=st.booleans())
    def leave(self, pick: int, static: bool, delivered: bool) -> None:
        active = self.active()
        client = active[pick % len(active)]
        client.leave(static=static and client.instance_id is not None)
        self.exchange(client, DELIVERED if delivered else REQUEST_LOST)

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 99), topics=st.sets(st.sampled_from(TOPICS)))
    def subscribe(self, pick: int, topics: set[str]) -> None:
        active = self.active()
        client = active[pick % len(active)]
        client.subscribe(sorted(topics))
        self.exchange(client)

    @rule(topic=st.sampled_from(TOPICS))
    def add_partitions(self, topic: str) -> None:
        count = self.metadata.partition_count(topic)
        if count >= 6:
            return
        self.metadata = self.metadata.with_topic(topic, count + 1)
        self.record(self.mgr.on_metadata(self.metadata, self.now))

    @rule(dt=st.sampled_from([1_000, INTERVAL, 20_000, 50_000]))
    def advance(self, dt: int) -> None:
        self.now += dt
        if self.record(self.mgr.expire(self.now)).records:
            event("a member timed out")

    @precondition(lambda self: bool(self.active()))
    @rule(pick=st.integers(0, 99))
    def commit(self, pick: int) -> None:
        active = self.active()
        client = active[pick % len(active)]
        if not client.member_id:
            return
        group = self.group()
        member = group.members.get(client.member_id) if group else None
        fresh = member is not None and member.member_epoch == client.member_epoch
        result = self.record(self.mgr.commit_offsets(client.commit_request({p: 7 for p in client.owned}), self.now))
        assert isinstance(result.response, OffsetCommitResponse)
        if client.owned:
            accepted = result.response.error_codes == {Errors.NONE}
            event(f"commit accepted={accepted}")
            assert accepted == fresh, f"commit by {client.member_id} at {client.member_epoch}: {result.response}"
            if accepted:
                assert member is not None and client.owned <= member.owned_partitions

    @rule()
    def failover(self) -> None:
        fresh = self._manager()
        for record in self.log:
            fresh.replay(record)
        assert fresh.snapshot() == self.mgr.snapshot(), "GC-6: replay differs from the live state"
        self.mgr = fresh
        self.record(self.mgr.on_loaded(self.now))

    # --- invariants ---------------------------------------------------------------------------

    def snapshot_epochs(self) -> None:
        group = self.group()
        self.epochs = (group.group_epoch, group.assignment_epoch) if group else (0, 0)
        self.member_epochs = {m.member_id: m.member_epoch for m in group.members.values()} if group else {}
        self.members_before = dict(group.members) if group else {}

    @invariant()
    def epochs_are_ordered_and_monotonic(self) -> None:  # CG-1
        group = self.group()
        if group is None:
            return
        assert group.group_epoch >= group.assignment_epoch, "CG-1: assignment epoch ahead of the group epoch"
        for m in group.members.values():
            assert group.assignment_epoch >= m.member_epoch, f"CG-1: {m.member_id} ahead of the assignment epoch"
        assert (group.group_epoch, group.assignment_epoch) >= self.epochs
        assert group.group_epoch >= self.epochs[0] and group.assignment_epoch >= self.epochs[1], "CG-1: went back"
        for member_id, before in self.member_epochs.items():
            now = group.members.get(member_id)
            if now is not None and before >= 0 and now.member_epoch >= 0:
                assert now.member_epoch >= before, f"CG-1: {member_id} epoch {before} -> {now.member_epoch}"

    @invariant()
    def coordinator_never_assigns_while_revoking(self) -> None:  # CG-2
        group = self.group()
        if group is None:
            return
        for member_id, before in self.members_before.items():
            after = group.members.get(member_id)
            if after is None or after == before or not after.partitions_pending_revocation:
                continue
            assert after.assigned_partitions <= before.assigned_partitions, (
                f"CG-2: {member_id} given partitions while asked to revoke"
            )

    @invariant()
    def no_partition_owned_twice(self) -> None:  # CG-3
        group = self.group()
        members = group.members if group else {}
        owner: dict[TopicPartition, str] = {}
        for client in self.active():
            member = members.get(client.member_id)
            if member is None or not client.member_id:
                continue  # a zombie: removed behind its back
            assert client.owned <= member.owned_partitions, (
                f"CG-3: {client.member_id} believes it owns {sorted(map(str, client.owned - member.owned_partitions))}"
            )
            for p in client.owned:
                assert p not in owner, f"CG-3: {p} owned by {owner.get(p)} and {client.member_id}"
                owner[p] = client.member_id

    @invariant()
    def fresh_target_covers_subscriptions(self) -> None:  # CG-7
        group = self.group()
        if group is None or group.group_epoch != group.assignment_epoch:
            return
        image = group.subscription_image()
        wanted: set[TopicPartition] = set()
        seen: list[TopicPartition] = []
        for member_id, member in group.members.items():
            topics = set(member.subscribed_topic_names) & set(image.topics)
            wanted.update(image.topic_partitions(sorted(topics)))
            for p in group.target(member_id):
                assert p.topic in topics, f"CG-7: {p} given to {member_id}, not subscribed"
                seen.append(p)
        assert len(seen) == len(set(seen)) and set(seen) == wanted, "CG-7: target is not exactly-once"
        assert set(group.target_assignment) <= set(group.members)

    @invariant()
    def replay_equals_live(self) -> None:  # GC-6
        rebuilt = self._manager()
        for record in self.log:
            rebuilt.replay(record)
        assert rebuilt.snapshot() == self.mgr.snapshot(), "GC-6: replay differs from the live state"

    @invariant()
    def every_member_has_a_session(self) -> None:  # CG-6
        group = self.group()
        for member_id in group.members if group else {}:
            deadline = self.mgr.timer_deadline(SESSION_TIMER, G, member_id)
            assert deadline is not None and deadline > self.now, f"{member_id} has no running session timer"

    @invariant()
    def remember(self) -> None:
        self.snapshot_epochs()

    # --- E-5 ------------------------------------------------------------------------------------

    def teardown(self) -> None:
        # Faults stop: heartbeats flow every interval until every timeout has played out.
        rounds = (CONFIG.consumer_session_timeout_ms + 60_000) // INTERVAL + 5
        for _ in range(rounds):
            self.now += INTERVAL
            self.record(self.mgr.expire(self.now))
            for client in self.active():
                client.revocation_done()  # the applications let go as soon as they are asked to
                self.exchange(client)
                for _ in range(3):
                    if client.heartbeat_now and client.active:
                        self.exchange(client)
            self.no_partition_owned_twice()
            self.epochs_are_ordered_and_monotonic()
            self.remember()
        group = self.group()
        live = self.active()
        if group is None or not live:
            assert not live and (group is None or not group.members), "E-5: members left without clients"
            return
        assert group.group_epoch == group.assignment_epoch, "E-5: target not computed"
        assert sorted(group.members) == sorted(c.member_id for c in live), "E-5: members and clients differ"
        for client in live:
            member = group.members[client.member_id]
            assert client.member_epoch == member.member_epoch == group.assignment_epoch, "E-5: epoch not reached"
            assert client.owned == group.target(client.member_id) == member.assigned_partitions, (
                f"E-5: {client.member_id} owns {sorted(map(str, client.owned))}, "
                f"target {sorted(map(str, group.target(client.member_id)))}"
            )
        self.fresh_target_covers_subscriptions()


class ConsumerGroupMachineRemovingOnFence(ConsumerGroupMachine):
    """The same under the KIP's text: a fenced member is removed from the group."""

    remove_member_on_fence = True


TestConsumerGroup = ConsumerGroupMachine.TestCase
TestConsumerGroup.settings = settings(max_examples=200, stateful_step_count=60, deadline=None)

TestConsumerGroupRemovingOnFence = ConsumerGroupMachineRemovingOnFence.TestCase
TestConsumerGroupRemovingOnFence.settings = settings(max_examples=40, stateful_step_count=40, deadline=None)
