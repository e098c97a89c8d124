"""The records the share coordinator writes on ``__share_group_state`` (SC-2).

Layouts follow ShareSnapshotValue / ShareUpdateValue of
000_2de40ef26c3dd7ed.txt (002 and 003 describe the same two kinds):

- ``ShareSnapshot`` holds the full durable state of one share-partition and a
  snapshot epoch one higher than the previous snapshot of that key.
- ``ShareUpdate`` holds a partial state (changed batches, and the start offset
  or -1 when it did not move) and carries the snapshot epoch of the snapshot
  it applies to. It has no state epoch: only a snapshot sets that.
- ``ShareTombstone`` is the deletion marker (Kafka writes a ShareSnapshot key
  with a null value; 002 describes a snapshot with snapshot epoch -1). After it,
  the key is unknown (SC-8, SC-9).

All three are keyed by (group, topicId, partition), so every record of a
share-partition lands on the same ``__share_group_state`` partition (SC-1).
"""

from __future__ import annotations

from dataclasses import dataclass

from model.core.share_state import SharePartitionKey, StateBatch


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    key: SharePartitionKey
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareUpdate:
    key: SharePartitionKey
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int  # -1: the start offset is not being updated
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareTombstone:
    key: SharePartitionKey


ShareStateRecord = ShareSnapshot | ShareUpdate | ShareTombstone
