"""Golden test: the SimpleAssignor table of 003_cf42721e0e7b2a9a.txt (section
"SimpleAssignor"), replayed row by row (GC-5).

Every value the table prints is asserted: the members subscribed to T1, the
subscribed topic-partitions, the assignment changes and the assignments. The
table is replayed twice: through the bare ``SimpleAssignor`` with the table's
inputs, and through ``ShareGroupManager`` driven by ``ShareMember`` heartbeats
and share-coordinator answers to its InitializeShareGroupState requests (a
partition is assignable only once initialized, GC-7).

The table writes each member's hash as "hash k"; hash k selects the k-th
partition (M1 → T1:0, M4 → T1:3, M5 → T1:0 again), so the test gives member
Mk the hash k − 1.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from model.core.config import BrokerConfig
from model.core.group.share_group import ShareGroupManager
from model.core.group.share_member import ShareMember
from model.core.group.simple_assignor import SimpleAssignor
from model.core.metadata import MetadataImage, TopicPartition
from model.core.share_state import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse

GROUP = "G1"


def table_hash(member_id: str) -> int:
    return int(member_id.removeprefix("M")) - 1


def tps(text: str) -> frozenset[TopicPartition]:
    """'T1:0, T2:1' → the partitions; '' → none."""
    out = set()
    for item in filter(None, (s.strip() for s in text.split(","))):
        topic, partition = item.split(":")
        out.add(TopicPartition(topic, int(partition)))
    return frozenset(out)


@dataclass(frozen=True)
class Row:
    state: str
    members_subscribed_to_t1: tuple[str, ...]
    topic_partitions: frozenset[TopicPartition]
    assigned: dict[str, frozenset[TopicPartition]]  # the "Assign … to M" changes
    revoked: dict[str, frozenset[TopicPartition]]  # the "Revoke … from M" changes
    assignments: dict[str, frozenset[TopicPartition]]


ALL8 = tuple(f"M{i}" for i in range(1, 9))
T1_4 = "T1:0, T1:1, T1:2, T1:3"

# The table, column by column, exactly as printed.
TABLE: tuple[Row, ...] = (
    Row("M1 subscribed to topic T1 with 1 partition", ("M1",), tps("T1:0"),
        {"M1": tps("T1:0")}, {},
        {"M1": tps("T1:0")}),
    Row("M2 joins the group and subscribes to T1", ("M1", "M2"), tps("T1:0"),
        {"M2": tps("T1:0")}, {},
        {"M1": tps("T1:0"), "M2": tps("T1:0")}),
    Row("Add 3 partitions to T1", ("M1", "M2"), tps(T1_4),
        {"M2": tps("T1:1, T1:3"), "M1": tps("T1:2")}, {"M2": tps("T1:0")},
        {"M1": tps("T1:0, T1:2"), "M2": tps("T1:1, T1:3")}),
    Row("M3 joins the group and subscribes to T1", ("M1", "M2", "M3"), tps(T1_4),
        {"M3": tps("T1:2")}, {"M1": tps("T1:2")},
        {"M1": tps("T1:0"), "M2": tps("T1:1, T1:3"), "M3": tps("T1:2")}),
    Row("M4 joins the group and subscribes to T1", ("M1", "M2", "M3", "M4"), tps(T1_4),
        {"M4": tps("T1:3")}, {"M2": tps("T1:3")},
        {"M1": tps("T1:0"), "M2": tps("T1:1"), "M3": tps("T1:2"), "M4": tps("T1:3")}),
    Row("M5, M6, M7, M8 join the group and subscribe to T1", ALL8, tps(T1_4),
        {"M5": tps("T1:0"), "M6": tps("T1:1"), "M7": tps("T1:2"), "M8": tps("T1:3")}, {},
        {"M1": tps("T1:0"), "M2": tps("T1:1"), "M3": tps("T1:2"), "M4": tps("T1:3"),
         "M5": tps("T1:0"), "M6": tps("T1:1"), "M7": tps("T1:2"), "M8": tps("T1:3")}),
    Row("M1 subscribes to T2 with 2 partitions", ALL8, tps(T1_4 + ", T2:0, T2:1"),
        {"M1": tps("T2:0, T2:1")}, {},
        {"M1": tps("T1:0, T2:0, T2:1"), "M2": tps("T1:1"), "M3": tps("T1:2"), "M4": tps("T1:3"),
         "M5": tps("T1:0"), "M6": tps("T1:1"), "M7": tps("T1:2"), "M8": tps("T1:3")}),
    Row("All members leave except M2", ("M2",), tps(T1_4),
        {"M2": tps("T1:0, T1:2, T1:3")}, {},
        {"M2": tps(T1_4)}),
)


def changes(
    before: dict[str, frozenset[TopicPartition]], after: dict[str, frozenset[TopicPartition]]
) -> tuple[dict[str, frozenset[TopicPartition]], dict[str, frozenset[TopicPartition]]]:
    """The table's "Assignment change" column: what each remaining member gained and lost."""
    assigned = {m: after[m] - before.get(m, frozenset()) for m in after}
    revoked = {m: before[m] - after[m] for m in after if m in before}
    return ({m: s for m, s in assigned.items() if s}, {m: s for m, s in revoked.items() if s})


def check_row(row: Row, before: dict[str, frozenset[TopicPartition]],
              after: dict[str, frozenset[TopicPartition]]) -> None:
    assert after == row.assignments, row.state
    assert changes(before, after) == (row.assigned, row.revoked), row.state


# --- the bare assignor ------------------------------------------------------------------------

# The table's inputs per row: each member's subscription and the partitions per topic.
INPUTS: tuple[tuple[dict[str, tuple[str, ...]], dict[str, list[int]]], ...] = (
    ({"M1": ("T1",)}, {"T1": [0]}),
    ({"M1": ("T1",), "M2": ("T1",)}, {"T1": [0]}),
    ({"M1": ("T1",), "M2": ("T1",)}, {"T1": [0, 1, 2, 3]}),
    ({m: ("T1",) for m in ALL8[:3]}, {"T1": [0, 1, 2, 3]}),
    ({m: ("T1",) for m in ALL8[:4]}, {"T1": [0, 1, 2, 3]}),
    ({m: ("T1",) for m in ALL8}, {"T1": [0, 1, 2, 3]}),
    ({"M1": ("T1", "T2"), **{m: ("T1",) for m in ALL8[1:]}}, {"T1": [0, 1, 2, 3], "T2": [0, 1]}),
    ({"M2": ("T1",)}, {"T1": [0, 1, 2, 3]}),
)


def test_simple_assignor_reproduces_the_003_table() -> None:
    assignor = SimpleAssignor(member_hash=table_hash, kafka=False)
    current: dict[str, frozenset[TopicPartition]] = {}
    for row, (subscriptions, partitions) in zip(TABLE, INPUTS, strict=True):
        assert tuple(sorted(m for m, s in subscriptions.items() if "T1" in s)) == row.members_subscribed_to_t1
        assert frozenset(TopicPartition(t, p) for t, ps in partitions.items() for p in ps) == row.topic_partitions
        after = assignor.assign(subscriptions, partitions, current)
        check_row(row, current, after)
        current = after


# --- through the coordinator ------------------------------------------------------------------


class TableCluster:
    """A share group on one coordinator whose share coordinator answers every initialization."""

    def __init__(self) -> None:
        ids = (f"M{i}" for i in itertools.count(1))
        self.metadata = MetadataImage().with_topic("T1", 1).with_topic("T2", 2)
        self.manager = ShareGroupManager(  # the KIP's table: protocol "kip", the table's algorithm
            BrokerConfig(protocol="kip"), self.metadata, lambda: next(ids),
            assignor=SimpleAssignor(member_hash=table_hash, kafka=False),
        )
        self.members: dict[str, ShareMember] = {}
        self.pending: list[object] = []
        self.now = 0

    def _absorb(self, outputs: tuple[object, ...]) -> None:
        self.pending.extend(outputs)

    def join(self, topics: tuple[str, ...]) -> str:
        member = ShareMember(GROUP, topics)
        self._heartbeat(member)
        self.members[member.member_id] = member
        return member.member_id

    def _heartbeat(self, member: ShareMember) -> int:
        self.now += 10
        result = self.manager.heartbeat(member.heartbeat(), self.now)
        member.on_response(result.response)  # type: ignore[arg-type]
        self._absorb(result.outputs)
        return len(result.records)

    def leave(self, *member_ids: str) -> None:
        for member_id in member_ids:
            member = self.members.pop(member_id)
            result = self.manager.heartbeat(member.leave(), self.now)
            member.on_response(result.response)  # type: ignore[arg-type]

    def add_partitions(self, topic: str, count: int) -> None:
        self.metadata = self.metadata.with_topic(topic, count)
        self._absorb(self.manager.on_metadata(self.metadata, self.now).outputs)

    def settle(self) -> dict[str, frozenset[TopicPartition]]:
        """Answer the share coordinator's requests and heartbeat until nothing changes."""
        for _ in range(20):
            quiet = not self.pending
            while self.pending:
                req = self.pending.pop(0)
                assert isinstance(req, InitializeShareGroupStateRequest)
                # -1 (share.auto.offset.reset applies) for a topic new to the group; 0 for the partitions added
                # to a topic it knows (Kafka trunk's buildInitializeShareGroupStateRequest): never partition 0.
                assert req.start_offset == -1 or (req.start_offset == 0 and req.key.partition > 0)
                group = self.manager.group(GROUP)
                assert group is not None and req.state_epoch <= group.group_epoch
                self._absorb(self.manager.on_initialize_response(
                    InitializeShareGroupStateResponse(req.key), self.now
                ).outputs)
            for member_id in sorted(self.members):
                quiet &= self._heartbeat(self.members[member_id]) == 0
            if quiet:
                return {m: member.assignment for m, member in self.members.items()}
        raise AssertionError("the group did not settle")

    def subscribed_partitions(self) -> frozenset[TopicPartition]:
        group = self.manager.group(GROUP)
        assert group is not None
        return frozenset(
            TopicPartition(t.topic_name, p) for t in group.subscription_metadata for p in range(t.num_partitions)
        )

    def members_subscribed_to(self, topic: str) -> tuple[str, ...]:
        group = self.manager.group(GROUP)
        assert group is not None
        return tuple(sorted(m for m, s in group.members.items() if topic in s.subscribed_topic_names))


def test_share_group_coordinator_reproduces_the_003_table() -> None:
    cluster = TableCluster()
    steps = (
        lambda: cluster.join(("T1",)),
        lambda: cluster.join(("T1",)),
        lambda: cluster.add_partitions("T1", 4),
        lambda: cluster.join(("T1",)),
        lambda: cluster.join(("T1",)),
        lambda: [cluster.join(("T1",)) for _ in range(4)],
        lambda: cluster.members["M1"].subscribe(("T1", "T2")),
        lambda: cluster.leave("M1", "M3", "M4", "M5", "M6", "M7", "M8"),
    )
    before: dict[str, frozenset[TopicPartition]] = {}
    for row, step in zip(TABLE, steps, strict=True):
        step()
        after = cluster.settle()
        assert cluster.members_subscribed_to("T1") == row.members_subscribed_to_t1, row.state
        assert cluster.subscribed_partitions() == row.topic_partitions, row.state
        check_row(row, before, after)
        # The coordinator's view agrees with the members', at one epoch (GC-3, GC-4).
        group = cluster.manager.group(GROUP)
        assert group is not None
        assert group.group_epoch == group.assignment_epoch
        for member_id, member in cluster.members.items():
            assert group.members[member_id].assigned_partitions == member.assignment
            assert member.member_epoch == group.assignment_epoch
        before = after


@pytest.mark.parametrize("row", range(len(TABLE)))
def test_each_row_is_one_step_from_the_previous_assignment(row: int) -> None:
    """Each row on its own, from the previous row's assignment: the assignor is a
    function of (members, partitions, previous assignment), not of history."""
    assignor = SimpleAssignor(member_hash=table_hash, kafka=False)
    previous = TABLE[row - 1].assignments if row else {}
    subscriptions, partitions = INPUTS[row]
    assert assignor.assign(subscriptions, partitions, previous) == TABLE[row].assignments
