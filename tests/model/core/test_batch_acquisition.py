"""Record batches in the log and Kafka's batch-wise acquisition (SharePartition.acquire at the pinned
trunk commit): whole batches, the next fetch offset, throttling, record_limit, the soft in-flight bound,
and the KIP's record-wise reading under ``protocol = "kip"``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.config import BrokerConfig, GroupConfig
from model.core.log import PartitionLog
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
from model.core.share_state import (
    ReadShareGroupStateResponse,
    RecordState,
    SharePartitionKey,
    WriteShareGroupStateResponse,
)

KEY = SharePartitionKey("g", "t", 0)
OK = WriteShareGroupStateResponse(KEY)
ACCEPT, RELEASE = 1, 2


def _leader(*sizes: int, broker: BrokerConfig | None = None, group: GroupConfig | None = None,
            log: PartitionLog | None = None) -> SharePartition:
    if log is None:
        log = PartitionLog()
        for size in sizes:
            log.append(size)
        log.advance_high_watermark()
    sp = SharePartition(KEY, log, leader_epoch=1, broker=broker, group=group)
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=0), 0)
    return sp


def _settle(sp: SharePartition) -> None:
    while writes := sp.take_writes():
        for w in writes:
            sp.complete_write(w.write_id, OK, 0)


def _runs(acquired: list[AcquiredRecords]) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]


def _release(sp: SharePartition, member: str, first: int, last: int) -> None:
    assert sp.acknowledge(member, [AcknowledgementBatch(first, last, (RELEASE,))], 0).write_id is not None
    _settle(sp)


# -- the log's batches ---------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=12), markers=st.sets(st.integers(0, 11)))
def test_batch_bounds_tile_the_log_in_append_order(sizes: list[int], markers: set[int]) -> None:
    log = PartitionLog()
    expected = []
    for i, size in enumerate(sizes):
        pid = 7 if i in markers else None
        expected.append(log.append(size, producer_id=pid, transactional=pid is not None))
        if pid is not None:
            marker = log.end_transaction(pid, commit=True)
            expected.append((marker, marker))  # a control batch of its own
    assert log.batches_in(0, log.log_end_offset - 1) == expected
    for first, last in expected:
        for offset in (first, last, (first + last) // 2):
            assert log.batch_bounds(offset) == (first, last)


def test_compaction_keeps_batch_bounds_and_a_fetch_skips_emptied_batches() -> None:
    log = PartitionLog()
    for size in (3, 2, 4):
        log.append(size)  # 0-2, 3-4, 5-8
    log.advance_high_watermark()
    log.compact([0, 1, 2, 3])  # batch 0-2 emptied, 3-4 keeps 4
    assert log.batch_bounds(4) == (3, 4) and log.batch_bounds(1) == (0, 2)
    assert log.fetch_base(0, 9) == 3 and log.fetch_base(4, 9) == 3
    log.compact([4])
    assert log.fetch_base(0, 9) == 5 and log.fetch_base(0, 5) == 5


# -- whole batches, the next fetch offset ------------------------------------------------------------


def test_max_records_is_soft_to_the_end_of_a_batch_and_the_next_fetch_offset_follows() -> None:
    sp = _leader(4, 6, 5)  # 0-3, 4-9, 10-14
    assert _runs(sp.acquire("m1", 5, 0)) == [(0, 9, 1)]  # the batch holding the 5th record, whole
    assert sp.next_fetch_offset == 10 and sp.in_flight_batch_starts() == [0]
    _release(sp, "m1", 2, 3)
    assert sp.next_fetch_offset == 2
    # A fetch at 10 leaves the AVAILABLE 2-3 for a later fetch (a fetch at 2 would take them first).
    assert _runs(sp.acquire("m2", 1, 0, 10)) == [(10, 14, 1)]
    assert sp.next_fetch_offset == 2
    assert _runs(sp.acquire("m2", 100, 0)) == [(2, 3, 2)]  # a split batch: its AVAILABLE offsets only
    assert sp.next_fetch_offset == 15


def test_the_in_flight_bound_is_soft_to_a_batch_end_and_a_full_window_fetches_inside_it_only() -> None:
    sp = _leader(*[30] * 10, broker=BrokerConfig(partition_max_record_locks=100))
    assert _runs(sp.acquire("m1", 500, 0)) == [(0, 119, 1)]  # four batches: the fourth crosses 100
    assert sp.speo - sp.spso == 120 and sp.window_within_record_locks()
    assert sp.acquire("m1", 500, 0) == []  # full, and the fetch is past the window
    _release(sp, "m1", 40, 44)
    assert _runs(sp.acquire("m2", 500, 0)) == [(40, 44, 2)]  # inside the window: allowed
    assert sp.speo == 120


def test_a_batch_compaction_emptied_below_the_first_fetched_is_archived() -> None:
    log = PartitionLog()
    for size in (3, 3, 3):
        log.append(size)
    log.advance_high_watermark()
    sp = _leader(log=log)
    assert _runs(sp.acquire("m1", 3, 0)) == [(0, 2, 1)]
    _release(sp, "m1", 0, 2)
    log.compact([0, 1, 2, 3, 4, 5])  # the first two batches are gone
    assert _runs(sp.acquire("m1", 3, 0)) == [(6, 8, 1)]
    _settle(sp)
    assert sp.spso == 6  # 0-2 (stale batch) and 3-5 (a hole before the first fetched batch) archived


# -- throttling (Kafka's throttleRecordsDeliveryLimit, acquireSubsetBatchRecords) --------------------


def test_throttling_halves_the_records_per_fetch_and_delivers_the_last_attempt_alone() -> None:
    sp = _leader(20, broker=BrokerConfig(delivery_count_limit=6))  # throttled from count 3
    assert sp.throttle_delivery_count == 3
    for count in (1, 2, 3):
        assert _runs(sp.acquire("m1", 20, 0)) == [(0, 19, count)]
        _release(sp, "m1", 0, 19)
    assert _runs(sp.acquire("m1", 20, 0)) == [(0, 9, 4)]  # count 3 >= 3: 20 >> 1 records
    assert sp.acquire("m1", 20, 0) and sp.state_of(10).delivery_count == 4  # 10-19: the next fetch
    _release(sp, "m1", 0, 19)
    assert _runs(sp.acquire("m1", 20, 0)) == [(0, 4, 5)]  # count 4: 20 >> 2
    _release(sp, "m1", 0, 4)
    assert _runs(sp.acquire("m1", 20, 0)) == [(0, 0, 6)]  # count 5 = limit - 1: the last attempt, alone
    assert _runs(sp.acquire("m1", 20, 0)) == [(1, 1, 6)]


def test_offsets_of_a_throttled_batch_go_by_halves_and_the_last_attempt_alone() -> None:
    sp = _leader(5, 5, broker=BrokerConfig(delivery_count_limit=4))  # throttled from count 2
    sp.acquire("m1", 10, 0)
    _release(sp, "m1", 0, 9)
    assert _runs(sp.acquire("m1", 10, 0)) == [(0, 9, 2)]  # one in-flight batch of both log batches
    _release(sp, "m1", 5, 9)
    assert _runs(sp.acquire("m2", 10, 0)) == [(5, 9, 3)]  # 0-4 still acquired by m1
    _release(sp, "m2", 5, 9)
    _release(sp, "m1", 0, 4)  # 0-4 at count 2, 5-9 at count 3 (the limit's last but one)
    assert _runs(sp.acquire("m3", 10, 0)) == [(0, 4, 3)]  # 10 >> 1 records, not the batch
    assert _runs(sp.acquire("m3", 10, 0)) == [(5, 5, 4)]  # on its last attempt: alone
    assert _runs(sp.acquire("m3", 10, 0)) == [(6, 6, 4)]


# -- record_limit, the KIP's reading ---------------------------------------------------------------


def test_record_limit_takes_max_records_and_leaves_the_rest_of_the_batch_available() -> None:
    sp = _leader(10, 10)
    assert _runs(sp.acquire("m1", 4, 0, acquire_mode="record_limit")) == [(0, 3, 1)]
    assert sp.state_of(4).state is RecordState.AVAILABLE and sp.state_of(4).delivery_count == 0
    assert sp.speo == 10 and sp.next_fetch_offset == 4
    assert _runs(sp.acquire("m2", 4, 0, acquire_mode="record_limit")) == [(4, 7, 1)]
    assert _runs(sp.acquire("m3", 4, 0)) == [(8, 19, 1)]  # batch_optimized: the rest, then a whole batch


def test_the_kip_protocol_acquires_record_wise_with_a_hard_limit() -> None:
    sp = _leader(10, 10, broker=BrokerConfig(protocol="kip"))
    assert _runs(sp.acquire("m1", 4, 0)) == [(0, 3, 1)]
    _release(sp, "m1", 1, 2)
    assert _runs(sp.acquire("m2", 4, 0)) == [(1, 2, 2), (4, 5, 1)]


def test_a_groups_delivery_count_limit_and_record_locks_override_the_brokers() -> None:
    sp = _leader(300, broker=BrokerConfig(delivery_count_limit=5, partition_max_record_locks=200),
                 group=GroupConfig(delivery_count_limit=2, partition_max_record_locks=100))
    assert (sp.delivery_count_limit, sp.max_record_locks) == (2, 100)
    sp.acquire("m1", 1, 0)
    _release(sp, "m1", 0, 299)
    sp.acquire("m1", 1, 0)
    _release(sp, "m1", 0, 299)  # count 2 = the group's limit: archived
    _settle(sp)
    assert sp.spso == 300


@settings(max_examples=150, deadline=None)
@given(sizes=st.lists(st.integers(1, 8), min_size=1, max_size=10), fetches=st.lists(
    st.tuples(st.integers(1, 12), st.sampled_from(["batch_optimized", "record_limit"]), st.booleans()),
    min_size=1, max_size=12))
def test_acquisitions_never_overlap_and_first_deliveries_end_where_kafka_ends_them(
        sizes: list[int], fetches: list[tuple[int, str, bool]]) -> None:
    sp = _leader(*sizes, broker=BrokerConfig(partition_max_record_locks=100))
    log = sp.log
    held: set[int] = set()
    for max_records, mode, release in fetches:
        got = sp.acquire("m1", max_records, 0, acquire_mode=mode)
        offsets = [o for a in got for o in range(a.first_offset, a.last_offset + 1)]
        assert not held & set(offsets) and len(offsets) == len(set(offsets))
        held |= set(offsets)
        if mode == "record_limit":
            assert len(offsets) <= max_records
        elif got and all(a.delivery_count == 1 for a in got):
            assert got[-1].last_offset == log.batch_last(got[-1].last_offset)
        if release and got:
            a = got[0]
            _release(sp, "m1", a.first_offset, a.last_offset)
            held -= set(range(a.first_offset, a.last_offset + 1))
        assert sp.window_within_record_locks()
