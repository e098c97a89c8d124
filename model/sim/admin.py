"""A simulated admin client: share-group offsets, group deletion, more partitions.

Each operation is a request retried (``Client.call``) until the group
coordinator gives an answer that is not retriable (NOT_COORDINATOR and
COORDINATOR_LOAD_IN_PROGRESS refresh metadata and go again) or the client's
``default_api_timeout_ms`` has passed. Outcomes are kept in ``results`` (and handed to an
optional callback); an admin error such as NON_EMPTY_GROUP (the group still has
members, GC-8) is an outcome, not a failure of the simulation.

* ``alter_share_group_offsets``: AlterShareGroupOffsets (SP-12). "earliest" /
  "latest" are resolved first, per partition, from the partition leader's log
  start offset / high-water mark (a Fetch with max_records 0, our ListOffsets).
* ``delete_share_group_offsets``: DeleteShareGroupOffsets for whole topics.
* ``delete_group``: DeleteGroups.
* ``delete_records``: DeleteRecords (Admin.deleteRecords) to the partition leader:
  the log start offset moves up to an offset (at most the high-water mark).
* ``add_partitions``: CreatePartitions, which the controller serves directly
  (it is not a network node in the simulation): the callable given at
  construction.
* ``apply(event)``: the ``admin_*`` fault kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from model.core.errors import Errors
from model.core.group.share_messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
    AlterShareGroupOffsetsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
    DeleteShareGroupOffsetsResponse,
)
from model.core.produce_fetch import (
    DELETE_TO_HIGH_WATERMARK,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    FetchRequest,
    FetchResponse,
)
from model.sim.client import Client, ClientConfig, MetadataSource
from model.sim.faults import FaultEvent
from model.sim.network import Network
from model.sim.timers import Scheduler
from model.sim.trace import Trace

ADMIN_FAULT_KINDS = ("admin_alter_offsets", "admin_delete_group", "admin_add_partitions", "delete_records")
# delete_records params.to: the high-water mark, half way from the log start to it, or an offset.
DELETE_TO_WORDS = ("hwm", "half")
OFFSET_WORDS = ("earliest", "latest")


@dataclass(frozen=True)
class AdminResult:
    operation: str  # "alter_offsets", "delete_offsets", "delete_group", "add_partitions"
    target: str  # the group (or topic, for add_partitions)
    error: Errors  # NONE, the coordinator's answer, or REQUEST_TIMED_OUT after the last attempt
    time_ms: int
    detail: str = ""


AdminCallback = Callable[[AdminResult], object]


class AdminClient(Client):
    def __init__(
        self,
        name: str,
        scheduler: Scheduler,
        network: Network,
        metadata_source: MetadataSource,
        *,
        add_partitions: Callable[[str, int], object] | None = None,
        config: ClientConfig | None = None,
        trace: Trace | None = None,
    ) -> None:
        super().__init__(name, scheduler, network, metadata_source, config=config, trace=trace)
        self._add_partitions = add_partitions
        self.results: list[AdminResult] = []

    # -- the fault kinds -----------------------------------------------------------------------

    def apply(self, event: FaultEvent, on_done: AdminCallback | None = None) -> bool:
        """Run the admin operation an ``admin_*`` fault event names. False for other kinds."""
        if event.kind == "admin_alter_offsets":
            topic, partition, offset = event.param("topic"), event.param("partition"), event.param("offset")
            assert isinstance(topic, str) and offset is not None  # FaultEvent validated them
            self.alter_share_group_offsets(
                event.target, topic, partition if isinstance(partition, int) else None, offset, on_done
            )
        elif event.kind == "admin_delete_group":
            self.delete_group(event.target, on_done)
        elif event.kind == "delete_records":
            topic, _, number = event.target.rpartition("-")
            to = event.param("to")
            self.delete_records(topic, int(number), "hwm" if to is None else to, on_done)
        elif event.kind == "admin_add_partitions":
            add = event.param("add")
            assert isinstance(add, int)
            self.add_partitions(event.target, add, on_done)
        else:
            return False
        return True

    # -- operations --------------------------------------------------------------------------

    def alter_share_group_offsets(
        self,
        group_id: str,
        topic: str,
        partition: int | None,
        offset: int | str,
        on_done: AdminCallback | None = None,
    ) -> None:
        """Reset the share group's start offset on one partition, or every partition of ``topic``."""
        partitions = (
            [partition] if partition is not None else list(range(self.metadata.partition_count(topic)))
        )
        self.record("admin.alter_offsets", group=group_id, topic=topic, offset=str(offset))
        if isinstance(offset, int):
            self._send_alter(group_id, topic, {p: offset for p in partitions}, on_done)
            return
        if offset not in OFFSET_WORDS:
            raise ValueError(f"offset {offset!r}: an integer >= 0, 'earliest' or 'latest'")
        resolved: dict[int, int] = {}
        failed: list[int] = []

        def resolved_one(p: int, response: FetchResponse | None) -> None:
            if response is None or response.log_start_offset < 0:
                failed.append(p)
            else:
                resolved[p] = response.log_start_offset if offset == "earliest" else response.high_watermark
            if len(resolved) + len(failed) < len(partitions):
                return
            if failed:
                self._done(on_done, "alter_offsets", group_id, Errors.REQUEST_TIMED_OUT,
                           f"could not resolve {offset} for partitions {sorted(failed)}")
            else:
                self._send_alter(group_id, topic, resolved, on_done)

        if not partitions:
            self._done(on_done, "alter_offsets", group_id, Errors.UNKNOWN_TOPIC_OR_PARTITION, topic)
        for p in partitions:
            self.call(
                partial(self._leader_id, topic, p),
                "Fetch",
                FetchRequest(topic, p, fetch_offset=0, max_records=0),
                partial(resolved_one, p),
                error_of=_fetch_error,
            )

    def _send_alter(self, group_id: str, topic: str, offsets: dict[int, int], on_done: AdminCallback | None) -> None:
        request = AlterShareGroupOffsetsRequest(
            group_id,
            (
                AlterShareGroupOffsetsRequestTopic(
                    topic,
                    tuple(AlterShareGroupOffsetsRequestPartition(p, offsets[p]) for p in sorted(offsets)),
                ),
            ),
        )

        def done(response: AlterShareGroupOffsetsResponse | None) -> None:
            error = Errors.REQUEST_TIMED_OUT if response is None else _alter_error(response)
            detail = ",".join(f"{p}={offsets[p]}" for p in sorted(offsets))
            self._done(on_done, "alter_offsets", group_id, error, detail)

        self._to_coordinator(group_id, "AlterShareGroupOffsets", request, done, _alter_error)

    def delete_share_group_offsets(
        self, group_id: str, topics: tuple[str, ...] | list[str], on_done: AdminCallback | None = None
    ) -> None:
        request = DeleteShareGroupOffsetsRequest(
            group_id, tuple(DeleteShareGroupOffsetsRequestTopic(t) for t in sorted(topics))
        )
        self.record("admin.delete_offsets", group=group_id)

        def done(response: DeleteShareGroupOffsetsResponse | None) -> None:
            error = Errors.REQUEST_TIMED_OUT if response is None else _delete_offsets_error(response)
            self._done(on_done, "delete_offsets", group_id, error, ",".join(sorted(topics)))

        self._to_coordinator(group_id, "DeleteShareGroupOffsets", request, done, _delete_offsets_error)

    def delete_group(self, group_id: str, on_done: AdminCallback | None = None) -> None:
        self.record("admin.delete_group", group=group_id)

        def done(response: DeleteGroupsResponse | None) -> None:
            error = Errors.REQUEST_TIMED_OUT if response is None else _delete_group_error(response)
            self._done(on_done, "delete_group", group_id, error)

        self._to_coordinator(group_id, "DeleteGroups", DeleteGroupsRequest((group_id,)), done, _delete_group_error)

    def delete_records(self, topic: str, partition: int, to: int | str,
                       on_done: AdminCallback | None = None) -> None:
        """DeleteRecords to the partition's leader: its log start offset moves up to ``to`` ("hwm": the
        high-water mark, Kafka's -1; "half": half way from the log start to it; or an offset). Retried on
        NOT_LEADER_OR_FOLLOWER like any request to a leader."""
        if isinstance(to, int):
            request = DeleteRecordsRequest(topic, partition, to)
        elif to in DELETE_TO_WORDS:
            request = DeleteRecordsRequest(topic, partition, DELETE_TO_HIGH_WATERMARK, 0.5 if to == "half" else -1.0)
        else:
            raise ValueError(f"to {to!r}: an integer >= 0, 'hwm' or 'half'")
        self.record("admin.delete_records", topic=topic, partition=partition, to=str(to))

        def done(response: DeleteRecordsResponse | None) -> None:
            error = Errors.REQUEST_TIMED_OUT if response is None else response.error_code
            low = "" if response is None else str(response.low_watermark)
            self._done(on_done, "delete_records", f"{topic}-{partition}", error, low)

        self.call(partial(self._leader_id, topic, partition), "DeleteRecords", request, done,
                  error_of=_delete_records_error)

    def add_partitions(self, topic: str, add: int, on_done: AdminCallback | None = None) -> None:
        """CreatePartitions: the controller adds ``add`` partitions to ``topic`` (GC-2 bumps follow)."""
        self.record("admin.add_partitions", topic=topic, add=add)
        if self._add_partitions is None:
            self._done(on_done, "add_partitions", topic, Errors.INVALID_REQUEST, "no controller")
            return
        self._add_partitions(topic, add)
        self.request_metadata_refresh()
        self._done(on_done, "add_partitions", topic, Errors.NONE, str(add))

    # -- plumbing ----------------------------------------------------------------------------

    def _to_coordinator(
        self,
        group_id: str,
        kind: str,
        request: Any,
        done: Callable[[Any], None],
        error_of: Callable[[Any], Errors],
    ) -> None:
        self.call(
            lambda: self.group_coordinator(group_id),
            kind,
            request,
            done,
            error_of=error_of,
        )

    def _leader_id(self, topic: str, partition: int) -> int | None:
        info = self.leader_of(topic, partition)
        return info.leader if info is not None else None

    def _done(self, on_done: AdminCallback | None, operation: str, target: str, error: Errors,
              detail: str = "") -> None:
        result = AdminResult(operation, target, error, self.scheduler.now_ms, detail)
        self.results.append(result)
        self.record("admin.result", operation=operation, target=target, error=int(error))
        if on_done is not None:
            on_done(result)


def _fetch_error(response: FetchResponse) -> Errors:
    # OFFSET_OUT_OF_RANGE still carries the offsets we asked for.
    return Errors.NONE if response.error_code == Errors.OFFSET_OUT_OF_RANGE else response.error_code


def _delete_records_error(response: DeleteRecordsResponse) -> Errors:
    # OFFSET_OUT_OF_RANGE is an answer (nothing to retry); leadership errors are retried by Client.call.
    return Errors.NONE if response.error_code == Errors.OFFSET_OUT_OF_RANGE else response.error_code


def _alter_error(response: AlterShareGroupOffsetsResponse) -> Errors:
    if response.error_code != Errors.NONE:
        return response.error_code
    for topic in response.responses:
        for p in topic.partitions:
            if p.error_code != Errors.NONE:
                return p.error_code
    return Errors.NONE


def _delete_offsets_error(response: DeleteShareGroupOffsetsResponse) -> Errors:
    if response.error_code != Errors.NONE:
        return response.error_code
    for topic in response.responses:
        if topic.error_code != Errors.NONE:
            return topic.error_code
    return Errors.NONE


def _delete_group_error(response: DeleteGroupsResponse) -> Errors:
    return response.results[0].error_code if response.results else Errors.NONE
