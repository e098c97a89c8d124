"""The controller: replica assignment, elections and leader epochs, metadata publication,
broker crashes and restarts, leadership moves, added partitions."""

from __future__ import annotations

import networkx as nx
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from model.sim.controller import Controller, broker_node
from model.sim.network import Network
from model.sim.protocol import SHARE_STATE_TOPIC, ClusterMetadata
from model.sim.rng import Distribution, RandomStreams
from model.sim.timers import Scheduler


class FakeBroker:
    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.images: list[ClusterMetadata] = []
        self.crashes = 0
        self.restarts = 0

    def on_metadata(self, metadata: ClusterMetadata) -> None:
        self.images.append(metadata)

    def crash(self) -> None:
        self.crashes += 1

    def restart(self) -> None:
        self.restarts += 1


def make(brokers: int = 3, racks: dict[int, str] | None = None, rf: int = 3) -> tuple[Scheduler, Controller,
                                                                                       dict[int, FakeBroker]]:
    sched = Scheduler()
    streams = RandomStreams(3)
    graph = nx.Graph()
    graph.add_nodes_from(broker_node(b) for b in range(1, brokers + 1))
    net = Network(sched, graph, streams)
    ctl = Controller(sched, net, streams, broker_ids=list(range(1, brokers + 1)), latency=Distribution.constant(1),
                     replication_factor=rf, min_insync_replicas=2, racks=racks)
    fakes = {b: FakeBroker(b) for b in range(1, brokers + 1)}
    for fake in fakes.values():
        ctl.register_broker(fake)
    return sched, ctl, fakes


def test_round_robin_assignment_and_first_leaders() -> None:
    _, ctl, fakes = make()
    ctl.create_topic("T", 4)
    replicas = [ctl.partitions[("T", p)].replicas for p in range(4)]
    assert replicas == [(1, 2, 3), (2, 3, 1), (3, 1, 2), (1, 2, 3)]
    assert [ctl.partitions[("T", p)].leader for p in range(4)] == [1, 2, 3, 1]
    assert all(ctl.partitions[("T", p)].leader_epoch == 1 for p in range(4))
    md = ctl.metadata
    assert md.version == 1 and md.partition_count("T") == 4 and md.topic_ids["T"] == "T-id"
    assert all(f.images == [md] for f in fakes.values())  # every broker at once


def test_racks_spread_replicas() -> None:
    _, ctl, _ = make(brokers=4, racks={1: "a", 2: "a", 3: "b", 4: "b"}, rf=2)
    ctl.create_topic("T", 4)
    for p in range(4):
        a, b = ctl.partitions[("T", p)].replicas
        assert ctl.racks[a] != ctl.racks[b]


def test_crash_moves_leaders_and_restart_rejoins_after_catching_up() -> None:
    sched, ctl, fakes = make()
    ctl.create_topic("T", 3)
    assert ctl.crash_broker(1)
    assert not ctl.crash_broker(1)
    assert fakes[1].crashes == 1 and ctl.network.is_down("b1")
    for p in range(3):
        state = ctl.partitions[("T", p)]
        assert 1 not in state.isr and state.leader in (2, 3)
    assert ctl.partitions[("T", 0)].leader_epoch == 2  # it led T-0
    assert ctl.partitions[("T", 1)].leader_epoch == 1  # T-1 kept its leader
    assert len(fakes[1].images) == 1 and len(fakes[2].images) == 2  # a dead broker hears nothing
    assert ctl.restart_broker(1)
    assert fakes[1].restarts == 1 and not ctl.network.is_down("b1")
    assert all(1 not in ctl.partitions[("T", p)].isr for p in range(3))
    sched.run(until=ctl.catchup_ms + 1)
    assert all(ctl.partitions[("T", p)].isr == ctl.partitions[("T", p)].replicas for p in range(3))
    assert fakes[1].images[-1] == ctl.metadata


def test_the_last_isr_member_stays_and_leads_again_on_restart() -> None:
    _, ctl, _ = make()
    ctl.create_topic("T", 1)
    for b in (1, 2, 3):
        ctl.crash_broker(b)
    state = ctl.partitions[("T", 0)]
    assert state.leader == -1 and state.isr == (3,)  # no unclean election
    assert ctl.metadata.leader_of("T", 0).leader == -1  # type: ignore[union-attr]
    ctl.restart_broker(1)
    assert state.leader == -1  # 1 is not in the ISR: it must catch up first
    ctl.restart_broker(3)
    assert state.leader == 3 and state.leader_epoch == 4  # 1 → 2 → 3 → (none) → 3 again


def test_move_leadership() -> None:
    _, ctl, _ = make()
    ctl.create_topic("T", 1)
    state = ctl.partitions[("T", 0)]
    assert ctl.move_leadership("T", 0)
    assert state.leader == 2 and state.leader_epoch == 2
    assert ctl.move_leadership("T", 0, to=1)
    assert state.leader == 1 and state.leader_epoch == 3
    assert not ctl.move_leadership("T", 0, to=1)  # already the leader
    ctl.crash_broker(3)
    assert not ctl.move_leadership("T", 0, to=3)  # not alive
    ctl.crash_broker(2)
    assert not ctl.move_leadership("T", 0)  # no other ISR replica
    assert ctl.leader_changes == 3  # the first election and two moves
    assert ctl.metadata.leader_of("T", 0).leader_epoch == state.leader_epoch  # type: ignore[union-attr]


def test_add_partitions_and_internal_logs() -> None:
    _, ctl, _ = make()
    ctl.create_topic(SHARE_STATE_TOPIC, 2, publish=False)
    ctl.create_topic("T", 1)
    ctl.add_partitions("T", 2)
    assert ctl.metadata.partition_count("T") == 3 and ctl.partition_count("T") == 3
    assert ctl.data("T", 2).log.high_watermark == 0
    assert ctl.log(SHARE_STATE_TOPIC, 1).committed == []
    assert ctl.data_topics() == ["T"]


class ControllerMachine(RuleBasedStateMachine):
    """Any crashes, restarts, moves and time: a leader is alive and in the ISR (or -1); the ISR
    is a non-empty subset of the replicas; every leader change raises the leader epoch, which
    never goes down; the published metadata is the controller's state; logs follow."""

    def __init__(self) -> None:
        super().__init__()
        self.sched, self.ctl, self.fakes = make(brokers=4, rf=3)
        self.ctl.create_topic("T", 4)
        self.last = {key: (s.leader, s.leader_epoch) for key, s in self.ctl.partitions.items()}

    @rule(b=st.integers(1, 4))
    def crash(self, b: int) -> None:
        self.ctl.crash_broker(b)

    @rule(b=st.integers(1, 4))
    def restart(self, b: int) -> None:
        self.ctl.restart_broker(b)

    @rule(p=st.integers(0, 3), to=st.none() | st.integers(1, 4))
    def move(self, p: int, to: int | None) -> None:
        self.ctl.move_leadership("T", p, to)

    @rule(ms=st.integers(1, 1_000))
    def time_passes(self, ms: int) -> None:
        self.sched.run(until=self.sched.now_ms + ms)

    @invariant()
    def elections_are_sound(self) -> None:
        md = self.ctl.metadata
        for key, s in self.ctl.partitions.items():
            assert s.isr and set(s.isr) <= set(s.replicas)
            assert s.leader == -1 or (s.leader in s.isr and s.leader in self.ctl.alive)
            if s.leader == -1:
                assert not any(b in self.ctl.alive for b in s.isr)
            leader, epoch = self.last[key]
            assert s.leader_epoch >= epoch
            if s.leader != leader and s.leader != -1:
                assert s.leader_epoch > epoch
            if s.leader == leader:
                assert s.leader_epoch == epoch or leader == -1 or s.leader_epoch > epoch
            self.last[key] = (s.leader, s.leader_epoch)
            assert md.partitions[key] == s.info()
            assert (s.log.leader, s.log.leader_epoch, s.log.isr) == (s.leader, s.leader_epoch, s.isr)
        for b, fake in self.fakes.items():
            if b in self.ctl.alive and fake.images:
                assert fake.images[-1] == md


ControllerMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
TestControllerProperties = ControllerMachine.TestCase


def test_a_topic_created_with_its_own_replication_factor() -> None:
    """CreateTopics' replication factor: one replica each, round robin as before (the cursor moves as for any
    partition, so the topics created after are placed as they would be); its min ISR is capped at 1; a
    crash of its one broker leaves it without a leader until the broker is back."""
    _, ctl, _ = make()
    ctl.create_topic("DLQ", 2, replication_factor=1)
    ctl.create_topic("T", 1)
    assert [ctl.partitions[("DLQ", p)].replicas for p in range(2)] == [(1,), (2,)]
    assert ctl.partitions[("T", 0)].replicas == (3, 1, 2)
    assert ctl.log("DLQ", 0).min_insync_replicas == 1 and ctl.log("T", 0).min_insync_replicas == 2
    ctl.add_partitions("DLQ", 1)
    assert ctl.partitions[("DLQ", 2)].replicas == (1,)  # added partitions keep the topic's factor
    ctl.crash_broker(1)
    assert ctl.metadata.leader_of("DLQ", 0).leader == -1  # type: ignore[union-attr]
    assert ctl.partitions[("DLQ", 0)].isr == (1,)  # the last replica stays in the ISR
    ctl.restart_broker(1)
    assert ctl.metadata.leader_of("DLQ", 0).leader == 1  # type: ignore[union-attr]
