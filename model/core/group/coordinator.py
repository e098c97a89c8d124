"""One group coordinator shard: a ``__consumer_offsets`` partition's groups (GC-6, CG-*).

``GroupCoordinatorShard`` routes every group-coordinator request to the
manager of its group type — ``ShareGroupManager`` for share groups (KIP-932),
``ConsumerGroupManager`` for KIP-848 consumer groups — over ONE record log,
as Kafka's GroupCoordinatorShard does. It is pure: time is the caller's
``now_ms``, and every call returns a ``ShardResult``:

* ``response``: the answer to the request just handled (None when it is
  answered later, see ``completed``);
* ``records``: to append to the partition's replicated log. The managers have
  already applied them; the caller sends the response (and the ``outputs``)
  only once they are committed, and on a failed append rebuilds the shard
  from the committed log with ``replay`` (GC-6, as SC-7 for share state);
* ``outputs``: requests for the share coordinator (Initialize/Delete/
  ReadSummary ShareGroupState, GC-7/GC-8); their answers come back through
  ``on_state_response``;
* ``completed``: (token, response) pairs of earlier requests answered now —
  a DeleteGroups waiting for the share coordinator to delete state (GC-8), a
  DescribeShareGroupOffsets waiting for its state summaries.

Loading mirrors the share coordinator (SC-6): ``begin_load``, ``apply`` each
committed record in log order, ``complete_load``; while loading every request
answers COORDINATOR_LOAD_IN_PROGRESS. After the load the caller calls
``on_loaded`` once (session timers restart, group epochs bump, state requests
in progress are re-sent). ``next_deadline_ms``/``expire`` drive one timer for
both managers.

Decisions where SPEC.md is silent (the shipped Kafka is the reference):

- A group id names one group type. A share-group request for a consumer
  group, or a consumer-group request (heartbeat, OffsetCommit, OffsetFetch)
  for a share group, answers GROUP_ID_NOT_FOUND ("not a share group", as
  GroupMetadataManager does).
- DeleteGroups of a consumer group: GROUP_NOT_EMPTY with members, else its
  ConsumerGroupMetadata tombstone, which drops the group and its offsets.
- OffsetFetch (not among the consumer-group messages, so defined here) checks
  the member epoch like OffsetCommit (KIP-848: STALE_MEMBER_EPOCH,
  UNKNOWN_MEMBER_ID) when a member id is given; an unknown group or partition
  answers offset -1.
- Soft state that waits for the share coordinator (pending DeleteGroups and
  DescribeShareGroupOffsets answers) is lost on failover, like any in-memory
  state; the client's request times out and is retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from model import situations as _situations
from model.core.config import BrokerConfig, GroupConfig
from model.core.errors import Errors
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
)
from model.core.group.consumer_messages import DescribedGroup as ConsumerDescribedGroup
from model.core.group.consumer_records import ConsumerGroupMetadata, is_consumer_record
from model.core.group.consumer_records import tombstone as consumer_tombstone
from model.core.group.result import CoordinatorResult
from model.core.group.share_group import ShareGroupManager
from model.core.group.share_messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribedGroup,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from model.core.group.share_records import is_share_group_record
from model.core.message import Message
from model.core.metadata import MetadataImage, TopicPartition
from model.core.produce_fetch import OffsetFetchRequest, OffsetFetchResponse, OffsetFetchResponsePartition
from model.core.share_state import (
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    SharePartitionKey,
)

# --- what every call returns -----------------------------------------------------------------


class ShardResult(Message):
    FIELDS = ("response", "records", "outputs", "completed")
    __slots__ = FIELDS

    def __init__(self, response: object | None = None, records: tuple[object, ...] = (),
                 outputs: tuple[object, ...] = (), completed: tuple[tuple[int, object], ...] = ()) -> None:
        self.response: Final = response
        self.records: Final = records
        self.outputs: Final = outputs
        self.completed: Final = completed


_EMPTY = ShardResult()


@dataclass
class _PendingDescribe:
    token: int
    request: DescribeShareGroupOffsetsRequest
    waiting: set[SharePartitionKey]
    summaries: list[ReadShareGroupStateSummaryResponse] = field(default_factory=list)


@dataclass
class _PendingDelete:
    token: int
    results: dict[str, DeletableGroupResult | None]  # group id -> result (None: waiting)


class GroupCoordinatorShard:
    """Share and consumer groups of one ``__consumer_offsets`` partition, over one log."""

    def __init__(
        self,
        config: BrokerConfig,
        metadata: MetadataImage,
        member_id_factory: Callable[[], str],
        *,
        group_configs: Mapping[str, GroupConfig] | None = None,
    ) -> None:
        self.share = ShareGroupManager(config, metadata, member_id_factory, group_configs=group_configs)
        self.consumer = ConsumerGroupManager(config, metadata, member_id_factory, group_configs=group_configs)
        self.records: list[object] = []
        self.loading = False
        self._describes: list[_PendingDescribe] = []
        self._deletes: list[_PendingDelete] = []

    # --- the log (GC-6) ----------------------------------------------------------------------

    def apply(self, record: object) -> None:
        """Replay one record of the log into the manager it belongs to."""
        if is_share_group_record(record):
            self.share.replay(record)
        elif is_consumer_record(record):
            self.consumer.replay(record)
        else:
            raise TypeError(f"not a group-coordinator record: {record!r}")
        self.records.append(record)

    def begin_load(self) -> None:
        self.loading = True

    def complete_load(self) -> None:
        self.loading = False

    @classmethod
    def replay(
        cls,
        records: Iterable[object],
        config: BrokerConfig,
        metadata: MetadataImage,
        member_id_factory: Callable[[], str],
        *,
        group_configs: Mapping[str, GroupConfig] | None = None,
    ) -> GroupCoordinatorShard:
        """A shard that has loaded ``records`` (call ``on_loaded`` next)."""
        shard = cls(config, metadata, member_id_factory, group_configs=group_configs)
        shard.begin_load()
        for record in records:
            shard.apply(record)
        shard.complete_load()
        return shard

    def durable_view(self) -> tuple[object, ...]:
        """Everything the log determines, for replay-equals-live checks."""
        return (
            self.share.durable_view(),
            dict(sorted(self.consumer.snapshot().items())),
        )

    def _result(self, result: CoordinatorResult, response: object | None = None,
                completed: tuple[tuple[int, object], ...] = ()) -> ShardResult:
        # The managers applied their records already: only log them.
        self.records.extend(result.records)
        return ShardResult(response if response is not None else result.response, result.records,
                           result.outputs, completed)

    # --- requests ----------------------------------------------------------------------------

    def handle(self, request: object, now_ms: int, token: int = 0) -> ShardResult:
        """Serve one request. ``token`` names it in ``completed`` if it is answered later."""
        if self.loading:
            _situations.COUNTS["group-coordinator-loading"] += 1
            return ShardResult(error_response(request, Errors.COORDINATOR_LOAD_IN_PROGRESS))
        if isinstance(request, ShareGroupHeartbeatRequest):
            if self.consumer.group(request.group_id) is not None:
                return ShardResult(ShareGroupHeartbeatResponse(
                    Errors.GROUP_ID_NOT_FOUND, f"group {request.group_id} is not a share group"))
            return self._result(self.share.heartbeat(request, now_ms))
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            if self.share.group(request.group_id) is not None:
                return ShardResult(ConsumerGroupHeartbeatResponse(
                    Errors.GROUP_ID_NOT_FOUND, f"group {request.group_id} is not a consumer group"))
            return self._result(self.consumer.heartbeat(request, now_ms))
        if isinstance(request, OffsetCommitRequest):
            if self.share.group(request.group_id) is not None:
                return ShardResult(error_response(request, Errors.GROUP_ID_NOT_FOUND))
            return self._result(self.consumer.commit_offsets(request, now_ms))
        if isinstance(request, OffsetFetchRequest):
            return ShardResult(self._offset_fetch(request))
        if isinstance(request, ShareGroupDescribeRequest):
            return ShardResult(self.share.describe(request))
        if isinstance(request, ConsumerGroupDescribeRequest):
            return ShardResult(self.consumer.describe(request.group_ids))
        if isinstance(request, AlterShareGroupOffsetsRequest):
            return self._result(self.share.alter_offsets(request, now_ms))
        if isinstance(request, DeleteShareGroupOffsetsRequest):
            return self._result(self.share.delete_offsets(request, now_ms))
        if isinstance(request, DescribeShareGroupOffsetsRequest):
            return self._describe_offsets(request, now_ms, token)
        if isinstance(request, DeleteGroupsRequest):
            return self._delete_groups(request, now_ms, token)
        if isinstance(request, ListGroupsRequest):
            return ShardResult(self.list_groups(request))
        raise TypeError(f"not a group-coordinator request: {request!r}")

    def _offset_fetch(self, req: OffsetFetchRequest) -> OffsetFetchResponse:
        if self.share.group(req.group_id) is not None:
            return OffsetFetchResponse(error_code=Errors.GROUP_ID_NOT_FOUND,
                                       error_message=f"group {req.group_id} is not a consumer group")
        group = self.consumer.group(req.group_id)
        if group is not None and req.member_id and req.member_epoch >= 0:
            member = group.members.get(req.member_id)
            if member is None:
                return OffsetFetchResponse(error_code=Errors.UNKNOWN_MEMBER_ID)
            if member.member_epoch != req.member_epoch:
                return OffsetFetchResponse(error_code=Errors.STALE_MEMBER_EPOCH)
        offsets = group.offsets if group is not None else {}
        wanted = sorted(offsets) if req.partitions is None else [TopicPartition(t, p) for t, p in req.partitions]
        out = []
        for tp in wanted:
            committed = offsets.get(tp)
            if committed is None:
                out.append(OffsetFetchResponsePartition(tp.topic, tp.partition))
            else:
                out.append(OffsetFetchResponsePartition(tp.topic, tp.partition, committed.offset,
                                                        committed.leader_epoch))
        return OffsetFetchResponse(tuple(out))

    def _describe_offsets(self, req: DescribeShareGroupOffsetsRequest, now_ms: int, token: int) -> ShardResult:
        result = self.share.describe_offsets(req, now_ms)
        if result.response is not None or not result.outputs:
            return self._result(result)
        keys = {out.key for out in result.outputs if isinstance(out, ReadShareGroupStateSummaryRequest)}
        self._describes.append(_PendingDescribe(token, req, keys))
        return ShardResult(None, (), result.outputs)

    def _delete_groups(self, req: DeleteGroupsRequest, now_ms: int, token: int) -> ShardResult:
        results: dict[str, DeletableGroupResult | None] = {}
        records: list[object] = []
        outputs: list[object] = []
        for gid in req.groups_names:
            if gid in results:
                continue
            if self.consumer.group(gid) is not None:
                results[gid] = self._delete_consumer_group(gid, records)
                continue
            result = self.share.delete_group(gid, now_ms)
            self.records.extend(result.records)
            records.extend(result.records)
            outputs.extend(result.outputs)
            results[gid] = result.response if isinstance(result.response, DeletableGroupResult) else None
        if all(r is not None for r in results.values()):
            return ShardResult(_delete_response(results), tuple(records), tuple(outputs))
        self._deletes.append(_PendingDelete(token, results))
        return ShardResult(None, tuple(records), tuple(outputs))

    def _delete_consumer_group(self, group_id: str, records: list[object]) -> DeletableGroupResult:
        group = self.consumer.group(group_id)
        assert group is not None
        if group.members:
            return DeletableGroupResult(group_id, Errors.GROUP_NOT_EMPTY,
                                        f"consumer group {group_id} has {len(group.members)} members")
        record = consumer_tombstone(ConsumerGroupMetadata, group_id)
        self.apply(record)
        records.append(record)
        return DeletableGroupResult(group_id)

    def list_groups(self, req: ListGroupsRequest | None = None) -> ListGroupsResponse:
        """Both group types; ListGroups filters by type (share / consumer) and state."""
        req = req or ListGroupsRequest()
        types = {t.lower() for t in req.types_filter}
        states = {s.lower() for s in req.states_filter}
        listed = list(self.share.list_groups(req).groups)
        if not types or "consumer" in types:
            for gid in self.consumer.group_ids():
                group = self.consumer.group(gid)
                assert group is not None
                if not states or group.state.lower() in states:
                    listed.append(ListedGroup(gid, "consumer", group.state, "consumer"))
        return ListGroupsResponse(tuple(sorted(listed, key=lambda g: g.group_id)))

    # --- answers from the share coordinator (GC-7, GC-8) ------------------------------------

    def on_state_response_unrecorded(self, response: object) -> None:
        """A share coordinator's answer that came while this coordinator's log could not take records."""
        if not self.loading and isinstance(response, InitializeShareGroupStateResponse):
            self.share.on_initialize_unrecorded(response)

    def on_state_response(self, response: object, now_ms: int) -> ShardResult:
        if self.loading:
            return _EMPTY
        if isinstance(response, InitializeShareGroupStateResponse):
            return self._result(self.share.on_initialize_response(response, now_ms))
        if isinstance(response, DeleteShareGroupStateResponse):
            result = self.share.on_delete_response(response, now_ms)
            done = result.response
            completed: list[tuple[int, object]] = []
            if isinstance(done, DeletableGroupResult):
                for pending in list(self._deletes):
                    if pending.results.get(done.group_id, done) is None:
                        pending.results[done.group_id] = done
                    if all(r is not None for r in pending.results.values()):
                        self._deletes.remove(pending)
                        completed.append((pending.token, _delete_response(pending.results)))
            self.records.extend(result.records)
            return ShardResult(None, result.records, result.outputs, tuple(completed))
        if isinstance(response, ReadShareGroupStateSummaryResponse):
            completed = []
            for describe in list(self._describes):
                if response.key in describe.waiting:
                    describe.waiting.discard(response.key)
                    describe.summaries.append(response)
                    if not describe.waiting:
                        self._describes.remove(describe)
                        answer = self.share.describe_offsets_response(describe.request, describe.summaries)
                        completed.append((describe.token, answer))
            return ShardResult(completed=tuple(completed))
        raise TypeError(f"not a share-coordinator answer: {response!r}")

    # --- metadata, timers, failover ---------------------------------------------------------

    def on_metadata(self, metadata: MetadataImage, now_ms: int) -> ShardResult:
        share = self.share.on_metadata(metadata, now_ms)
        consumer = self.consumer.on_metadata(metadata, now_ms)
        return self._merged(share, consumer)

    def next_deadline_ms(self) -> int | None:
        deadlines = [d for d in (self.share.next_deadline_ms(), self.consumer.next_deadline_ms()) if d is not None]
        return min(deadlines) if deadlines else None

    def expire(self, now_ms: int) -> ShardResult:
        if self.loading:
            return _EMPTY
        return self._merged(self.share.expire(now_ms), self.consumer.expire(now_ms))

    def on_loaded(self, now_ms: int) -> ShardResult:
        """GC-6: after replay, restart timers, bump epochs, re-send state requests."""
        return self._merged(self.share.on_loaded(now_ms), self.consumer.on_loaded(now_ms))

    def _merged(self, first: CoordinatorResult, second: CoordinatorResult) -> ShardResult:
        records = first.records + second.records
        self.records.extend(records)
        return ShardResult(None, records, first.outputs + second.outputs)


# --- helpers -----------------------------------------------------------------------------------


def _delete_response(results: Mapping[str, DeletableGroupResult | None]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(tuple(r for r in results.values() if r is not None))


def error_response(request: object, error: Errors, message: str | None = None) -> object:
    """The answer a group-coordinator request gets when it is not served at all
    (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
    if isinstance(request, ShareGroupHeartbeatRequest):
        return ShareGroupHeartbeatResponse(error, message)
    if isinstance(request, ConsumerGroupHeartbeatRequest):
        return ConsumerGroupHeartbeatResponse(error, message)
    if isinstance(request, OffsetCommitRequest):
        return OffsetCommitResponse(
            tuple(OffsetCommitResponsePartition(p.topic, p.partition_index, error) for p in request.partitions),
            error_message=message,
        )
    if isinstance(request, OffsetFetchRequest):
        return OffsetFetchResponse(error_code=error, error_message=message)
    if isinstance(request, AlterShareGroupOffsetsRequest):
        return AlterShareGroupOffsetsResponse((), error, message)
    if isinstance(request, DeleteShareGroupOffsetsRequest):
        return DeleteShareGroupOffsetsResponse((), error, message)
    if isinstance(request, DescribeShareGroupOffsetsRequest):
        return DescribeShareGroupOffsetsResponse((), error, message)
    if isinstance(request, DeleteGroupsRequest):
        return DeleteGroupsResponse(tuple(DeletableGroupResult(g, error, message) for g in request.groups_names))
    if isinstance(request, ListGroupsRequest):
        return ListGroupsResponse((), error)
    if isinstance(request, ShareGroupDescribeRequest):
        return ShareGroupDescribeResponse(tuple(DescribedGroup(g, error, message) for g in request.group_ids))
    if isinstance(request, ConsumerGroupDescribeRequest):
        return ConsumerGroupDescribeResponse(
            tuple(ConsumerDescribedGroup(g, error, message) for g in request.group_ids))
    raise TypeError(f"not a group-coordinator request: {request!r}")


def group_id_of(request: object) -> str | None:
    """The group a request is about (routes it to its ``__consumer_offsets`` partition, GC-6);
    None for requests about several groups or none (DeleteGroups, describes, ListGroups)."""
    group_id = getattr(request, "group_id", None)
    return group_id if isinstance(group_id, str) else None
