"""Record batches end to end in a run: producers cap their batches at ``batch_size``, the log keeps the
boundaries, consumers in batch_optimized mode acquire whole batches, a record_limit consumer cuts them
(share.acquire.mode), and a group's own delivery-count limit reaches its share-partitions. The swarms
that carry these settings reach them."""

from __future__ import annotations

from dataclasses import replace

from invariants.monitors import Monitor, ViolationSink
from model.core.share_partition import AcquiredRecords, SharePartition
from model.core.share_state import SharePartitionKey
from model.sim.runner import run_cluster
from scenarios import library

SEED = 1


class _Acquisitions(Monitor):
    """Every acquisition of the run, per key, and the share-partitions' delivery-count limits seen."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(SEED))
        self.acquired: list[tuple[SharePartitionKey, str, list[AcquiredRecords]]] = []
        self.limits: set[int] = set()

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        self.acquired.append((key, member_id, list(acquired)))

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        self.limits.add(partition.delivery_count_limit)


def _batches(cluster: object, topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    controller = cluster.controller  # type: ignore[attr-defined]
    out = {}
    for p in range(partitions):
        log = controller.data(topic, p).log
        out[p] = log.batches_in(0, log.log_end_offset - 1)
    return out


def test_the_swarm_writes_capped_batches_and_acquires_them_whole_or_cut_by_record_limit() -> None:
    watch = _Acquisitions()
    result, cluster = run_cluster(library.get("swarm"), SEED, extra_monitors=[watch])
    assert result.ok, [v.describe() for v in result.violations]
    batches = _batches(cluster, "events", 2)
    sizes = [last - first + 1 for runs in batches.values() for first, last in runs]
    assert max(sizes) == 4 and any(1 < s < 4 for s in sizes)  # batch_size = 4 caps, linger fills
    record_limit = {c.member.member_id for c in cluster.share_consumers.values()
                    if c.settings.acquire_mode == "record_limit"}
    assert record_limit
    cut = whole = 0
    for key, member, acquired in watch.acquired:
        log = cluster.controller.data("events", key.partition).log
        firsts = [a for a in acquired if a.delivery_count == 1]
        if not firsts:
            continue
        ends_in_batch = firsts[-1].last_offset < log.batch_last(firsts[-1].last_offset)
        if member in record_limit:
            assert sum(a.last_offset - a.first_offset + 1 for a in acquired) <= 3  # a hard limit
            cut += ends_in_batch
        else:
            assert not ends_in_batch, (key, member, acquired)  # first deliveries end at a batch end
            whole += 1
    assert cut > 0 and whole > 0


def test_a_groups_own_delivery_count_limit_reaches_its_share_partitions_in_swarm_small() -> None:
    watch = _Acquisitions()
    result, cluster = run_cluster(library.get("swarm_small"), SEED, extra_monitors=[watch])
    assert result.ok, [v.describe() for v in result.violations]
    assert cluster.broker_config.delivery_count_limit == 3 and watch.limits == {4}


def test_the_kip_protocol_keeps_max_poll_records_a_hard_limit_in_a_run() -> None:
    scenario = library.get("swarm")
    config = dict(scenario.cluster.config) | {"sharesim.protocol": "kip"}
    scenario = replace(scenario, cluster=replace(scenario.cluster, config=config))
    watch = _Acquisitions()
    result, _ = run_cluster(scenario, SEED, extra_monitors=[watch])
    assert result.ok, [v.describe() for v in result.violations]
    assert watch.acquired
    assert all(sum(a.last_offset - a.first_offset + 1 for a in acquired) <= 20 for _, _, acquired in watch.acquired)
