"""Share coordinator hosts in a running cluster: SC-8 housekeeping (re-snapshot idle keys, prune)."""

from __future__ import annotations

import collections

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
