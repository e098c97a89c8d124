"""Benchmark: ShareGroupHeartbeats handled per second by the share-group coordinator.

A 200-member share group on two topics (600 partitions, SimpleAssignor) under
churn: every heartbeat interval two members leave, two new ones join and one
member changes its subscription, and every member heartbeats. The share
coordinator answers every InitializeShareGroupState at once. The figure is
heartbeats handled per second of coordinator time (``ShareGroupManager.heartbeat``
alone) and per second of the whole loop (clients included).
"""

from __future__ import annotations

import random
import time

from bench._group_churn import CHURN_PER_ROUND, GROUP, MEMBERS, ROUNDS, TOPICS, member_ids, topics_metadata
from model.core.config import BrokerConfig
from model.core.group.result import CoordinatorResult
from model.core.group.share_group import ShareGroupManager
from model.core.group.share_member import ShareMember
from model.core.group.share_messages import ShareGroupHeartbeatResponse
from model.core.share_state import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse


def run(members: int = MEMBERS, rounds: int = ROUNDS, churn: int = CHURN_PER_ROUND, seed: int = 7) -> dict[str, float]:
    rnd = random.Random(seed)
    config = BrokerConfig()
    mgr = ShareGroupManager(config, topics_metadata(), member_ids())
    clients = [ShareMember(GROUP, sorted(TOPICS)) for _ in range(members)]
    now = 0
    heartbeats = 0
    records = 0
    coordinator_s = 0.0

    def initialize(result: CoordinatorResult) -> None:
        nonlocal records
        for out in result.outputs:
            if isinstance(out, InitializeShareGroupStateRequest):
                done = mgr.on_initialize_response(InitializeShareGroupStateResponse(out.key), now)
                records += len(done.records)

    def exchange(client: ShareMember, leave: bool = False) -> None:
        nonlocal heartbeats, records, coordinator_s
        req = client.leave() if leave else client.heartbeat()
        started = time.perf_counter()
        result = mgr.heartbeat(req, now)
        coordinator_s += time.perf_counter() - started
        heartbeats += 1
        records += len(result.records)
        assert isinstance(result.response, ShareGroupHeartbeatResponse)
        client.on_response(result.response)
        initialize(result)

    wall_started = time.perf_counter()
    for _ in range(rounds):
        now += config.share_heartbeat_interval_ms
        initialize(mgr.expire(now))
        for _ in range(churn):
            exchange(clients.pop(rnd.randrange(len(clients))), leave=True)
            clients.append(ShareMember(GROUP, sorted(TOPICS)))
        rnd.choice(clients).subscribe(rnd.choice([["orders"], ["events"], sorted(TOPICS)]))
        for client in clients:
            exchange(client)
    wall_s = time.perf_counter() - wall_started
    group = mgr.group(GROUP)
    assert group is not None and len(group.members) == members
    return {
        "heartbeats": heartbeats,
        "records": records,
        "coordinator_heartbeats_per_s": heartbeats / coordinator_s,
        "loop_heartbeats_per_s": heartbeats / wall_s,
        "group_epoch": group.group_epoch,
    }


def main() -> None:
    figures = run()
    print(
        f"share group, {MEMBERS} members, {sum(TOPICS.values())} partitions, churn {CHURN_PER_ROUND}/interval: "
        f"{figures['coordinator_heartbeats_per_s']:,.0f} heartbeats/s (coordinator), "
        f"{figures['loop_heartbeats_per_s']:,.0f} heartbeats/s (with clients); "
        f"{figures['heartbeats']:,.0f} heartbeats, {figures['records']:,.0f} records, "
        f"group epoch {figures['group_epoch']:.0f}"
    )


if __name__ == "__main__":
    main()
