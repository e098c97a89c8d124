"""The share-group coordinator under the protocol switch, end to end (issue 24): ``kip_share_group`` runs the
KIP's reading (``"sharesim.protocol" = "kip"``: groups start at epoch 0, a new group coordinator bumps every
group epoch, the SimpleAssignor of 003's table); the same scenario with the default ``kafka`` runs Kafka trunk's
(groups start at epoch 1 so the first member gets 2, KAFKA-20268; no bump on load; trunk's assignor)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from invariants.sink import Monitor, ViolationSink
from model.core.group.coordinator import GroupCoordinatorShard
from model.core.group.share_records import ShareGroupMetadata
from model.sim.faults import swarm_config
from model.sim.runner import run_cluster
from scenarios import library


class _Epochs(Monitor):
    """The share-group epochs a run committed, and the member epochs its coordinators held."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.committed: list[int] = []
        self.member_epochs: set[int] = set()

    def on_group_records_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        self.committed += [r.epoch for r in records if isinstance(r, ShareGroupMetadata)]

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard,
                                  group_id: str | None, now_ms: int) -> None:
        for gid in shard.share.group_ids():
            group = shard.share.group(gid)
            if group is not None:
                self.member_epochs |= {m.member_epoch for m in group.members.values()}


@pytest.mark.parametrize(("protocol", "first_epoch"), [("kip", 1), ("kafka", 2)])
def test_kip_share_group_runs_clean_under_either_protocol(protocol: str, first_epoch: int) -> None:
    scenario = library.get("kip_share_group")
    scenario = replace(scenario, cluster=replace(
        scenario.cluster, config={**scenario.cluster.config, "sharesim.protocol": protocol}))
    epochs = _Epochs()
    result, _ = run_cluster(scenario, 1, extra_monitors=(epochs,))
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"group_coordinator_failover": 1, "consumer_crash": 1}
    assert result.metrics["records_unresolved"] == 0
    assert epochs.committed[0] == first_epoch  # the first member's join
    assert (1 in epochs.member_epochs) == (protocol == "kip")  # trunk: epoch 1 is the empty initial target
    # The committed epochs never go back.
    assert epochs.committed == sorted(epochs.committed)


def test_swarm_config_draws_both_protocols() -> None:
    """``swarm_config`` draws ``sharesim.protocol`` per seed, so its campaigns swarm the KIP's reading too."""
    scenario = library.get("swarm_config")
    assert scenario.faults.swarm is not None
    drawn = {swarm_config(seed, scenario.faults.swarm.config)["sharesim.protocol"] for seed in range(20)}
    assert drawn == {"kafka", "kip"}
