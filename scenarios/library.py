"""The named scenarios: ``sharesim run NAME``.

* ``standard``: 3 brokers, topic "orders" with 6 partitions, one share group of
  6 consumers, 20 000 records, and a few failovers (a partition leadership
  move, a share coordinator failover, a group coordinator failover and a broker
  crash).
* ``swarm``: the same cluster; each seed draws its own fault plan.
* ``happy``: the same cluster, no faults.
* One small scenario per fault kind (named after the kind, e.g.
  ``consumer_pause``): 3 brokers, a 2-partition topic, 2 share consumers, a few
  hundred records, short timeouts, only that fault. The tests use them to
  check each fault's effect.

Every group reads from the earliest offset (``share.auto.offset.reset =
earliest``) so a record produced before the group's state exists is still
delivered: "every produced record" is then what a run is judged against.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Final

from model.sim.faults import FAULT_KINDS, FaultEvent
from model.sim.rng import Distribution
from scenarios.spec import (
    AckPolicy,
    ClusterSpec,
    ConsumerSpec,
    FaultsSpec,
    GroupSpec,
    ProducerSpec,
    Scenario,
    SwarmSpec,
    TopicSpec,
)

EARLIEST: Final = {"group.share.auto.offset.reset": "earliest"}


# -- the standard cluster -------------------------------------------------------------------------


def _standard_base(name: str, description: str) -> Scenario:
    return Scenario(
        name=name,
        description=description,
        topics=(TopicSpec("orders", partitions=6),),
        groups=(GroupSpec("order-processors", "share", ("orders",), config=EARLIEST),),
        consumers=(
            ConsumerSpec(
                "order-processors",
                count=6,
                processing=Distribution.lognormal(2, 0.5, max_ms=50),
                ack=AckPolicy(accept=0.98, release=0.015, reject=0.005),
                poison_rate=0.0005,
                max_poll_records=200,
            ),
        ),
        producers=(ProducerSpec("orders", records=20_000, rate_per_s=1_000, keys=0),),
        cluster=ClusterSpec(brokers=3),
        duration_ms=40_000,
        heal_ms=120_000,
    )


def standard() -> Scenario:
    return replace(
        _standard_base("standard", "3 brokers, orders x6, 6 share consumers, 20 000 records, a few failovers"),
        faults=FaultsSpec(
            plan=(
                FaultEvent(5_000, "leadership_move", "orders-0"),
                FaultEvent(10_000, "share_coordinator_failover", "order-processors"),
                FaultEvent(15_000, "group_coordinator_failover", "order-processors"),
                FaultEvent(20_000, "broker_crash", "b2", duration_ms=8_000),
            )
        ),
    )


def swarm() -> Scenario:
    return replace(
        _standard_base("swarm", "the standard cluster; each seed draws its own mix of fault kinds and rates"),
        faults=FaultsSpec(swarm=SwarmSpec()),
    )


def happy() -> Scenario:
    """No faults, every record accepted: each is delivered and accepted exactly once."""
    base = _standard_base("happy", "the standard cluster without faults; every record accepted")
    return replace(base, consumers=tuple(replace(c, ack=AckPolicy(), poison_rate=0.0) for c in base.consumers),
                   duration_ms=25_000)


# -- one small scenario per fault kind --------------------------------------------------------------

# Short timeouts so a fault's effect shows within seconds of simulated time.
SMALL_CLUSTER_CONFIG: Final = {
    "group.share.min.session.timeout.ms": 1_000,
    "group.share.session.timeout.ms": 3_000,
    "group.share.min.heartbeat.interval.ms": 100,
    "group.share.heartbeat.interval.ms": 500,
    "group.share.min.record.lock.duration.ms": 1_000,
    "group.share.record.lock.duration.ms": 2_000,
    "group.share.delivery.count.limit": 3,
}


def small(name: str, description: str = "", *, faults: tuple[FaultEvent, ...] = (), records: int = 400,
          poison_rate: float = 0.0, consumers: int = 2, duration_ms: int = 6_000) -> Scenario:
    """3 brokers, topic "events" x2, share group "g" of ``consumers``, ``records`` at 200/s."""
    return Scenario(
        name=name,
        description=description,
        topics=(TopicSpec("events", partitions=2),),
        groups=(GroupSpec("g", "share", ("events",), config=EARLIEST),),
        consumers=(
            ConsumerSpec("g", count=consumers, processing=Distribution.constant(2), poison_rate=poison_rate,
                         max_poll_records=50),
        ),
        producers=(ProducerSpec("events", records=records, rate_per_s=200),),
        cluster=ClusterSpec(brokers=3, config=SMALL_CLUSTER_CONFIG),
        faults=FaultsSpec(plan=faults),
        duration_ms=duration_ms,
        heal_ms=30_000,
    )


def _fault_scenarios() -> dict[str, Callable[[], Scenario]]:
    # Each injects only its own kind, early enough that records are still flowing.
    plans: dict[str, tuple[tuple[FaultEvent, ...], dict[str, object]]] = {
        "broker_crash": ((FaultEvent(1_000, "broker_crash", "b1", duration_ms=2_000),), {}),
        "leadership_move": ((FaultEvent(1_000, "leadership_move", "events-0"),), {}),
        "group_coordinator_failover": ((FaultEvent(1_000, "group_coordinator_failover", "g"),), {}),
        "share_coordinator_failover": ((FaultEvent(1_000, "share_coordinator_failover", "g"),), {}),
        "network_partition": (
            (FaultEvent(1_000, "network_partition", duration_ms=4_000, side_a=("c1",), side_b=("b1", "b2", "b3")),),
            {"duration_ms": 10_000},
        ),
        "message_loss": (
            (FaultEvent(500, "message_loss", duration_ms=3_000, kinds=("ShareFetchResponse",), probability=0.3),),
            {},
        ),
        "message_delay": (
            (FaultEvent(500, "message_delay", duration_ms=3_000, extra=Distribution.uniform(50, 400)),),
            {},
        ),
        "consumer_crash": ((FaultEvent(1_000, "consumer_crash", "c1"),), {}),
        "consumer_pause": ((FaultEvent(1_000, "consumer_pause", "c1", duration_ms=5_000),), {"duration_ms": 10_000}),
        "slow_processing": ((FaultEvent(500, "slow_processing", "c1", duration_ms=2_000, extra_ms=100),), {}),
        "admin_alter_offsets": (
            (FaultEvent(4_000, "admin_alter_offsets", "g", params=(("offset", "earliest"), ("topic", "events"))),),
            {"duration_ms": 8_000},
        ),
        "admin_delete_group": ((FaultEvent(4_000, "admin_delete_group", "g"),), {"duration_ms": 8_000}),
        "admin_add_partitions": ((FaultEvent(1_000, "admin_add_partitions", "events", params=(("add", 1),)),), {}),
    }
    out: dict[str, Callable[[], Scenario]] = {}
    for kind, (plan, extra) in plans.items():
        summary = FAULT_KINDS[kind].summary

        def build(kind: str = kind, plan: tuple[FaultEvent, ...] = plan, extra: dict[str, object] = extra,
                  summary: str = summary) -> Scenario:
            duration = extra.get("duration_ms", 6_000)
            assert isinstance(duration, int)
            return small(kind, f"only {kind}: {summary}", faults=plan, duration_ms=duration)

        out[kind] = build
    return out


def poison() -> Scenario:
    """No faults; a tenth of the records are poison: each ends ARCHIVED after exactly the limit (SP-5)."""
    return small("poison", "poison records end ARCHIVED at the delivery-count limit, no failover",
                 poison_rate=0.1, records=200)


def small_happy() -> Scenario:
    return small("small", "the small cluster without faults")


def consumer_group() -> Scenario:
    """KIP-848: the standard cluster consumed by a consumer group of 6 static members, with failovers."""
    base = _standard_base("consumer_group", "KIP-848 consumer group of 6 static members on orders x6, failovers")
    return replace(
        base,
        groups=(GroupSpec("order-readers", "consumer", ("orders",)),),
        consumers=(ConsumerSpec("order-readers", count=6, processing=Distribution.lognormal(2, 0.5, max_ms=50),
                                max_poll_records=200, static=True),),
        faults=FaultsSpec(plan=(
            FaultEvent(5_000, "leadership_move", "orders-0"),
            FaultEvent(12_000, "group_coordinator_failover", "order-readers"),
            FaultEvent(20_000, "consumer_pause", "c2", duration_ms=2_000),
        )),
    )


# -- the library ----------------------------------------------------------------------------------

LIBRARY: Final[dict[str, Callable[[], Scenario]]] = {
    "standard": standard,
    "swarm": swarm,
    "happy": happy,
    "small": small_happy,
    "poison": poison,
    "consumer_group": consumer_group,
    **_fault_scenarios(),
}


class UnknownScenario(KeyError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name

    def __str__(self) -> str:
        return f"unknown scenario {self.name!r}; known: {', '.join(names())}"


def names() -> list[str]:
    return sorted(LIBRARY)


def get(name: str) -> Scenario:
    """The named scenario (validated); ``UnknownScenario`` lists the known names."""
    build = LIBRARY.get(name)
    if build is None:
        raise UnknownScenario(name)
    return build().validate()
