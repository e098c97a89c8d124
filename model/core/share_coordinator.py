"""The share coordinator for one partition of ``__share_group_state`` (SC-1..SC-9).

``ShareCoordinatorShard`` serves the five share-state RPCs (``handle`` any of
them; ``share_state_error`` answers one that is not served) for the
share-partitions whose key hashes to its partition, keeps their durable state
in memory, and turns every change into records of the partition's log
(ShareSnapshot, ShareUpdate, tombstone; ``model.core.share_records``).

Durability contract (SC-7). Each RPC method returns ``(response, records)``.
The shard has already appended the records to ``self.records`` and applied
them to its in-memory state when it returns. The caller (the simulated broker
leading the ``__share_group_state`` partition) must send the response only
after those records are committed in the replicated log; a response that
comes with no records may be sent at once. This holds for reads too: a read
with a higher leader epoch returns a record, because raising the stored leader
epoch is what fences a zombie leader (SC-5) and must survive a failover. If
records are lost before they commit (leader change, failed write), the caller
fails the pending requests and rebuilds the shard from the committed records
with ``ShareCoordinatorShard.replay`` (SC-6); it never sends the responses of
lost records.

Loading (SC-6). A newly elected coordinator calls ``begin_load(log_start)``,
``apply``s each committed record in log order (the simulator may spread this
over simulated time), then ``complete_load()``. While loading, every RPC
answers ``COORDINATOR_LOAD_IN_PROGRESS`` and writes nothing. ``replay`` does
the three steps at once. ``apply`` is the only code that changes state, for
live requests and for replay alike, so replay rebuilds exactly the state the
old coordinator had.

Pruning (SC-8). ``prune_offset`` is the log offset of the oldest latest
snapshot among live keys; records before it are not needed by replay.
``resnapshot_idle`` writes fresh snapshots for keys whose old snapshot keeps
redundant records from being pruned. ``prune`` drops the records before an
offset, like ``deleteRecords`` moving the log start offset. Only committed
records may be pruned: pass the committed end to ``prune_offset``. Cold
snapshots: ``snapshot_cold`` (Kafka trunk's snapshotColdPartitions: keys
whose latest snapshot is an interval old, by the shard's ``clock``) is what
the simulated coordinator runs by default; ``resnapshot_idle`` (keys whose
snapshot holds redundant records back) under ``protocol = "kip"``.

Metadata (trunk's onLoaded / onMetadataUpdate). ``on_metadata_update`` gives
the shard the data topics (topic id -> partition count); from then on a
request for a topic or partition it lacks answers UNKNOWN_TOPIC_OR_PARTITION
(with no image at all, every request does), checked where trunk checks it:
after the epoch and fencing checks, before the state is touched. A shard never
given an image knows every topic (as Kafka's test builder's mock image).
``on_topics_deleted`` tombstones the keys of deleted topics (trunk's
maybeCleanupShareState); the simulation deletes no topics, so nothing calls it
there.

DeliveryCompleteCount (KIP-1226, Kafka 4.2). A write carries the leader's
count of complete offsets at or above its start offset; the stored count
follows trunk's generateShareStateRecord (apache/kafka 2225a16c7e): a write
ahead of the stored start offset brings its count, one at it keeps the higher
of the two, one behind it keeps the stored one (``_written_count``). An
initialize stores -1 with start offset -1 and 0 with a known one (KAFKA-20034);
reads and re-snapshots keep it; the read-summary returns it.

Decisions where SPEC.md is silent (Kafka's ShareCoordinatorShard is the
reference unless noted):

- A read or write with a negative leader epoch, or a write with a negative
  state epoch, answers INVALID_REQUEST and changes nothing, whether the key
  is initialized or not (Kafka trunk since KAFKA-20743, apache/kafka
  cde0d5687d: ``ShareCoordinatorShard.maybeGetWriteStateError`` and
  ``maybeGetReadStateError``; the 4.3 branch and earlier accepted them; 4.4 has the check). A read-summary
  carries no epoch check (Kafka's has none); the group coordinator sends it
  with leader epoch -1, which fences nothing.
- A write never moves the stored start offset back: the stored one becomes
  the higher of the two, and the write's batches are clipped at it (Kafka
  trunk since apache/kafka b77567478f, ``ShareCoordinatorShard
  .generateShareStateRecord``: ``Math.max(partitionData.startOffset(),
  currentState.startOffset())``; the 4.3 branch and earlier took the written one: the
  mutant ``start-offset-every-write``).
- Write with a state epoch *higher* than stored is accepted and does not raise
  the stored one (Kafka; SC-5 "writes never raise stored epochs"). Only
  initialize sets the state epoch. The same holds for a higher leader epoch.
- An initialize with the stored state epoch AND the stored start offset is a
  duplicate: answered NONE, nothing written (Kafka trunk's ``initializeState``;
  the mutant initialize-overwrites writes a fresh snapshot, as the model did).
  One with the stored state epoch and another start offset writes a fresh
  snapshot (no batches, the request's start offset), as trunk does, even when
  that moves the start offset back within the state epoch (README "A finding:
  a late duplicate initialize"). A lower state epoch is FENCED_STATE_EPOCH.
  Re-initializing keeps the stored leader epoch, so a zombie leader stays
  fenced across an admin reset (SP-12; trunk's snapshot says -1, but its
  leaderEpochMap keeps the highest seen, so it fences the same).
- A read or write of a key never initialized, or deleted, answers
  INVALID_REQUEST (Kafka trunk: "uninitialized share partition"); under
  ``protocol = "kip"`` (``kafka=False``) UNKNOWN_TOPIC_OR_PARTITION (SC-9).
  A read-summary of such a key answers UNKNOWN_TOPIC_OR_PARTITION under both
  (trunk answers it with start offset -1; the model's leaders take
  UNKNOWN_TOPIC_OR_PARTITION for a deleted state, SP-12).
- Delete of an unknown key answers NONE and writes nothing (Kafka), so the
  group coordinator can retry deletes. A delete whose state epoch (the
  deleting coordinator's group epoch) is below the stored state epoch also
  answers NONE and writes nothing: it was sent for an earlier life of the
  state, which is gone, and must not delete the life initialized since
  (sharesim's fence; Kafka's request carries no epoch and would tombstone
  it: the mutant delete-unfenced).
- Read-summary is fenced like read but never raises the leader epoch.
- Malformed requests (negative partition, batch with first > last or a
  negative offset or count, a delivery state the protocol lacks, start
  offset < -1, initialize with a negative state epoch) answer INVALID_REQUEST.
  A batch in ACQUIRED is stored, as trunk stores any state it is sent
  (testNonSequentialBatchUpdates); ``protocol = "kip"`` refuses it (SP-1).
- The snapshot count: a write produces a ShareSnapshot when the key's updates
  since its last snapshot have reached the limit, else a ShareUpdate; every
  snapshot (initialize, write, read, re-snapshot) resets the count to 0, so
  it never exceeds the limit (SC-3; with limit 0 every write snapshots).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Final

from model import mutants as _mutants
from model import situations as _situations
from model.core.errors import Errors
from model.core.message import Message
from model.core.metadata import MetadataImage
from model.core.share_records import ShareSnapshot, ShareStateRecord, ShareTombstone, ShareUpdate
from model.core.share_state import (
    PERSISTED_STATES,
    UNKNOWN_COUNT,
    UNKNOWN_OFFSET,
    DeleteShareGroupStateRequest,
    DeleteShareGroupStateResponse,
    InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse,
    ReadShareGroupStateRequest,
    ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest,
    ReadShareGroupStateSummaryResponse,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)
from model.core.state_batches import combine_state_batches, overlay_state_batches

DEFAULT_NUM_PARTITIONS = 50  # share.coordinator.state.topic.num.partitions
DEFAULT_UPDATES_PER_SNAPSHOT = 500  # share.coordinator.snapshot.update.records.per.snapshot
NO_EPOCH = -1  # the stored leader epoch before any read; a read-summary's "no leader epoch"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: s[0]·31^(n-1) + … over UTF-16 code units, as a signed int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def share_state_partition(key: SharePartitionKey, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """SC-1: the ``__share_group_state`` partition holding ``key``'s state.

    As Kafka's share coordinator: ``Utils.abs(key.hashCode()) % numPartitions``
    over the string "groupId:topicId:partition", with Java's String.hashCode
    (stable across processes, unlike Python's ``hash``) and Kafka's ``abs``
    (which maps Integer.MIN_VALUE to 0).
    """
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
    return _abs_key_hash(key) % num_partitions


@functools.lru_cache(maxsize=4096)  # asked on every state write; a run has few keys
def _abs_key_hash(key: SharePartitionKey) -> int:
    h = java_string_hash(str(key))
    return 0 if h == -(1 << 31) else abs(h)


class ShareGroupState(Message):
    """The durable state of one share-partition as the coordinator holds it (one per write applied)."""

    FIELDS = ("state_epoch", "leader_epoch", "snapshot_epoch", "start_offset", "state_batches",
              "updates_since_snapshot", "delivery_complete_count", "create_timestamp_ms", "write_timestamp_ms")
    __slots__ = FIELDS

    def __init__(self, state_epoch: int, leader_epoch: int, snapshot_epoch: int, start_offset: int,
                 state_batches: tuple[StateBatch, ...], updates_since_snapshot: int,
                 delivery_complete_count: int = UNKNOWN_COUNT, create_timestamp_ms: int = 0,
                 write_timestamp_ms: int = 0) -> None:
        self.state_epoch: Final = state_epoch
        self.leader_epoch: Final = leader_epoch
        self.snapshot_epoch: Final = snapshot_epoch
        self.start_offset: Final = start_offset
        self.state_batches: Final = state_batches
        self.updates_since_snapshot: Final = updates_since_snapshot
        # KIP-1226: offsets at or above start_offset whose delivery is complete, as last written (-1: unknown)
        self.delivery_complete_count: Final = delivery_complete_count
        # trunk's ShareGroupOffset timestamps, from the latest snapshot (an update keeps them)
        self.create_timestamp_ms: Final = create_timestamp_ms
        self.write_timestamp_ms: Final = write_timestamp_ms


class ShareCoordinatorShard:
    """One ``__share_group_state`` partition: its record log and the state replayed from it."""

    def __init__(self, snapshot_update_records_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT, *,
                 kafka: bool = True, clock: Callable[[], int] | None = None) -> None:
        if snapshot_update_records_per_snapshot < 0:
            raise ValueError(
                "share.coordinator.snapshot.update.records.per.snapshot must be >= 0, "
                f"got {snapshot_update_records_per_snapshot}"
            )
        self.snapshot_update_records_per_snapshot = snapshot_update_records_per_snapshot
        # protocol = "kafka" (trunk) or "kip": what a read or write of a key with no state answers
        self.kafka = kafka
        self.clock: Callable[[], int] = clock or _NO_CLOCK  # the time a snapshot records (trunk's Time)
        self.records: list[ShareStateRecord] = []
        self.log_start_offset = 0  # log offset of records[0]
        self.loading = False
        self._states: dict[SharePartitionKey, ShareGroupState] = {}
        self._snapshot_offsets: dict[SharePartitionKey, int] = {}  # log offset of each live key's latest snapshot
        # The metadata image (trunk's CoordinatorMetadataImage), as topic id -> partition count. Until
        # ``on_metadata_update`` hands it one, the shard knows every topic, as Kafka's test builder's mock
        # image does; after ``on_metadata_update(None)`` it knows none.
        self._every_topic = True
        self._topics: dict[str, int] | None = None

    # --- the log -------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.log_start_offset + len(self.records)

    def apply(self, record: ShareStateRecord) -> None:
        """Append ``record`` to the log and apply it to the in-memory state (SC-2).

        The one place state changes: the RPC methods call it for the records
        they produce, and ``replay`` calls it for every record of the log.
        """
        offset = self.log_end_offset
        self.records.append(record)
        if isinstance(record, ShareSnapshot):
            self._states[record.key] = ShareGroupState(
                state_epoch=record.state_epoch,
                leader_epoch=record.leader_epoch,
                snapshot_epoch=record.snapshot_epoch,
                start_offset=record.start_offset,
                # Stored batches are kept canonical (updates rely on it); ours already are.
                state_batches=combine_state_batches(record.state_batches, (), record.start_offset),
                updates_since_snapshot=0,
                delivery_complete_count=record.delivery_complete_count,
                create_timestamp_ms=record.create_timestamp_ms,
                write_timestamp_ms=record.write_timestamp_ms,
            )
            self._snapshot_offsets[record.key] = offset
        elif isinstance(record, ShareUpdate):
            state = self._states.get(record.key)
            # Current state = latest snapshot + the updates after it with its snapshot
            # epoch (SC-2). An update whose snapshot was pruned (or never seen) is skipped:
            # a later snapshot of the same key, which pruning always keeps, supersedes it.
            if state is None or record.snapshot_epoch != state.snapshot_epoch:
                return
            start_offset = state.start_offset if record.start_offset == UNKNOWN_OFFSET else record.start_offset
            self._states[record.key] = ShareGroupState(
                state_epoch=state.state_epoch,
                leader_epoch=max(state.leader_epoch, record.leader_epoch),
                snapshot_epoch=state.snapshot_epoch,
                start_offset=start_offset,
                state_batches=overlay_state_batches(state.state_batches, record.state_batches, start_offset),
                updates_since_snapshot=state.updates_since_snapshot + (
                    0 if self.loading and _mutants.ACTIVE == "replay-forgets-update-count" else 1),
                # Replaced, not combined (trunk's ShareCoordinatorShard.merge): the write chose it.
                delivery_complete_count=state.delivery_complete_count
                if _mutants.ACTIVE == "update-keeps-complete-count" else record.delivery_complete_count,
                create_timestamp_ms=state.create_timestamp_ms,
                write_timestamp_ms=state.write_timestamp_ms,
            )
        else:
            self._states.pop(record.key, None)
            self._snapshot_offsets.pop(record.key, None)

    def begin_load(self, log_start_offset: int = 0) -> None:
        """Start loading a partition from ``log_start_offset`` (SC-6): state is cleared, RPCs wait."""
        self.records = []
        self.log_start_offset = log_start_offset
        self._states = {}
        self._snapshot_offsets = {}
        self.loading = True

    def complete_load(self) -> None:
        self.loading = False

    @classmethod
    def replay(
        cls,
        records: Iterable[ShareStateRecord],
        snapshot_update_records_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT,
        log_start_offset: int = 0,
        *,
        kafka: bool = True,
    ) -> ShareCoordinatorShard:
        """A coordinator that has loaded ``records`` (the log from ``log_start_offset``), SC-6."""
        shard = cls(snapshot_update_records_per_snapshot, kafka=kafka)
        shard.begin_load(log_start_offset)
        for record in records:
            shard.apply(record)
        shard.complete_load()
        return shard

    # --- metadata (trunk's onLoaded / onMetadataUpdate / onTopicsDeleted) -----------------------

    def on_metadata_update(self, image: MetadataImage | None) -> None:
        """The topics this shard knows from now on (None: no image, every request for a topic refused)."""
        if _mutants.ACTIVE == "share-coordinator-stale-metadata" and not self._every_topic:
            return  # mutant: the image the shard was loaded with, for good
        self._every_topic = False
        self._topics = None if image is None else {t.topic_id: t.partitions for t in image.topics.values()}

    def on_topics_deleted(self, topic_ids: Iterable[str]) -> list[ShareStateRecord]:
        """Tombstones for every live key of the deleted topics (trunk's maybeCleanupShareState), applied;
        same durability contract as the RPCs."""
        deleted = set(topic_ids)
        records: list[ShareStateRecord] = [ShareTombstone(key) for key in self.keys() if key.topic_id in deleted]
        for record in records:
            self.apply(record)
        return records

    def _uninitialized(self, key: SharePartitionKey, stored: ShareGroupState | None) -> tuple[Errors, str] | None:
        """A read or write of a key with no state (never initialized, or deleted): trunk's
        maybeGetReadStateError / maybeGetWriteStateError answer INVALID_REQUEST; the KIP's SC-9
        UNKNOWN_TOPIC_OR_PARTITION (``_unknown_or_fenced``), which is what ``protocol = "kip"`` keeps."""
        if stored is None and self.kafka:
            return Errors.INVALID_REQUEST, f"no share-group state for {key}: uninitialized share partition"
        return None

    def _unknown_topic(self, key: SharePartitionKey) -> tuple[Errors, str] | None:
        """UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the metadata image does not have."""
        if self._every_topic:
            return None
        if self._topics is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, "no metadata image"
        if key.partition >= self._topics.get(key.topic_id, 0):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"{key.topic_id}-{key.partition} is not in the metadata image"
        return None

    # --- accessors -----------------------------------------------------------------------

    def state(self, key: SharePartitionKey) -> ShareGroupState | None:
        return self._states.get(key)

    def keys(self) -> list[SharePartitionKey]:
        """The live (initialized, not deleted) keys, sorted."""
        return sorted(self._states)

    def latest_snapshot_offset(self, key: SharePartitionKey) -> int | None:
        return self._snapshot_offsets.get(key)

    # --- the RPCs ------------------------------------------------------------------------

    def initialize(
        self, req: InitializeShareGroupStateRequest
    ) -> tuple[InitializeShareGroupStateResponse, list[ShareStateRecord]]:
        """Set the state epoch and start offset, dropping all batches; always a snapshot (SC-3, SC-5)."""
        stored = self._states.get(req.key)
        error = (
            self._load_error()
            or _invalid_key(req.key)
            or _invalid_initialize(req)
            or _stale_state_epoch(stored, req.state_epoch)
            or self._unknown_topic(req.key)
        )
        if error is not None:
            return InitializeShareGroupStateResponse(req.key, *error), []
        if (stored is not None and stored.state_epoch == req.state_epoch and stored.start_offset == req.start_offset
                and _mutants.ACTIVE != "initialize-overwrites"):
            # A duplicate (trunk's initializeState): answered, nothing written. Only when the start offset
            # is the stored one too: a late duplicate with -1 after a leader wrote 0 still resets it
            # (README "A finding: a late duplicate initialize").
            _situations.COUNTS["initialize-duplicate"] += 1
            return InitializeShareGroupStateResponse(req.key), []
        record = ShareSnapshot(
            key=req.key,
            snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
            state_epoch=req.state_epoch,
            leader_epoch=NO_EPOCH if stored is None or _mutants.ACTIVE == "reinit-drops-leader-epoch"
            else stored.leader_epoch,
            start_offset=req.start_offset,
            state_batches=(),
            # trunk's ShareGroupOffset.fromRequest: unknown until a start offset is known, then 0
            delivery_complete_count=UNKNOWN_COUNT if req.start_offset == UNKNOWN_OFFSET else 0,
            create_timestamp_ms=self.clock(),
            write_timestamp_ms=self.clock(),
        )
        self.apply(record)
        return InitializeShareGroupStateResponse(req.key), [record]

    def read(self, req: ReadShareGroupStateRequest) -> tuple[ReadShareGroupStateResponse, list[ShareStateRecord]]:
        """Return the state; a higher leader epoch is stored durably first (SC-5 zombie fence, *impl*)."""
        stored = self._states.get(req.key)
        error = (
            self._load_error()
            or _invalid_key(req.key)
            or (None if _mutants.ACTIVE == "negative-epoch-accepted" else _negative_epoch(req.leader_epoch))
            or self._uninitialized(req.key, stored)
            or _unknown_or_fenced(req.key, stored, req.leader_epoch)
            or self._unknown_topic(req.key)
        )
        if error is not None or stored is None:
            return ReadShareGroupStateResponse(req.key, *(error or _NO_STATE)), []
        response = ReadShareGroupStateResponse(
            req.key,
            state_epoch=stored.state_epoch,
            start_offset=stored.start_offset,
            state_batches=stored.state_batches,
        )
        if req.leader_epoch == stored.leader_epoch:
            return response, []
        if req.leader_epoch == NO_EPOCH and _mutants.ACTIVE == "negative-epoch-accepted":
            return response, []  # mutant (Kafka 4.3 and earlier): -1 is "not given", answered and not stored
        if _mutants.ACTIVE == "read-keeps-leader-epoch":
            return response, []  # mutant: the new leader epoch is not stored
        # A new leader: until this record commits, the old leader could still write.
        record = self._state_record(req.key, stored, stored.start_offset, (), req.leader_epoch,
                                    stored.delivery_complete_count)
        self.apply(record)
        return response, [record]

    def write(self, req: WriteShareGroupStateRequest) -> tuple[WriteShareGroupStateResponse, list[ShareStateRecord]]:
        """Merge the leader's changed batches and start offset into the state (SC-3, SC-4, SC-5)."""
        stored = self._states.get(req.key)
        error = (
            self._load_error()
            or _invalid_key(req.key)
            or (None if _mutants.ACTIVE == "negative-epoch-accepted"
                else _negative_epoch(req.leader_epoch, req.state_epoch))
            or _invalid_write(req, self.kafka)
            or self._uninitialized(req.key, stored)
            or _unknown_or_fenced(req.key, stored, req.leader_epoch)
            or _stale_state_epoch(stored, req.state_epoch)
            or self._unknown_topic(req.key)
        )
        if error is not None or stored is None:
            return WriteShareGroupStateResponse(req.key, *(error or _NO_STATE)), []
        start_offset = req.start_offset
        # Never back (trunk's generateShareStateRecord): a write that lands after a later one cannot
        # uncover offsets the later one moved past. Not for the mutant, Kafka 4.3 and earlier; the
        # variant "start-offset-every-write-max" (trunk's payload) keeps this rule.
        # The mutant "start-offset-regression" is that coordinator alone, under the model's own leaders.
        if start_offset != UNKNOWN_OFFSET and start_offset < stored.start_offset:
            _situations.COUNTS["write-behind-stored-start"] += 1
        if (start_offset != UNKNOWN_OFFSET and _mutants.ACTIVE != "start-offset-every-write"
                and _mutants.ACTIVE != "start-offset-regression"):
            start_offset = max(start_offset, stored.start_offset)
        # Writes never raise stored epochs: the record carries the stored leader epoch.
        record = self._state_record(req.key, stored, start_offset, req.state_batches, stored.leader_epoch,
                                    _written_count(req, stored))
        self.apply(record)
        return WriteShareGroupStateResponse(req.key), [record]

    def delete(self, req: DeleteShareGroupStateRequest) -> tuple[DeleteShareGroupStateResponse, list[ShareStateRecord]]:
        """Write a tombstone (SC-8); deleting an unknown key is a no-op success."""
        error = self._load_error() or _invalid_key(req.key) or self._unknown_topic(req.key)
        if error is not None:
            return DeleteShareGroupStateResponse(req.key, *error), []
        stored = self._states.get(req.key)
        if stored is None:
            return DeleteShareGroupStateResponse(req.key), []
        earlier_life = req.state_epoch != NO_EPOCH and req.state_epoch < stored.state_epoch
        if earlier_life and _mutants.ACTIVE != "delete-unfenced":
            return DeleteShareGroupStateResponse(req.key), []  # that life is gone already
        record = ShareTombstone(req.key)
        _situations.COUNTS["state-deleted"] += 1
        self.apply(record)
        return DeleteShareGroupStateResponse(req.key), [record]

    def read_summary(
        self, req: ReadShareGroupStateSummaryRequest
    ) -> tuple[ReadShareGroupStateSummaryResponse, list[ShareStateRecord]]:
        """State epoch and start offset, for the admin offsets APIs; fenced like read, writes nothing."""
        stored = self._states.get(req.key)
        error = (self._load_error() or _invalid_key(req.key) or self._unknown_topic(req.key)
                 or _unknown_or_fenced(req.key, stored, req.leader_epoch))
        if error is not None or stored is None:
            return ReadShareGroupStateSummaryResponse(req.key, *(error or _NO_STATE)), []
        summary = ReadShareGroupStateSummaryResponse(
            req.key, state_epoch=stored.state_epoch, start_offset=stored.start_offset,
            delivery_complete_count=stored.delivery_complete_count,
        )
        return summary, []

    def handle(self, request: object) -> tuple[object, list[ShareStateRecord]]:
        """Serve any of the five share-state RPCs (the method for its type)."""
        if isinstance(request, WriteShareGroupStateRequest):
            return self.write(request)
        if isinstance(request, ReadShareGroupStateRequest):
            return self.read(request)
        if isinstance(request, InitializeShareGroupStateRequest):
            return self.initialize(request)
        if isinstance(request, DeleteShareGroupStateRequest):
            return self.delete(request)
        if isinstance(request, ReadShareGroupStateSummaryRequest):
            return self.read_summary(request)
        raise TypeError(f"not a share-state request: {request!r}")

    def _load_error(self) -> tuple[Errors, str] | None:
        if not self.loading:
            return None
        _situations.COUNTS["share-coordinator-loading"] += 1
        return Errors.COORDINATOR_LOAD_IN_PROGRESS, "share coordinator is loading"

    def _state_record(
        self,
        key: SharePartitionKey,
        stored: ShareGroupState,
        start_offset: int,
        batches: tuple[StateBatch, ...],
        leader_epoch: int,
        delivery_complete_count: int,
    ) -> ShareSnapshot | ShareUpdate:
        """SC-3: a snapshot once the updates since the last one reach the limit, else an update."""
        limit = self.snapshot_update_records_per_snapshot
        if _mutants.ACTIVE == "snapshot-after-limit-plus-one":
            limit += 1
        if stored.updates_since_snapshot >= limit:
            _situations.COUNTS["snapshot-by-update-count"] += 1
            new_start = stored.start_offset if start_offset == UNKNOWN_OFFSET else start_offset
            return ShareSnapshot(
                key=key,
                snapshot_epoch=stored.snapshot_epoch + 1,
                state_epoch=stored.state_epoch,
                leader_epoch=leader_epoch,
                start_offset=new_start,
                state_batches=overlay_state_batches(stored.state_batches, batches, new_start),
                delivery_complete_count=delivery_complete_count,
                create_timestamp_ms=self.clock(),
                write_timestamp_ms=self.clock(),
            )
        return ShareUpdate(
            key=key,
            snapshot_epoch=stored.snapshot_epoch,
            leader_epoch=leader_epoch,
            start_offset=start_offset,
            # The request's batches may overlap each other; store them combined.
            state_batches=combine_state_batches((), batches, start_offset),
            delivery_complete_count=delivery_complete_count,
        )

    # --- pruning (SC-8) --------------------------------------------------------------------

    def prune_offset(self, committed_end_offset: int | None = None) -> int:
        """The log offset before which no record is needed to replay the state.

        The oldest latest-snapshot among live keys (the log end if none is live).
        With ``committed_end_offset``, only the committed prefix is considered, so
        the answer stays safe if the uncommitted tail is lost.
        """
        if committed_end_offset is None or committed_end_offset >= self.log_end_offset:
            return min(self._snapshot_offsets.values(), default=self.log_end_offset)
        committed_end_offset = max(committed_end_offset, self.log_start_offset)
        latest: dict[SharePartitionKey, int] = {}
        for index in range(committed_end_offset - self.log_start_offset):
            record = self.records[index]
            if isinstance(record, ShareSnapshot):
                latest[record.key] = self.log_start_offset + index
            elif isinstance(record, ShareTombstone):
                latest.pop(record.key, None)
        return min(latest.values(), default=committed_end_offset)

    def prune(self, offset: int) -> None:
        """Drop the records before ``offset`` (a new log start offset); state is unchanged."""
        if offset > self.prune_offset():
            raise ValueError(f"cannot prune to {offset}: records from {self.prune_offset()} are still needed")
        if offset <= self.log_start_offset:
            return
        del self.records[: offset - self.log_start_offset]
        self.log_start_offset = offset

    def redundant_offsets(self) -> list[int]:
        """Log offsets of records replay does not need: everything but each live key's
        latest snapshot and the updates after it."""
        redundant: list[int] = []
        for index, record in enumerate(self.records):
            offset = self.log_start_offset + index
            snapshot_offset = self._snapshot_offsets.get(record.key)
            needed = snapshot_offset is not None and (
                offset == snapshot_offset or (isinstance(record, ShareUpdate) and offset > snapshot_offset)
            )
            if not needed:
                redundant.append(offset)
        return redundant

    def resnapshot_idle(self, min_redundant_records: int = 1) -> list[ShareStateRecord]:
        """Re-snapshot the keys whose latest snapshot keeps redundant records in the log (SC-8).

        A live key whose latest snapshot is older than the last redundant record
        holds that record back from pruning; a fresh snapshot (same state, next
        snapshot epoch) moves it to the log end. Nothing is written while fewer
        than ``min_redundant_records`` redundant records lie beyond the prune
        offset, so a quiet partition settles: once only needed records remain,
        this writes nothing. Same durability contract as the RPCs.
        """
        if self.loading:
            return []
        start = self.prune_offset()
        beyond = [offset for offset in self.redundant_offsets() if offset > start]
        if not beyond or len(beyond) < min_redundant_records:
            return []
        last_redundant = beyond[-1]
        records: list[ShareStateRecord] = []
        for key in self.keys():
            if self._snapshot_offsets[key] < last_redundant:
                stored = self._states[key]
                record = _fresh_snapshot(key, stored, stored, self.clock())
                self.apply(record)
                records.append(record)
        return records

    def snapshot_cold(self, interval_ms: int) -> list[ShareStateRecord]:
        """Kafka trunk's snapshotColdPartitions (the default; ``resnapshot_idle`` is the KIP reading).

        Every live key whose latest snapshot was written ``interval_ms`` or more ago gets a fresh
        snapshot of its current state (updates since included) that keeps its create timestamp and
        records now as its write timestamp. When every live key's latest snapshot is already such a
        cold snapshot (create != write), the partition is quiet and nothing is written, so an idle
        partition does not snapshot for ever. Same durability contract as the RPCs.
        """
        if self.loading or not self._states:
            return []
        states = self._states
        if all(s.create_timestamp_ms != s.write_timestamp_ms for s in states.values()):
            return []
        now = self.clock()
        records: list[ShareStateRecord] = []
        for key in self.keys():
            stored = states[key]
            if now - stored.write_timestamp_ms < interval_ms:
                continue
            source = stored
            if _mutants.ACTIVE == "cold-snapshot-ignores-updates":
                snapshot = self.records[self._snapshot_offsets[key] - self.log_start_offset]
                assert isinstance(snapshot, ShareSnapshot)
                source = ShareGroupState(stored.state_epoch, stored.leader_epoch, stored.snapshot_epoch,
                                         snapshot.start_offset, snapshot.state_batches, 0,
                                         snapshot.delivery_complete_count)  # mutant: the last snapshot's state
            record = _fresh_snapshot(key, stored, source, now)
            self.apply(record)
            records.append(record)
        if records:
            _situations.COUNTS["cold-snapshot"] += 1
        return records


def _no_clock() -> int:
    return 0


_NO_CLOCK: Final = _no_clock


def share_state_error(request: object, error: Errors) -> object:
    """The answer to a share-state request that is not served (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE …)."""
    if isinstance(request, WriteShareGroupStateRequest):
        return WriteShareGroupStateResponse(request.key, error)
    if isinstance(request, ReadShareGroupStateRequest):
        return ReadShareGroupStateResponse(request.key, error)
    if isinstance(request, InitializeShareGroupStateRequest):
        return InitializeShareGroupStateResponse(request.key, error)
    if isinstance(request, DeleteShareGroupStateRequest):
        return DeleteShareGroupStateResponse(request.key, error)
    if isinstance(request, ReadShareGroupStateSummaryRequest):
        return ReadShareGroupStateSummaryResponse(request.key, error)
    raise TypeError(f"not a share-state request: {request!r}")


def _written_count(req: WriteShareGroupStateRequest, stored: ShareGroupState) -> int:
    """The DeliveryCompleteCount a write leaves stored (trunk's generateShareStateRecord, KIP-1226).

    It counts offsets at or above a start offset, so it is only as new as the start offset it was
    counted from: a write whose start offset is behind the stored one keeps the stored count; one at
    the stored start offset keeps the higher of the two (a count is not lowered by a write that lands
    after a later one, as the start offset is not); one ahead of it brings its own. A start offset of
    -1 (the model's leader writes it when the start offset does not move, ``SharePartition._payload``;
    Kafka's always writes its start offset) counts from the stored start offset.
    """
    start = stored.start_offset if req.start_offset == UNKNOWN_OFFSET else req.start_offset
    if _mutants.ACTIVE == "delivery-complete-count-last-write":
        return req.delivery_complete_count  # mutant: the count of whichever write landed last
    if start == stored.start_offset:
        return max(req.delivery_complete_count, stored.delivery_complete_count)
    if start < stored.start_offset:
        return stored.delivery_complete_count
    return req.delivery_complete_count


def _invalid_key(key: SharePartitionKey) -> tuple[Errors, str] | None:
    return (Errors.INVALID_REQUEST, "negative partition") if key.partition < 0 else None


def _negative_epoch(leader_epoch: int, state_epoch: int = 0) -> tuple[Errors, str] | None:
    """KAFKA-20743: a negative epoch is no epoch a leader or a group coordinator ever sends."""
    if leader_epoch < 0:
        return Errors.INVALID_REQUEST, f"negative leader epoch {leader_epoch}"
    if state_epoch < 0:
        return Errors.INVALID_REQUEST, f"negative state epoch {state_epoch}"
    return None


def _invalid_initialize(req: InitializeShareGroupStateRequest) -> tuple[Errors, str] | None:
    if req.state_epoch < 0 or req.start_offset < UNKNOWN_OFFSET:
        return Errors.INVALID_REQUEST, "negative state epoch or start offset below -1"
    return None


def _invalid_write(req: WriteShareGroupStateRequest, kafka: bool) -> tuple[Errors, str] | None:
    if req.start_offset < UNKNOWN_OFFSET:
        return Errors.INVALID_REQUEST, f"start offset {req.start_offset} < -1"
    for batch in req.state_batches:
        if batch.first_offset < 0 or batch.first_offset > batch.last_offset or batch.delivery_count < 0:
            return Errors.INVALID_REQUEST, f"malformed state batch {batch}"
        state = batch.delivery_state
        # Kafka trunk stores the delivery state it is sent (ShareCoordinatorShardTest
        # .testNonSequentialBatchUpdates writes ACQUIRED); the KIP's SP-1 never persists ACQUIRED.
        # Either way a state the protocol does not have is malformed.
        acquired_ok = kafka and state == RecordState.ACQUIRED
        if state not in PERSISTED_STATES and not acquired_ok and _mutants.ACTIVE != "persist-acquired":
            return Errors.INVALID_REQUEST, f"delivery state {state} is never persisted (SP-1)"
    return None


def _unknown_or_fenced(
    key: SharePartitionKey, stored: ShareGroupState | None, leader_epoch: int
) -> tuple[Errors, str] | None:
    if stored is None:
        return Errors.UNKNOWN_TOPIC_OR_PARTITION, f"no share-group state for {key}"  # SC-9
    # NO_EPOCH only reaches here from a read-summary (the group coordinator has no leader epoch).
    if leader_epoch != NO_EPOCH and stored.leader_epoch > leader_epoch:
        return Errors.FENCED_LEADER_EPOCH, f"stored leader epoch {stored.leader_epoch} > {leader_epoch}"
    return None


def _stale_state_epoch(stored: ShareGroupState | None, state_epoch: int) -> tuple[Errors, str] | None:
    """SC-5: a request whose state epoch is older than the stored one (negative ones are refused before)."""
    if state_epoch == NO_EPOCH and _mutants.ACTIVE == "negative-epoch-accepted":
        return None  # mutant (Kafka 4.3 and earlier): -1 is "not given" and fences nothing
    if stored is not None and stored.state_epoch > state_epoch:
        return Errors.FENCED_STATE_EPOCH, f"stored state epoch {stored.state_epoch} > {state_epoch}"
    return None


# Never answered: an unknown key is reported by _unknown_or_fenced first; keeps mypy's narrowing simple.
_NO_STATE = (Errors.UNKNOWN_TOPIC_OR_PARTITION, "no share-group state")


def _fresh_snapshot(key: SharePartitionKey, stored: ShareGroupState, source: ShareGroupState,
                    now_ms: int) -> ShareSnapshot:
    """A snapshot of ``source``'s state as the next snapshot of ``stored`` (its epochs, its create time)."""
    return ShareSnapshot(
        key=key,
        snapshot_epoch=stored.snapshot_epoch + 1,
        state_epoch=stored.state_epoch,
        leader_epoch=source.leader_epoch,
        start_offset=source.start_offset,
        state_batches=source.state_batches,
        delivery_complete_count=source.delivery_complete_count,
        create_timestamp_ms=stored.create_timestamp_ms,
        write_timestamp_ms=now_ms,
    )
