"""The records the share coordinator writes on ``__share_group_state`` (SC-2).

Layouts follow ShareSnapshotValue / ShareUpdateValue of
000_2de40ef26c3dd7ed.txt (002 and 003 describe the same two kinds):

- ``ShareSnapshot`` holds the full durable state of one share-partition and a
  snapshot epoch one higher than the previous snapshot of that key.
- ``ShareUpdate`` holds a partial state (changed batches, and the start offset
  or -1 when it did not move) and carries the snapshot epoch of the snapshot
  it applies to. It has no state epoch: only a snapshot sets that.
- Both carry KIP-1226's ``delivery_complete_count`` (Kafka 4.2, a tagged
  field, default -1): the offsets at or above the start offset whose delivery
  is complete. An update's replaces the stored one, as its start offset does.
- A snapshot carries trunk's create and write timestamps: a cold snapshot
  (``ShareCoordinatorShard.snapshot_cold``) rewrites the state unchanged and
  moves only the write timestamp.
- ``ShareTombstone`` is the deletion marker (Kafka writes a ShareSnapshot key
  with a null value; 002 describes a snapshot with snapshot epoch -1). After it,
  the key is unknown (SC-8, SC-9).

All three are keyed by (group, topicId, partition), so every record of a
share-partition lands on the same ``__share_group_state`` partition (SC-1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from model.core.message import Message
from model.core.share_state import UNKNOWN_COUNT, SharePartitionKey, StateBatch


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    key: SharePartitionKey
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]
    delivery_complete_count: int = UNKNOWN_COUNT  # KIP-1226 tagged field (Kafka 4.2), default -1
    # ShareSnapshotValue's CreateTimestamp / WriteTimestamp: when the state was created (by an initialize or
    # a write's snapshot) and when it was last written; a cold snapshot keeps the one and moves the other.
    create_timestamp_ms: int = 0
    write_timestamp_ms: int = 0


class ShareUpdate(Message):
    FIELDS = ("key", "snapshot_epoch", "leader_epoch", "start_offset", "state_batches", "delivery_complete_count")
    __slots__ = FIELDS

    def __init__(self, key: SharePartitionKey, snapshot_epoch: int, leader_epoch: int, start_offset: int,
                 state_batches: tuple[StateBatch, ...], delivery_complete_count: int = UNKNOWN_COUNT) -> None:
        self.key: Final = key
        self.snapshot_epoch: Final = snapshot_epoch
        self.leader_epoch: Final = leader_epoch
        self.start_offset: Final = start_offset  # -1: the start offset is not being updated
        self.state_batches: Final = state_batches
        # KIP-1226 tagged field (Kafka 4.2), default -1; replaces the stored count (ShareCoordinatorShard.merge)
        self.delivery_complete_count: Final = delivery_complete_count


@dataclass(frozen=True, slots=True)
class ShareTombstone:
    key: SharePartitionKey


ShareStateRecord = ShareSnapshot | ShareUpdate | ShareTombstone
