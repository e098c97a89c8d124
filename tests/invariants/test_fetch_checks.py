"""fetch-woken-when-acquirable, step by step: a real share-partition leader, a ShareFetch waiting in the
purgatory on it, and the changes that do or do not oblige the purgatory to answer it."""

from __future__ import annotations

from invariants.fetch_checks import WAKE_BOUND_MS, PurgatoryWakeupMonitor
from invariants.sink import ViolationSink
from model.core.config import BrokerConfig
from model.core.log import PartitionLog
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_partition import SharePartition
from model.core.share_state import InitializeShareGroupStateRequest, SharePartitionKey, WriteShareGroupStateResponse

KEY = SharePartitionKey("g", "t-id", 0)
OTHER = SharePartitionKey("g", "t-id", 1)


def _leader(key: SharePartitionKey = KEY, records: int = 5) -> SharePartition:
    log = PartitionLog()
    log.append(records)
    log.advance_high_watermark()
    shard = ShareCoordinatorShard()
    shard.initialize(InitializeShareGroupStateRequest(key, 1, 0))
    leader = SharePartition(key, log, leader_epoch=1, broker=BrokerConfig())
    leader.recover(shard.read(leader.read_request())[0], 0)
    return leader


def _step(monitor: PurgatoryWakeupMonitor, leader: SharePartition, now: int) -> None:
    monitor.on_share_partition_step(leader, leader.log.high_watermark, now)


def _released(monitor: PurgatoryWakeupMonitor, leader: SharePartition, now: int, *, durable: bool = True) -> None:
    """m1 gives its records back (a released session); with ``durable`` the write is answered at ``now``."""
    leader.release_member("m1", now)
    _step(monitor, leader, now)  # in a write: not acquirable yet
    if durable:
        for pending in leader.take_writes():
            leader.complete_write(pending.write_id, WriteShareGroupStateResponse(leader.key), now)
        _step(monitor, leader, now)


def _waiting(min_bytes: int = 1) -> tuple[PurgatoryWakeupMonitor, ViolationSink, SharePartition]:
    """A fetch of m2 waits on a leader whose records m1 holds all."""
    sink = ViolationSink(1)
    monitor = PurgatoryWakeupMonitor(sink)
    leader = _leader()
    assert leader.acquire("m1", 10, 0)
    _step(monitor, leader, 0)
    monitor.on_share_fetch_waiting(1, 7, (leader,), min_bytes, 0)
    return monitor, sink, leader


def test_a_fetch_answered_when_released_records_are_durable_passes() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 100)  # woken at once
    assert sink.violations == []


def test_a_fetch_left_waiting_after_records_became_acquirable_is_a_violation() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 100 + WAKE_BOUND_MS)  # within the bound: fine
    assert sink.violations == []
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 100 + WAKE_BOUND_MS + 1)  # answered at MaxWaitMs, say
    assert [(v.invariant, v.state["since_ms"]) for v in sink.violations] == [("fetch-woken-when-acquirable", 100)]


def test_a_step_of_another_share_partition_past_the_bound_judges_a_fetch_still_waiting() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    other = _leader(OTHER)
    _step(monitor, other, 100 + WAKE_BOUND_MS)
    assert sink.violations == []
    _step(monitor, other, 100 + WAKE_BOUND_MS + 1)
    assert [v.invariant for v in sink.violations] == ["fetch-woken-when-acquirable"]
    _step(monitor, other, 500)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 500)
    assert len(sink.violations) == 1, "reported once"


def test_records_still_in_a_write_oblige_nothing() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100, durable=False)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 600)
    assert sink.violations == []


def test_fewer_acquirable_records_than_min_bytes_oblige_nothing() -> None:
    monitor, sink, leader = _waiting(min_bytes=6)  # 5 records in the log
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 6, 600)
    assert sink.violations == []


def test_a_fetch_lock_held_at_the_change_obliges_nothing() -> None:
    """The fetch holding the lock acquires the records itself (or hands the lock on, waking the others)."""
    monitor, sink, leader = _waiting()
    assert leader.maybe_acquire_fetch_lock(99)
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 600)
    assert sink.violations == []


def test_records_another_fetch_took_meanwhile_release_the_obligation() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    assert leader.acquire("m3", 10, 101)  # the other waiting fetch was woken first and took them all
    _step(monitor, leader, 101)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 600)
    assert sink.violations == []


def test_a_fetch_waiting_on_an_earlier_leader_of_the_key_is_not_judged_by_a_new_one() -> None:
    monitor, sink, _ = _waiting()
    successor = _leader()  # the key's next leader, with every record AVAILABLE
    _step(monitor, successor, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 600)
    assert sink.violations == []


def test_a_fetch_gone_with_its_broker_before_the_bound_is_forgotten() -> None:
    monitor, sink, leader = _waiting()
    _released(monitor, leader, 100)
    monitor.on_share_fetch_waiting(1, 7, (), 1, 105)  # the crash
    _step(monitor, _leader(OTHER), 600)
    assert sink.violations == []
