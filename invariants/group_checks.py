"""Checks of the group coordinator and the KIP-848 consumers (GC-2..GC-5, CG-1..CG-3).

The coordinator checks run after each change a ``__consumer_offsets`` host
makes in memory, on the group the request named (every group after a load,
an expiry or a metadata change), and look only at members whose record
changed since the last look (member records are compared by identity).
A host with a lower leader epoch than one already seen (a stale coordinator
about to retire) is not judged.

* ``GroupEpochMonitor`` (group-epoch-order, GC-2..GC-4, CG-1): assignment
  epoch <= group epoch; every member epoch <= assignment epoch; group and
  assignment epochs never fall below their committed values (a deleted group
  starts afresh). Memory may go back: a write that fails to replicate is
  undone (replay from the log), as Kafka's coordinator reverts to its last
  committed snapshot, and nobody heard of it (responses wait for the commit).
  The committed values come from the group metadata and target-assignment
  records as they commit (``on_group_records_committed``); only a committed
  deletion of the group lets its epochs start again.
  Under ``protocol = "kafka"`` a share group is created at epoch 1 with the
  empty target assignment at epoch 1 (Kafka trunk, KAFKA-20268), so its first
  computed assignment is epoch 2 and no share member is ever at epoch 1.
* ``AssignInitializedMonitor`` (assign-initialized-only, GC-5): a share member
  is assigned only partitions whose share-group state is initialized: in the
  group coordinator's initialized set, and, for a partition newly assigned,
  with a live ShareSnapshot committed on ``__share_group_state`` (the state
  log, not the group coordinator's word).
* ``TargetBalanceMonitor`` (target-assignment-balanced, GC-5): a share group's
  target assignment, while current (assignment epoch = group epoch), is
  balanced as its SimpleAssignor balances: under Kafka trunk's algorithm the
  members' partition counts differ by at most one (over all topics when every
  member subscribes to the same ones, else topic by topic among its
  subscribers); under the KIP's table (``protocol = "kip"``) topic by topic.
* ``ExclusiveOwnershipMonitor`` (exclusive-ownership, CG-3): in the
  coordinator, no partition is owned (assigned or pending revocation) by two
  members; among the consumers, one told it is fenced owns nothing another
  consumer owns (an unaware zombie, cut off from the coordinator, is the
  protocol's accepted window and is not judged). A group gone from the
  coordinator's memory (a replay that lost its uncommitted creation, GC-6, or
  a deletion) ends its members' ownership: nobody heard of what was lost
  (responses wait for the commit), and a deleted group had no members.
* ``NoAssignAndRevokeMonitor`` (no-assign-and-revoke, CG-2): no heartbeat
  response both assigns and revokes partitions.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from invariants.ledger import topic_id_of
from invariants.sink import Monitor, ViolationSink
from model.core.group.consumer_group import ConsumerGroupMember
from model.core.group.consumer_records import (
    ConsumerGroupMetadata,
    ConsumerGroupTargetAssignmentMetadata,
    ConsumerTombstone,
)
from model.core.group.share_group import ShareGroup
from model.core.group.share_records import ShareGroupMetadata, ShareGroupTargetAssignmentMetadata, Tombstone
from model.core.share_records import ShareSnapshot, ShareTombstone
from model.core.share_state import SharePartitionKey

if TYPE_CHECKING:
    from model.core.group.consumer_group import ConsumerGroup
    from model.core.group.coordinator import GroupCoordinatorShard
    from model.core.group.share_group import ShareGroupMember
    from model.core.metadata import TopicPartition

Seen = tuple[int, "frozenset[TopicPartition]"]  # a member's epoch and the partitions it holds
Changed = list[tuple[str, Seen | None, Seen | None]]  # member id, before, now (None: not a member)


def _groups(shard: GroupCoordinatorShard,
            group_id: str | None) -> list[tuple[str, str, ShareGroup | ConsumerGroup | None]]:
    """(kind, group id, group or None if it is gone) for the groups a step may have changed."""
    if group_id is not None:
        return [("share", group_id, shard.share.group(group_id)),
                ("consumer", group_id, shard.consumer.group(group_id))]
    return ([("share", g, shard.share.group(g)) for g in shard.share.group_ids()]
            + [("consumer", g, shard.consumer.group(g)) for g in shard.consumer.group_ids()])


@dataclass
class _Seen:
    partition: int  # the __consumer_offsets partition whose coordinator holds the group (GC-6)
    host_epoch: int = -1
    members: dict[str, Seen] = field(default_factory=dict)
    basis: Any = None  # the monitor's ``basis`` of the group at the last look


class _GroupMonitor(Monitor, ABC):
    """Calls ``check`` with the members whose epoch or partitions changed since the last look, and with
    every member when the group's ``basis`` changed."""


    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._seen: dict[tuple[str, str], _Seen] = {}
        self._shard: GroupCoordinatorShard | None = None  # the shard of the step being judged ...
        self._leader_epoch = -1  # ... and its coordinator's leader epoch

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard,
                                  group_id: str | None, now_ms: int) -> None:
        self._shard, self._leader_epoch = shard, leader_epoch
        looked = _groups(shard, group_id)
        if group_id is None:  # also the groups this partition held that are gone now
            present = {(kind, gid) for kind, gid, _ in looked}
            looked += [(kind, gid, None) for (kind, gid), seen in sorted(self._seen.items())
                       if seen.partition == partition and (kind, gid) not in present]
        for kind, gid, group in looked:
            seen = self._seen.get((kind, gid))
            if seen is not None and (seen.partition != partition or leader_epoch < seen.host_epoch):
                continue  # another partition's group, or a stale coordinator about to retire
            if group is None:
                if seen is not None:
                    del self._seen[(kind, gid)]  # deleted: a new group of that name starts afresh
                    self.forget(kind, gid, seen)
                continue
            if seen is None:
                seen = self._seen[(kind, gid)] = _Seen(partition)
            seen.host_epoch = leader_epoch
            changed: Changed = []
            members = group.members
            for member_id, member in members.items():
                now = (member.member_epoch, _owned(member))
                before = seen.members.get(member_id)
                if before is None or before[0] != now[0] or (before[1] is not now[1] and before[1] != now[1]):
                    changed.append((member_id, before, now))
                    seen.members[member_id] = now
            gone = [m for m in seen.members if m not in members] if len(seen.members) > len(members) else []
            for member_id in gone:
                changed.append((member_id, seen.members.pop(member_id), None))
            basis = self.basis(group)
            if basis != seen.basis:  # what the members are judged against moved under them: judge them all
                seen.basis = basis
                judged = {member_id for member_id, _, _ in changed}
                changed += [(member_id, held, held) for member_id, held in seen.members.items()
                            if member_id not in judged]
            self.check(kind, gid, group, seen, sorted(changed, key=lambda c: c[0]), now_ms)

    def basis(self, group: ShareGroup | ConsumerGroup) -> object:
        """What judging a member depends on besides the member (immutable, compared by value): when it
        differs from the last look, every member is judged again. None: nothing."""
        return None

    @abstractmethod
    def check(self, kind: str, group_id: str, group: ShareGroup | ConsumerGroup, seen: _Seen,
              changed: Changed, now_ms: int) -> None:
        """Judge the members of ``group`` that changed since the last look."""

    def forget(self, kind: str, group_id: str, seen: _Seen) -> None:
        """The group is gone from the coordinator, with the members last seen in ``seen``."""


def _owned(member: ShareGroupMember | ConsumerGroupMember) -> frozenset[TopicPartition]:
    """What a member holds in the coordinator: a share member its assignment, a consumer-group
    member also the partitions it has still to revoke (CG-2)."""
    if isinstance(member, ConsumerGroupMember):
        return member.owned_partitions
    return member.assigned_partitions


class GroupEpochMonitor(_GroupMonitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._committed: dict[tuple[str, str], list[int]] = {}  # (kind, group) -> [group epoch, assignment epoch]
        # (kind, group) -> the shard (and leader epoch) that deleted it in memory, until the deletion commits.
        # A group of that name in the same shard is a new life built on tombstones not committed yet: the
        # old life's committed epochs do not bind it (its own are judged as they commit). A rebuilt shard (a
        # failed append, a new coordinator) replays the log, and the committed epochs bind what it holds.
        self._deleted_in: dict[tuple[str, str], tuple[GroupCoordinatorShard, int]] = {}

    def on_group_records_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for record in records:
            if isinstance(record, ShareGroupMetadata | ConsumerGroupMetadata):
                self._commit(_kind(record), record.group_id, 0, record.epoch, now_ms)
            elif isinstance(record, ShareGroupTargetAssignmentMetadata | ConsumerGroupTargetAssignmentMetadata):
                self._commit(_kind(record), record.group_id, 1, record.assignment_epoch, now_ms)
            elif isinstance(record, Tombstone | ConsumerTombstone) and record.key.kind in _GROUP_RECORDS:
                # The group's deletion is durable: a group of that name starts afresh, judged in full.
                self._committed.pop((_kind(record), record.key.group_id), None)
                self._deleted_in.pop((_kind(record), record.key.group_id), None)

    def _commit(self, kind: str, group_id: str, which: int, epoch: int, now_ms: int) -> None:
        committed = self._committed.setdefault((kind, group_id), [-1, -1])
        if epoch < committed[which]:
            name = ("group", "assignment")[which]
            self.sink.report("group-epoch-order", now_ms, event=f"{kind} group {group_id}",
                             message=f"{kind} group {group_id}: {name} epoch {epoch} committed after "
                             f"{committed[which]}", group=group_id, kind=kind, committed_epoch=epoch,
                             **{f"previous_{name}_epoch": committed[which]})
        committed[which] = max(committed[which], epoch)

    def forget(self, kind: str, group_id: str, seen: _Seen) -> None:
        assert self._shard is not None
        self._deleted_in[(kind, group_id)] = (self._shard, self._leader_epoch)

    def basis(self, group: ShareGroup | ConsumerGroup) -> object:
        return group.assignment_epoch  # a replay by a new coordinator may rebuild the group at a lower one

    def check(self, kind: str, group_id: str, group: ShareGroup | ConsumerGroup, seen: _Seen,
              changed: Changed, now_ms: int) -> None:
        group_epoch, assignment_epoch = group.group_epoch, group.assignment_epoch
        floor_group, floor_assignment = self._committed.get((kind, group_id), (-1, -1))
        deleted_in = self._deleted_in.get((kind, group_id))
        if deleted_in is not None:
            if deleted_in[0] is self._shard and deleted_in[1] == self._leader_epoch:
                floor_group, floor_assignment = -1, -1
            else:
                del self._deleted_in[(kind, group_id)]
        excerpt = {"group": group_id, "kind": kind, "group_epoch": group_epoch,
                   "assignment_epoch": assignment_epoch, "previous_group_epoch": floor_group,
                   "previous_assignment_epoch": floor_assignment}
        event = f"{kind} group {group_id}"
        if assignment_epoch > group_epoch:
            self.sink.report("group-epoch-order", now_ms, event=event,
                             message=f"{kind} group {group_id}: assignment epoch {assignment_epoch} above the "
                             f"group epoch {group_epoch}", **excerpt)
        elif group_epoch < floor_group or assignment_epoch < floor_assignment:
            self.sink.report("group-epoch-order", now_ms, event=event,
                             message=f"{kind} group {group_id}: epochs went back from group {floor_group} / "
                             f"assignment {floor_assignment} (committed) to {group_epoch} / {assignment_epoch}",
                             **excerpt)
        else:
            initial_is_empty = kind == "share" and self._shard is not None and self._shard.share.kafka
            for member_id, _, now in changed:
                if now is not None and now[0] > assignment_epoch:
                    self.sink.report("group-epoch-order", now_ms, event=event,
                                     message=f"{kind} group {group_id}: member {member_id} at epoch {now[0]}, above "
                                     f"the assignment epoch {assignment_epoch}", member=member_id,
                                     member_epoch=now[0], **excerpt)
                    break
                if now is not None and now[0] == 1 and initial_is_empty:
                    self.sink.report("group-epoch-order", now_ms, event=event,
                                     message=f"{kind} group {group_id}: member {member_id} at epoch 1, the new "
                                     f"group's empty initial assignment (a group starts at epoch 1 and its first "
                                     f"computed assignment is epoch 2, KAFKA-20268)", member=member_id,
                                     member_epoch=now[0], **excerpt)
                    break


_GROUP_RECORDS: Final = ("ShareGroupMetadata", "ConsumerGroupMetadata")


def _kind(record: object) -> str:
    share = isinstance(record, ShareGroupMetadata | ShareGroupTargetAssignmentMetadata | Tombstone)
    return "share" if share else "consumer"


class AssignInitializedMonitor(_GroupMonitor):
    """GC-5 twice: a member is assigned only partitions in its group coordinator's initialized set, and
    a partition newly assigned to a member has share-group state the share coordinators committed (a
    ShareSnapshot of its key on __share_group_state, no tombstone after it), seen from the state log, so
    a group coordinator that takes an initialization as done when it was not is caught too."""

    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._live: dict[SharePartitionKey, bool] = {}  # key -> a committed snapshot not tombstoned since

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        live = self._live
        for record in records:
            if isinstance(record, ShareSnapshot):
                live[record.key] = True
            elif isinstance(record, ShareTombstone):
                live[record.key] = False

    def basis(self, group: ShareGroup | ConsumerGroup) -> object:
        # Partitions may leave the initialized set under members that do not change (a re-initialize, GC-7).
        return frozenset(group.initialized) if isinstance(group, ShareGroup) else None

    def check(self, kind: str, group_id: str, group: ShareGroup | ConsumerGroup, seen: _Seen,
              changed: Changed, now_ms: int) -> None:
        if not isinstance(group, ShareGroup):
            return
        initialized = group.initialized
        for member_id, before, now in changed:
            if now is None:
                continue
            missing = sorted(now[1] - initialized)
            if missing:
                self.sink.report("assign-initialized-only", now_ms, event=f"share group {group_id}",
                                 message=f"share group {group_id}: member {member_id} assigned {missing[0]}, whose "
                                 f"share-group state is not initialized", group=group_id, member=member_id,
                                 partition=str(missing[0]), member_epoch=now[0])
                return
            added = now[1] if before is None else now[1] - before[1]
            for tp in sorted(added):
                if not self._live.get(SharePartitionKey(group_id, topic_id_of(tp.topic), tp.partition), False):
                    self.sink.report("assign-initialized-only", now_ms, event=f"share group {group_id}",
                                     message=f"share group {group_id}: member {member_id} assigned {tp}, whose "
                                     f"share-group state no share coordinator has committed (no ShareSnapshot "
                                     f"of it on __share_group_state since its last tombstone)", group=group_id,
                                     member=member_id, partition=str(tp), member_epoch=now[0])
                    return


class TargetBalanceMonitor(_GroupMonitor):
    def basis(self, group: ShareGroup | ConsumerGroup) -> object:
        # A target is judged when it is computed: the epochs and the target itself.
        if not isinstance(group, ShareGroup):
            return None
        return group.group_epoch, group.assignment_epoch, tuple(sorted(group.target_assignment.items()))

    def check(self, kind: str, group_id: str, group: ShareGroup | ConsumerGroup, seen: _Seen,
              changed: Changed, now_ms: int) -> None:
        if not isinstance(group, ShareGroup) or group.assignment_epoch != group.group_epoch or not group.members:
            return
        assert self._shard is not None
        existing = {t.topic_name for t in group.subscription_metadata}
        subscriptions = {mid: frozenset(t for t in m.subscribed_topic_names if t in existing)
                         for mid, m in group.members.items()}
        target = {mid: group.target_assignment.get(mid, frozenset()) for mid in subscriptions}
        scopes: list[tuple[str, dict[str, int]]] = []
        if self._shard.share.kafka and len(set(subscriptions.values())) == 1:
            scopes.append(("all topics", {mid: len(tps) for mid, tps in target.items()}))
        else:
            for topic in sorted(existing):
                loads = {mid: sum(tp.topic == topic for tp in target[mid])
                         for mid, topics in subscriptions.items() if topic in topics}
                scopes.append((f"topic {topic}", loads))
        for scope, loads in scopes:
            if loads and max(loads.values()) - min(loads.values()) > 1:
                most = max(sorted(loads), key=lambda m: loads[m])
                least = min(sorted(loads), key=lambda m: loads[m])
                self.sink.report("target-assignment-balanced", now_ms, event=f"share group {group_id}",
                                 message=f"share group {group_id}: target at epoch {group.assignment_epoch} gives "
                                 f"{most} {loads[most]} partitions and {least} {loads[least]} ({scope})",
                                 group=group_id, assignment_epoch=group.assignment_epoch, most=most,
                                 least=least, loads=dict(sorted(loads.items())))
                return


class ExclusiveOwnershipMonitor(_GroupMonitor):
    def __init__(self, sink: ViolationSink) -> None:
        super().__init__(sink)
        self._owner: dict[tuple[str, TopicPartition], str] = {}  # (group, partition) -> member (coordinator)
        self._consumers: dict[str, dict[str, frozenset[TopicPartition]]] = {}  # group -> client -> owned
        self._fenced: set[tuple[str, str]] = set()  # (group, client) told FENCED and not answered since

    def check(self, kind: str, group_id: str, group: ShareGroup | ConsumerGroup, seen: _Seen,
              changed: Changed, now_ms: int) -> None:
        if kind != "consumer":
            return
        owner = self._owner
        for member_id, before, now in changed:
            old = before[1] if before is not None else frozenset()
            new = now[1] if now is not None else frozenset()
            for tp in old - new:
                if owner.get((group_id, tp)) == member_id:
                    del owner[(group_id, tp)]
        for member_id, before, now in changed:
            old = before[1] if before is not None else frozenset()
            new = now[1] if now is not None else frozenset()
            for tp in sorted(new - old):
                holder = owner.get((group_id, tp))
                if holder is not None and holder != member_id:
                    self.sink.report("exclusive-ownership", now_ms, event=f"consumer group {group_id}",
                                     message=f"consumer group {group_id}: {tp} given to {member_id} while {holder} "
                                     f"still owns it", group=group_id, partition=str(tp), member=member_id,
                                     holder=holder)
                owner[(group_id, tp)] = member_id

    def forget(self, kind: str, group_id: str, seen: _Seen) -> None:
        if kind != "consumer":
            return
        owner = self._owner
        for member_id, (_, held) in seen.members.items():
            for tp in held:
                if owner.get((group_id, tp)) == member_id:
                    del owner[(group_id, tp)]

    def on_consumer_reconciled(self, client: str, group_id: str, revoked: frozenset[TopicPartition],
                               assigned: frozenset[TopicPartition], owned: frozenset[TopicPartition],
                               fenced: bool, now_ms: int) -> None:
        consumers = self._consumers.setdefault(group_id, {})
        consumers[client] = owned
        if fenced:
            self._fenced.add((group_id, client))
            claims = [(tp, other) for tp in sorted(owned) for other in sorted(consumers)
                      if other != client and tp in consumers[other]]
        else:
            self._fenced.discard((group_id, client))
            claims = [(tp, other) for tp in sorted(assigned) for other in sorted(consumers)
                      if other != client and (group_id, other) in self._fenced and tp in consumers[other]]
        if claims:
            tp, other = claims[0]
            fenced_one = client if fenced else other
            self.sink.report("exclusive-ownership", now_ms, event=f"heartbeat response {client}",
                             message=f"consumer group {group_id}: {tp} owned by {client} and {other}, though "
                             f"{fenced_one} was told it is fenced", group=group_id, partition=str(tp),
                             member=client, holder=other, fenced=fenced_one)


class NoAssignAndRevokeMonitor(Monitor):
    def on_consumer_reconciled(self, client: str, group_id: str, revoked: frozenset[TopicPartition],
                               assigned: frozenset[TopicPartition], owned: frozenset[TopicPartition],
                               fenced: bool, now_ms: int) -> None:
        if revoked and assigned:
            self.sink.report("no-assign-and-revoke", now_ms, event=f"heartbeat response {client}",
                             message=f"consumer group {group_id}: one heartbeat response assigned "
                             f"{', '.join(map(str, sorted(assigned)))} to {client} and revoked "
                             f"{', '.join(map(str, sorted(revoked)))}", group=group_id, member=client,
                             assigned=[str(tp) for tp in sorted(assigned)],
                             revoked=[str(tp) for tp in sorted(revoked)])
