"""``Monitors``: the one ``Observer`` the cluster is given; it calls each hook on the monitors that
override it, in their order.

Compiled in the compiled build: each hook is a native method looping over the monitors that watch it, so
a hook costs the cluster a direct call and each monitor another (a monitor of a test or a user, an
interpreted subclass, is called as Python). Who overrides which hook is worked out once per list of
monitor classes (``_plan``): every run builds its monitors twice (``standard_monitors``, then the
cluster with its tracker), always of the same classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from invariants.sink import Monitor, ViolationSink
from invariants.violation import Violation
from model.sim.protocol import Observer

if TYPE_CHECKING:
    from model.core.group.coordinator import GroupCoordinatorShard
    from model.core.metadata import TopicPartition
    from model.core.share_coordinator import ShareCoordinatorShard, ShareGroupState
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import SharePartitionKey, WriteShareGroupStateRequest

# Every hook of Observer, in its order; each is also a method of Monitors below (tests/invariants/test_fan_out.py).
HOOKS: Final = tuple(name for name in vars(Observer) if name.startswith("on_"))


class Monitors(Observer):
    """Calls each hook on the monitors that override it."""

    def __init__(self, monitors: Sequence[Monitor], sink: ViolationSink) -> None:
        self.monitors = tuple(monitors)
        self.sink = sink
        watching = {hook: tuple(self.monitors[i] for i in indexes)
                    for hook, indexes in _plan(tuple(type(m) for m in self.monitors))}
        self._on_acquire = watching["on_acquire"]
        self._on_ack_confirmed = watching["on_ack_confirmed"]
        self._on_share_partition_step = watching["on_share_partition_step"]
        self._on_write_accepted = watching["on_write_accepted"]
        self._on_leader_start = watching["on_leader_start"]
        self._on_event = watching["on_event"]
        self._on_acknowledge = watching["on_acknowledge"]
        self._on_write_completed = watching["on_write_completed"]
        self._on_state_read = watching["on_state_read"]
        self._on_records_committed = watching["on_records_committed"]
        self._on_transaction_ended = watching["on_transaction_ended"]
        self._on_dlq_committed = watching["on_dlq_committed"]
        self._on_dlq_given_up = watching["on_dlq_given_up"]
        self._on_share_state_handled = watching["on_share_state_handled"]
        self._on_share_state_request = watching["on_share_state_request"]
        self._on_share_state_committed = watching["on_share_state_committed"]
        self._on_share_state_created = watching["on_share_state_created"]
        self._on_share_coordinator_loaded = watching["on_share_coordinator_loaded"]
        self._on_share_state_pruning = watching["on_share_state_pruning"]
        self._on_group_coordinator_step = watching["on_group_coordinator_step"]
        self._on_group_records_committed = watching["on_group_records_committed"]
        self._on_consumer_reconciled = watching["on_consumer_reconciled"]
        self._on_consumer_heartbeat = watching["on_consumer_heartbeat"]
        self._on_group_request = watching["on_group_request"]
        self._on_share_session = watching["on_share_session"]
        self._on_share_session_evicted = watching["on_share_session_evicted"]
        self._on_share_fetch_session = watching["on_share_fetch_session"]
        self._on_share_fetch_waiting = watching["on_share_fetch_waiting"]

    @property
    def violations(self) -> list[Violation]:
        return self.sink.violations

    def finish(self, now_ms: int) -> None:
        for monitor in self.monitors:
            monitor.finish(now_ms)

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        for monitor in self._on_acquire:
            monitor.on_acquire(key, member_id, acquired, leader_epoch, now_ms)

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        for monitor in self._on_ack_confirmed:
            monitor.on_ack_confirmed(key, member_id, batches, leader_epoch, state_epoch, now_ms)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        for monitor in self._on_share_partition_step:
            monitor.on_share_partition_step(partition, bound, now_ms)

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        for monitor in self._on_write_accepted:
            monitor.on_write_accepted(request, now_ms)

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        for monitor in self._on_leader_start:
            monitor.on_leader_start(key, broker, leader_epoch, now_ms)

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        for monitor in self._on_event:
            monitor.on_event(kind, now_ms, **fields)

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        for monitor in self._on_acknowledge:
            monitor.on_acknowledge(key, member_id, batches, leader_epoch, now_ms, connection)

    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        for monitor in self._on_write_completed:
            monitor.on_write_completed(request, now_ms)

    def on_state_read(self, key: SharePartitionKey, leader_epoch: int, now_ms: int) -> None:
        for monitor in self._on_state_read:
            monitor.on_state_read(key, leader_epoch, now_ms)

    def on_records_committed(self, topic: str, partition: int, first_offset: int, count: int,
                             producer_id: int | None, transactional: bool, now_ms: int) -> None:
        for monitor in self._on_records_committed:
            monitor.on_records_committed(topic, partition, first_offset, count, producer_id, transactional, now_ms)

    def on_transaction_ended(self, topic: str, partition: int, producer_id: int, commit: bool, now_ms: int) -> None:
        for monitor in self._on_transaction_ended:
            monitor.on_transaction_ended(topic, partition, producer_id, commit, now_ms)

    def on_dlq_committed(self, topic: str, partition: int, first_offset: int, source: tuple[object, int, int],
                         now_ms: int) -> None:
        for monitor in self._on_dlq_committed:
            monitor.on_dlq_committed(topic, partition, first_offset, source, now_ms)

    def on_dlq_given_up(self, key: SharePartitionKey, first: int, last: int, now_ms: int) -> None:
        for monitor in self._on_dlq_given_up:
            monitor.on_dlq_given_up(key, first, last, now_ms)

    def on_share_state_handled(self, shard: ShareCoordinatorShard, request: object,
                               previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        for monitor in self._on_share_state_handled:
            monitor.on_share_state_handled(shard, request, previous, sent_ms, now_ms)

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        for monitor in self._on_share_state_request:
            monitor.on_share_state_request(partition, request, response, records, sent_ms, now_ms)

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for monitor in self._on_share_state_committed:
            monitor.on_share_state_committed(partition, records, now_ms)

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        for monitor in self._on_share_state_created:
            monitor.on_share_state_created(key, state_epoch, now_ms)

    def on_share_coordinator_loaded(self, partition: int, shard: ShareCoordinatorShard,
                                    committed: Sequence[object], uncommitted: Sequence[object], now_ms: int,
                                    *, log_start_offset: int = 0) -> None:
        for monitor in self._on_share_coordinator_loaded:
            monitor.on_share_coordinator_loaded(partition, shard, committed, uncommitted, now_ms,
                                                log_start_offset=log_start_offset)

    def on_share_state_pruning(self, partition: int, first_offset: int, records: Sequence[object],
                               now_ms: int) -> None:
        for monitor in self._on_share_state_pruning:
            monitor.on_share_state_pruning(partition, first_offset, records, now_ms)

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard,
                                  group_id: str | None, now_ms: int) -> None:
        for monitor in self._on_group_coordinator_step:
            monitor.on_group_coordinator_step(partition, leader_epoch, shard, group_id, now_ms)

    def on_group_records_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for monitor in self._on_group_records_committed:
            monitor.on_group_records_committed(partition, records, now_ms)

    def on_consumer_reconciled(self, client: str, group_id: str, revoked: frozenset[TopicPartition],
                               assigned: frozenset[TopicPartition], owned: frozenset[TopicPartition],
                               fenced: bool, now_ms: int) -> None:
        for monitor in self._on_consumer_reconciled:
            monitor.on_consumer_reconciled(client, group_id, revoked, assigned, owned, fenced, now_ms)

    def on_consumer_heartbeat(self, client: str, group_id: str, kind: str, member: object, request: object,
                              response: object, now_ms: int) -> None:
        for monitor in self._on_consumer_heartbeat:
            monitor.on_consumer_heartbeat(client, group_id, kind, member, request, response, now_ms)

    def on_group_request(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard, request: object,
                         response: object, now_ms: int) -> None:
        for monitor in self._on_group_request:
            monitor.on_group_request(partition, leader_epoch, shard, request, response, now_ms)

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        for monitor in self._on_share_session:
            monitor.on_share_session(broker, group_id, member_id, epoch, now_ms)

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        for monitor in self._on_share_session_evicted:
            monitor.on_share_session_evicted(broker, group_id, member_id, now_ms)

    def on_share_fetch_session(self, broker: int, group_id: str, member_id: str, epoch: int,
                               partitions: tuple[tuple[str, int], ...], forgotten: tuple[tuple[str, int], ...],
                               connection: tuple[str, int], now_ms: int) -> None:
        for monitor in self._on_share_fetch_session:
            monitor.on_share_fetch_session(broker, group_id, member_id, epoch, partitions, forgotten, connection,
                                           now_ms)

    def on_share_fetch_waiting(self, broker: int, fetch_id: int, partitions: tuple[SharePartition, ...],
                               min_bytes: int, now_ms: int) -> None:
        for monitor in self._on_share_fetch_waiting:
            monitor.on_share_fetch_waiting(broker, fetch_id, partitions, min_bytes, now_ms)


# Monitor classes -> for each hook, the positions of the monitors that override it.
_PLANS: Final[dict[tuple[type, ...], tuple[tuple[str, tuple[int, ...]], ...]]] = {}


def _plan(monitor_types: tuple[type, ...]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    plan = _PLANS.get(monitor_types)
    if plan is None:
        overrides = [_overridden(t) for t in monitor_types]
        plan = _PLANS[monitor_types] = tuple(
            (hook, tuple(i for i, hooks in enumerate(overrides) if hook in hooks)) for hook in HOOKS)
    return plan


def _overridden(monitor_type: type) -> frozenset[str]:
    """The hooks ``monitor_type`` overrides."""
    return frozenset(hook for hook in HOOKS if getattr(monitor_type, hook) is not getattr(Observer, hook))
