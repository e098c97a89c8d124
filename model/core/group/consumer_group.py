"""The group coordinator's KIP-848 consumer groups (CG-1 .. CG-7), pure.

``ConsumerGroupManager`` owns every consumer group of one coordinator shard.
Each handler (heartbeat, offset commit, metadata change, timer expiry) reads
the state, decides, and returns a ``CoordinatorResult``: the response and the
records to append to ``__consumer_offsets``. State changes only by applying
records, through the same ``_apply`` that ``replay`` uses, so a manager
rebuilt from the log equals the live one (GC-6) by construction; the
stateful tests check it.

A heartbeat does three things, in this order (004_32d84b698b32e157.txt):

1. creates or updates the member; a new member, a subscription change, or a
   change in the subscribed partition counts bumps the group epoch (CG-1);
2. computes a new target assignment with the server-side assignor when the
   group epoch is ahead of the assignment epoch (CG-7);
3. reconciles the member towards its target (CG-2): partitions it must give
   up are revoked first and it stays in its epoch until it confirms; only then
   does it move to the target epoch and get new partitions, and a partition
   still owned by another member stays pending until that member revoked it.

Timers are not records: session and rebalance deadlines are kept here and
exposed through ``next_deadline_ms`` / ``expire`` so the simulation needs one
cancellable timer per shard. After failover ``on_loaded`` re-arms them from
``now``.

Where the KIP is silent or the shipped Kafka differs, this follows Kafka
(GroupMetadataManager, CurrentAssignmentBuilder), except where noted:

- a member fenced with FENCED_MEMBER_EPOCH stays in the group (as in Kafka; the
  KIP says it is removed — ``remove_member_on_fence=True`` does that); it
  rejoins with epoch 0 and its member id and picks up where it was;
- a removed member's target stays until the next target is computed, as the
  KIP's case studies print it;
- the previous member epoch (the lost-response case of CG-4) changes only
  when the epoch changes;
- a static member rejoining with epoch 0 under its own member id is the same
  member, not a second one (no UNRELEASED_INSTANCE_ID);
- the target is computed lazily, in the next heartbeat, after a removal or a
  metadata change, as in Kafka and the case studies.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from mypy_extensions import mypyc_attr

from model import mutants as _mutants
from model import situations as _situations
from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import ApiError, Errors
from model.core.group.assignors import ASSIGNORS, AssignmentMemberSpec, Assignor
from model.core.group.consumer_messages import (
    GROUP_STATE_ASSIGNING,
    GROUP_STATE_EMPTY,
    GROUP_STATE_RECONCILING,
    GROUP_STATE_STABLE,
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    REBALANCE_TIMEOUT_UNCHANGED,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedGroup,
    DescribedMember,
    HeartbeatAssignment,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
)
from model.core.group.consumer_records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupRecord,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerRecordKey,
    ConsumerTombstone,
    MemberState,
    OffsetCommit,
    SubscribedTopicMetadata,
    is_consumer_record,
    tombstone,
)
from model.core.group.result import CoordinatorResult
from model.core.metadata import MetadataImage, TopicMetadata, TopicPartition

NO_PARTITIONS: frozenset[TopicPartition] = frozenset()

SESSION_TIMER = "session"
REBALANCE_TIMER = "rebalance"


@mypyc_attr(native_class=False)  # mypyc: a builtin exception base
class IllegalStateError(RuntimeError):
    """The coordinator's own state broke a rule it relies on (a bug, not a bad request)."""


# --- the group and its members ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    rebalance_timeout_ms: int = REBALANCE_TIMEOUT_UNCHANGED
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned_partitions: frozenset[TopicPartition] = NO_PARTITIONS
    partitions_pending_revocation: frozenset[TopicPartition] = NO_PARTITIONS

    @property
    def owned_partitions(self) -> frozenset[TopicPartition]:
        """What the member holds as far as the coordinator knows: nobody else may get these (CG-3)."""
        return self.assigned_partitions | self.partitions_pending_revocation

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.member_epoch == epoch

    def metadata_record(self, group_id: str, group_epoch: int) -> ConsumerGroupMemberMetadata:
        return ConsumerGroupMemberMetadata(
            group_id=group_id,
            member_id=self.member_id,
            group_epoch=group_epoch,
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            subscribed_topic_regex=self.subscribed_topic_regex,
            server_assignor=self.server_assignor,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
        )

    def assignment_record(self, group_id: str) -> ConsumerGroupCurrentMemberAssignment:
        return ConsumerGroupCurrentMemberAssignment(
            group_id=group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned_partitions=tuple(sorted(self.assigned_partitions)),
            partitions_pending_revocation=tuple(sorted(self.partitions_pending_revocation)),
        )

    def same_metadata(self, other: ConsumerGroupMember) -> bool:
        return self.metadata_record("", 0) == other.metadata_record("", 0)


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    subscription_metadata: dict[str, SubscribedTopicMetadata] = field(default_factory=dict)
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    assignment_epoch: int = 0
    target_assignment: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    offsets: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)
    # Indexes derived from the members, kept in step by ``put_member`` / ``remove_member``.
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    partition_owner: dict[TopicPartition, str] = field(default_factory=dict)

    @property
    def state(self) -> str:
        if not self.members:
            return GROUP_STATE_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GROUP_STATE_ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return GROUP_STATE_RECONCILING
        return GROUP_STATE_STABLE

    def target(self, member_id: str) -> frozenset[TopicPartition]:
        return self.target_assignment.get(member_id, NO_PARTITIONS)

    def pending_partitions(self, member_id: str) -> frozenset[TopicPartition]:
        """The case studies' pending-partitions: in the member's target, held by someone else."""
        member = self.members[member_id]
        if member.member_epoch != self.assignment_epoch:
            return NO_PARTITIONS
        return self.target(member_id) - member.owned_partitions

    def subscription_image(self) -> MetadataImage:
        """The partition counts the group's assignment is computed from (recorded, GC-6)."""
        return MetadataImage(
            {t.topic: TopicMetadata(t.topic, t.topic_id, t.num_partitions) for t in self.subscription_metadata.values()}
        )

    def put_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            self._unindex(old)
        for p in sorted(member.owned_partitions):
            holder = self.partition_owner.get(p)
            if holder is not None and _mutants.ACTIVE != "handover-before-revoke":
                raise IllegalStateError(f"{p} given to {member.member_id} while {holder} still owns it (CG-3)")
            self.partition_owner[p] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.members[member.member_id] = member

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._unindex(old)

    def _unindex(self, member: ConsumerGroupMember) -> None:
        for p in member.owned_partitions:
            if self.partition_owner.get(p) == member.member_id:
                del self.partition_owner[p]
        if member.instance_id is not None and self.static_members.get(member.instance_id) == member.member_id:
            del self.static_members[member.instance_id]


# --- reconciliation (CG-2) -------------------------------------------------------------------


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: frozenset[TopicPartition],
    owned: frozenset[TopicPartition] | None,
    partition_owner: Mapping[TopicPartition, str],
) -> ConsumerGroupMember:
    """The next state of ``member`` towards ``target`` (Kafka's CurrentAssignmentBuilder).

    ``owned`` is what the member reported owning in this heartbeat, or None if it
    did not say (then it is presumed to still own everything).
    """
    if member.is_reconciled_to(target_epoch):
        return member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member  # still waiting for the member to revoke
        # Revocation confirmed: the member leaves its epoch (CG-2).
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, owned, partition_owner)
    return _next_assignment(member, member.member_epoch, target_epoch, target, owned, partition_owner)


def _owns_any(owned: frozenset[TopicPartition] | None, partitions: frozenset[TopicPartition]) -> bool:
    return owned is None or not owned.isdisjoint(partitions)


def _next_assignment(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: frozenset[TopicPartition],
    owned: frozenset[TopicPartition] | None,
    partition_owner: Mapping[TopicPartition, str],
) -> ConsumerGroupMember:
    kept = member.assigned_partitions & target
    to_revoke = member.assigned_partitions - kept
    wanted = target - kept
    # A partition still held by another member stays pending until it is released.
    unreleased = frozenset(p for p in wanted if partition_owner.get(p, member.member_id) != member.member_id)
    if _mutants.ACTIVE == "handover-before-revoke":
        unreleased = NO_PARTITIONS
    to_assign = wanted - unreleased

    if to_revoke and _owns_any(owned, to_revoke):
        # Revoke first; no new partition in the same step, and the epoch stays (CG-2).
        _situations.COUNTS["consumer-revocation"] += 1
        return _with_epoch(
            member, member_epoch, MemberState.UNREVOKED_PARTITIONS, kept, to_revoke
        )
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with_epoch(member, target_epoch, state, kept | to_assign, NO_PARTITIONS)


def _with_epoch(
    member: ConsumerGroupMember,
    epoch: int,
    state: MemberState,
    assigned: frozenset[TopicPartition],
    pending_revocation: frozenset[TopicPartition],
) -> ConsumerGroupMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    return replace(
        member,
        member_epoch=epoch,
        previous_member_epoch=previous,
        state=state,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending_revocation,
    )


# --- timers ----------------------------------------------------------------------------------


class _Timers:
    """Session and rebalance deadlines, one per (kind, group, member); a heap with lazy deletion."""

    def __init__(self) -> None:
        self._deadlines: dict[tuple[str, str, str], int] = {}
        self._rebalance_epoch: dict[tuple[str, str], int] = {}
        self._heap: list[tuple[int, str, str, str]] = []

    def schedule(self, kind: str, group_id: str, member_id: str, deadline_ms: int, epoch: int = 0) -> None:
        self._deadlines[(kind, group_id, member_id)] = deadline_ms
        if kind == REBALANCE_TIMER:
            self._rebalance_epoch[(group_id, member_id)] = epoch
        heapq.heappush(self._heap, (deadline_ms, group_id, member_id, kind))

    def cancel(self, kind: str, group_id: str, member_id: str) -> None:
        self._deadlines.pop((kind, group_id, member_id), None)
        if kind == REBALANCE_TIMER:
            self._rebalance_epoch.pop((group_id, member_id), None)

    def cancel_member(self, group_id: str, member_id: str) -> None:
        self.cancel(SESSION_TIMER, group_id, member_id)
        self.cancel(REBALANCE_TIMER, group_id, member_id)

    def deadline(self, kind: str, group_id: str, member_id: str) -> int | None:
        return self._deadlines.get((kind, group_id, member_id))

    def next_deadline_ms(self) -> int | None:
        while self._heap:
            deadline, group_id, member_id, kind = self._heap[0]
            if self._deadlines.get((kind, group_id, member_id)) == deadline:
                return deadline
            heapq.heappop(self._heap)
        return None

    def pop_due(self, now_ms: int) -> tuple[str, str, str, int] | None:
        """The earliest due timer as (kind, group, member, rebalance epoch), removed; or None."""
        deadline = self.next_deadline_ms()
        if deadline is None or deadline > now_ms:
            return None
        _, group_id, member_id, kind = heapq.heappop(self._heap)
        del self._deadlines[(kind, group_id, member_id)]
        epoch = self._rebalance_epoch.pop((group_id, member_id), 0) if kind == REBALANCE_TIMER else 0
        return kind, group_id, member_id, epoch

    def clear(self) -> None:
        self._deadlines.clear()
        self._rebalance_epoch.clear()
        self._heap.clear()


# --- the manager -----------------------------------------------------------------------------


class _Fenced(ApiError):
    def __init__(self, group_id: str, member_id: str, message: str) -> None:
        super().__init__(Errors.FENCED_MEMBER_EPOCH, message)
        _situations.COUNTS["consumer-member-fenced"] += 1
        self.group_id = group_id
        self.member_id = member_id


class ConsumerGroupManager:
    """Every KIP-848 consumer group of one coordinator shard."""

    def __init__(
        self,
        config: BrokerConfig,
        metadata: MetadataImage,
        member_id_factory: Callable[[], str],
        *,
        group_configs: Mapping[str, GroupConfig] | None = None,
        assignors: Mapping[str, Assignor] | None = None,
        remove_member_on_fence: bool = False,
    ) -> None:
        self.config = config
        self.metadata = metadata
        self._member_id_factory = member_id_factory
        self._group_configs: dict[str, GroupConfig] = dict(group_configs or {})
        self._assignors: dict[str, Assignor] = dict(assignors or ASSIGNORS)
        if config.consumer_assignor not in self._assignors:
            raise ValueError(f"default assignor {config.consumer_assignor!r} is not among {sorted(self._assignors)}")
        self.remove_member_on_fence = remove_member_on_fence
        self._groups: dict[str, ConsumerGroup] = {}
        self._timers = _Timers()

    # --- queries ------------------------------------------------------------------------------

    def group(self, group_id: str) -> ConsumerGroup | None:
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return sorted(self._groups)

    def handles(self, record: object) -> bool:
        """Whether a record of the shared log is one this manager replays."""
        return is_consumer_record(record)

    def session_timeout_ms(self, group_id: str) -> int:
        cfg = self._group_configs.get(group_id)
        override = cfg.consumer_session_timeout_ms if cfg else None
        return override if override is not None else self.config.consumer_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        cfg = self._group_configs.get(group_id)
        override = cfg.consumer_heartbeat_interval_ms if cfg else None
        return override if override is not None else self.config.consumer_heartbeat_interval_ms

    def set_group_config(self, group_id: str, config: GroupConfig) -> None:
        self._group_configs[group_id] = config

    def timer_deadline(self, kind: str, group_id: str, member_id: str) -> int | None:
        return self._timers.deadline(kind, group_id, member_id)

    def describe(self, group_ids: list[str] | tuple[str, ...]) -> ConsumerGroupDescribeResponse:
        return ConsumerGroupDescribeResponse(tuple(self._describe_one(g) for g in group_ids))

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        """The most common server assignor among the members, else the broker default."""
        counts = Counter(m.server_assignor for m in group.members.values() if m.server_assignor is not None)
        if not counts:
            return self.config.consumer_assignor
        return min(counts, key=lambda name: (-counts[name], name))

    def committed_offset(self, group_id: str, tp: TopicPartition) -> int | None:
        group = self._groups.get(group_id)
        committed = group.offsets.get(tp) if group else None
        return committed.offset if committed else None

    def snapshot(self) -> dict[str, ConsumerGroup]:
        """A copy of every group's state (timers excluded), for equality checks after replay."""
        return {
            gid: replace(
                g,
                subscription_metadata=dict(g.subscription_metadata),
                members=dict(g.members),
                target_assignment=dict(g.target_assignment),
                offsets=dict(g.offsets),
                static_members=dict(g.static_members),
                partition_owner=dict(g.partition_owner),
            )
            for gid, g in self._groups.items()
        }

    # --- ConsumerGroupHeartbeat ---------------------------------------------------------------

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> CoordinatorResult:
        try:
            self._validate(req)
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req)
            return self._join_or_heartbeat(req, now_ms)
        except _Fenced as fenced:
            records: list[ConsumerGroupRecord] = []
            group = self._groups.get(fenced.group_id)
            if self.remove_member_on_fence and group is not None and fenced.member_id in group.members:
                self._remove_member(group, fenced.member_id, records)
            return CoordinatorResult(_error_response(fenced), tuple(records))
        except ApiError as error:
            return CoordinatorResult(_error_response(error))

    def _validate(self, req: ConsumerGroupHeartbeatRequest) -> None:
        """Request validation of the KIP (and Kafka's), each failure naming the field."""

        def invalid(message: str) -> ApiError:
            return ApiError(Errors.INVALID_REQUEST, message)

        if not req.group_id.strip():
            raise invalid("GroupId can't be empty.")
        if req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise invalid(f"MemberEpoch {req.member_epoch} is invalid: it must be >= -2.")
        if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH and not req.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if req.instance_id is not None and not req.instance_id.strip():
            raise invalid("InstanceId can't be empty.")
        if req.rack_id is not None and not req.rack_id.strip():
            raise invalid("RackId can't be empty.")
        if req.rebalance_timeout_ms != REBALANCE_TIMEOUT_UNCHANGED and req.rebalance_timeout_ms <= 0:
            raise invalid(f"RebalanceTimeoutMs {req.rebalance_timeout_ms} must be larger than zero.")
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if req.rebalance_timeout_ms == REBALANCE_TIMEOUT_UNCHANGED:
                raise invalid("RebalanceTimeoutMs must be provided in the first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set when (re-)joining.")
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and req.instance_id is None:
            raise invalid("InstanceId can't be null when leaving with MemberEpoch -2.")
        if req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise invalid(f"SubscribedTopicRegex {req.subscribed_topic_regex!r} is not a valid regular "
                              f"expression: {exc}.") from None
        if req.server_assignor is not None and req.server_assignor not in self._assignors:
            raise ApiError(
                Errors.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(sorted(self._assignors))}.",
            )

    def _join_or_heartbeat(self, req: ConsumerGroupHeartbeatRequest, now_ms: int) -> CoordinatorResult:
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._groups.get(req.group_id)
        if group is None and not joining:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}.")
        owned = frozenset(req.topic_partitions) if req.topic_partitions is not None else None
        member_id = req.member_id or self._new_member_id(group)
        if req.instance_id is None:
            member, replaced = self._dynamic_member(group, req, member_id, owned), None
        else:
            member, replaced = self._static_member(group, req, member_id, owned)
        is_new = member is None and replaced is None
        if is_new and group is not None and len(group.members) >= self.config.consumer_max_size:
            raise ApiError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self.config.consumer_max_size} members.",
            )

        # Every check has passed: from here on the heartbeat only emits records.
        records: list[ConsumerGroupRecord] = []
        group_id = req.group_id
        if replaced is not None:
            member = self._replace_static_member(self._groups[group_id], replaced, member_id, records)
        current = member or ConsumerGroupMember(member_id)
        updated = _updated_member(current, req)

        # 1. The member and the group epoch (CG-1).
        if is_new or not updated.same_metadata(current):
            epoch_now = group.group_epoch if group is not None else self._initial_epoch()
            self._emit(records, updated.metadata_record(group_id, epoch_now))
        group = self._groups[group_id]
        subscription_changed = (
            updated.subscribed_topic_names != current.subscribed_topic_names
            or updated.subscribed_topic_regex != current.subscribed_topic_regex
        )
        bump = group.group_epoch == 0 or is_new or subscription_changed
        if is_new or subscription_changed:
            bump |= self._maybe_update_subscription_metadata(group, records)
        if bump:
            self._emit(records, ConsumerGroupMetadata(group_id, group.group_epoch + 1))

        # 2. The target assignment (CG-7).
        if group.group_epoch > group.assignment_epoch:
            self._compute_target_assignment(group, records)

        # 3. Reconciliation (CG-2).
        before = group.members[member_id]
        after = reconcile(
            before, group.assignment_epoch, group.target(member_id), owned, group.partition_owner
        )
        if after != before:
            self._emit(records, after.assignment_record(group_id))
            if after.state == MemberState.UNREVOKED_PARTITIONS:
                self._timers.schedule(
                    REBALANCE_TIMER, group_id, member_id, now_ms + after.rebalance_timeout_ms, after.member_epoch
                )
            else:
                self._timers.cancel(REBALANCE_TIMER, group_id, member_id)
        self._timers.schedule(SESSION_TIMER, group_id, member_id, now_ms + self.session_timeout_ms(group_id))

        send_assignment = req.is_full or after.assigned_partitions != current.assigned_partitions or is_new
        response = ConsumerGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=after.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group_id),
            assignment=HeartbeatAssignment(after.assigned_partitions, group.pending_partitions(member_id))
            if send_assignment
            else None,
        )
        return CoordinatorResult(response, tuple(records))

    def _new_member_id(self, group: ConsumerGroup | None) -> str:
        """A fresh member id from the factory, never one a live member of the group has."""
        for _ in range(1_000):
            member_id = self._member_id_factory()
            if group is None or member_id not in group.members:
                return member_id
        raise IllegalStateError("the member id factory keeps returning ids already in use")

    def _dynamic_member(
        self,
        group: ConsumerGroup | None,
        req: ConsumerGroupHeartbeatRequest,
        member_id: str,
        owned: frozenset[TopicPartition] | None,
    ) -> ConsumerGroupMember | None:
        member = group.members.get(member_id) if group else None
        if member is None:
            if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not in group {req.group_id}.")
            return None
        _check_member_epoch(req.group_id, member, req.member_epoch, owned)
        return member

    def _static_member(
        self,
        group: ConsumerGroup | None,
        req: ConsumerGroupHeartbeatRequest,
        member_id: str,
        owned: frozenset[TopicPartition] | None,
    ) -> tuple[ConsumerGroupMember | None, ConsumerGroupMember | None]:
        """(the member, the static member it replaces) for a heartbeat carrying an instance id (CG-5)."""
        assert req.instance_id is not None
        holder_id = group.static_members.get(req.instance_id) if group else None
        holder = group.members[holder_id] if group and holder_id else None
        if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if holder is None or holder.member_id == member_id:
                return (group.members.get(member_id) if group else None), None
            if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise ApiError(
                    Errors.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {req.instance_id} cannot join the group "
                    f"because the instance id is owned by member {holder.member_id}.",
                )
            return None, holder
        if holder is None:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if holder.member_id != member_id:
            raise ApiError(
                Errors.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {req.instance_id} was fenced by member "
                f"{holder.member_id}.",
            )
        _check_member_epoch(req.group_id, holder, req.member_epoch, owned)
        return holder, None

    def _replace_static_member(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember,
        member_id: str,
        records: list[ConsumerGroupRecord],
    ) -> ConsumerGroupMember:
        """A static member rejoins under a new member id and takes over the old assignment (CG-5)."""
        target = group.target(old.member_id)
        self._emit(records, tombstone(ConsumerGroupCurrentMemberAssignment, group.group_id, old.member_id))
        self._emit(records, tombstone(ConsumerGroupTargetAssignmentMember, group.group_id, old.member_id))
        self._emit(records, tombstone(ConsumerGroupMemberMetadata, group.group_id, old.member_id))
        self._timers.cancel_member(group.group_id, old.member_id)
        new = replace(old, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        self._emit(records, new.metadata_record(group.group_id, group.group_epoch))
        self._emit(records, ConsumerGroupTargetAssignmentMember(group.group_id, member_id, tuple(sorted(target))))
        self._emit(records, new.assignment_record(group.group_id))
        return new

    def _leave(self, req: ConsumerGroupHeartbeatRequest) -> CoordinatorResult:
        group = self._groups.get(req.group_id)
        if group is None:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}.")
        records: list[ConsumerGroupRecord] = []
        if req.instance_id is None:
            if req.member_id not in group.members:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}.")
            member_id = req.member_id
        else:
            holder_id = group.static_members.get(req.instance_id)
            if holder_id is None:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if holder_id != req.member_id:
                raise ApiError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                    f"{holder_id}.",
                )
            member_id = holder_id
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # A temporary leave: the member keeps its assignment for a rejoin within the
                # session timeout; what it was revoking is released now (CG-5).
                member = group.members[member_id]
                leaving = replace(
                    member,
                    member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    state=MemberState.STABLE,
                    partitions_pending_revocation=NO_PARTITIONS,
                )
                self._emit(records, leaving.assignment_record(group.group_id))
                self._timers.cancel(REBALANCE_TIMER, group.group_id, member_id)
                response = ConsumerGroupHeartbeatResponse(
                    member_id=member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH
                )
                return CoordinatorResult(response, tuple(records))
        self._remove_member(group, member_id, records)
        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH)
        return CoordinatorResult(response, tuple(records))

    # --- OffsetCommit -------------------------------------------------------------------------

    def commit_offsets(self, req: OffsetCommitRequest, now_ms: int) -> CoordinatorResult:
        error, message = self._validate_commit(req)
        records: list[ConsumerGroupRecord] = []
        if error == Errors.NONE:
            for p in req.partitions:
                self._emit(
                    records,
                    OffsetCommit(
                        group_id=req.group_id,
                        topic=p.topic,
                        partition=p.partition_index,
                        offset=p.committed_offset,
                        leader_epoch=p.committed_leader_epoch,
                        metadata=p.committed_metadata or "",
                        commit_timestamp_ms=now_ms,
                    ),
                )
        response = OffsetCommitResponse(
            tuple(OffsetCommitResponsePartition(p.topic, p.partition_index, error) for p in req.partitions),
            error_message=message,
        )
        return CoordinatorResult(response, tuple(records))

    def _validate_commit(self, req: OffsetCommitRequest) -> tuple[Errors, str | None]:
        group = self._groups.get(req.group_id)
        epoch = req.generation_id_or_member_epoch
        if group is None:
            if epoch < 0:
                return Errors.NONE, None  # a commit outside group management creates the group
            return Errors.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found."
        if epoch < 0 and not group.members:
            return Errors.NONE, None  # admin / simple commit to an empty group
        member = group.members.get(req.member_id)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not in group {req.group_id}."
        if req.group_instance_id is not None and member.instance_id != req.group_instance_id:
            return Errors.FENCED_INSTANCE_ID, f"Instance id {req.group_instance_id} is not member {req.member_id}."
        if epoch != member.member_epoch:
            return (
                Errors.STALE_MEMBER_EPOCH,
                f"The member epoch {epoch} is stale; the current member epoch is {member.member_epoch}.",
            )
        return Errors.NONE, None

    # --- metadata, timers, failover -----------------------------------------------------------

    def on_metadata(self, metadata: MetadataImage, now_ms: int) -> CoordinatorResult:
        """New topics or partitions: groups whose subscribed partition counts changed bump their epoch."""
        self.metadata = metadata
        records: list[ConsumerGroupRecord] = []
        for group_id in sorted(self._groups):
            group = self._groups[group_id]
            if self._maybe_update_subscription_metadata(group, records):
                self._emit(records, ConsumerGroupMetadata(group_id, group.group_epoch + 1))
        return CoordinatorResult(None, tuple(records))

    def next_deadline_ms(self) -> int | None:
        return self._timers.next_deadline_ms()

    def expire(self, now_ms: int) -> CoordinatorResult:
        """Remove members whose session expired or who did not revoke within their rebalance timeout (CG-6)."""
        records: list[ConsumerGroupRecord] = []
        while (due := self._timers.pop_due(now_ms)) is not None:
            kind, group_id, member_id, epoch = due
            group = self._groups.get(group_id)
            member = group.members.get(member_id) if group else None
            if group is None or member is None:
                continue
            if kind == REBALANCE_TIMER and member.member_epoch != epoch:
                continue  # it left that epoch in time
            _situations.COUNTS["consumer-member-expired"] += 1
            self._remove_member(group, member_id, records)
        return CoordinatorResult(None, tuple(records))

    def replay(self, record: object) -> None:
        """Apply one record of the log (GC-6): the same code path a live handler uses."""
        self._apply(record)

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After replay: sessions restart from now, pending revocations get a fresh rebalance
        timeout, and a group whose subscribed partitions changed meanwhile bumps its epoch
        (KIP-848 "Fail Over"). The target is then computed by the next heartbeat."""
        self._timers.clear()
        for group_id in sorted(self._groups):
            group = self._groups[group_id]
            for member_id in sorted(group.members):
                member = group.members[member_id]
                self._timers.schedule(SESSION_TIMER, group_id, member_id, now_ms + self.session_timeout_ms(group_id))
                if member.state == MemberState.UNREVOKED_PARTITIONS:
                    self._timers.schedule(
                        REBALANCE_TIMER, group_id, member_id, now_ms + member.rebalance_timeout_ms, member.member_epoch
                    )
        return self.on_metadata(self.metadata, now_ms)

    # --- shared steps -------------------------------------------------------------------------

    def _remove_member(self, group: ConsumerGroup, member_id: str, records: list[ConsumerGroupRecord]) -> None:
        """Fence a member out: its partitions are free, and the group needs a new assignment."""
        self._emit(records, tombstone(ConsumerGroupCurrentMemberAssignment, group.group_id, member_id))
        self._emit(records, tombstone(ConsumerGroupMemberMetadata, group.group_id, member_id))
        self._maybe_update_subscription_metadata(group, records)
        self._emit(records, ConsumerGroupMetadata(group.group_id, group.group_epoch + 1))
        self._timers.cancel_member(group.group_id, member_id)

    def _member_topics(self, member: ConsumerGroupMember, topics: Mapping[str, object]) -> frozenset[str]:
        """Subscribed names plus the topics the regex fully matches, among ``topics``."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            names.update(t for t in topics if pattern.fullmatch(t))
        return frozenset(names)

    def _maybe_update_subscription_metadata(self, group: ConsumerGroup, records: list[ConsumerGroupRecord]) -> bool:
        topics: set[str] = set()
        for member in group.members.values():
            topics |= self._member_topics(member, self.metadata.topics)
        new = {
            t: SubscribedTopicMetadata(t, meta.topic_id, meta.partitions)
            for t in sorted(topics)
            if (meta := self.metadata.topics.get(t)) is not None
        }
        if new == group.subscription_metadata:
            return False
        self._emit(
            records,
            ConsumerGroupPartitionMetadata(group.group_id, group.group_epoch, tuple(new[t] for t in sorted(new))),
        )
        return True

    def _compute_target_assignment(self, group: ConsumerGroup, records: list[ConsumerGroupRecord]) -> None:
        image = group.subscription_image()
        specs = {
            m.member_id: AssignmentMemberSpec(self._member_topics(m, image.topics), m.instance_id, m.rack_id)
            for m in group.members.values()
        }
        current = {member_id: group.target(member_id) for member_id in group.members}
        assignor = self._assignors[self.preferred_assignor(group)]
        new = assignor(specs, image, current)
        for member_id in sorted(group.members):
            partitions = new.get(member_id, NO_PARTITIONS)
            if member_id not in group.target_assignment or partitions != group.target_assignment[member_id]:
                self._emit(
                    records,
                    ConsumerGroupTargetAssignmentMember(group.group_id, member_id, tuple(sorted(partitions))),
                )
        for member_id in sorted(set(group.target_assignment) - set(group.members)):
            self._emit(records, tombstone(ConsumerGroupTargetAssignmentMember, group.group_id, member_id))
        self._emit(records, ConsumerGroupTargetAssignmentMetadata(group.group_id, group.group_epoch))

    def _describe_one(self, group_id: str) -> DescribedGroup:
        group = self._groups.get(group_id)
        if group is None:
            return DescribedGroup(group_id, Errors.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        members = tuple(
            DescribedMember(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=m.subscribed_topic_names,
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=m.owned_partitions,
                target_assignment=group.target(m.member_id),
                pending_partitions=group.pending_partitions(m.member_id),
            )
            for m in (group.members[k] for k in sorted(group.members))
        )
        return DescribedGroup(
            group_id=group_id,
            group_state=group.state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=self.preferred_assignor(group),
            members=members,
        )

    # --- records -> state ---------------------------------------------------------------------

    def _emit(self, records: list[ConsumerGroupRecord], record: ConsumerGroupRecord) -> None:
        self._apply(record)
        records.append(record)

    def _initial_epoch(self) -> int:
        """A new group's epoch: 1 in Kafka trunk, with the empty target assignment at epoch 1 (``ModernGroup``,
        KAFKA-20268, commit 5c8e3c58da), so the first member's join makes epoch 2; 0 under ``protocol = "kip"``
        (KIP-848's worked example: the first member gets epoch 1)."""
        return 1 if self.config.kafka and _mutants.ACTIVE != "group-epoch-from-zero" else 0

    def _group_or_create(self, group_id: str) -> ConsumerGroup:
        group = self._groups.get(group_id)
        if group is None:
            epoch = self._initial_epoch()
            group = self._groups[group_id] = ConsumerGroup(group_id, group_epoch=epoch, assignment_epoch=epoch)
        return group

    def _apply(self, record: object) -> None:
        if isinstance(record, ConsumerTombstone):
            self._apply_tombstone(record.key)
            return
        if isinstance(record, ConsumerGroupMetadata):
            self._group_or_create(record.group_id).group_epoch = record.epoch
        elif isinstance(record, ConsumerGroupPartitionMetadata):
            group = self._group_or_create(record.group_id)
            group.subscription_metadata = {t.topic: t for t in record.topics}
        elif isinstance(record, ConsumerGroupMemberMetadata):
            group = self._group_or_create(record.group_id)
            old = group.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
            group.put_member(
                replace(
                    old,
                    instance_id=record.instance_id,
                    rack_id=record.rack_id,
                    client_id=record.client_id,
                    client_host=record.client_host,
                    subscribed_topic_names=record.subscribed_topic_names,
                    subscribed_topic_regex=record.subscribed_topic_regex,
                    server_assignor=record.server_assignor,
                    rebalance_timeout_ms=record.rebalance_timeout_ms,
                )
            )
        elif isinstance(record, ConsumerGroupTargetAssignmentMetadata):
            self._group_or_create(record.group_id).assignment_epoch = record.assignment_epoch
        elif isinstance(record, ConsumerGroupTargetAssignmentMember):
            group = self._group_or_create(record.group_id)
            group.target_assignment[record.member_id] = frozenset(record.partitions)
        elif isinstance(record, ConsumerGroupCurrentMemberAssignment):
            group = self._group_or_create(record.group_id)
            old = group.members.get(record.member_id) or ConsumerGroupMember(record.member_id)
            group.put_member(
                replace(
                    old,
                    member_epoch=record.member_epoch,
                    previous_member_epoch=record.previous_member_epoch,
                    state=record.state,
                    assigned_partitions=frozenset(record.assigned_partitions),
                    partitions_pending_revocation=frozenset(record.partitions_pending_revocation),
                )
            )
        elif isinstance(record, OffsetCommit):
            group = self._group_or_create(record.group_id)
            group.offsets[TopicPartition(record.topic, record.partition)] = CommittedOffset(
                record.offset, record.leader_epoch, record.metadata, record.commit_timestamp_ms
            )
        else:
            raise TypeError(f"not a consumer-group record: {record!r}")

    def _apply_tombstone(self, key: ConsumerRecordKey) -> None:
        group = self._groups.get(key.group_id)
        if group is None:
            return
        if key.kind == ConsumerGroupMetadata.__name__:
            for member_id in list(group.members):
                self._timers.cancel_member(key.group_id, member_id)
            del self._groups[key.group_id]
        elif key.kind == ConsumerGroupPartitionMetadata.__name__:
            group.subscription_metadata = {}
        elif key.kind == ConsumerGroupMemberMetadata.__name__ and key.member_id is not None:
            group.remove_member(key.member_id)
        elif key.kind == ConsumerGroupTargetAssignmentMetadata.__name__:
            group.assignment_epoch = 0
        elif key.kind == ConsumerGroupTargetAssignmentMember.__name__ and key.member_id is not None:
            group.target_assignment.pop(key.member_id, None)
        elif key.kind == ConsumerGroupCurrentMemberAssignment.__name__ and key.member_id is not None:
            member = group.members.get(key.member_id)
            if member is not None:
                group.put_member(
                    replace(
                        member,
                        member_epoch=0,
                        previous_member_epoch=0,
                        state=MemberState.STABLE,
                        assigned_partitions=NO_PARTITIONS,
                        partitions_pending_revocation=NO_PARTITIONS,
                    )
                )
        elif key.kind == OffsetCommit.__name__ and key.topic is not None and key.partition is not None:
            group.offsets.pop(TopicPartition(key.topic, key.partition), None)
        else:
            raise TypeError(f"not a consumer-group record key: {key!r}")


# --- helpers ---------------------------------------------------------------------------------


def _check_member_epoch(
    group_id: str, member: ConsumerGroupMember, received: int, owned: frozenset[TopicPartition] | None
) -> None:
    """CG-4: the epoch must match; epoch 0 rejoins; the previous epoch is accepted when the
    member owns no more than it is assigned (the response that moved it was lost)."""
    if received == JOIN_GROUP_MEMBER_EPOCH:
        return
    if received > member.member_epoch:
        raise _Fenced(
            group_id,
            member.member_id,
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or owned is None or not owned <= member.assigned_partitions
    ):
        raise _Fenced(
            group_id,
            member.member_id,
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin.",
        )


def _updated_member(member: ConsumerGroupMember, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupMember:
    """The member with what the heartbeat changed (absent fields keep their value)."""
    return replace(
        member,
        instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
        rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=req.rebalance_timeout_ms
        if req.rebalance_timeout_ms != REBALANCE_TIMEOUT_UNCHANGED
        else member.rebalance_timeout_ms,
        server_assignor=req.server_assignor if req.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=tuple(sorted(set(req.subscribed_topic_names)))
        if req.subscribed_topic_names is not None
        else member.subscribed_topic_names,
        # An empty regex clears the member's regex.
        subscribed_topic_regex=(req.subscribed_topic_regex or None)
        if req.subscribed_topic_regex is not None
        else member.subscribed_topic_regex,
        client_id=req.client_id or member.client_id,
        client_host=req.client_host or member.client_host,
    )


def _error_response(error: ApiError) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=error.error, error_message=error.message or None)
