"""Benchmark: share-partition leader throughput, acquire + acknowledge.

Two workloads, each over 1,000,000 records fetched 500 at a time by one
consumer, every durable write answered at once with success (the share
coordinator is not in the loop; this measures the leader alone):

* batch: every fetch is accepted as one AcknowledgementBatch.
* messy: per fetch, 10% of the records are released (scattered, acknowledged
  with one type per offset) and 2% are left unacknowledged until their
  acquisition lock times out; released and expired records are fetched again
  and accepted, so every record ends acknowledged.

Prints records/s, best of 3 (time.perf_counter). Run: ``python -m bench.share_partition``
or ``python bench/share_partition.py``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from model.core.config import BrokerConfig
from model.core.log import PartitionLog
from model.core.share_partition import AcknowledgementBatch, SharePartition
from model.core.share_state import ReadShareGroupStateResponse, SharePartitionKey, WriteShareGroupStateResponse

RECORDS = 1_000_000
FETCH = 500
KEY = SharePartitionKey("bench", "topic", 0)
OK = WriteShareGroupStateResponse(KEY)
ACCEPT, RELEASE = 1, 2
LOCK_MS = 30_000


def _leader(records: int) -> SharePartition:
    log = PartitionLog()
    for _ in range(records // FETCH):  # producer batches of 500 (Kafka acquires whole batches)
        log.append(FETCH)
    log.advance_high_watermark()
    # The implementation's default in-flight bound (2000); the KIP default of 200 would cap a fetch at 200.
    broker = BrokerConfig(partition_max_record_locks=2000)
    sp = SharePartition(KEY, log, leader_epoch=1, broker=broker)
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=1, start_offset=0), now_ms=0)
    return sp


def _complete(sp: SharePartition, now_ms: int) -> None:
    for w in sp.take_writes():
        sp.complete_write(w.write_id, OK, now_ms)


def run_batch(records: int = RECORDS) -> int:
    """Acquire 500, accept the acquired ranges, write; until every record is acknowledged."""
    sp = _leader(records)
    acquire, acknowledge, take, complete = sp.acquire, sp.acknowledge, sp.take_writes, sp.complete_write
    now = 0
    done = 0
    while sp.spso < records:
        acquired = acquire("m1", FETCH, now)
        batches = [AcknowledgementBatch(a.first_offset, a.last_offset, (ACCEPT,)) for a in acquired]
        acknowledge("m1", batches, now)
        for w in take():
            complete(w.write_id, OK, now)
        done += sum(a.last_offset - a.first_offset + 1 for a in acquired)
        now += 1
    return done


def run_messy(records: int = RECORDS, seed: int = 7) -> int:
    """10% released, 2% left to time out; redeliveries are accepted."""
    rng = random.Random(seed)
    sp = _leader(records)
    now = 0
    delivered = 0
    while sp.spso < records:
        acquired = sp.acquire("m1", FETCH, now)
        batches = []
        for a in acquired:
            size = a.last_offset - a.first_offset + 1
            delivered += size
            if a.delivery_count > 1:  # a redelivery: accept it
                batches.append(AcknowledgementBatch(a.first_offset, a.last_offset, (ACCEPT,)))
                continue
            types = [ACCEPT] * size
            for k in rng.sample(range(size), size // 10):
                types[k] = RELEASE
            timeouts = set(rng.sample(range(size), size // 50))
            # Offsets left to time out are simply not acknowledged: split the batch around them.
            start = None
            for k in range(size + 1):
                if k < size and k not in timeouts:
                    if start is None:
                        start = k
                    continue
                if start is not None:
                    run = types[start:k]
                    first = a.first_offset + start
                    last = a.first_offset + k - 1
                    if all(t == ACCEPT for t in run):
                        batches.append(AcknowledgementBatch(first, last, (ACCEPT,)))
                    else:
                        batches.append(AcknowledgementBatch(first, last, tuple(run)))
                    start = None
        if batches:
            sp.acknowledge("m1", batches, now)
        _complete(sp, now)
        now += 100
        deadline = sp.next_lock_deadline_ms()
        if deadline is not None and (not acquired or deadline <= now):
            # Time passes to the next lock deadline when nothing else is fetchable.
            now = max(now, deadline)
            sp.expire_locks(now)
            _complete(sp, now)
    return delivered


def best_of(run: Callable[[], int], repeat: int = 3) -> tuple[float, int]:
    best = float("inf")
    count = 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
    return best, count


def main() -> None:
    seconds, count = best_of(run_batch)
    assert count == RECORDS, count
    print(f"batch: {RECORDS:,} records acquired + accepted in fetches of {FETCH}: "
          f"{RECORDS / seconds:,.0f} records/s ({seconds * 1000:.0f} ms, best of 3)")
    seconds, delivered = best_of(run_messy)
    print(f"messy (10% released, 2% lock timeouts): {RECORDS / seconds:,.0f} records/s "
          f"({delivered:,} deliveries, {seconds * 1000:.0f} ms, best of 3)")


if __name__ == "__main__":
    main()
