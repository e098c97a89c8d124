"""Benchmark: ConsumerGroupHeartbeats handled per second by the KIP-848 coordinator.

A 200-member consumer group on two topics (600 partitions, uniform assignor)
under churn: every heartbeat interval two members leave and two new ones join,
and every member heartbeats (acknowledging revocations at once). After a
warm-up (the 200 joins), the figure is
heartbeats handled per second of coordinator time (``ConsumerGroupManager.heartbeat``
alone) and per second of the whole loop (clients included).
"""

from __future__ import annotations

import random
import time

from bench._group_churn import CHURN_PER_ROUND, GROUP, MEMBERS, ROUNDS, TOPICS, member_ids, topics_metadata
from model.core.config import BrokerConfig
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_member import ConsumerMember
from model.core.group.consumer_messages import ConsumerGroupHeartbeatResponse

WARMUP_ROUNDS = 5  # the 200 joins and their reconciliation, not measured


def run(
    members: int = MEMBERS, rounds: int = ROUNDS, churn: int = CHURN_PER_ROUND, seed: int = 7
) -> dict[str, float]:
    rnd = random.Random(seed)
    config = BrokerConfig()
    mgr = ConsumerGroupManager(config, topics_metadata(), member_ids())
    clients = [ConsumerMember(GROUP, sorted(TOPICS), rebalance_timeout_ms=60_000) for _ in range(members)]
    now = 0
    heartbeats = 0
    records = 0
    coordinator_s = 0.0

    def exchange(client: ConsumerMember) -> None:
        nonlocal heartbeats, records, coordinator_s
        req = client.build_heartbeat()
        if req is None:
            return
        started = time.perf_counter()
        result = mgr.heartbeat(req, now)
        coordinator_s += time.perf_counter() - started
        heartbeats += 1
        records += len(result.records)
        if isinstance(result.response, ConsumerGroupHeartbeatResponse):
            client.on_response(result.response)

    wall_started = time.perf_counter()
    for round_ in range(WARMUP_ROUNDS + rounds):
        if round_ == WARMUP_ROUNDS:
            heartbeats, records, coordinator_s = 0, 0, 0.0
            wall_started = time.perf_counter()
        now += config.consumer_heartbeat_interval_ms
        mgr.expire(now)
        for _ in range(churn if round_ >= WARMUP_ROUNDS else 0):
            leaving = clients.pop(rnd.randrange(len(clients)))
            leaving.leave()
            exchange(leaving)
            clients.append(ConsumerMember(GROUP, sorted(TOPICS), rebalance_timeout_ms=60_000))
        for client in clients:
            exchange(client)
            if client.heartbeat_now:
                exchange(client)  # acknowledge a revocation at once
    wall_s = time.perf_counter() - wall_started
    group = mgr.group(GROUP)
    return {
        "heartbeats": heartbeats,
        "records": records,
        "group_epoch": group.group_epoch if group else 0,
        "coordinator_heartbeats_per_s": heartbeats / coordinator_s,
        "loop_heartbeats_per_s": heartbeats / wall_s,
    }


def main() -> None:
    figures = run()
    print(
        f"   consumer group, {MEMBERS} members, {sum(TOPICS.values())} partitions, "
        f"{CHURN_PER_ROUND} leave + {CHURN_PER_ROUND} join per {BrokerConfig().consumer_heartbeat_interval_ms} ms:"
    )
    print(
        f"   {figures['coordinator_heartbeats_per_s']:,.0f} heartbeats/s (coordinator), "
        f"{figures['loop_heartbeats_per_s']:,.0f} heartbeats/s (with clients); "
        f"{figures['heartbeats']:,} heartbeats, {figures['records']:,} records, group epoch {figures['group_epoch']}"
    )


if __name__ == "__main__":
    main()
