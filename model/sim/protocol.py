"""What the simulated nodes say to each other, and what they can all see.

* Every request travels as an ``Envelope`` whose kind is the API name
  ("ShareFetch", "WriteShareGroupState" …); its answer travels back as an
  ``Envelope`` with the same ``correlation_id`` and kind + "Response".
  Payloads are the pure request/response dataclasses of ``model.core``.
* ``ClusterMetadata`` is the controller's view: who leads which partition at
  which leader epoch. Brokers see every new image at once; clients see it
  only when they refresh (stale metadata → NOT_LEADER_OR_FOLLOWER → refresh).
* ``Observer`` is the hook the invariant monitors plug into: the simulated
  brokers call it at each protocol step; its methods do nothing by default.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from mypy_extensions import mypyc_attr

from model.core.message import Message
from model.core.share_coordinator import share_state_partition
from model.core.share_state import SharePartitionKey
from model.sim.rng import derive_seed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from model.core.group.coordinator import GroupCoordinatorShard
    from model.core.metadata import TopicPartition
    from model.core.share_coordinator import ShareCoordinatorShard, ShareGroupState
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import WriteShareGroupStateRequest

SHARE_STATE_TOPIC: Final = "__share_group_state"
CONSUMER_OFFSETS_TOPIC: Final = "__consumer_offsets"

# Every request a broker serves, by network kind (``model.sim.broker`` dispatches on them); every message on
# the network is one of them or its answer (kind + "Response"): the kinds a message fault may name.
DATA_REQUEST_KINDS: Final = ("Produce", "Fetch", "EndTxnMarker", "ShareFetch", "ShareAcknowledge", "DeleteRecords")
SHARE_STATE_KINDS: Final = (
    "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState", "DeleteShareGroupState",
    "ReadShareGroupStateSummary",
)
GROUP_KINDS: Final = (
    "ShareGroupHeartbeat", "ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch", "ShareGroupDescribe",
    "ConsumerGroupDescribe", "AlterShareGroupOffsets", "DeleteShareGroupOffsets", "DescribeShareGroupOffsets",
    "DeleteGroups", "ListGroups",
)
REQUEST_KINDS: Final = (*DATA_REQUEST_KINDS, *SHARE_STATE_KINDS, *GROUP_KINDS)


class Envelope(Message):
    FIELDS = ("correlation_id", "body")
    __slots__ = FIELDS

    def __init__(self, correlation_id: int, body: Any) -> None:
        self.correlation_id: Final = correlation_id
        self.body: Final = body  # a request or response from model.core


@functools.lru_cache(maxsize=1024)
def _group_hash(group_id: str) -> int:
    return derive_seed("group", group_id)


def broker_node(broker_id: int) -> str:
    """The network name of broker ``broker_id``: "b1" .. "bN" (made once: asked per message)."""
    node = _BROKER_NODES.get(broker_id)
    if node is None:
        node = _BROKER_NODES[broker_id] = f"b{broker_id}"
    return node


_BROKER_NODES: Final[dict[int, str]] = {}


def response_kind(kind: str) -> str:
    return kind + "Response"


class PartitionInfo(Message):
    FIELDS = ("topic", "partition", "leader", "leader_epoch", "replicas", "isr")
    __slots__ = FIELDS

    def __init__(self, topic: str, partition: int, leader: int, leader_epoch: int, replicas: tuple[int, ...],
                 isr: tuple[int, ...]) -> None:
        self.topic: Final = topic
        self.partition: Final = partition
        self.leader: Final = leader  # broker id, -1 when no replica is alive
        self.leader_epoch: Final = leader_epoch
        self.replicas: Final = replicas
        self.isr: Final = isr


@dataclass(frozen=True)
class ClusterMetadata:
    """One immutable image; the controller publishes a new one per change."""

    version: int = 0
    partitions: Mapping[tuple[str, int], PartitionInfo] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)
    alive_brokers: tuple[int, ...] = ()
    # topic -> partition count, filled on first ask: every coordinator lookup and produce asks, and
    # the image never changes.
    _counts: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)

    def leader_of(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.partitions.get((topic, partition))

    def partition_count(self, topic: str) -> int:
        count = self._counts.get(topic)
        if count is None:
            count = self._counts[topic] = sum(1 for (t, _) in self.partitions if t == topic)
        return count

    def group_coordinator_partition(self, group_id: str) -> int:
        """GC-6: a group lives on one ``__consumer_offsets`` partition (a stable hash, not ``hash()``)."""
        return _group_hash(group_id) % max(1, self.partition_count(CONSUMER_OFFSETS_TOPIC))

    def share_coordinator_partition(self, key: SharePartitionKey) -> int:
        """SC-1: Kafka's String.hashCode of "group:topicId:partition" modulo the partition count."""
        return share_state_partition(key, max(1, self.partition_count(SHARE_STATE_TOPIC)))


@mypyc_attr(allow_interpreted_subclasses=True)  # monitors of tests and users may stay interpreted
class Observer:
    """Protocol steps the invariant monitors watch. Override what you check."""

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        pass

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        """An acknowledgement whose success the leader of ``leader_epoch`` has told the consumer (after its
        durable write, made at ``state_epoch``). A leader that has lost the partition since still tells it:
        the write was durable. So may one whose group was deleted since, or whose state an admin reset:
        ``state_epoch`` says which life of the share-partition the acknowledgement belongs to."""

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        """After any change to a share-partition leader; ``bound`` is the HWM or LSO it reads up to."""

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        """A share coordinator answered a write with success (after commit, SC-7)."""

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        pass

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        """Any other notable event (faults, rebalances, failovers) for metrics."""

    # -- the hooks of the invariant catalogue (invariants/): each only observes -----------------------

    def on_acknowledge(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                       leader_epoch: int, now_ms: int, connection: tuple[str, int] = ("", 0)) -> None:
        """A leader took an acknowledgement into its state (its write follows; E-3); the request carrying it
        came on ``connection`` (the client, and the number of its connection to this broker)."""

    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        """A share-partition leader took a successful answer to ``request`` as its durable write (SP-9)."""

    def on_state_read(self, key: SharePartitionKey, leader_epoch: int, now_ms: int) -> None:
        """A share-partition leader got its ReadShareGroupState with ``leader_epoch`` answered (SC-5)."""

    def on_records_committed(self, topic: str, partition: int, first_offset: int, count: int,
                             producer_id: int | None, transactional: bool, now_ms: int) -> None:
        """A produced batch committed on a data partition (its high-water mark moved past it)."""

    def on_transaction_ended(self, topic: str, partition: int, producer_id: int, commit: bool, now_ms: int) -> None:
        """A commit or abort marker committed on a data partition (SP-13)."""

    def on_dlq_committed(self, topic: str, partition: int, first_offset: int, source: tuple[object, int, int],
                         now_ms: int) -> None:
        """KIP-1191: records of share-partition ``source`` = (key, first, last) committed on the dead-letter
        topic's partition, at ``first_offset`` (seen by the DLQ partition's leader, not the sender)."""

    def on_dlq_given_up(self, key: SharePartitionKey, first: int, last: int, now_ms: int) -> None:
        """KIP-1191: a share-partition leader gave up writing offsets first..last to the DLQ (trunk's
        DLQ manager after its attempts, or no DLQ topic) and archives them regardless."""

    def on_share_state_handled(self, shard: ShareCoordinatorShard, request: object,
                               previous: ShareGroupState | None, sent_ms: int, now_ms: int) -> None:
        """A share coordinator handled a request that wrote records; ``previous``: the key's state before;
        ``sent_ms``: when the request was sent."""

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        """The share coordinator of ``__share_group_state`` partition ``partition`` served ``request``
        (sent at ``sent_ms``): ``response`` is its answer, ``records`` what it appended to its log for it
        (none: it changed no state). Requests a broker refuses before a coordinator sees them
        (NOT_COORDINATOR) do not come here."""

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        """``records`` of ``__share_group_state`` partition ``partition`` committed (replicated): a
        coordinator's durable state is what its committed records say (SC-2, SC-7)."""

    def on_share_state_created(self, key: SharePartitionKey, state_epoch: int, now_ms: int) -> None:
        """A share coordinator initialized a key that had no stored state (never initialized, or deleted
        with its group or topic, GC-8): a new life of that share-partition, at ``state_epoch``, the new
        group's epoch (GC-7), above every state epoch of the deleted state (the group's epochs carry on
        across its deletion)."""

    def on_share_coordinator_loaded(self, partition: int, shard: ShareCoordinatorShard,
                                    committed: Sequence[object], uncommitted: Sequence[object], now_ms: int,
                                    *, log_start_offset: int = 0) -> None:
        """A share coordinator replayed its ``__share_group_state`` partition (SC-6): ``committed``
        holds its committed records from ``log_start_offset`` on."""

    def on_share_state_pruning(self, partition: int, first_offset: int, records: Sequence[object],
                               now_ms: int) -> None:
        """A share coordinator is about to delete ``records``, the log from ``first_offset`` (SC-8)."""

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard,
                                  group_id: str | None, now_ms: int) -> None:
        """A group coordinator changed ``group_id`` (None: maybe any group) in memory."""

    def on_group_records_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        """A group coordinator's ``records`` committed (replicated): clients may now hear of them."""

    def on_consumer_reconciled(self, client: str, group_id: str, revoked: frozenset[TopicPartition],
                               assigned: frozenset[TopicPartition], owned: frozenset[TopicPartition],
                               fenced: bool, now_ms: int) -> None:
        """A KIP-848 consumer applied a heartbeat response (or crashed: all empty); ``owned``: what it
        consumes now; ``fenced``: the response fenced it (CG-2, CG-3)."""

    def on_consumer_heartbeat(self, client: str, group_id: str, kind: str, member: object, request: object,
                              response: object, now_ms: int) -> None:
        """A KIP-848 consumer's membership step (trace validation, ``tla/consumer_trace_project.py``):
        ``kind`` is "sent" (``request``, a ConsumerGroupHeartbeat, leaves included), "answered"
        (``response`` applied), "lost" (its request timed out), "revoked" (the revocation was committed and
        is acknowledged by the next heartbeat), "crashed" or "started" (a new ``member``, the client's
        ConsumerMember, read only)."""

    def on_group_request(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard, request: object,
                         response: object, now_ms: int) -> None:
        """A group coordinator's shard handled ``request`` (in memory; ``response`` is sent once its records
        commit, None: answered later)."""

    def on_share_session(self, broker: int, group_id: str, member_id: str, epoch: int, now_ms: int) -> None:
        """A broker's share-session cache accepted a request with ``epoch`` (CL-1)."""

    def on_share_session_evicted(self, broker: int, group_id: str, member_id: str, now_ms: int) -> None:
        """A broker evicted an idle share session (CL-1)."""

    def on_share_fetch_session(self, broker: int, group_id: str, member_id: str, epoch: int,
                               partitions: tuple[tuple[str, int], ...], forgotten: tuple[tuple[str, int], ...],
                               connection: tuple[str, int], now_ms: int) -> None:
        """A broker's share-session cache accepted a ShareFetch with ``epoch`` naming ``partitions`` and
        forgetting ``forgotten`` (topic id, partition), as the request carried them (CL-1); it came on
        ``connection`` (the client, and the number of its connection to this broker)."""

    def on_share_fetch_waiting(self, broker: int, fetch_id: int, partitions: tuple[SharePartition, ...],
                               min_bytes: int, now_ms: int) -> None:
        """Broker ``broker``'s delayed ShareFetch ``fetch_id`` (MinBytes ``min_bytes``, in records) waits in the
        purgatory, watched on the share-partitions ``partitions``; called again with none when it leaves it:
        answered (woken, MaxWaitMs passed, its leader moved) or gone with a crash of its broker."""
