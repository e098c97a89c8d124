"""Share coordinator hosts in a running cluster: SC-8 housekeeping (re-snapshot idle keys, prune)."""

from __future__ import annotations

import collections

import pytest

from model.sim.cluster import Cluster
from model.sim.coordinator_host import ShareCoordinatorHost
from model.sim.runner import run_cluster
from scenarios import library


def _share_coordinator(cluster: Cluster) -> ShareCoordinatorHost:
    hosts = [host for broker in cluster.brokers.values() if broker.alive
             for host in broker.share_coordinators.values() if host.active]
    assert len(hosts) == 1  # share_coordinator_pruning has one __share_group_state partition
    return hosts[0]


def test_pruned_logs_are_replayed_from_their_log_start_and_the_faults_fired() -> None:
    result, cluster = run_cluster(library.get("share_coordinator_pruning"), 0, trace=True)
    assert result.verdict == "ok" and result.faults_fired == {"share_coordinator_failover": 3}
    kinds = collections.Counter(e.kind for e in cluster.trace.events)
    assert kinds["coordinator.prune"] >= 2 and kinds["coordinator.snapshot_cold"] >= 1
    loads = [e.fields["records"] for e in cluster.trace.events
             if e.kind == "coordinator.load" and e.fields["topic"] == "__share_group_state"]
    host = _share_coordinator(cluster)
    assert host.log.log_start_offset > 0 and loads[-1] < host.log.log_start_offset  # replay skipped the pruned


def test_a_reload_keeps_one_pair_of_housekeeping_timers() -> None:
    armed: list[int] = []

    def reload(cluster: Cluster) -> None:  # a write that could not be appended: rebuild the shard, load again
        _share_coordinator(cluster)._reload()

    def count(cluster: Cluster) -> None:
        host = _share_coordinator(cluster)
        armed.append(sum(t.active for t in host._housekeeping))

    def before_run(cluster: Cluster) -> None:
        for at_ms in (1_000, 1_300, 1_600):
            cluster.scheduler.timer_at(at_ms, reload, cluster)
        cluster.scheduler.timer_at(900, count, cluster)
        cluster.scheduler.timer_at(2_400, count, cluster)  # loaded again; before the failover at 2 500

    result, _ = run_cluster(library.get("share_coordinator_pruning"), 0, before_run=before_run)
    assert result.verdict == "ok" and armed == [2, 2]


def test_partitions_added_while_the_group_coordinator_cannot_write_are_still_initialized() -> None:
    """GC-2/GC-7 (E-1): a metadata image that reaches the group coordinator while its
    ``__consumer_offsets`` partition is below min.insync.replicas (or while it loads) is applied
    once it can write again, not dropped: the added partition is initialized, assigned, drained.
    (swarm seeds 1602676955076180695, 8718897958753302017, 7463339634874954772,
    1084558029861696624 and, while loading, 5700080134201294896 once left it uninitialized.)"""
    from pathlib import Path

    from scenarios.toml_format import loads

    base = (Path(library.__file__).parent / "library" / "admin_add_partitions.toml").read_text()
    # b1 leads __consumer_offsets-0 (group g's coordinator) at the start: cut it off its followers
    # from just before the partition is added (at 1 000 ms) until 1 500 ms. A second producer,
    # started once the producers' metadata (max age 10 s) knows the new partition, writes to it.
    scenario = loads(base + '''
[[producers]]
topic = "events"
records = 60
rate_per_s = 50
keys = 0
start_ms = 11000

[[faults.plan]]
at_ms = 900
kind = "network_partition"
duration_ms = 600
side_a = ["b1"]
side_b = ["b2", "b3"]
''')
    result, cluster = run_cluster(scenario, 0)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.metrics["quiescent_at_ms"] is not None
    shard = cluster.group_coordinator("g")
    assert shard is not None
    group = shard.share.group("g")
    assert group is not None
    assert {tp.partition for tp in group.initialized if tp.topic == "events"} == {0, 1, 2}
    assert cluster.controller.data("events", 2).log.bound(False) > 0  # the new partition had records


@pytest.mark.parametrize("seed", [
    1602676955076180695, 8718897958753302017, 7463339634874954772, 1084558029861696624,  # below min ISR
    5700080134201294896,  # still loading
])
def test_swarm_seeds_that_lost_an_added_partition_run_clean(seed: int) -> None:
    result, cluster = run_cluster(library.get("swarm"), seed)
    assert result.violations == [], [v.describe() for v in result.violations]
    shard = cluster.group_coordinator("g")
    assert shard is not None
    group = shard.share.group("g")
    assert group is not None
    assert len({tp for tp in group.initialized if tp.topic == "events"}) == cluster.controller.partition_count("events")
