"""Share coordinator throughput: WriteShareGroupState applied per second, and replay (SC-6) records per second.

The workload is a set of share-partitions, each with a leader that keeps an
in-flight window of about 200 offsets and writes small changes, as SP-9 does:
acknowledge or release a few offsets, and now and then move the start offset.
The limit of updates per snapshot is the default, 500.
"""

from __future__ import annotations

import random
import time

from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_records import ShareSnapshot
from model.core.share_state import (
    InitializeShareGroupStateRequest,
    RecordState,
    SharePartitionKey,
    StateBatch,
    WriteShareGroupStateRequest,
)

KEYS = 100
WRITES = 100_000
WINDOW = 200


def _workload(rng: random.Random, keys: list[SharePartitionKey]) -> list[WriteShareGroupStateRequest]:
    """Small writes over a moving window per key; counts rise, so SC-4 keeps the new batches."""
    start = dict.fromkeys(keys, 0)
    counts: dict[SharePartitionKey, dict[int, int]] = {key: {} for key in keys}
    requests = []
    for _ in range(WRITES):
        key = keys[rng.randrange(len(keys))]
        if rng.random() < 0.05:  # the SPSO moves past acknowledged records
            start[key] += rng.randint(1, 40)
            requests.append(WriteShareGroupStateRequest(key, 0, 0, start[key], ()))
            continue
        first = start[key] + rng.randrange(WINDOW)
        last = first + rng.randint(0, 9)
        count = max(counts[key].get(o, 0) for o in range(first, last + 1)) + 1
        for offset in range(first, last + 1):
            counts[key][offset] = count
        state = RecordState.ACKNOWLEDGED if rng.random() < 0.7 else RecordState.AVAILABLE
        requests.append(WriteShareGroupStateRequest(key, 0, 0, -1, (StateBatch(first, last, state, count),)))
    return requests


def main() -> None:
    rng = random.Random(932)
    keys = [SharePartitionKey("bench-group", f"topic-{i % 10}", i // 10) for i in range(KEYS)]
    requests = _workload(rng, keys)

    shard = ShareCoordinatorShard(snapshot_update_records_per_snapshot=500)
    for key in keys:
        shard.initialize(InitializeShareGroupStateRequest(key, 0, 0))
    started = time.perf_counter()
    for request in requests:
        shard.write(request)
    write_s = time.perf_counter() - started

    batches = sum(len(s.state_batches) for s in map(shard.state, shard.keys()) if s is not None) / KEYS
    snapshots = sum(isinstance(r, ShareSnapshot) for r in shard.records)
    print(f"   writes applied:   {WRITES / write_s:>10,.0f} writes/s  ({WRITES:,} writes, {KEYS} keys, limit 500)")
    print(f"                     {snapshots:,} snapshots in {len(shard.records):,} records; ~{batches:.0f} batches/key")

    started = time.perf_counter()
    replayed = ShareCoordinatorShard.replay(shard.records, 500)
    replay_s = time.perf_counter() - started
    assert all(replayed.state(k) == shard.state(k) for k in keys)
    print(f"   replay:           {len(shard.records) / replay_s:>10,.0f} records/s ({len(shard.records):,} records)")

    started = time.perf_counter()
    rounds = 0
    while shard.resnapshot_idle():
        shard.prune(shard.prune_offset())
        rounds += 1
    shard.prune(shard.prune_offset())
    prune_s = time.perf_counter() - started
    print(f"   re-snapshot+prune: {prune_s * 1000:>9,.1f} ms ({rounds} rounds) → {len(shard.records):,} records kept")


if __name__ == "__main__":
    main()
