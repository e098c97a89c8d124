"""The share-group side of the group coordinator (GC-1 … GC-9), as a pure machine.

``ShareGroupManager`` serves ShareGroupHeartbeat, ShareGroupDescribe, the admin
offsets APIs, DeleteGroups and ListGroups for share groups, and drives the
share coordinator: it asks it to initialize share-partition state before a
partition is assignable and to delete state that is no longer wanted (GC-7,
GC-8). Every handler returns a ``CoordinatorResult``: the response, the
records to append to ``__consumer_offsets`` and the requests for the share
coordinator (``outputs``).

Durable state changes only through records: a handler builds each record and
applies it with ``replay`` before returning it, so a new coordinator that
replays the log rebuilds exactly the groups the old one had in memory (GC-6).
The caller appends the returned records to its log and must not replay them
into this manager again. Soft state (session deadlines, retry timers,
share-coordinator answers received so far, a DeleteGroups waiting for its
state deletions) is not in the log; ``on_loaded`` re-creates what a new
coordinator needs: it restarts the session timers, bumps every group epoch
(KIP-932's failover, ``protocol = "kip"`` only: Kafka trunk's onLoaded does
not) and re-sends the deletions still in progress and the initializations (at once under
``protocol = "kip"``; under trunk's, a heartbeat initializes them again a retry interval later, as it
does any partition left initializing that long).

Time is the caller's ``now_ms``; ``next_deadline_ms`` says when ``expire``
has work (session timeouts, GC-1; state requests to retry, GC-7).

A new group starts at group epoch 1 with an empty target assignment at epoch 1,
as Kafka trunk's does (KAFKA-20268), or at 0 under ``protocol = "kip"``.
Where SPEC.md is silent: a group deleted (GC-8) and created again under the
same id carries its group epoch on from the deleted group's (trunk starts it
at 1 again: a deliberate divergence), so its share-partitions are initialized
at state epochs (GC-7) above every one the deleted state had, and the share
coordinator fences a write of the earlier life still in flight (SC-5). Starting again from the beginning is the mutant
``recreated-group-restarts-epoch``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from model import mutants as _mutants
from model import situations as _situations
from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import ApiError, Errors
from model.core.group.result import CoordinatorResult
from model.core.group.share_messages import (
    GROUP_STATE_DEAD,
    GROUP_STATE_EMPTY,
    GROUP_STATE_STABLE,
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    SHARE_GROUP_TYPE,
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
    Assignment,
    DeletableGroupResult,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
    DescribedGroup,
    DescribedMember,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    TopicPartitions,
)
from model.core.group.share_records import (
    ShareGroupCurrentMemberAssignment,
    ShareGroupMemberMetadata,
    ShareGroupMetadata,
    ShareGroupPartitionMetadata,
    ShareGroupRecord,
    ShareGroupStatePartitionMetadata,
    ShareGroupTargetAssignmentMember,
    ShareGroupTargetAssignmentMetadata,
    Tombstone,
    TopicMetadata,
    TopicPartitionsInfo,
    is_share_group_record,
    tombstone,
)
from model.core.group.simple_assignor import SimpleAssignor
from model.core.metadata import MetadataImage, TopicPartition
from model.core.share_state import (
    UNKNOWN_OFFSET,
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    SharePartitionKey,
)

# After an error answer, a state request is re-sent this much later (GC-7).
DEFAULT_STATE_RETRY_BACKOFF_MS = 1_000
# With no answer at all, it is re-sent after this long: the shipped Kafka's
# group.share.initialize.retry.interval.ms default.
DEFAULT_STATE_REQUEST_TIMEOUT_MS = 30_000
# ReadShareGroupStateSummary from the group coordinator carries no leader epoch.
SUMMARY_LEADER_EPOCH = -1
_NO_GROUP = (Errors.GROUP_ID_NOT_FOUND, "no such share group")


# --- the in-memory group ----------------------------------------------------------------------


@dataclass
class ShareGroupMember:
    """A member as the coordinator knows it (ShareGroupMemberMetadata + CurrentMemberAssignment)."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned_partitions: frozenset[TopicPartition] = frozenset()


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    subscription_metadata: tuple[TopicMetadata, ...] = ()
    # ShareGroupStatePartitionMetadata: initializing partition → start offset.
    initializing: dict[TopicPartition, int] = field(default_factory=dict)
    initialized: set[TopicPartition] = field(default_factory=set)
    deleting: set[TopicPartition] = field(default_factory=set)
    state_topic_ids: dict[str, str] = field(default_factory=dict)
    # Soft state, not in the log.
    session_deadline_ms: dict[str, int] = field(default_factory=dict)
    state_retry_at_ms: dict[TopicPartition, int] = field(default_factory=dict)
    # When the initializing partitions were last stamped, all at once (trunk: InitMapValue.timestamp, set to
    # the time of every replay of the group's ShareGroupStatePartitionMetadata record, at a load too); a
    # heartbeat initializes them again, at offset 0, once they were stamped a retry interval ago or more.
    # None: not stamped since this coordinator replayed them (never stale).
    initializing_stamped_ms: int | None = None
    # The initialize last sent for each partition: trunk's persister resends it identical (same state epoch
    # and start offset) on a timeout or a retriable error.
    initialize_sent: dict[TopicPartition, InitializeShareGroupStateRequest] = field(default_factory=dict)
    state_acked: set[TopicPartition] = field(default_factory=set)
    delete_pending: bool = False

    @property
    def state(self) -> str:
        if self.members:
            return GROUP_STATE_STABLE
        return GROUP_STATE_DEAD if self.delete_pending else GROUP_STATE_EMPTY

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def has_state(self) -> bool:
        return bool(self.initializing or self.initialized or self.deleting)

    def state_partition(self, key: SharePartitionKey) -> TopicPartition | None:
        """The partition a share-coordinator answer is about, by the topic id it was sent with."""
        for topic, topic_id in self.state_topic_ids.items():
            if topic_id == key.topic_id:
                return TopicPartition(topic, key.partition)
        return None

    def durable_view(self) -> tuple[object, ...]:
        """Everything the log determines; a replayed group has the same view (GC-6)."""
        return (
            self.group_id,
            self.group_epoch,
            self.assignment_epoch,
            tuple(
                (m.member_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
                 m.member_epoch, m.previous_member_epoch, tuple(sorted(m.assigned_partitions)))
                for m in sorted(self.members.values(), key=lambda m: m.member_id)
            ),
            tuple((mid, tuple(sorted(tps))) for mid, tps in sorted(self.target_assignment.items())),
            self.subscription_metadata,
            tuple(sorted(self.initializing.items())),
            tuple(sorted(self.initialized)),
            tuple(sorted(self.deleting)),
            tuple(sorted(self.state_topic_ids.items())),
        )


class _Batch:
    """What one handler call produces."""

    __slots__ = ("outputs", "records")

    def __init__(self) -> None:
        self.records: list[ShareGroupRecord] = []
        self.outputs: list[object] = []

    def result(self, response: object | None = None) -> CoordinatorResult:
        return CoordinatorResult(response, tuple(self.records), tuple(self.outputs))


# --- the manager --------------------------------------------------------------------------------


class ShareGroupManager:
    def __init__(
        self,
        config: BrokerConfig,
        metadata: MetadataImage,
        member_id_factory: Callable[[], str],
        *,
        assignor: SimpleAssignor | None = None,
        group_configs: Mapping[str, GroupConfig] | None = None,
        state_retry_backoff_ms: int = DEFAULT_STATE_RETRY_BACKOFF_MS,
        state_request_timeout_ms: int = DEFAULT_STATE_REQUEST_TIMEOUT_MS,
    ) -> None:
        self._config = config
        self._metadata = metadata
        self._member_id_factory = member_id_factory
        self._assignor = assignor or SimpleAssignor(kafka=config.kafka)
        self._group_configs: dict[str, GroupConfig] = dict(group_configs or {})
        self._retry_backoff_ms = state_retry_backoff_ms
        self._request_timeout_ms = state_request_timeout_ms
        self._groups: dict[str, ShareGroup] = {}
        # The group epoch each deleted group reached (from its ShareGroupMetadata tombstone): a group
        # re-created under the same id carries on above it, so its state epochs (GC-7) are higher than any
        # its share-partitions had before and the share coordinator fences a write of the earlier life
        # still in flight (SC-5). A replayed fact, so a new coordinator knows it too (GC-6).
        self._deleted_epochs: dict[str, int] = {}

    # --- queries ------------------------------------------------------------------------------

    @property
    def kafka(self) -> bool:
        """The protocol switch: Kafka trunk's behaviour (True) or the KIP's (``protocol = "kip"``)."""
        return self._config.kafka

    @property
    def metadata(self) -> MetadataImage:
        return self._metadata

    def group(self, group_id: str) -> ShareGroup | None:
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        return sorted(self._groups)

    def durable_view(self) -> dict[str, tuple[object, ...]]:
        return {gid: self._groups[gid].durable_view() for gid in sorted(self._groups)}

    def set_group_config(self, group_id: str, config: GroupConfig) -> None:
        """A dynamic group configuration (group.share.session.timeout.ms …), from the next heartbeat on."""
        self._group_configs[group_id] = config

    def session_timeout_ms(self, group_id: str) -> int:
        cfg = self._group_configs.get(group_id)
        if cfg is not None and cfg.share_session_timeout_ms is not None:
            return cfg.share_session_timeout_ms
        return self._config.share_session_timeout_ms

    def heartbeat_interval_ms(self, group_id: str) -> int:
        cfg = self._group_configs.get(group_id)
        if cfg is not None and cfg.share_heartbeat_interval_ms is not None:
            return cfg.share_heartbeat_interval_ms
        return self._config.share_heartbeat_interval_ms

    # --- ShareGroupHeartbeat (GC-1 … GC-5, GC-9) ---------------------------------------------

    def heartbeat(self, req: ShareGroupHeartbeatRequest, now_ms: int) -> CoordinatorResult:
        problem = _invalid_heartbeat(req)
        if problem is not None:
            return CoordinatorResult(ShareGroupHeartbeatResponse(Errors.INVALID_REQUEST, problem))
        try:
            if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return self._leave(req)
            return self._heartbeat(req, now_ms)
        except ApiError as e:
            # Every check runs before the first record: an error leaves the group untouched.
            return CoordinatorResult(ShareGroupHeartbeatResponse(e.error, e.message or None))

    def _heartbeat(self, req: ShareGroupHeartbeatRequest, now_ms: int) -> CoordinatorResult:
        joining = req.member_epoch == JOIN_GROUP_MEMBER_EPOCH
        group = self._groups.get(req.group_id)
        if group is None:
            if not joining:
                raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"share group {req.group_id} does not exist")
            # GC-9's group.share.max.groups is the KIP's; Kafka removed it (4.1, KAFKA-19156, commit 43350274e8:
            # it only ever sized the share-session cache) and trunk's coordinator limits no group count.
            if not self._config.kafka and len(self._groups) >= self._config.share_max_groups:
                raise ApiError(
                    Errors.GROUP_MAX_SIZE_REACHED,
                    f"the coordinator has reached group.share.max.groups = {self._config.share_max_groups}",
                )
        member = group.members.get(req.member_id) if group is not None and req.member_id else None
        # A full group refuses whoever is not a member, whatever its epoch (trunk's throwIfShareGroupIsFull,
        # checked before the member is looked up).
        if member is None and group is not None and len(group.members) >= self._config.share_max_size:
            raise ApiError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"share group {req.group_id} has reached group.share.max.size = {self._config.share_max_size} members",
            )
        requested = tuple(sorted(set(req.subscribed_topic_names))) if req.subscribed_topic_names is not None else None
        if member is None:
            if not joining:
                raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {req.group_id}")
            member_id = req.member_id or self._new_member_id(group)
            old = ShareGroupMember(member_id)
        else:
            member_id = member.member_id
            old = member
            if not joining:
                _check_member_epoch(member, req.member_epoch, requested)

        batch = _Batch()
        old_subscription = old.subscribed_topic_names  # `old` is live: the record below updates it
        subscription = requested if requested is not None else old.subscribed_topic_names
        rack_id = req.rack_id if req.rack_id is not None else old.rack_id
        changed = (rack_id, req.client_id, req.client_host, subscription) != (
            old.rack_id, old.client_id, old.client_host, old.subscribed_topic_names
        )
        if member is None or changed:
            self._write(batch, ShareGroupMemberMetadata(
                req.group_id, member_id, rack_id, req.client_id, req.client_host, subscription
            ))
        group = self._groups[req.group_id]
        # Stale before this heartbeat's own initializations stamp them afresh (trunk computes one change map).
        stale = self._stale_initializing(group, now_ms) if self._config.kafka and not group.delete_pending else []

        # GC-2: a new member or a new subscription needs a new assignment.
        if member is None or (subscription != old_subscription
                              and _mutants.ACTIVE != "subscription-change-keeps-assignment"):
            if member is not None:
                _situations.COUNTS["share-subscription-changed"] += 1
            self._refresh_subscription_metadata(group, batch)
            self._bump_group_epoch(group, batch)
            if not group.delete_pending:
                self._maybe_initialize(group, batch, now_ms)

        elif group.assignment_epoch >= group.group_epoch and self._initialized_assignment_pending(group):
            # GC-2: partitions initialized since the target was computed make it stale; the heartbeat
            # that sees it bumps the group epoch (trunk's shareGroupHeartbeat, initializedAssignmentPending).
            _situations.COUNTS["share-assignment-pending-initialized"] += 1
            self._bump_group_epoch(group, batch)

        # GC-3: the target follows the group epoch, computed on the heartbeat that needs it.
        if group.group_epoch > group.assignment_epoch:
            self._update_target_assignment(group, batch)

        before = group.members[member_id].assigned_partitions
        self._reconcile(group, member_id, batch)
        current = group.members[member_id]
        group.session_deadline_ms[member_id] = now_ms + self.session_timeout_ms(group.group_id)
        if stale:
            self._reinitialize_stale(group, stale, batch, now_ms)

        # The assignment goes out on a join, when it changed, and when the member's
        # epoch was not the one it now has (e.g. the last response was lost).
        send_assignment = (
            joining or current.assigned_partitions != before or req.member_epoch != current.member_epoch
        )
        response = ShareGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=current.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
            assignment=self._assignment(group, current.assigned_partitions) if send_assignment else None,
        )
        return batch.result(response)

    def _leave(self, req: ShareGroupHeartbeatRequest) -> CoordinatorResult:
        group = self._groups.get(req.group_id)
        if group is None:
            raise ApiError(Errors.GROUP_ID_NOT_FOUND, f"share group {req.group_id} does not exist")
        if req.member_id not in group.members:
            raise ApiError(Errors.UNKNOWN_MEMBER_ID, f"member {req.member_id} is not in group {req.group_id}")
        batch = _Batch()
        self._remove_member(group, req.member_id, batch)
        return batch.result(ShareGroupHeartbeatResponse(
            member_id=req.member_id, member_epoch=LEAVE_GROUP_MEMBER_EPOCH
        ))

    def _new_member_id(self, group: ShareGroup | None) -> str:
        while True:
            member_id = self._member_id_factory()
            if group is None or member_id not in group.members:
                return member_id

    def _remove_member(self, group: ShareGroup, member_id: str, batch: _Batch) -> None:
        """A leave or a session timeout (GC-1): tombstones, then a new group epoch (GC-2). The last member
        leaving also moves the (empty) target assignment to the new epoch, as a new group's is (trunk's
        shareGroupFenceMember); otherwise the target follows on the next heartbeat (GC-3)."""
        gid = group.group_id
        self._write(batch, tombstone(ShareGroupCurrentMemberAssignment, gid, member_id))
        self._write(batch, tombstone(ShareGroupTargetAssignmentMember, gid, member_id))
        self._write(batch, tombstone(ShareGroupMemberMetadata, gid, member_id))
        self._refresh_subscription_metadata(group, batch)
        self._bump_group_epoch(group, batch)
        if not group.members:
            self._write(batch, ShareGroupTargetAssignmentMetadata(gid, group.group_epoch))

    def _bump_group_epoch(self, group: ShareGroup, batch: _Batch) -> None:
        self._write(batch, ShareGroupMetadata(group.group_id, group.group_epoch + 1))

    def _refresh_subscription_metadata(self, group: ShareGroup, batch: _Batch) -> bool:
        """Write the subscribed topics' partition counts if they changed; True if they did."""
        topics = []
        for name in sorted(group.subscribed_topics()):
            meta = self._metadata.topics.get(name)
            if meta is not None:
                topics.append(TopicMetadata(meta.topic_id, name, meta.partitions))
        if tuple(topics) == group.subscription_metadata:
            return False
        self._write(batch, ShareGroupPartitionMetadata(group.group_id, tuple(topics)))
        return True

    def _assignable(self, group: ShareGroup) -> dict[str, list[int]]:
        """GC-5: partitions of subscribed, existing topics whose state is initialized."""
        assignable: dict[str, list[int]] = {}
        for topic in group.subscription_metadata:
            if group.state_topic_ids.get(topic.topic_name) != topic.topic_id:
                continue
            assignable[topic.topic_name] = [
                p for p in range(topic.num_partitions)
                if TopicPartition(topic.topic_name, p) in group.initialized
                or (_mutants.ACTIVE == "assign-uninitialized"  # mutant: also partitions still initializing
                    and TopicPartition(topic.topic_name, p) in group.initializing)
            ]
        return assignable

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """True when some subscribed topic's assignable (initialized) partitions are not exactly the ones
        the target assigns: partitions initialized since it was computed (trunk's
        initializedAssignmentPending). The mutant ``initialized-never-assigned`` never sees them."""
        if not group.members or _mutants.ACTIVE == "initialized-never-assigned":
            return False
        targeted: dict[str, set[int]] = {}
        for tps in group.target_assignment.values():
            for tp in tps:
                targeted.setdefault(tp.topic, set()).add(tp.partition)
        return any(partitions and set(partitions) != targeted.get(topic, set())
                   for topic, partitions in self._assignable(group).items())

    def _update_target_assignment(self, group: ShareGroup, batch: _Batch) -> None:
        # The assignor sees the subscribed topics that exist (trunk resolves subscribed names to topic ids).
        topics = {t.topic_name: t.num_partitions for t in group.subscription_metadata}
        subscriptions = {mid: tuple(t for t in m.subscribed_topic_names if t in topics)
                         for mid, m in group.members.items()}
        target = self._assignor.assign(subscriptions, self._assignable(group), group.target_assignment,
                                       topics=topics)
        for member_id in sorted(target):
            if group.target_assignment.get(member_id) != target[member_id]:
                self._write(batch, ShareGroupTargetAssignmentMember(
                    group.group_id, member_id, tuple(sorted(target[member_id]))
                ))
        self._write(batch, ShareGroupTargetAssignmentMetadata(group.group_id, group.group_epoch))

    def _reconcile(self, group: ShareGroup, member_id: str, batch: _Batch) -> None:
        """GC-4: no revocation barrier; the member moves straight to its target and epoch, keeping only
        partitions of topics it subscribes to that exist (trunk's ShareGroupAssignmentBuilder.build,
        filterAssignedPartitions: the target may predate a subscription change)."""
        member = group.members[member_id]
        subscribed = {t for t in member.subscribed_topic_names if t in self._metadata.topics}
        target = frozenset(tp for tp in group.target_assignment.get(member_id, frozenset()) if tp.topic in subscribed)
        if member.member_epoch == group.assignment_epoch and member.assigned_partitions == target:
            return
        self._write(batch, ShareGroupCurrentMemberAssignment(
            group.group_id, member_id, group.assignment_epoch, member.member_epoch, tuple(sorted(target))
        ))

    def _assignment(self, group: ShareGroup, partitions: Iterable[TopicPartition]) -> Assignment:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        return Assignment(tuple(
            TopicPartitions(self._topic_id(group, topic), topic, tuple(sorted(by_topic[topic])))
            for topic in sorted(by_topic)
        ))

    def _topic_id(self, group: ShareGroup | None, topic: str) -> str:
        if group is not None and topic in group.state_topic_ids:
            return group.state_topic_ids[topic]
        return self._metadata.topic_id(topic) or ""

    # --- share-partition state: initialize (GC-7) and delete (GC-8) ---------------------------

    def _maybe_initialize(self, group: ShareGroup, batch: _Batch, now_ms: int) -> None:
        """Start initializing every subscribed partition that has no state yet."""
        needed: dict[TopicPartition, int] = {}
        # Kafka trunk (GroupMetadataManager.buildInitializeShareGroupStateRequest): the new partitions of a
        # topic the group already knows (initialized or initializing) start at offset 0, so that records
        # written to them before their initialization completes are not lost; a brand-new topic starts at -1
        # (the group's share.auto.offset.reset applies).
        known = {tp.topic for tp in group.initialized} | {tp.topic for tp in group.initializing}
        for topic in sorted(group.subscribed_topics()):
            meta = self._metadata.topics.get(topic)
            if meta is None:
                continue
            known_id = group.state_topic_ids.get(topic)
            if known_id is not None and known_id != meta.topic_id:
                continue  # an older topic of that name still has state being deleted
            start = 0 if self._config.kafka and topic in known else UNKNOWN_OFFSET
            for p in range(meta.partitions):
                tp = TopicPartition(topic, p)
                if tp not in group.initialized and tp not in group.initializing and tp not in group.deleting:
                    needed[tp] = start
        if needed:
            self._begin_initialize(group, needed, batch, now_ms)

    def _begin_initialize(
        self, group: ShareGroup, start_offsets: dict[TopicPartition, int], batch: _Batch, now_ms: int
    ) -> None:
        initializing = {**group.initializing, **start_offsets}
        initialized = group.initialized - start_offsets.keys()
        if _mutants.ACTIVE == "initialized-when-sent":
            initialized = group.initialized | start_offsets.keys()  # mutant: taken as done when sent
        topic_ids = dict(group.state_topic_ids)
        for tp in start_offsets:
            topic_ids[tp.topic] = self._metadata.topic_id(tp.topic) or topic_ids.get(tp.topic, "")
        self._write_state(batch, group, _state_record(group.group_id, initializing, initialized, group.deleting,
                                                      topic_ids), now_ms)
        for tp in sorted(start_offsets):
            group.state_acked.discard(tp)
            group.initialize_sent.pop(tp, None)  # a new request, not a resend
            self._send_initialize(group, tp, batch, now_ms)

    def _reinitialize_stale(self, group: ShareGroup, stale: list[TopicPartition], batch: _Batch, now_ms: int) -> None:
        """Kafka trunk's heartbeat (subscribedTopicsChangeMap, buildInitializeShareGroupStateRequest): a subscribed
        partition still initializing a retry interval after its stamp is initialized again, at start offset 0
        (its topic is known) and the current group epoch, whatever the first request asked (-1, or an admin
        reset's offset). That earlier request may still land, or be resent by the timer (the persister's
        identical retries); the model keeps one retry timer per partition, the new request's."""
        again = {tp: 0 for tp in stale if tp in group.initializing}
        if again:
            _situations.COUNTS["share-initialize-retried-by-heartbeat"] += 1
            self._begin_initialize(group, again, batch, now_ms)

    def _stale_initializing(self, group: ShareGroup, now_ms: int) -> list[TopicPartition]:
        """The subscribed partitions still initializing a retry interval after their stamp, those whose answer
        came included: trunk records a request's partitions initialized only once its persister call returns
        for all of them (the model sends one request a partition and waits for the topic's)."""
        stamped = group.initializing_stamped_ms
        if not group.initializing or stamped is None or now_ms - stamped < self._request_timeout_ms:
            return []
        subscribed = group.subscribed_topics()
        return [tp for tp in sorted(group.initializing) if tp.topic in subscribed]

    def _send_initialize(self, group: ShareGroup, tp: TopicPartition, batch: _Batch, now_ms: int) -> None:
        # The state epoch is the group epoch (GC-7). Under trunk's protocol a resend is the persister's, of the
        # request as it was sent; under the KIP's, a retry uses the current, never lower, epoch.
        sent = group.initialize_sent.get(tp) if self._config.kafka else None
        if sent is None:
            sent = InitializeShareGroupStateRequest(
                self._key(group, tp), state_epoch=group.group_epoch, start_offset=group.initializing[tp])
            group.initialize_sent[tp] = sent
        batch.outputs.append(sent)
        group.state_retry_at_ms[tp] = now_ms + self._request_timeout_ms

    def _begin_delete(self, group: ShareGroup, partitions: set[TopicPartition], batch: _Batch, now_ms: int) -> None:
        initializing = {tp: s for tp, s in group.initializing.items() if tp not in partitions}
        initialized = group.initialized - partitions
        deleting = group.deleting | partitions
        self._write_state(batch, group, _state_record(group.group_id, initializing, initialized, deleting,
                                                      group.state_topic_ids), now_ms)
        for tp in sorted(partitions):
            group.state_acked.discard(tp)
            self._send_delete(group, tp, batch, now_ms)

    def _send_delete(self, group: ShareGroup, tp: TopicPartition, batch: _Batch, now_ms: int) -> None:
        # The group epoch fences the delete: every life of the state it deletes began at or below it,
        # and a life initialized after it (GC-7) begins above it (README "A delete is fenced ...").
        batch.outputs.append(DeleteShareGroupStateRequest(self._key(group, tp), state_epoch=group.group_epoch))
        group.state_retry_at_ms[tp] = now_ms + self._request_timeout_ms

    def _key(self, group: ShareGroup, tp: TopicPartition) -> SharePartitionKey:
        return SharePartitionKey(group.group_id, group.state_topic_ids[tp.topic], tp.partition)

    def on_initialize_response(self, resp: InitializeShareGroupStateResponse, now_ms: int) -> CoordinatorResult:
        """GC-7: once every initializing partition of a topic succeeded, record them
        initialized; the next heartbeat assigns them (GC-2)."""
        group = self._groups.get(resp.key.group_id)
        tp = group.state_partition(resp.key) if group is not None else None
        if group is None or tp is None or tp not in group.initializing or tp in group.state_acked:
            return CoordinatorResult()  # stale: not (or no longer) initializing
        if resp.error_code != Errors.NONE:
            group.state_retry_at_ms[tp] = now_ms + self._retry_backoff_ms
            return CoordinatorResult()
        group.state_acked.add(tp)
        group.state_retry_at_ms.pop(tp, None)
        topic = [x for x in group.initializing if x.topic == tp.topic]
        if not all(x in group.state_acked for x in topic):
            return CoordinatorResult()
        batch = _Batch()
        initializing = {x: s for x, s in group.initializing.items() if x.topic != tp.topic}
        initialized = group.initialized | set(topic)
        self._write_state(batch, group, _state_record(
            group.group_id, initializing, initialized, group.deleting, group.state_topic_ids
        ), now_ms)
        # No new group epoch here: trunk's initializeShareGroupState writes only the state record, and the
        # next heartbeat sees the target is stale (_initialized_assignment_pending) and bumps it (GC-2).
        return batch.result()

    def on_initialize_unrecorded(self, resp: InitializeShareGroupStateResponse) -> None:
        """An answer that came while the coordinator could not write (its log below min ISR): trunk's persister
        call has returned, so nothing resends the request; recording it (or, on an error, forgetting the
        partition's initialization) fails with the write, and the partition stays initializing until a
        heartbeat retries it (``_reinitialize_stale``). The KIP's model keeps its timer."""
        group = self._groups.get(resp.key.group_id)
        tp = group.state_partition(resp.key) if group is not None else None
        if self._config.kafka and group is not None and tp is not None and tp in group.initializing:
            group.state_retry_at_ms.pop(tp, None)

    def on_delete_response(self, resp: DeleteShareGroupStateResponse, now_ms: int) -> CoordinatorResult:
        """GC-8: once every deleting partition of a topic is gone, drop the topic; a
        DeleteGroups waiting for that is answered (DeletableGroupResult) and the
        group's records tombstoned."""
        group = self._groups.get(resp.key.group_id)
        tp = group.state_partition(resp.key) if group is not None else None
        if group is None or tp is None or tp not in group.deleting or tp in group.state_acked:
            return CoordinatorResult()
        if resp.error_code != Errors.NONE:
            group.state_retry_at_ms[tp] = now_ms + self._retry_backoff_ms
            return CoordinatorResult()
        group.state_acked.add(tp)
        group.state_retry_at_ms.pop(tp, None)
        topic = {x for x in group.deleting if x.topic == tp.topic}
        if not topic <= group.state_acked:
            return CoordinatorResult()
        batch = _Batch()
        self._write_state(batch, group, _state_record(
            group.group_id, group.initializing, group.initialized, group.deleting - topic, group.state_topic_ids
        ), now_ms)
        response: DeletableGroupResult | None = None
        if group.delete_pending and not group.has_state():
            response = self._finish_delete_group(group, batch)
        if self._groups.get(group.group_id) is group:
            # The group outlives the deletion of this state (a member joined while it ran: DeleteGroups
            # answered NON_EMPTY_GROUP, or its delete_pending was lost to a failover; or offsets were
            # deleted): a new group epoch, so that the next life of these share-partitions is initialized
            # above every delete sent for them, which carried the group epoch of its sender (the share
            # coordinator's fence, SC-8; found by a swarm_coordinators campaign, seed 8694679547256455989).
            self._bump_group_epoch(group, batch)
            if not group.delete_pending:
                self._maybe_initialize(group, batch, now_ms)  # a member may want that topic again
        return batch.result(response)

    # --- metadata changes, timers, failover --------------------------------------------------

    def on_metadata(self, metadata: MetadataImage, now_ms: int) -> CoordinatorResult:
        """New cluster metadata: partitions added bump the epoch and get initialized (GC-2,
        GC-7); state of deleted topics is deleted (GC-8)."""
        self._metadata = metadata
        batch = _Batch()
        for gid in sorted(self._groups):
            self._reconcile_metadata(self._groups[gid], batch, now_ms)
        return batch.result()

    def _reconcile_metadata(self, group: ShareGroup, batch: _Batch, now_ms: int) -> None:
        if self._refresh_subscription_metadata(group, batch):
            _situations.COUNTS["share-partitions-added"] += 1
            self._bump_group_epoch(group, batch)
        gone = {
            tp for tp in group.initialized | group.initializing.keys()
            if self._metadata.topic_id(tp.topic) != group.state_topic_ids.get(tp.topic)
            or tp.partition >= self._metadata.partition_count(tp.topic)
        }
        if gone:
            self._begin_delete(group, gone, batch, now_ms)
        if not group.delete_pending:
            self._maybe_initialize(group, batch, now_ms)

    def next_deadline_ms(self) -> int | None:
        deadlines = [
            d
            for g in self._groups.values()
            for d in (*g.session_deadline_ms.values(), *g.state_retry_at_ms.values())
        ]
        return min(deadlines) if deadlines else None

    def expire(self, now_ms: int) -> CoordinatorResult:
        """Remove members whose session timed out (GC-1); re-send due state requests (GC-7)."""
        batch = _Batch()
        for gid in sorted(self._groups):
            group = self._groups[gid]
            expired = sorted(mid for mid, d in group.session_deadline_ms.items() if d <= now_ms)
            for member_id in expired:
                if member_id in group.members:
                    _situations.COUNTS["share-member-session-expired"] += 1
                    self._remove_member(group, member_id, batch)
                else:
                    del group.session_deadline_ms[member_id]
            for tp, at in sorted(group.state_retry_at_ms.items()):
                if at > now_ms:
                    continue
                if tp in group.initializing and tp not in group.state_acked:
                    self._send_initialize(group, tp, batch, now_ms)
                elif tp in group.deleting and tp not in group.state_acked:
                    self._send_delete(group, tp, batch, now_ms)
                else:
                    del group.state_retry_at_ms[tp]
        return batch.result()

    def on_loaded(self, now_ms: int) -> CoordinatorResult:
        """After the log is replayed into a new coordinator (GC-6): restart every session
        timer, bump every group epoch (``protocol = "kip"`` only), re-send the deletions and the initializations
        still in progress (GC-7; under trunk's protocol the initializations one retry interval later) and catch
        up with metadata changes made while no coordinator was running."""
        batch = _Batch()
        for gid in sorted(self._groups):
            group = self._groups[gid]
            timeout = self.session_timeout_ms(gid)
            group.session_deadline_ms = {mid: now_ms + timeout for mid in sorted(group.members)}
            if not self._config.kafka:
                # KIP-932 as written: the new coordinator bumps the group epoch. Kafka trunk's onLoaded
                # only restarts the session timers (the target assignment is in the log).
                self._bump_group_epoch(group, batch)
            if _mutants.ACTIVE == "reinitialize-on-load" and group.initialized:
                # mutant: every initialized partition is initialized again, wiping its state
                self._begin_initialize(group, dict.fromkeys(sorted(group.initialized), UNKNOWN_OFFSET), batch, now_ms)
            self._reconcile_metadata(group, batch, now_ms)
            # Replay leaves no timers. KIP-932 re-sends what reconciling did not just send; trunk stamps the
            # initializing partitions with the load time (its replay of ShareGroupStatePartitionMetadata) and
            # a heartbeat initializes them again a retry interval later (_reinitialize_stale), so a deposed
            # coordinator's initialize still on the wire is not joined at once by a second one.
            if self._config.kafka:
                if group.initializing_stamped_ms is None:  # (reconciling may just have written and stamped)
                    group.initializing_stamped_ms = now_ms
            else:
                for tp in sorted(group.initializing.keys() - group.state_retry_at_ms.keys()):
                    self._send_initialize(group, tp, batch, now_ms)
            for tp in sorted(group.deleting - group.state_retry_at_ms.keys()):
                self._send_delete(group, tp, batch, now_ms)
        return batch.result()

    # --- replay: the one path by which durable state changes (GC-6) --------------------------

    def _initial_epoch(self) -> int:
        """The group epoch of a new share group: 1 in Kafka trunk (``ModernGroup``'s constructor, KAFKA-20268,
        commit 5c8e3c58da: the first computed assignment has epoch 2, so a joining member's first epoch is
        never the 0 reserved for joining), 0 under ``protocol = "kip"`` (the first member gets epoch 1)."""
        if not self._config.kafka or _mutants.ACTIVE == "group-epoch-from-zero":
            return 0  # the KIP's start; under kafka, the mutant group-epoch-from-zero
        return 1

    def _write(self, batch: _Batch, record: ShareGroupRecord) -> None:
        self.replay(record)
        batch.records.append(record)

    def _write_state(self, batch: _Batch, group: ShareGroup, record: ShareGroupStatePartitionMetadata,
                     now_ms: int) -> None:
        """Write the group's state record; trunk's replay of it stamps every initializing partition (GC-7)."""
        self._write(batch, record)
        group.initializing_stamped_ms = now_ms

    def replay(self, record: object) -> None:
        if isinstance(record, Tombstone):
            self._replay_tombstone(record)
            return
        if not isinstance(record, (
            ShareGroupMetadata, ShareGroupMemberMetadata, ShareGroupPartitionMetadata,
            ShareGroupTargetAssignmentMetadata, ShareGroupTargetAssignmentMember,
            ShareGroupCurrentMemberAssignment, ShareGroupStatePartitionMetadata,
        )):
            raise TypeError(f"not a share-group record: {record!r}")
        group = self._groups.get(record.group_id)
        if group is None:
            initial = self._initial_epoch()
            epoch = self._deleted_epochs.get(record.group_id, initial)
            if _mutants.ACTIVE == "recreated-group-restarts-epoch":
                epoch = initial  # mutant: a re-created group's epochs start again from the beginning
            # Kafka trunk's ModernGroup starts at group epoch 1 with the empty target assignment at
            # epoch 1 (TargetAssignmentMetadata.INITIAL, KAFKA-20268); the KIP's group starts at 0.
            group = self._groups[record.group_id] = ShareGroup(
                record.group_id, group_epoch=epoch, assignment_epoch=epoch if self._config.kafka else 0)
        if isinstance(record, ShareGroupMetadata):
            group.group_epoch = record.epoch
        elif isinstance(record, ShareGroupMemberMetadata):
            member = group.members.setdefault(record.member_id, ShareGroupMember(record.member_id))
            member.rack_id = record.rack_id
            member.client_id = record.client_id
            member.client_host = record.client_host
            member.subscribed_topic_names = record.subscribed_topic_names
        elif isinstance(record, ShareGroupPartitionMetadata):
            group.subscription_metadata = record.topics
        elif isinstance(record, ShareGroupTargetAssignmentMetadata):
            group.assignment_epoch = record.assignment_epoch
        elif isinstance(record, ShareGroupTargetAssignmentMember):
            group.target_assignment[record.member_id] = frozenset(record.assigned_partitions)
        elif isinstance(record, ShareGroupCurrentMemberAssignment):
            member = group.members.setdefault(record.member_id, ShareGroupMember(record.member_id))
            member.member_epoch = record.member_epoch
            member.previous_member_epoch = record.previous_member_epoch
            member.assigned_partitions = frozenset(record.assigned_partitions)
        else:
            _apply_state_record(group, record)

    def _replay_tombstone(self, record: Tombstone) -> None:
        key = record.key
        if not is_share_group_record(record):
            raise TypeError(f"not a share-group record: {record!r}")
        group = self._groups.get(key.group_id)
        if group is None:
            return
        kind = key.kind
        if kind == ShareGroupMetadata.__name__:
            self._deleted_epochs[key.group_id] = group.group_epoch
            del self._groups[key.group_id]
        elif kind == ShareGroupMemberMetadata.__name__:
            group.members.pop(key.member_id or "", None)
            group.session_deadline_ms.pop(key.member_id or "", None)
        elif kind == ShareGroupPartitionMetadata.__name__:
            group.subscription_metadata = ()
        elif kind == ShareGroupTargetAssignmentMetadata.__name__:
            group.assignment_epoch = 0
        elif kind == ShareGroupTargetAssignmentMember.__name__:
            group.target_assignment.pop(key.member_id or "", None)
        elif kind == ShareGroupCurrentMemberAssignment.__name__:
            member = group.members.get(key.member_id or "")
            if member is not None:
                member.member_epoch = member.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
                member.assigned_partitions = frozenset()
        else:
            _apply_state_record(group, ShareGroupStatePartitionMetadata(key.group_id))

    # --- admin: offsets (GC-8, SP-12) ---------------------------------------------------------

    def alter_offsets(self, req: AlterShareGroupOffsetsRequest, now_ms: int) -> CoordinatorResult:
        """Reset start offsets of an empty group: bump the group epoch and re-initialize
        each partition at the new epoch, so it is higher than any state epoch before
        (SP-12). Answered on acceptance; the partitions are assignable again once the
        share coordinator confirms (retried until it does, GC-7)."""
        group = self._groups.get(req.group_id)
        error = self._admin_error(group, req.group_id)
        if error is not None or group is None:
            return CoordinatorResult(_alter_offsets_failed(req, *(error or _NO_GROUP)))
        start_offsets: dict[TopicPartition, int] = {}
        topics = []
        for t in req.topics:
            meta = self._metadata.topics.get(t.topic_name)
            partitions = []
            for p in t.partitions:
                tp = TopicPartition(t.topic_name, p.partition_index)
                problem: tuple[Errors, str] | None = None
                if meta is None or not 0 <= p.partition_index < meta.partitions:
                    problem = (Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{tp} does not exist")
                elif p.start_offset < UNKNOWN_OFFSET:
                    problem = (Errors.INVALID_REQUEST, f"StartOffset {p.start_offset} of {tp} is negative")
                elif tp in group.deleting or group.state_topic_ids.get(tp.topic, meta.topic_id) != meta.topic_id:
                    problem = (Errors.INVALID_REQUEST, f"the share-group state of {tp} is being deleted")
                elif tp in start_offsets:
                    problem = (Errors.INVALID_REQUEST, f"{tp} appears twice")
                else:
                    start_offsets[tp] = p.start_offset
                partitions.append(AlterShareGroupOffsetsResponsePartition(
                    p.partition_index, *(problem or (Errors.NONE, None))
                ))
            topics.append(AlterShareGroupOffsetsResponseTopic(
                t.topic_name, meta.topic_id if meta else "", tuple(partitions)
            ))
        batch = _Batch()
        if start_offsets:
            self._bump_group_epoch(group, batch)  # GC-2: offsets altered
            self._begin_initialize(group, start_offsets, batch, now_ms)
        return batch.result(AlterShareGroupOffsetsResponse(tuple(topics)))

    def delete_offsets(self, req: DeleteShareGroupOffsetsRequest, now_ms: int) -> CoordinatorResult:
        """Remove topics' state from an empty group: they move to deleting, the share
        coordinator deletes the state, then the topic is dropped (GC-8)."""
        group = self._groups.get(req.group_id)
        error = self._admin_error(group, req.group_id)
        if error is not None or group is None:
            return CoordinatorResult(_delete_offsets_failed(req, *(error or _NO_GROUP)))
        to_delete: set[TopicPartition] = set()
        topics = []
        for t in req.topics:
            name = t.topic_name
            with_state = {tp for tp in group.initialized | group.initializing.keys() if tp.topic == name}
            topic_id = self._topic_id(group, name)
            if with_state:
                to_delete |= with_state
                topics.append(DeleteShareGroupOffsetsResponseTopic(name, topic_id))
            elif any(tp.topic == name for tp in group.deleting):
                topics.append(DeleteShareGroupOffsetsResponseTopic(name, topic_id))  # already under way
            else:
                topics.append(DeleteShareGroupOffsetsResponseTopic(
                    name, topic_id, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    f"share group {req.group_id} has no state for topic {name}",
                ))
        batch = _Batch()
        if to_delete:
            self._begin_delete(group, to_delete, batch, now_ms)
        return batch.result(DeleteShareGroupOffsetsResponse(tuple(topics)))

    def describe_offsets(self, req: DescribeShareGroupOffsetsRequest, now_ms: int = 0) -> CoordinatorResult:
        """The start offsets come from the share coordinator: ``outputs`` are the
        ReadShareGroupStateSummary requests for the initialized partitions asked
        about; pass their answers to ``describe_offsets_response``. When there is
        nothing to read the response is in the result already."""
        group = self._groups.get(req.group_id)
        if group is None:
            return CoordinatorResult(self.describe_offsets_response(req, ()))
        reads = tuple(
            ReadShareGroupStateSummaryRequest(self._key(group, tp), SUMMARY_LEADER_EPOCH)
            for tp in self._described_partitions(group, req)
            if tp in group.initialized
        )
        if not reads:
            return CoordinatorResult(self.describe_offsets_response(req, ()))
        return CoordinatorResult(outputs=reads)

    def describe_offsets_response(
        self, req: DescribeShareGroupOffsetsRequest, summaries: Iterable[ReadShareGroupStateSummaryResponse]
    ) -> DescribeShareGroupOffsetsResponse:
        """Assemble the answer; a partition without initialized state has start offset -1."""
        group = self._groups.get(req.group_id)
        if group is None:
            return DescribeShareGroupOffsetsResponse(
                error_code=Errors.GROUP_ID_NOT_FOUND, error_message=f"share group {req.group_id} does not exist"
            )
        by_key = {s.key: s for s in summaries}
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in self._described_partitions(group, req):
            by_topic.setdefault(tp.topic, []).append(tp)
        topics = []
        for name in sorted(by_topic):
            partitions = []
            for tp in by_topic[name]:
                summary = by_key.get(self._key(group, tp)) if tp in group.initialized else None
                if summary is None:
                    partitions.append(DescribeShareGroupOffsetsResponsePartition(tp.partition, UNKNOWN_OFFSET))
                else:
                    partitions.append(DescribeShareGroupOffsetsResponsePartition(
                        tp.partition, summary.start_offset, summary.error_code, summary.error_message
                    ))
            topics.append(DescribeShareGroupOffsetsResponseTopic(name, self._topic_id(group, name), tuple(partitions)))
        return DescribeShareGroupOffsetsResponse(tuple(topics))

    @staticmethod
    def _described_partitions(group: ShareGroup, req: DescribeShareGroupOffsetsRequest) -> list[TopicPartition]:
        if req.topics is None:
            return sorted(group.initialized)
        return [TopicPartition(t.topic_name, p) for t in req.topics for p in t.partitions]

    def _admin_error(
        self, group: ShareGroup | None, group_id: str, *, deleting_ok: bool = False
    ) -> tuple[Errors, str] | None:
        if group is None:
            return Errors.GROUP_ID_NOT_FOUND, f"share group {group_id} does not exist"
        if group.members:
            return Errors.GROUP_NOT_EMPTY, f"share group {group_id} has {len(group.members)} members"
        if group.delete_pending and not deleting_ok:
            return Errors.GROUP_ID_NOT_FOUND, f"share group {group_id} is being deleted"
        return None

    # --- admin: groups ------------------------------------------------------------------------

    def delete_group(self, group_id: str, now_ms: int) -> CoordinatorResult:
        """DeleteGroups for one share group (GC-8). The response is a DeletableGroupResult;
        it is None while the share coordinator deletes the group's state, and then comes
        with the ``on_delete_response`` result that writes the group's tombstones."""
        group = self._groups.get(group_id)
        error = self._admin_error(group, group_id, deleting_ok=True)
        if error is not None or group is None:
            return CoordinatorResult(DeletableGroupResult(group_id, *(error or _NO_GROUP)))
        batch = _Batch()
        if not group.has_state():
            return batch.result(self._finish_delete_group(group, batch))
        group.delete_pending = True
        with_state = group.initialized | group.initializing.keys()
        if with_state:
            self._begin_delete(group, set(with_state), batch, now_ms)
        return batch.result()

    def _finish_delete_group(self, group: ShareGroup, batch: _Batch) -> DeletableGroupResult:
        group.delete_pending = False
        if group.members:  # someone joined while the state was being deleted
            return DeletableGroupResult(group.group_id, Errors.GROUP_NOT_EMPTY, "members joined during deletion")
        gid = group.group_id
        for member_id in sorted(group.target_assignment):
            self._write(batch, tombstone(ShareGroupTargetAssignmentMember, gid, member_id))
        self._write(batch, tombstone(ShareGroupStatePartitionMetadata, gid))
        self._write(batch, tombstone(ShareGroupTargetAssignmentMetadata, gid))
        self._write(batch, tombstone(ShareGroupPartitionMetadata, gid))
        self._write(batch, tombstone(ShareGroupMetadata, gid))
        return DeletableGroupResult(gid)

    def describe(self, req: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
        groups = []
        for gid in req.group_ids:
            group = self._groups.get(gid)
            if group is None:
                groups.append(DescribedGroup(gid, Errors.GROUP_ID_NOT_FOUND, f"share group {gid} does not exist"))
                continue
            members = tuple(
                DescribedMember(
                    m.member_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                    m.subscribed_topic_names, self._assignment(group, m.assigned_partitions),
                )
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            )
            groups.append(DescribedGroup(
                gid,
                group_state=group.state,
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=self._assignor.name,
                members=members,
            ))
        return ShareGroupDescribeResponse(tuple(groups))

    def list_groups(self, req: ListGroupsRequest | None = None) -> ListGroupsResponse:
        req = req or ListGroupsRequest()
        types = {t.lower() for t in req.types_filter}
        if types and SHARE_GROUP_TYPE not in types:
            return ListGroupsResponse()
        states = {s.lower() for s in req.states_filter}
        return ListGroupsResponse(tuple(
            ListedGroup(gid, SHARE_GROUP_TYPE, g.state, SHARE_GROUP_TYPE)
            for gid, g in sorted(self._groups.items())
            if not states or g.state.lower() in states
        ))


# --- helpers, each used by one rule above -------------------------------------------------------


def _invalid_heartbeat(req: ShareGroupHeartbeatRequest) -> str | None:
    """Request validation (INVALID_REQUEST), naming the field, in Kafka's order."""
    if req.member_epoch != JOIN_GROUP_MEMBER_EPOCH and not req.member_id.strip():
        return "MemberId can't be empty."
    if req.member_id and not req.member_id.strip():
        return "MemberId can't be empty."
    if not req.group_id.strip():
        return "GroupId can't be empty."
    if req.rack_id is not None and not req.rack_id.strip():
        return "RackId can't be empty."
    if req.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if not req.subscribed_topic_names:
            return "SubscribedTopicNames must be set in first request."
    elif req.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        return "MemberEpoch is invalid."
    if req.subscribed_topic_names is not None and any(not t.strip() for t in req.subscribed_topic_names):
        return "SubscribedTopicNames can't contain an empty topic name."
    return None


def _check_member_epoch(member: ShareGroupMember, received: int, subscription: tuple[str, ...] | None) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one (the response that carried
    the new epoch may have been lost, KIP-848) with no subscription (``subscription``, normalized) other
    than the stored one. A lost answer's retry repeats the subscription the coordinator already applied;
    one that differs is either older than the change applied (a request held in the network), which
    applied would restore an old subscription the client never sends again, or a retry whose client
    changed its subscription since: the coordinator cannot tell them apart, and fenced, the first changes
    nothing and the second costs a rejoin with the whole subscription (divergence
    ``previous-epoch-subscription-fenced``; trunk applies both: ``previous-epoch-subscription-applied``)."""
    if received > member.member_epoch:
        _situations.COUNTS["share-member-fenced"] += 1
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"member epoch {received} is greater than the coordinator's {member.member_epoch}; rejoin",
        )
    if received == member.member_epoch:
        return
    if received != member.previous_member_epoch:
        _situations.COUNTS["share-member-fenced"] += 1
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"member epoch {received} is smaller than the coordinator's {member.member_epoch}; rejoin",
        )
    if (subscription is not None and subscription != member.subscribed_topic_names
            and _mutants.ACTIVE != "previous-epoch-subscription-applied"):
        _situations.COUNTS["share-previous-epoch-subscription-fenced"] += 1
        raise ApiError(
            Errors.FENCED_MEMBER_EPOCH,
            f"member epoch {received} is the coordinator's previous one ({member.member_epoch} now) and "
            "its subscription is not the one the coordinator holds; rejoin",
        )


def _alter_offsets_failed(
    req: AlterShareGroupOffsetsRequest, error: Errors, message: str
) -> AlterShareGroupOffsetsResponse:
    """The whole request failed: the error at the top and on every partition."""
    return AlterShareGroupOffsetsResponse(
        tuple(
            AlterShareGroupOffsetsResponseTopic(t.topic_name, "", tuple(
                AlterShareGroupOffsetsResponsePartition(p.partition_index, error, message) for p in t.partitions
            ))
            for t in req.topics
        ),
        error,
        message,
    )


def _delete_offsets_failed(
    req: DeleteShareGroupOffsetsRequest, error: Errors, message: str
) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(
        tuple(DeleteShareGroupOffsetsResponseTopic(t.topic_name, "", error, message) for t in req.topics),
        error,
        message,
    )


def _topic_infos(
    partitions: Iterable[TopicPartition], topic_ids: Mapping[str, str], start_offsets: Mapping[TopicPartition, int]
) -> tuple[TopicPartitionsInfo, ...]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    infos = []
    for topic in sorted(by_topic):
        parts = tuple(sorted(by_topic[topic]))
        starts = tuple(start_offsets[TopicPartition(topic, p)] for p in parts) if start_offsets else ()
        infos.append(TopicPartitionsInfo(topic_ids[topic], topic, parts, starts))
    return tuple(infos)


def _state_record(
    group_id: str,
    initializing: Mapping[TopicPartition, int],
    initialized: Iterable[TopicPartition],
    deleting: Iterable[TopicPartition],
    topic_ids: Mapping[str, str],
) -> ShareGroupStatePartitionMetadata:
    return ShareGroupStatePartitionMetadata(
        group_id,
        initializing_topics=_topic_infos(initializing, topic_ids, initializing),
        initialized_topics=_topic_infos(initialized, topic_ids, {}),
        deleting_topics=_topic_infos(deleting, topic_ids, {}),
    )


def _apply_state_record(group: ShareGroup, record: ShareGroupStatePartitionMetadata) -> None:
    group.initializing = {
        TopicPartition(info.topic_name, p): info.start_offset(i)
        for info in record.initializing_topics
        for i, p in enumerate(info.partitions)
    }
    group.initialized = {
        TopicPartition(info.topic_name, p) for info in record.initialized_topics for p in info.partitions
    }
    group.deleting = {
        TopicPartition(info.topic_name, p) for info in record.deleting_topics for p in info.partitions
    }
    group.state_topic_ids = {
        info.topic_name: info.topic_id
        for infos in (record.initializing_topics, record.initialized_topics, record.deleting_topics)
        for info in infos
    }
    # Soft state about partitions that left initializing/deleting is void.
    in_progress = group.initializing.keys() | group.deleting
    group.state_acked &= in_progress
    group.state_retry_at_ms = {tp: at for tp, at in group.state_retry_at_ms.items() if tp in in_progress}
    group.initialize_sent = {tp: r for tp, r in group.initialize_sent.items() if tp in group.initializing}
