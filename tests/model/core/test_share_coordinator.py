"""The share coordinator (SC-1..SC-9): keying, records, snapshot policy, fencing, replay, pruning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from model.core.errors import Errors
from model.core.share_coordinator import (
    ShareCoordinatorShard,
    ShareGroupState,
    java_string_hash,
    share_state_partition,
)
from model.core.share_records import ShareSnapshot, ShareStateRecord, ShareTombstone, ShareUpdate
from model.core.share_state import (
    PERSISTED_STATES,
    UNKNOWN_OFFSET,
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
)
from model.core.state_batches import is_canonical

KEY = SharePartitionKey("G1", "topic_uuid", 0)
AVAILABLE = RecordState.AVAILABLE
ACKED = RecordState.ACKNOWLEDGED
ARCHIVED = RecordState.ARCHIVED


def b(first: int, last: int, state: RecordState, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


def init(shard: ShareCoordinatorShard, key: SharePartitionKey = KEY, state_epoch: int = 0, start: int = -1) -> None:
    response, _ = shard.initialize(InitializeShareGroupStateRequest(key, state_epoch, start))
    assert response.error_code == Errors.NONE


def write(
    shard: ShareCoordinatorShard,
    start: int = -1,
    batches: tuple[StateBatch, ...] = (),
    *,
    key: SharePartitionKey = KEY,
    state_epoch: int = 0,
    leader_epoch: int = 0,
) -> tuple[Errors, list[ShareStateRecord]]:
    response, records = shard.write(WriteShareGroupStateRequest(key, state_epoch, leader_epoch, start, batches))
    return response.error_code, records


def assert_replay_matches(shard: ShareCoordinatorShard, from_offset: int | None = None) -> None:
    start = shard.log_start_offset if from_offset is None else from_offset
    replayed = ShareCoordinatorShard.replay(
        shard.records[start - shard.log_start_offset :],
        shard.snapshot_update_records_per_snapshot,
        log_start_offset=start,
    )
    live = shard.keys()
    assert replayed.keys() == live
    for key in live:
        assert replayed.state(key) == shard.state(key), key


# --- SC-1 keying ------------------------------------------------------------------------------


def test_java_string_hash_matches_java() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -(2**31)  # the famous Integer.MIN_VALUE
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair


def _group_hashing_to_min_value(suffix: str) -> str:
    """A group id g with hashCode(g + suffix) == Integer.MIN_VALUE (31 is invertible mod 2^32)."""
    target = ((-(2**31)) - java_string_hash(suffix)) * pow(31 ** len(suffix), -1, 2**32) % 2**32
    digits = []
    for power in (31**4, 31**3, 31**2, 31, 1):
        digits.append(target // power)
        target %= power
    return "".join(chr(d) for d in digits)


def test_share_state_partition_is_kafkas_abs_hash_mod_partitions() -> None:
    key = SharePartitionKey("G1", "topic_uuid", 7)
    assert str(key) == "G1:topic_uuid:7"
    assert share_state_partition(key) == abs(java_string_hash("G1:topic_uuid:7")) % 50
    assert share_state_partition(key, 1) == 0
    assert 0 <= share_state_partition(key, 3) < 3
    # Kafka's Utils.abs maps Integer.MIN_VALUE to 0 (Python's abs would give 2^31, and 2^31 % 50 = 48).
    group = _group_hashing_to_min_value(":t:0")
    assert java_string_hash(f"{group}:t:0") == -(2**31)
    assert share_state_partition(SharePartitionKey(group, "t", 0)) == 0
    with pytest.raises(ValueError):
        share_state_partition(key, 0)


# --- golden: the WriteShareGroupState payloads of 002_6b3a98b13b89437f.txt --------------------


def test_golden_002_examples_with_share_group_state() -> None:
    """Replays the "Examples with share-group state" table of 002_6b3a98b13b89437f.txt.

    Each row's WriteShareGroupState payload is written; the coordinator's durable
    state must be the row's cumulative state without its acquired records (ACQUIRED
    is never persisted, SP-1). The payload of "Acknowledge 110" carries StartOffset -1,
    so the durable start offset stays 110 although the leader's SPSO is 111.
    """
    shard = ShareCoordinatorShard(snapshot_update_records_per_snapshot=500)
    init(shard, start=UNKNOWN_OFFSET)
    rows: list[tuple[str, int, tuple[StateBatch, ...], int, tuple[StateBatch, ...]]] = [
        ("starting state, latest offset 100", 100, (), 100, ()),
        ("acknowledge 100-109", 110, (), 110, ()),
        ("release 110", -1, (b(110, 110, AVAILABLE, 1),), 110, (b(110, 110, AVAILABLE, 1),)),
        (
            "acknowledge 119",
            -1,
            (b(119, 119, ACKED, 1),),
            110,
            (b(110, 110, AVAILABLE, 1), b(119, 119, ACKED, 1)),
        ),
        (
            "lock timeout 111-112",
            -1,
            (b(111, 112, AVAILABLE, 1),),
            110,
            (b(110, 112, AVAILABLE, 1), b(119, 119, ACKED, 1)),  # adjacent equal ranges merge
        ),
        (
            "acknowledge 113-118",
            -1,
            (b(113, 118, ACKED, 1),),
            110,
            (b(110, 112, AVAILABLE, 1), b(113, 119, ACKED, 1)),
        ),
        (
            "acknowledge 110",
            -1,
            (b(110, 110, ACKED, 2),),
            110,
            (b(110, 110, ACKED, 2), b(111, 112, AVAILABLE, 1), b(113, 119, ACKED, 1)),
        ),
        ("acknowledge 111, 112", 120, (), 120, ()),
    ]
    for name, start, batches, want_start, want_batches in rows:
        code, records = write(shard, start, batches)
        assert code == Errors.NONE, name
        assert [type(r) for r in records] == [ShareUpdate], name
        response, _ = shard.read(ReadShareGroupStateRequest(KEY, 0))
        assert (response.start_offset, response.state_batches) == (want_start, want_batches), name
    assert_replay_matches(shard)


# --- SC-3 snapshot policy ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "kinds"),
    [
        (0, "SSSSS"),  # every write snapshots
        (1, "SUSUS"),
        (2, "SUUSU"),
        (500, "SUUUU"),
    ],
)
def test_snapshot_every_limit_updates(limit: int, kinds: str) -> None:
    shard = ShareCoordinatorShard(limit)
    init(shard)
    for offset in range(4):
        write(shard, offset, (b(offset, offset, ACKED, 1),))
    letters = "".join("S" if isinstance(r, ShareSnapshot) else "U" for r in shard.records)
    assert letters == kinds
    state = shard.state(KEY)
    assert state is not None
    assert state.snapshot_epoch == kinds.count("S") - 1
    assert state.updates_since_snapshot == len(kinds) - 1 - kinds.rindex("S")
    assert state.start_offset == 3 and state.state_batches == (b(3, 3, ACKED, 1),)


def test_a_write_snapshot_holds_the_full_merged_state() -> None:
    shard = ShareCoordinatorShard(1)
    init(shard, state_epoch=4, start=0)
    write(shard, -1, (b(0, 4, AVAILABLE, 1),), state_epoch=4)
    _, records = write(shard, 2, (b(3, 6, ACKED, 1),), state_epoch=4)
    assert records == [
        ShareSnapshot(
            KEY,
            snapshot_epoch=1,
            state_epoch=4,
            leader_epoch=-1,
            start_offset=2,
            state_batches=(b(2, 2, AVAILABLE, 1), b(3, 6, ACKED, 1)),
        )
    ]


def test_negative_limit_is_rejected() -> None:
    with pytest.raises(ValueError):
        ShareCoordinatorShard(-1)


# --- SC-5 / SC-9 fencing truth table ----------------------------------------------------------

# Stored before each case: state epoch 5, leader epoch 3, start offset 10, one batch.
SE, LE = 5, 3
OTHER = SharePartitionKey("G1", "topic_uuid", 1)  # never initialized


def _stored_shard() -> ShareCoordinatorShard:
    shard = ShareCoordinatorShard(500)
    init(shard, state_epoch=SE, start=10)
    shard.read(ReadShareGroupStateRequest(KEY, LE))
    assert write(shard, -1, (b(10, 12, ACKED, 1),), state_epoch=SE, leader_epoch=LE)[0] == Errors.NONE
    return shard


Call = Callable[[ShareCoordinatorShard], tuple[Errors, list[ShareStateRecord]]]


def _read(le: int, key: SharePartitionKey = KEY) -> Call:
    def call(shard: ShareCoordinatorShard) -> tuple[Errors, list[ShareStateRecord]]:
        response, records = shard.read(ReadShareGroupStateRequest(key, le))
        return response.error_code, records

    return call


def _write(se: int, le: int, key: SharePartitionKey = KEY, batches: tuple[StateBatch, ...] = ()) -> Call:
    return lambda shard: write(shard, 11, batches, key=key, state_epoch=se, leader_epoch=le)


def _summary(le: int, key: SharePartitionKey = KEY) -> Call:
    def call(shard: ShareCoordinatorShard) -> tuple[Errors, list[ShareStateRecord]]:
        response, records = shard.read_summary(ReadShareGroupStateSummaryRequest(key, le))
        return response.error_code, records

    return call


def _initialize(se: int, key: SharePartitionKey = KEY, start: int = 20) -> Call:
    def call(shard: ShareCoordinatorShard) -> tuple[Errors, list[ShareStateRecord]]:
        response, records = shard.initialize(InitializeShareGroupStateRequest(key, se, start))
        return response.error_code, records

    return call


def _delete(key: SharePartitionKey = KEY) -> Call:
    def call(shard: ShareCoordinatorShard) -> tuple[Errors, list[ShareStateRecord]]:
        response, records = shard.delete(DeleteShareGroupStateRequest(key))
        return response.error_code, records

    return call


def _then_delete(call: Call) -> Call:
    def deleted_first(shard: ShareCoordinatorShard) -> tuple[Errors, list[ShareStateRecord]]:
        assert _delete()(shard) == (Errors.NONE, [ShareTombstone(KEY)])
        return call(shard)

    return deleted_first


@dataclass(frozen=True)
class FenceCase:
    name: str
    call: Call
    error: Errors
    records: int  # how many records the call wrote
    # Stored (state epoch, leader epoch) of KEY afterwards; None: KEY has no state.
    epochs: tuple[int, int] | None = (SE, LE)


FENCE_CASES = [
    FenceCase("write stale leader epoch", _write(SE, LE - 1), Errors.FENCED_LEADER_EPOCH, 0),
    FenceCase("write stale state epoch", _write(SE - 1, LE), Errors.FENCED_STATE_EPOCH, 0),
    FenceCase("write both stale: leader epoch checked first", _write(SE - 1, LE - 1), Errors.FENCED_LEADER_EPOCH, 0),
    FenceCase("write equal epochs", _write(SE, LE), Errors.NONE, 1),
    FenceCase("write higher leader epoch does not raise it", _write(SE, LE + 1), Errors.NONE, 1),
    FenceCase("write higher state epoch does not raise it", _write(SE + 1, LE), Errors.NONE, 1),
    # KAFKA-20743: a negative epoch is refused, whatever is stored (it was taken for "not given").
    FenceCase("write without epochs (-1) is invalid", _write(-1, -1), Errors.INVALID_REQUEST, 0),
    FenceCase("write with leader epoch -1 is invalid", _write(SE, -1), Errors.INVALID_REQUEST, 0),
    FenceCase("write with state epoch -1 is invalid", _write(-1, LE), Errors.INVALID_REQUEST, 0),
    FenceCase("write with a negative epoch to an uninitialized key", _write(-1, -1, OTHER), Errors.INVALID_REQUEST, 0),
    FenceCase("read stale leader epoch", _read(LE - 1), Errors.FENCED_LEADER_EPOCH, 0),
    FenceCase("read equal leader epoch writes nothing", _read(LE), Errors.NONE, 0),
    FenceCase("read raises the leader epoch durably", _read(LE + 2), Errors.NONE, 1, (SE, LE + 2)),
    FenceCase("read with leader epoch -1 is invalid", _read(-1), Errors.INVALID_REQUEST, 0),
    FenceCase("read with a negative leader epoch to an uninitialized key", _read(-1, OTHER), Errors.INVALID_REQUEST, 0),
    FenceCase("read summary with leader epoch -1 (the group coordinator's) is served", _summary(-1), Errors.NONE, 0),
    FenceCase("read summary stale leader epoch", _summary(LE - 1), Errors.FENCED_LEADER_EPOCH, 0),
    FenceCase("read summary never raises the leader epoch", _summary(LE + 1), Errors.NONE, 0),
    FenceCase("initialize stale state epoch", _initialize(SE - 1), Errors.FENCED_STATE_EPOCH, 0),
    FenceCase("initialize equal state epoch, another start offset, re-initializes", _initialize(SE), Errors.NONE, 1),
    FenceCase("initialize equal state epoch and start offset is a no-op", _initialize(SE, start=10), Errors.NONE, 0),
    FenceCase("initialize higher state epoch", _initialize(SE + 1), Errors.NONE, 1, (SE + 1, LE)),
    FenceCase("delete writes a tombstone", _delete(), Errors.NONE, 1, None),
    # Kafka trunk (maybeGetReadStateError / maybeGetWriteStateError); SC-9's answer under protocol "kip".
    FenceCase("read uninitialized key", _read(0, OTHER), Errors.INVALID_REQUEST, 0),
    FenceCase("write uninitialized key", _write(0, 0, OTHER), Errors.INVALID_REQUEST, 0),
    FenceCase("summary uninitialized key", _summary(0, OTHER), Errors.UNKNOWN_TOPIC_OR_PARTITION, 0),
    FenceCase("delete uninitialized key is a no-op", _delete(OTHER), Errors.NONE, 0),
    FenceCase("read deleted key", _then_delete(_read(LE)), Errors.INVALID_REQUEST, 1, None),
    FenceCase("write deleted key", _then_delete(_write(SE, LE)), Errors.INVALID_REQUEST, 1, None),
    FenceCase("summary deleted key", _then_delete(_summary(LE)), Errors.UNKNOWN_TOPIC_OR_PARTITION, 1, None),
    FenceCase("re-initialize deleted key starts fresh", _then_delete(_initialize(1)), Errors.NONE, 2, (1, -1)),
    FenceCase(
        "write with an ACQUIRED batch is stored (Kafka trunk; INVALID_REQUEST under protocol kip)",
        _write(SE, LE, batches=(b(11, 11, RecordState.ACQUIRED, 1),)),
        Errors.NONE,
        1,
    ),
    FenceCase("write with a delivery state the protocol lacks is invalid",
              _write(SE, LE, batches=(b(11, 11, 5, 1),)), Errors.INVALID_REQUEST, 0),  # type: ignore[arg-type]
    FenceCase(
        "write with first > last is invalid", _write(SE, LE, batches=(b(12, 11, ACKED, 1),)), Errors.INVALID_REQUEST, 0
    ),
    FenceCase("initialize with a negative state epoch", _initialize(-1), Errors.INVALID_REQUEST, 0),
    FenceCase("negative partition", _read(LE, SharePartitionKey("G1", "t", -1)), Errors.INVALID_REQUEST, 0),
]


@pytest.mark.parametrize("case", FENCE_CASES, ids=lambda c: c.name)
def test_fencing_truth_table(case: FenceCase) -> None:
    shard = _stored_shard()
    before = len(shard.records)
    error, records = case.call(shard)
    assert error == case.error
    assert len(shard.records) - before == case.records
    if case.error != Errors.NONE:
        assert records == []  # a rejected request writes nothing
    assert shard.records[len(shard.records) - len(records) :] == records  # what was returned was logged
    state = shard.state(KEY)
    assert (None if state is None else (state.state_epoch, state.leader_epoch)) == case.epochs
    assert_replay_matches(shard)


def test_a_write_with_a_lower_start_offset_keeps_the_stored_one() -> None:
    """SP-6 at the coordinator, as Kafka trunk's ShareCoordinatorShard.generateShareStateRecord
    (testWriteStateDiscardsStartOffsetRegression): a write that lands after one with a higher start
    offset keeps the higher, and its batches are clipped there, so the offsets between stay acknowledged.
    The old code moved it back to 2 and left 2-4 with no state (AVAILABLE to a recovering leader)."""
    for limit in (500, 0):  # as an update, and as a snapshot
        shard = _stored_shard() if limit else ShareCoordinatorShard(0)
        if not limit:
            init(shard, state_epoch=SE, start=10)
        assert write(shard, 15, (b(15, 20, ACKED, 1),), state_epoch=SE, leader_epoch=LE)[0] == Errors.NONE
        error, records = write(shard, 12, (b(12, 22, AVAILABLE, 1),), state_epoch=SE, leader_epoch=LE)
        assert error == Errors.NONE and len(records) == 1
        state = shard.state(KEY)
        assert state is not None and state.start_offset == 15
        assert state.state_batches == (b(15, 20, ACKED, 1), b(21, 22, AVAILABLE, 1))
        assert_replay_matches(shard)
    # A start offset of -1 still means "unchanged", and a higher one still moves it on.
    shard = _stored_shard()
    assert write(shard, -1, (), state_epoch=SE, leader_epoch=LE)[0] == Errors.NONE
    assert write(shard, 11, (), state_epoch=SE, leader_epoch=LE)[0] == Errors.NONE
    state = shard.state(KEY)
    assert state is not None and state.start_offset == 11


def test_the_mutant_start_offset_every_write_keeps_the_coordinator_of_kafka_4_3() -> None:
    """start-offset-every-write is the leader's payload with the coordinator before apache/kafka
    b77567478f, which took the written start offset; its variant has trunk's coordinator."""
    from model import mutants

    for name, expected in (("start-offset-every-write", 12), ("start-offset-every-write-max", 15)):
        with mutants.injected(name):
            shard = _stored_shard()
            write(shard, 15, (), state_epoch=SE, leader_epoch=LE)
            write(shard, 12, (), state_epoch=SE, leader_epoch=LE)
            state = shard.state(KEY)
            assert state is not None and state.start_offset == expected, name


def test_reinitialize_keeps_the_leader_epoch_and_drops_the_batches() -> None:
    shard = _stored_shard()
    assert _initialize(SE, start=20)(shard)[0] == Errors.NONE
    # snapshot epoch 0 → 1; a known start offset starts the delivery complete count at 0 (KAFKA-20034)
    assert shard.state(KEY) == ShareGroupState(SE, LE, 1, 20, (), 0, 0)
    # A zombie leader from before the admin reset is still fenced (SP-12).
    assert _write(SE, LE - 1)(shard)[0] == Errors.FENCED_LEADER_EPOCH


def test_zombie_leader_stays_fenced_after_coordinator_failover() -> None:
    """SC-5/SC-6: the raised leader epoch is in the log, so a new coordinator fences the old leader."""
    shard = _stored_shard()
    assert _read(LE + 1)(shard)[0] == Errors.NONE
    failed_over = ShareCoordinatorShard.replay(shard.records, 500)
    assert _write(SE, LE)(failed_over)[0] == Errors.FENCED_LEADER_EPOCH
    # Had the read's record been lost, the caller must not have answered it: the old leader still writes.
    lost = ShareCoordinatorShard.replay(shard.records[:-1], 500)
    assert _write(SE, LE)(lost)[0] == Errors.NONE


def test_read_returns_the_stored_state() -> None:
    shard = _stored_shard()
    response, _ = shard.read(ReadShareGroupStateRequest(KEY, LE))
    assert (response.state_epoch, response.start_offset, response.state_batches) == (SE, 10, (b(10, 12, ACKED, 1),))
    summary, _ = shard.read_summary(ReadShareGroupStateSummaryRequest(KEY, LE))
    assert (summary.error_code, summary.state_epoch, summary.start_offset) == (Errors.NONE, SE, 10)


# --- SC-6 loading -----------------------------------------------------------------------------


def test_load_in_progress_until_complete() -> None:
    source = _stored_shard()
    shard = ShareCoordinatorShard(500)
    shard.begin_load()
    for call in (_read(LE), _write(SE, LE), _summary(LE), _initialize(SE + 1), _delete()):
        assert call(shard) == (Errors.COORDINATOR_LOAD_IN_PROGRESS, [])
    for record in source.records:
        shard.apply(record)
    assert shard.resnapshot_idle() == []
    assert _read(LE)(shard)[0] == Errors.COORDINATOR_LOAD_IN_PROGRESS
    shard.complete_load()
    assert _read(LE)(shard) == (Errors.NONE, [])
    assert shard.state(KEY) == source.state(KEY)


def test_updates_of_another_snapshot_epoch_are_ignored() -> None:
    """SC-2: state = latest snapshot + the updates after it with the same snapshot epoch."""
    shard = ShareCoordinatorShard.replay(
        [
            ShareSnapshot(KEY, 3, 1, 0, 10, ()),
            ShareUpdate(KEY, 2, 0, 11, (b(11, 11, ACKED, 1),)),  # stale: not applied
            ShareUpdate(KEY, 3, 0, -1, (b(12, 12, ACKED, 1),)),
            ShareUpdate(SharePartitionKey("G9", "t", 0), 0, 0, 5, ()),  # its snapshot was pruned
        ]
    )
    assert shard.keys() == [KEY]
    assert shard.state(KEY) == ShareGroupState(1, 0, 3, 10, (b(12, 12, ACKED, 1),), 1)


def test_a_snapshot_with_overlapping_batches_is_stored_canonical() -> None:
    """Stored batches stay canonical (updates are laid over them), whoever wrote the snapshot."""
    shard = ShareCoordinatorShard.replay([ShareSnapshot(KEY, 0, 1, 0, 2, (b(0, 5, ACKED, 1), b(4, 9, ACKED, 1)))])
    state = shard.state(KEY)
    assert state is not None and state.state_batches == (b(2, 9, ACKED, 1),)


# --- SC-8 delete and prune --------------------------------------------------------------------

A = SharePartitionKey("G1", "t", 0)
B = SharePartitionKey("G1", "t", 1)


def test_prune_offset_is_the_oldest_latest_snapshot_of_live_keys() -> None:
    shard = ShareCoordinatorShard(2)
    init(shard, A, start=0)  # 0: A snapshot
    init(shard, B, start=0)  # 1: B snapshot (B then stays idle)
    for offset in range(1, 5):  # 2..5: A U U S U
        write(shard, offset, key=A)
    assert [type(r).__name__[5] for r in shard.records] == list("SSUUSU")
    assert shard.latest_snapshot_offset(A) == 4
    assert shard.prune_offset() == 1  # idle B holds pruning back
    assert shard.redundant_offsets() == [0, 2, 3]
    # B's snapshot is older than A's redundant updates: re-snapshot B so they can go.
    resnapshots = shard.resnapshot_idle()
    assert resnapshots == [ShareSnapshot(B, 1, 0, -1, 0, (), 0)]
    assert shard.prune_offset() == 4
    shard.prune(4)
    assert shard.log_start_offset == 4 and len(shard.records) == 3
    assert_replay_matches(shard)
    # Settled: only needed records remain, so nothing more is written.
    assert shard.redundant_offsets() == []
    assert shard.resnapshot_idle() == []
    with pytest.raises(ValueError):
        shard.prune(5)  # A's latest snapshot is still needed


def test_resnapshot_waits_for_enough_redundant_records() -> None:
    shard = ShareCoordinatorShard(0)
    init(shard, A)
    init(shard, B)
    write(shard, 1, key=A)  # a snapshot: A's first one becomes redundant (before the prune offset)
    write(shard, 2, key=A)
    assert shard.redundant_offsets() == [0, 2]
    assert shard.prune_offset() == 1
    assert shard.resnapshot_idle(min_redundant_records=2) == []  # only offset 2 lies beyond
    assert [r.key for r in shard.resnapshot_idle(min_redundant_records=1)] == [B]


def test_deleted_keys_do_not_hold_back_pruning() -> None:
    shard = ShareCoordinatorShard(500)
    init(shard, A)
    init(shard, B)
    _delete(A)(shard)
    assert shard.prune_offset() == 1
    _delete(B)(shard)
    assert shard.prune_offset() == shard.log_end_offset == 4
    shard.prune(4)
    assert shard.records == [] and shard.keys() == []
    assert _read(0, A)(shard)[0] == Errors.INVALID_REQUEST  # no state (trunk; SC-9 under "kip")


def test_prune_offset_of_the_committed_prefix() -> None:
    shard = ShareCoordinatorShard(0)
    init(shard, A)  # 0
    init(shard, B)  # 1
    write(shard, 5, key=A)  # 2: A snapshot, not yet committed
    write(shard, 6, key=B)  # 3: B snapshot, not yet committed
    assert shard.prune_offset() == 2
    # If offsets 2..3 are lost, A's and B's first snapshots are needed.
    assert shard.prune_offset(committed_end_offset=2) == 0
    assert shard.prune_offset(committed_end_offset=3) == 1
    assert shard.prune_offset(committed_end_offset=4) == 2


# --- properties: replay, prune, snapshot bound, and a reference model ---------------------------

KEYS = [SharePartitionKey("G1", "t1", 0), SharePartitionKey("G1", "t1", 1), SharePartitionKey("G2", "t2", 0)]
epochs = st.integers(-1, 4)
batch_st = st.builds(
    lambda first, length, state, count: StateBatch(first, first + length, state, count),
    st.integers(0, 30),
    st.integers(0, 6),
    st.sampled_from(PERSISTED_STATES),
    st.integers(0, 4),
)


@dataclass
class ModelState:
    """What SC-4/SC-5 say the durable state of a key is, offset by offset."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    offsets: dict[int, tuple[int, int]] = field(default_factory=dict)  # offset → (count, state)
    delivery_complete_count: int = -1


def expand(batches: tuple[StateBatch, ...]) -> dict[int, tuple[int, int]]:
    """Offset → the highest (delivery count, state) of the batches covering it."""
    offsets: dict[int, tuple[int, int]] = {}
    for batch in batches:
        value = (batch.delivery_count, int(batch.delivery_state))
        for offset in range(batch.first_offset, batch.last_offset + 1):
            offsets[offset] = max(offsets.get(offset, value), value)
    return offsets


class ShareCoordinatorMachine(RuleBasedStateMachine):
    @initialize(limit=st.sampled_from([0, 1, 2, 3, 500]))
    def setup(self, limit: int) -> None:
        self.limit = limit
        self.shard = ShareCoordinatorShard(limit)
        self.model: dict[SharePartitionKey, ModelState] = {}
        for key in KEYS[:2]:  # start with two live keys; the third waits for an initialize rule
            self.initialize(key, state_epoch=0, start=-1)

    def _fenced_leader(self, key: SharePartitionKey, leader_epoch: int, summary: bool = False) -> Errors | None:
        stored = self.model.get(key)
        if stored is None:  # a read or write: trunk's INVALID_REQUEST; a read-summary: SC-9
            return Errors.UNKNOWN_TOPIC_OR_PARTITION if summary else Errors.INVALID_REQUEST
        if leader_epoch != -1 and stored.leader_epoch > leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        return None

    @rule(key=st.sampled_from(KEYS), state_epoch=st.integers(0, 4), start=st.integers(-1, 20))
    def initialize(self, key: SharePartitionKey, state_epoch: int, start: int) -> None:
        response, records = self.shard.initialize(InitializeShareGroupStateRequest(key, state_epoch, start))
        stored = self.model.get(key)
        if stored is not None and stored.state_epoch > state_epoch:
            assert (response.error_code, records) == (Errors.FENCED_STATE_EPOCH, [])
            return
        assert response.error_code == Errors.NONE
        if stored is not None and (stored.state_epoch, stored.start_offset) == (state_epoch, start):
            assert records == []  # a duplicate (trunk's initializeState): nothing written, nothing changed
            return
        assert [type(r) for r in records] == [ShareSnapshot]  # SC-3: always a snapshot
        self.model[key] = ModelState(state_epoch, -1 if stored is None else stored.leader_epoch, start,
                                     delivery_complete_count=-1 if start == -1 else 0)

    @rule(key=st.sampled_from(KEYS), leader_epoch=epochs)
    def read(self, key: SharePartitionKey, leader_epoch: int) -> None:
        response, records = self.shard.read(ReadShareGroupStateRequest(key, leader_epoch))
        expected = Errors.INVALID_REQUEST if leader_epoch < 0 else self._fenced_leader(key, leader_epoch)
        if expected is not None:
            assert (response.error_code, records) == (expected, [])
            return
        stored = self.model[key]
        assert response.error_code == Errors.NONE
        assert (response.state_epoch, response.start_offset) == (stored.state_epoch, stored.start_offset)
        assert expand(response.state_batches) == stored.offsets
        raises = leader_epoch > stored.leader_epoch
        assert len(records) == (1 if raises else 0)  # the raise is durable (SC-5)
        if raises:
            stored.leader_epoch = leader_epoch

    @rule(
        key=st.sampled_from(KEYS),
        state_epoch=epochs,
        leader_epoch=epochs,
        start=st.integers(-1, 30),
        batches=st.lists(batch_st, max_size=3),
        complete=st.integers(-1, 40),
    )
    def write(
        self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start: int, batches: list[StateBatch],
        complete: int = -1,
    ) -> None:
        request = WriteShareGroupStateRequest(key, state_epoch, leader_epoch, start, tuple(batches), complete)
        response, records = self.shard.write(request)
        # KAFKA-20743: a negative epoch is refused before anything else is looked at.
        negative = leader_epoch < 0 or state_epoch < 0
        expected = Errors.INVALID_REQUEST if negative else self._fenced_leader(key, leader_epoch)
        stored = self.model.get(key)
        if expected is None and stored is not None and stored.state_epoch > state_epoch:
            expected = Errors.FENCED_STATE_EPOCH
        if expected is not None or stored is None:
            assert (response.error_code, records) == (expected, [])
            return
        assert response.error_code == Errors.NONE and len(records) == 1
        # SC-4: per offset the higher (count, state) wins, then clip to the start offset.
        for offset, value in expand(tuple(batches)).items():
            stored.offsets[offset] = max(stored.offsets.get(offset, value), value)
        # KIP-1226 (apache/kafka 2225a16c7e): the count goes with the start offset it was counted from.
        effective = stored.start_offset if start == -1 else start
        if effective == stored.start_offset:
            stored.delivery_complete_count = max(stored.delivery_complete_count, complete)
        elif effective > stored.start_offset:
            stored.delivery_complete_count = complete
        if start != -1:
            stored.start_offset = max(stored.start_offset, start)  # never back (SP-6; Kafka trunk)
        if stored.start_offset != -1:
            stored.offsets = {o: v for o, v in stored.offsets.items() if o >= stored.start_offset}

    @precondition(lambda self: self.model)
    @rule(
        data=st.data(),
        state_epoch=epochs,
        leader_epoch=epochs,
        start=st.integers(-1, 30),
        batches=st.lists(batch_st, max_size=3),
        complete=st.integers(-1, 40),
    )
    def write_live_key(
        self, data: st.DataObject, state_epoch: int, leader_epoch: int, start: int, batches: list[StateBatch],
        complete: int,
    ) -> None:
        """Most writes go to initialized keys, so the merge and snapshot paths get exercised."""
        key = data.draw(st.sampled_from(sorted(self.model)))
        self.write(key, state_epoch, leader_epoch, start, batches, complete)

    @precondition(lambda self: self.model)
    @rule(data=st.data(), leader_epoch=epochs)
    def read_live_key(self, data: st.DataObject, leader_epoch: int) -> None:
        self.read(data.draw(st.sampled_from(sorted(self.model))), leader_epoch)

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: SharePartitionKey) -> None:
        response, records = self.shard.delete(DeleteShareGroupStateRequest(key))
        assert response.error_code == Errors.NONE
        assert records == ([ShareTombstone(key)] if key in self.model else [])
        self.model.pop(key, None)

    @rule(key=st.sampled_from(KEYS), leader_epoch=epochs)
    def read_summary(self, key: SharePartitionKey, leader_epoch: int) -> None:
        response, records = self.shard.read_summary(ReadShareGroupStateSummaryRequest(key, leader_epoch))
        assert records == []
        expected = self._fenced_leader(key, leader_epoch, summary=True)
        assert response.error_code == (expected or Errors.NONE)
        if expected is None:
            stored = self.model[key]
            assert (response.state_epoch, response.start_offset, response.delivery_complete_count) == (
                stored.state_epoch, stored.start_offset, stored.delivery_complete_count)

    @rule(min_redundant=st.integers(1, 3))
    def resnapshot_idle(self, min_redundant: int) -> None:
        live = self.shard.keys()
        before = {k: self.shard.state(k) for k in live}
        for record in self.shard.resnapshot_idle(min_redundant):
            assert isinstance(record, ShareSnapshot)
        for key, state in before.items():  # same content, next snapshot epoch
            after = self.shard.state(key)
            assert after is not None and state is not None
            assert (after.state_epoch, after.leader_epoch, after.start_offset, after.state_batches) == (
                state.state_epoch,
                state.leader_epoch,
                state.start_offset,
                state.state_batches,
            )

    @rule()
    def prune(self) -> None:
        self.shard.prune(self.shard.prune_offset())

    @rule()
    def idle_partition_settles(self) -> None:
        """SC-8: with no new writes, re-snapshot + prune leaves only needed records, then writes nothing.

        Each round re-snapshots only keys not re-snapshotted before, so it settles in at most keys + 1 rounds.
        """
        for _ in range(len(self.shard.keys()) + 1):
            written = self.shard.resnapshot_idle()
            self.shard.prune(self.shard.prune_offset())
            if not written:
                break
        assert self.shard.redundant_offsets() == []
        assert self.shard.resnapshot_idle() == []
        assert len(self.shard.records) == len(self.shard.keys()) + sum(
            state.updates_since_snapshot for state in map(self.shard.state, self.shard.keys()) if state is not None
        )

    @rule(cut=st.integers(0, 200))
    def committed_prefix_can_be_pruned_safely(self, cut: int) -> None:
        """SC-6/SC-7: pruning by the committed prefix keeps what replay of that prefix needs."""
        start = self.shard.log_start_offset
        committed_end = start + cut % (len(self.shard.records) + 1)
        prune_at = self.shard.prune_offset(committed_end)
        assert start <= prune_at <= min(committed_end, self.shard.prune_offset())
        whole = ShareCoordinatorShard.replay(self.shard.records[: committed_end - start], self.limit, start)
        pruned = ShareCoordinatorShard.replay(
            self.shard.records[prune_at - start : committed_end - start], self.limit, prune_at
        )
        live = whole.keys()
        assert pruned.keys() == live
        assert all(pruned.state(k) == whole.state(k) for k in live)

    @invariant()
    def matches_the_model(self) -> None:
        assert self.shard.keys() == sorted(self.model)
        for key, expected in self.model.items():
            state = self.shard.state(key)
            assert state is not None
            assert (state.state_epoch, state.leader_epoch, state.start_offset) == (
                expected.state_epoch,
                expected.leader_epoch,
                expected.start_offset,
            )
            assert expand(state.state_batches) == expected.offsets
            assert is_canonical(state.state_batches, state.start_offset)

    @invariant()
    def updates_since_snapshot_never_exceed_the_limit(self) -> None:
        """SC-3."""
        live = self.shard.keys()
        for key in live:
            state = self.shard.state(key)
            assert state is not None and 0 <= state.updates_since_snapshot <= self.limit

    @invariant()
    def replay_rebuilds_the_state(self) -> None:
        """SC-6: replaying the log gives exactly the in-memory state."""
        assert_replay_matches(self.shard)

    @invariant()
    def replay_from_the_prune_offset_rebuilds_the_state(self) -> None:
        """SC-8: records before the prune offset are not needed."""
        assert_replay_matches(self.shard, from_offset=self.shard.prune_offset())


ShareCoordinatorMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=50, deadline=None)
test_share_coordinator_machine = ShareCoordinatorMachine.TestCase


def test_a_delete_of_an_earlier_life_is_fenced_by_the_state_epoch() -> None:
    """A delete carries the deleting group coordinator's group epoch; the state of a life initialized
    after it (at a higher state epoch, GC-7) is not its to delete (docs: "A delete is fenced ...")."""
    from model import mutants

    def initialized() -> ShareCoordinatorShard:
        shard = ShareCoordinatorShard()
        shard.initialize(InitializeShareGroupStateRequest(KEY, 9, 0))
        return shard

    shard = initialized()
    assert _delete_at(shard, 8) == (Errors.NONE, [])  # an earlier life's: answered, nothing written
    assert shard.state(KEY) is not None
    for epoch in (9, 12, -1):  # this life's, a later coordinator's, not given
        shard = initialized()
        assert _delete_at(shard, epoch) == (Errors.NONE, [ShareTombstone(KEY)]) and shard.state(KEY) is None
    with mutants.injected("delete-unfenced"):
        shard = initialized()
        assert _delete_at(shard, 8) == (Errors.NONE, [ShareTombstone(KEY)])


def _delete_at(shard: ShareCoordinatorShard, state_epoch: int) -> tuple[Errors, list[ShareStateRecord]]:
    response, records = shard.delete(DeleteShareGroupStateRequest(KEY, state_epoch=state_epoch))
    return response.error_code, records


@pytest.mark.parametrize("kafka", [True, False])
def test_a_read_or_write_of_a_key_with_no_state_answers_by_the_protocol(kafka: bool) -> None:
    """Kafka trunk answers INVALID_REQUEST ("uninitialized share partition"); the KIP's SC-9, kept under
    protocol "kip", UNKNOWN_TOPIC_OR_PARTITION. Either way nothing is written; a read-summary answers
    UNKNOWN_TOPIC_OR_PARTITION under both (the leaders take it for a deleted state, SP-12)."""
    expected = Errors.INVALID_REQUEST if kafka else Errors.UNKNOWN_TOPIC_OR_PARTITION
    for deleted in (False, True):
        shard = ShareCoordinatorShard(kafka=kafka)
        if deleted:
            init(shard, start=0)
            shard.delete(DeleteShareGroupStateRequest(KEY))
        before = len(shard.records)
        response, records = shard.read(ReadShareGroupStateRequest(KEY, 0))
        assert (response.error_code, records) == (expected, [])
        assert write(shard, 0, (b(0, 3, ACKED, 1),))[0] == expected
        summary, _ = shard.read_summary(ReadShareGroupStateSummaryRequest(KEY, 0))
        assert summary.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert len(shard.records) == before and shard.state(KEY) is None


def test_an_acquired_batch_is_stored_by_kafka_and_refused_by_the_kip() -> None:
    """Kafka trunk's coordinator stores whatever delivery state it is sent (ShareCoordinatorShardTest
    .testNonSequentialBatchUpdates writes ACQUIRED); SP-1 never persists ACQUIRED, so protocol "kip" refuses it.
    The model's leaders never send it (invariant record-state-transition; the mutant persist-acquired)."""
    for kafka, expected in ((True, Errors.NONE), (False, Errors.INVALID_REQUEST)):
        shard = ShareCoordinatorShard(kafka=kafka)
        init(shard, start=0)
        assert write(shard, -1, (b(0, 4, RecordState.ACQUIRED, 1),))[0] == expected
        state = shard.state(KEY)
        assert state is not None
        assert [int(x.delivery_state) for x in state.state_batches] == ([1] if kafka else [])


def test_cold_snapshots_by_the_protocol() -> None:
    """Kafka trunk (snapshot_cold, snapshotColdPartitions): a key whose latest snapshot is an interval old
    is snapshotted again with its state (updates merged in), once; the KIP reading (resnapshot_idle):
    a key is snapshotted again only when its snapshot holds redundant records back from pruning."""
    now = [0]
    shard = ShareCoordinatorShard(2, clock=lambda: now[0])
    init(shard, A, start=0)
    init(shard, B, start=0)
    now[0] = 1_000
    for offset in range(1, 4):  # A: U U S (the snapshot at 1 000 ms)
        write(shard, offset, key=A)
    assert shard.resnapshot_idle(min_redundant_records=10) == []  # KIP: not enough redundancy yet
    now[0] = 5_000
    assert shard.snapshot_cold(5_000) == [ShareSnapshot(B, 1, 0, -1, 0, (), 0, 0, 5_000)]  # A's is 4 s old
    assert shard.snapshot_cold(5_000) == []  # B is cold-snapshotted, A not old enough
    now[0] = 6_000
    records = shard.snapshot_cold(5_000)
    assert [r.key for r in records] == [A] and isinstance(records[0], ShareSnapshot)
    assert records[0].start_offset == 3 and records[0].write_timestamp_ms == 6_000
    now[0] = 60_000
    assert shard.snapshot_cold(5_000) == []  # every key cold-snapshotted: the partition is quiet
    assert_replay_matches(shard)
