"""Share-partition leaders on brokers, driven by hand over the simulated network:
ShareFetch/ShareAcknowledge with share sessions (CL-1, CL-2), state read and written
through the share coordinator (SP-9, SP-10), the lock-expiry timer (SP-4), session
release (SP-15), leader failover with a higher leader epoch and the zombie's late
write fenced (SC-5), stale metadata, a deleted group's share-partitions dropped (GC-8)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from model.core.errors import Errors
from model.core.produce_fetch import ProduceRequest
from model.core.share_fetch import (
    LeaderIdAndEpoch,
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchResponse,
)
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, PartitionStatus
from model.core.share_state import (
    AcknowledgeType,
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    RecordState,
)
from model.sim.network import MessageFilter
from model.sim.protocol import SHARE_STATE_TOPIC
from model.sim.rng import Distribution

# The hand-driven cluster of test_broker.py (tests are not a package: load it by path).
_spec = importlib.util.spec_from_file_location("broker_cluster", Path(__file__).with_name("test_broker.py"))
assert _spec is not None and _spec.loader is not None
_harness: Any = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)
Cluster, initialize, loaded, LATENCY = _harness.Cluster, _harness.initialize, _harness.loaded, _harness.LATENCY

ACCEPT = (int(AcknowledgeType.ACCEPT),)
RELEASE = (int(AcknowledgeType.RELEASE),)


def ready(records: int = 10) -> tuple[Any, Any, int]:
    """A cluster with share state initialized for ("g", T-0) and ``records`` records produced."""
    c = Cluster()
    loaded(c)
    client = c.client("c1")
    initialize(c, client, c.key())
    leader = c.leader("T")
    if records:
        resp = client.ask(leader, "Produce", ProduceRequest("T", 0, records))
        assert resp.error_code == Errors.NONE
    return c, client, leader


def fetch(c: Any, epoch: int, acks: tuple[AcknowledgementBatch, ...] = (), member: str = "m1",
          max_wait_ms: int = 500) -> ShareFetchRequest:
    return ShareFetchRequest("g", member, epoch, (ShareFetchPartition(c.topic_id, 0, acknowledgement_batches=acks),),
                             max_wait_ms=max_wait_ms)


def acknowledge(c: Any, epoch: int, acks: tuple[AcknowledgementBatch, ...],
                member: str = "m1") -> ShareAcknowledgeRequest:
    return ShareAcknowledgeRequest("g", member, epoch, (ShareAcknowledgePartition(c.topic_id, 0, acks),))


def acquired_of(resp: ShareFetchResponse) -> list[AcquiredRecords]:
    assert isinstance(resp, ShareFetchResponse) and resp.error_code == Errors.NONE
    return [a for p in resp.responses for a in p.acquired_records]


def test_fetch_reads_state_then_acquires_and_an_ack_is_answered_after_its_write() -> None:
    c, client, leader = ready()
    first = client.ask(leader, "ShareFetch", fetch(c, 0))
    assert acquired_of(first) == [AcquiredRecords(0, 9, 1)]
    assert first.responses[0].produce_times == (0,) * 10  # the Produce carried produce_time_ms 0
    ((_, key, broker, epoch, _),) = c.observer.of("leader")
    assert key == c.key() and broker == leader and epoch == c.ctl.partitions[("T", 0)].leader_epoch
    sent = c.sched.now_ms
    cid = client.send(leader, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 9, ACCEPT),)))
    c.run(2 * LATENCY)  # the ack reached the leader; its write is on its way
    assert cid not in client.answers and not c.observer.of("ack")
    answer = client.wait(cid)
    assert isinstance(answer, ShareAcknowledgeResponse)
    assert [p.error_code for p in answer.responses] == [Errors.NONE]
    # request + write + replication round trip + write answer + response
    assert client.answers[cid][0] >= sent + 6 * LATENCY
    (ack,) = c.observer.of("ack")
    assert ack[2] == "m1" and ack[3] == (AcknowledgementBatch(0, 9, ACCEPT),)
    state = c.brokers[c.share_coordinator()].share_coordinators[0].shard.state(c.key())
    # Every record acknowledged: the write carried the SPSO the leader had then (trunk's writeShareGroupState),
    # 0, with 0-9 ACKNOWLEDGED; a leader reading it starts past them, at 10 (protocol "kip": StartOffset 10).
    assert state.start_offset == 0 and [(b.first_offset, b.last_offset, b.delivery_state)
                                        for b in state.state_batches] == [(0, 9, RecordState.ACKNOWLEDGED)]


def test_a_fetch_with_nothing_to_acquire_waits_for_new_records() -> None:
    c, client, leader = ready(records=0)
    cid = client.send(leader, "ShareFetch", fetch(c, 0, max_wait_ms=5_000))
    c.run(300)
    assert cid not in client.answers
    c.client("p1").ask(leader, "Produce", ProduceRequest("T", 0, 3))
    assert acquired_of(client.wait(cid)) == [AcquiredRecords(0, 2, 1)]
    # Nothing at all: the answer comes empty after MaxWaitMs.
    start = c.sched.now_ms
    empty = client.ask(leader, "ShareFetch", fetch(c, 1, max_wait_ms=400))
    assert acquired_of(empty) == [] and c.sched.now_ms - start >= 400


def test_piggybacked_acks_and_session_epochs() -> None:
    c, client, leader = ready()
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    # Release 0-4 on the next fetch: they come back in the same answer, delivery count 2.
    resp = client.ask(leader, "ShareFetch", fetch(c, 1, (AcknowledgementBatch(0, 4, RELEASE),)))
    assert [p.acknowledge_error_code for p in resp.responses] == [Errors.NONE]
    assert acquired_of(resp) == []  # answered once the release is durable; it acquired nothing before
    again = client.ask(leader, "ShareFetch", fetch(c, 2))
    assert acquired_of(again) == [AcquiredRecords(0, 4, 2)]
    wrong = client.ask(leader, "ShareFetch", fetch(c, 7))  # the session expects epoch 2
    assert isinstance(wrong, ShareFetchResponse) and wrong.error_code == Errors.INVALID_SHARE_SESSION_EPOCH
    other = client.ask(leader, "ShareFetch", fetch(c, 1, member="m2"))
    assert isinstance(other, ShareFetchResponse) and other.error_code == Errors.SHARE_SESSION_NOT_FOUND
    # An ack for records another member holds is INVALID_RECORD_STATE (E-3).
    client.ask(leader, "ShareFetch", fetch(c, 0, member="m2", max_wait_ms=10))
    stolen = client.ask(leader, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(5, 9, ACCEPT),), "m2"))
    assert [p.error_code for p in stolen.responses] == [Errors.INVALID_RECORD_STATE]


def test_lock_expiry_timer_makes_records_available_again() -> None:
    c, client, leader = ready()
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    slot = c.brokers[leader].share_leader.slots[("g", "T", 0)]
    assert slot.lock_timer is not None and slot.lock_timer.active
    assert slot.lock_timer.due_ms == slot.sp.next_lock_deadline_ms()
    c.run(slot.sp.lock_duration_ms + 100)
    assert slot.sp.state_of(0).state == RecordState.AVAILABLE
    redelivered = client.ask(leader, "ShareFetch", fetch(c, 0, member="m2"))
    assert acquired_of(redelivered) == [AcquiredRecords(0, 9, 2)]


def test_closing_the_session_releases_the_members_records() -> None:
    c, client, leader = ready()
    client.ask(leader, "ShareFetch", fetch(c, 0))
    closed = client.ask(leader, "ShareFetch", ShareFetchRequest("g", "m1", -1, ()))
    assert isinstance(closed, ShareFetchResponse) and closed.error_code == Errors.NONE
    c.run(50)
    slot = c.brokers[leader].share_leader.slots[("g", "T", 0)]
    assert slot.sp.state_of(3).state == RecordState.AVAILABLE
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0, member="m2"))) == [AcquiredRecords(0, 9, 2)]


def test_opening_the_session_again_keeps_the_members_records_and_it_may_still_acknowledge_them() -> None:
    """Kafka's newContext: an epoch-0 ShareFetch replaces the session and releases nothing."""
    c, client, leader = ready()
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0, max_wait_ms=10))) == []
    slot = c.brokers[leader].share_leader.slots[("g", "T", 0)]
    assert slot.sp.state_of(3).state == RecordState.ACQUIRED
    answer = client.ask(leader, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 9, ACCEPT),)))
    assert [p.error_code for p in answer.responses] == [Errors.NONE]


def test_a_fetch_that_opens_a_session_may_not_carry_acknowledgements() -> None:
    c, client, leader = ready()
    client.ask(leader, "ShareFetch", fetch(c, 0))
    refused = client.ask(leader, "ShareFetch", fetch(c, 0, (AcknowledgementBatch(0, 9, ACCEPT),)))
    assert isinstance(refused, ShareFetchResponse) and refused.error_code == Errors.INVALID_REQUEST
    slot = c.brokers[leader].share_leader.slots[("g", "T", 0)]
    assert slot.sp.state_of(3).state == RecordState.ACQUIRED  # nothing acknowledged
    assert c.brokers[leader].share_leader.sessions.get(("g", "m1")).epoch == 1  # type: ignore[union-attr]


def test_a_closed_connection_ends_the_sessions_opened_on_it_and_no_other() -> None:
    """The client closes its connection (a request timeout): the leader hears of it one latency later,
    ends the session opened on it and releases the member's records (SP-15, count unchanged). A close
    it hears of late, after the member opened a session on a new connection, ends nothing."""
    c, client, leader = ready()
    share_leader = c.brokers[leader].share_leader
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    slot = share_leader.slots[("g", "T", 0)]
    c.net.close_connection("c1", f"b{leader}")
    c.run(LATENCY + 1)
    assert share_leader.sessions.get(("g", "m1")) is None
    c.run(50)  # the release is durable
    assert slot.sp.state_of(3).state == RecordState.AVAILABLE and slot.sp.state_of(3).delivery_count == 1
    (ended,) = [e for e in c.trace.events if e.kind == "share.sessions_disconnected"]
    assert ended.node == f"b{leader}" and ended.fields == {"client": "c1", "sessions": 1}
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 2)]
    share_leader.on_client_disconnected("c1", 0)  # the first connection's close, heard again: stale
    assert share_leader.sessions.get(("g", "m1")) is not None
    assert slot.sp.state_of(3).state == RecordState.ACQUIRED


def test_a_session_that_outlived_an_unnoticed_reset_ends_with_the_clients_next_close() -> None:
    """A partition reset the connection while nothing was in flight, and the member went on with its
    session over the next one: the close of that one (here its process dies) ends the session too."""
    c, client, leader = ready()
    share_leader = c.brokers[leader].share_leader
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    cut = c.net.partition(["c1"], [f"b{leader}"])
    c.run(10)
    c.net.heal(cut)
    assert client.ask(leader, "ShareFetch", fetch(c, 1, max_wait_ms=10)).error_code == Errors.NONE
    assert share_leader.sessions.get(("g", "m1")).connection == ("c1", 0)  # type: ignore[union-attr]
    c.net.crash_node("c1")  # ends connection 1
    c.run(LATENCY + 1)
    assert share_leader.sessions.get(("g", "m1")) is None


def test_stale_metadata_share_fetch_gets_not_leader_or_follower() -> None:
    c, client, leader = ready()
    c.ctl.move_leadership("T", 0)
    new = c.leader("T")
    resp = client.ask(leader, "ShareFetch", fetch(c, 0))
    assert isinstance(resp, ShareFetchResponse)
    (part,) = resp.responses
    assert part.error_code == Errors.NOT_LEADER_OR_FOLLOWER
    assert part.current_leader == LeaderIdAndEpoch(new, c.ctl.partitions[("T", 0)].leader_epoch)


def test_leader_failover_reads_with_a_higher_epoch_and_the_zombies_late_write_is_fenced() -> None:
    c, client, old = ready()
    assert acquired_of(client.ask(old, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    old_epoch = c.ctl.partitions[("T", 0)].leader_epoch
    # The old leader's writes are slow to reach the share coordinator.
    c.net.add_delay(Distribution.constant(300), MessageFilter(kinds=("WriteShareGroupState",),
                                                              links=((f"b{old}", f"b{c.share_coordinator()}"),)))
    cid = client.send(old, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 4, ACCEPT),)))
    c.run(2 * LATENCY)  # the ack is applied; its write is in flight (delayed)
    c.ctl.move_leadership("T", 0)
    new = c.leader("T")
    zombie = c.brokers[old].share_leader._retired[0]
    assert not zombie.serving
    # The consumer finds the new leader, which reads the state with its new epoch (SP-10).
    fresh = client.ask(new, "ShareFetch", fetch(c, 0, member="m2"))
    starts = c.observer.of("leader")
    assert [(e[2], e[3]) for e in starts] == [(old, old_epoch), (new, old_epoch + 1)]
    assert acquired_of(fresh) == [AcquiredRecords(0, 9, 1)]  # the old acquisition was never durable (SP-11)
    stored = c.brokers[c.share_coordinator()].share_coordinators[0].shard.state(c.key())
    assert stored.leader_epoch == old_epoch + 1
    # The zombie's write arrives late and is fenced; its ack fails; nothing was confirmed.
    answer = client.wait(cid)
    assert isinstance(answer, ShareAcknowledgeResponse)
    assert [p.error_code for p in answer.responses] == [Errors.NOT_LEADER_OR_FOLLOWER]  # fetchPersisterError
    assert zombie.sp.status is PartitionStatus.FENCED
    assert not c.observer.of("ack")
    assert not c.observer.of("write")[1:]  # only the initialize... and no accepted write from the zombie
    read = client.ask(c.share_coordinator(), "ReadShareGroupState", ReadShareGroupStateRequest(c.key(), old_epoch + 1))
    assert read.state_batches == () and read.start_offset == 0


def test_a_crashed_leaders_records_come_back_from_durable_state() -> None:
    c, client, old = ready()
    client.ask(old, "ShareFetch", fetch(c, 0))
    client.ask(old, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 2, ACCEPT),)))
    c.ctl.crash_broker(old)
    new = c.leader("T")
    assert new not in (old, -1)
    resp = client.ask(new, "ShareFetch", fetch(c, 0))
    assert acquired_of(resp) == [AcquiredRecords(3, 9, 1)]  # 0-2 stay acknowledged; 3-9 never became durable
    assert c.ctl.partitions[(SHARE_STATE_TOPIC, 0)].leader != old


def test_an_admin_reset_is_noticed_when_a_session_opens() -> None:
    """SP-12: state re-initialized with a higher state epoch; the next session's first fetch
    reads it again instead of serving the old window."""
    c, client, leader = ready()
    client.ask(leader, "ShareFetch", fetch(c, 0))
    client.ask(leader, "ShareFetch", ShareFetchRequest("g", "m1", -1, ()))  # close: records released
    c.run(50)
    reset = client.ask(c.share_coordinator(), "InitializeShareGroupState",
                       InitializeShareGroupStateRequest(c.key(), 2, 5))
    assert reset.error_code == Errors.NONE
    resp = client.ask(leader, "ShareFetch", fetch(c, 0, member="m2"))
    assert acquired_of(resp) == [AcquiredRecords(5, 9, 1)]
    slot = c.brokers[leader].share_leader.slots[("g", "T", 0)]
    assert slot.sp.state_epoch == 2 and slot.sp.spso == 5


def test_a_deleted_groups_leader_drops_it_and_never_writes_the_old_life_into_a_new_one() -> None:
    """GC-8: told of the group's deletion, the leader forgets the group's sessions and drops its
    share-partition at once, even with a write in flight: the waiting ack fails at once, and the
    slot sends nothing more (a retry landing after a re-initialize would not be fenced, SC-5)."""
    c, client, leader = ready()
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    coordinator = c.share_coordinator()
    c.net.add_delay(Distribution.constant(300), MessageFilter(kinds=("WriteShareGroupState",),
                                                              links=((f"b{leader}", f"b{coordinator}"),)))
    cid = client.send(leader, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 4, ACCEPT),)))
    c.run(2 * LATENCY)  # the ack is applied; its write is in flight (delayed)
    deleted = client.ask(coordinator, "DeleteShareGroupState", DeleteShareGroupStateRequest(c.key()))
    assert deleted.error_code == Errors.NONE
    host = c.brokers[leader].share_leader
    slot = host.slots[("g", "T", 0)]
    c.ctl.share_group_deleted("g")  # what the group coordinator does once the group's tombstones commit
    assert ("g", "T", 0) not in host.slots and slot.dead and slot not in host._retired
    assert host.sessions.get(("g", "m1")) is None
    answer = client.wait(cid)  # answered at once, not when the delayed write comes back
    assert [p.error_code for p in answer.responses] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert c.sched.now_ms < 300 + 2 * LATENCY
    c.run(1_000)  # the old write lands on no state (SC-9), and nothing follows it
    # The group is created again and its state re-initialized (GC-7: state epoch 1, as before).
    again = client.ask(coordinator, "InitializeShareGroupState", InitializeShareGroupStateRequest(c.key(), 1, 0))
    assert again.error_code == Errors.NONE
    gone = client.ask(leader, "ShareFetch", fetch(c, 2))
    assert isinstance(gone, ShareFetchResponse) and gone.error_code == Errors.SHARE_SESSION_NOT_FOUND
    # A new session's fetch reads the new life afresh (SP-10): every record again, first delivery.
    assert acquired_of(client.ask(leader, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    assert not c.observer.of("ack")
    stored = c.brokers[coordinator].share_coordinators[0].shard.state(c.key())
    assert stored.start_offset == 0 and stored.state_batches == ()


def test_a_deleted_groups_zombie_leader_is_dropped_too() -> None:
    """A retired leader still waiting on a write (a zombie) is dropped with its group: a retry of
    that write after the group is created again would meet no leader epoch to fence it (SC-5)."""
    c, client, old = ready()
    assert acquired_of(client.ask(old, "ShareFetch", fetch(c, 0))) == [AcquiredRecords(0, 9, 1)]
    c.net.add_delay(Distribution.constant(300), MessageFilter(kinds=("WriteShareGroupState",),
                                                              links=((f"b{old}", f"b{c.share_coordinator()}"),)))
    cid = client.send(old, "ShareAcknowledge", acknowledge(c, 1, (AcknowledgementBatch(0, 4, ACCEPT),)))
    c.run(2 * LATENCY)  # the ack is applied; its write is in flight (delayed)
    c.ctl.move_leadership("T", 0)
    host = c.brokers[old].share_leader
    (zombie,) = host._retired
    c.ctl.share_group_deleted("g")
    assert zombie.dead and not host._retired
    answer = client.wait(cid)
    assert [p.error_code for p in answer.responses] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert c.sched.now_ms < 300 + 2 * LATENCY  # not when the delayed write comes back
    assert not c.observer.of("ack")
