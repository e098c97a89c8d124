"""Golden tests: the KIP-848 case studies of 004_32d84b698b32e157.txt ("Case Studies").

Each test replays one worked example — "Basic" (members A, B, C join a group on
``foo`` with 3 partitions), the 21 → 22 example (C joins a group on 6
partitions), "Member Failure" (A stops heartbeating) and "Partition Added" —
and asserts every table the KIP prints: the group epoch, the target assignment
(epoch and partitions) and each member's epoch, partitions and pending
partitions.

The assignor is the real ``uniform`` one; with member ids A, B, C in join order
it yields exactly the targets the KIP prints. The KIP shows "bump the group
epoch" and "compute the target" as separate states although the coordinator
does both inside one heartbeat (as Kafka does); those in-between states are
checked by replaying the heartbeat's records only up to the step the table
shows (GC-6: state is a function of the records).

Seed errata, asserted as the surrounding text implies rather than as printed:

- Basic, B joins, "computes and installs the new target assignment": the
  member line prints ``B - epoch=0, partitions=[foo-2]``; B cannot own foo-2
  before A revokes it (the next table and the text say so): ``partitions=[]``.
- Basic, C joins: the compare-versions text garbles C's line into
  ``C - epoch=3, partitions=[foo-1] ... pending-partitions=[foo-1]``; the text
  ("transitions it to epoch 3 but cannot get foo-1 yet") gives
  ``partitions=[], pending-partitions=[foo-1]``.
- Basic, C joins: the KIP lets B heartbeat before C is moved to epoch 3, while
  the coordinator moves C in its own join heartbeat. B's and C's assignment
  records are independent, so the test replays them in the KIP's order.
- 21 → 22: the two tables after "A acknowledges" and "B acknowledges" already
  show the effect of the "C heartbeats" sentence printed under them; the test
  runs that C heartbeat before checking each.
- Partition Added: "B and C heartbeat" means A and B (there is no C).
"""

from __future__ import annotations

from collections.abc import Iterator

from model.core.config import BrokerConfig
from model.core.errors import Errors
from model.core.group.consumer_group import ConsumerGroupManager
from model.core.group.consumer_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.core.group.consumer_records import (
    ConsumerGroupCurrentMemberAssignment,
    ConsumerGroupMemberMetadata,
    ConsumerGroupMetadata,
    ConsumerGroupPartitionMetadata,
    ConsumerGroupTargetAssignmentMember,
    ConsumerGroupTargetAssignmentMetadata,
    MemberState,
    SubscribedTopicMetadata,
)
from model.core.group.result import CoordinatorResult
from model.core.metadata import MetadataImage, TopicPartition

GROUP = "g"
REBALANCE_TIMEOUT_MS = 300_000


def foo(*partitions: int) -> tuple[TopicPartition, ...]:
    return tuple(TopicPartition("foo", p) for p in partitions)


def parse(text: str) -> frozenset[TopicPartition]:
    """``"foo-0, foo-1"`` as the KIP prints it."""
    out = set()
    for item in text.replace(",", " ").split():
        topic, _, partition = item.rpartition("-")
        out.add(TopicPartition(topic, int(partition)))
    return frozenset(out)


class Case:
    """A coordinator, the log it wrote, and the KIP's way of looking at it."""

    def __init__(self, partitions: int) -> None:
        self.metadata = MetadataImage().with_topic("foo", partitions)
        self.ids: Iterator[str] = iter("ABCDEFGH")
        self.mgr = ConsumerGroupManager(  # the KIP's worked example: protocol "kip" (groups start at epoch 0)
            BrokerConfig(protocol="kip"), self.metadata, lambda: next(self.ids))
        self.log: list[object] = []
        self.now = 0

    def run(self, result: CoordinatorResult) -> CoordinatorResult:
        self.log.extend(result.records)
        return result

    def join(self) -> CoordinatorResult:
        return self.run(
            self.mgr.heartbeat(
                ConsumerGroupHeartbeatRequest(
                    GROUP,
                    "",
                    0,
                    rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                    subscribed_topic_names=("foo",),
                    topic_partitions=(),
                ),
                self.now,
            )
        )

    def heartbeat(
        self, member_id: str, epoch: int, owned: tuple[TopicPartition, ...] | None = None
    ) -> CoordinatorResult:
        return self.run(
            self.mgr.heartbeat(ConsumerGroupHeartbeatRequest(GROUP, member_id, epoch, topic_partitions=owned), self.now)
        )

    def rebuilt(self, records: list[object]) -> ConsumerGroupManager:
        mgr = ConsumerGroupManager(BrokerConfig(protocol="kip"), self.metadata, lambda: "unused")
        for record in records:
            mgr.replay(record)
        return mgr

    def prefix_through(self, kind: type, start: int) -> ConsumerGroupManager:
        """The state right after the first ``kind`` record at or after log index ``start``."""
        for i in range(start, len(self.log)):
            if isinstance(self.log[i], kind):
                return self.rebuilt(self.log[: i + 1])
        raise AssertionError(f"no {kind.__name__} record after index {start}")


def assert_table(
    mgr: ConsumerGroupManager,
    group_epoch: int,
    target_epoch: int,
    target: dict[str, str],
    members: dict[str, tuple[int, str, str]],
) -> None:
    """One KIP table: Group (epoch), Target Assignment (epoch, partitions), Member Assignment."""
    g = mgr.group(GROUP)
    assert g is not None
    assert g.group_epoch == group_epoch, "group epoch"
    assert g.assignment_epoch == target_epoch, "target assignment epoch"
    assert {m: set(ps) for m, ps in g.target_assignment.items()} == {m: set(parse(t)) for m, t in target.items()}
    got = {
        m: (mem.member_epoch, set(mem.owned_partitions), set(g.pending_partitions(m))) for m, mem in g.members.items()
    }
    want = {m: (e, set(parse(p)), set(parse(q))) for m, (e, p, q) in members.items()}
    assert got == want, "member assignment"


def assigned(result: CoordinatorResult) -> frozenset[TopicPartition] | None:
    response = result.response
    assert isinstance(response, ConsumerGroupHeartbeatResponse) and response.error_code == Errors.NONE
    assignment = response.assignment
    return None if assignment is None else assignment.assigned_topic_partitions


def epoch_of(result: CoordinatorResult) -> int:
    assert isinstance(result.response, ConsumerGroupHeartbeatResponse)
    return result.response.member_epoch


# --- Basic -----------------------------------------------------------------------------------


def test_basic_case_study_members_a_b_c_join_foo_with_three_partitions() -> None:
    case = Case(partitions=3)

    # A joins: the coordinator adds it and bumps the group epoch to 1.
    start = len(case.log)
    result = case.join()
    assert_table(case.prefix_through(ConsumerGroupMetadata, start), 1, 0, {}, {"A": (0, "", "")})
    # It computes and installs the new target assignment: everything to A.
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        1, 1, {"A": "foo-0, foo-1, foo-2"}, {"A": (0, "", "")},
    )
    # A has nothing to revoke: it moves to epoch 1 with all the partitions.
    assert epoch_of(result) == 1 and assigned(result) == parse("foo-0, foo-1, foo-2")
    assert_table(case.mgr, 1, 1, {"A": "foo-0, foo-1, foo-2"}, {"A": (1, "foo-0, foo-1, foo-2", "")})

    # B joins: group epoch 2.
    start = len(case.log)
    result = case.join()
    assert_table(
        case.prefix_through(ConsumerGroupMetadata, start),
        2, 1, {"A": "foo-0, foo-1, foo-2"}, {"A": (1, "foo-0, foo-1, foo-2", ""), "B": (0, "", "")},
    )
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        2, 2, {"A": "foo-0, foo-1", "B": "foo-2"}, {"A": (1, "foo-0, foo-1, foo-2", ""), "B": (0, "", "")},
    )
    # B moves to epoch 2 but cannot get foo-2 until A revokes it.
    assert epoch_of(result) == 2 and assigned(result) == frozenset()
    assert_table(
        case.mgr, 2, 2, {"A": "foo-0, foo-1", "B": "foo-2"},
        {"A": (1, "foo-0, foo-1, foo-2", ""), "B": (2, "", "foo-2")},
    )

    # A heartbeats: it is told to revoke foo-2 (its epoch stays 1, nothing new is given).
    result = case.heartbeat("A", 1, foo(0, 1, 2))
    assert epoch_of(result) == 1 and assigned(result) == parse("foo-0, foo-1")
    # A heartbeats again without foo-2: epoch 2, foo-2 released.
    result = case.heartbeat("A", 1, foo(0, 1))
    assert epoch_of(result) == 2
    assert_table(
        case.mgr, 2, 2, {"A": "foo-0, foo-1", "B": "foo-2"},
        {"A": (2, "foo-0, foo-1", ""), "B": (2, "", "foo-2")},
    )
    # B heartbeats: it now gets foo-2.
    result = case.heartbeat("B", 2)
    assert assigned(result) == parse("foo-2")
    assert_table(
        case.mgr, 2, 2, {"A": "foo-0, foo-1", "B": "foo-2"},
        {"A": (2, "foo-0, foo-1", ""), "B": (2, "foo-2", "")},
    )

    # C joins: group epoch 3.
    start = len(case.log)
    result = case.join()
    assert epoch_of(result) == 3 and assigned(result) == frozenset()
    c_join = case.log[start:]
    assert_table(
        case.prefix_through(ConsumerGroupMetadata, start),
        3, 2, {"A": "foo-0, foo-1", "B": "foo-2"},
        {"A": (2, "foo-0, foo-1", ""), "B": (2, "foo-2", ""), "C": (0, "", "")},
    )
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        3, 3, {"A": "foo-0", "B": "foo-2", "C": "foo-1"},
        {"A": (2, "foo-0, foo-1", ""), "B": (2, "foo-2", ""), "C": (0, "", "")},
    )
    # B heartbeats: nothing to revoke, epoch 3. (Replayed before C's move, in the KIP's order.)
    before_b = len(case.log)
    result = case.heartbeat("B", 2)
    assert epoch_of(result) == 3
    c_moves = [r for r in c_join if isinstance(r, ConsumerGroupCurrentMemberAssignment)]
    assert [r.member_id for r in c_moves] == ["C"]
    kip_order = case.log[:start] + [r for r in c_join if r not in c_moves] + case.log[before_b:]
    assert_table(
        case.rebuilt(kip_order),
        3, 3, {"A": "foo-0", "B": "foo-2", "C": "foo-1"},
        {"A": (2, "foo-0, foo-1", ""), "B": (3, "foo-2", ""), "C": (0, "", "")},
    )
    # C moves to epoch 3 but cannot get foo-1 yet.
    assert_table(
        case.rebuilt(kip_order + c_moves),
        3, 3, {"A": "foo-0", "B": "foo-2", "C": "foo-1"},
        {"A": (2, "foo-0, foo-1", ""), "B": (3, "foo-2", ""), "C": (3, "", "foo-1")},
    )
    assert case.rebuilt(kip_order + c_moves).snapshot() == case.mgr.snapshot()

    # A heartbeats: revoke foo-1. A heartbeats again: epoch 3, foo-1 released. C heartbeats: it gets foo-1.
    result = case.heartbeat("A", 2, foo(0, 1))
    assert epoch_of(result) == 2 and assigned(result) == parse("foo-0")
    result = case.heartbeat("A", 2, foo(0))
    assert epoch_of(result) == 3
    result = case.heartbeat("C", 3)
    assert assigned(result) == parse("foo-1")
    assert_table(
        case.mgr, 3, 3, {"A": "foo-0", "B": "foo-2", "C": "foo-1"},
        {"A": (3, "foo-0", ""), "B": (3, "foo-2", ""), "C": (3, "foo-1", "")},
    )
    # "All the members have eventually advanced to the group epoch (3)."
    group = case.mgr.group(GROUP)
    assert group is not None and group.state == "Stable"


# --- 21 -> 22, then Member Failure -----------------------------------------------------------


def seed_group_at_epoch(case: Case, epoch: int, assignment: dict[str, tuple[TopicPartition, ...]]) -> None:
    """Write the records of a stable group at ``epoch`` (as a coordinator would have) and load them."""
    records: list[object] = [
        ConsumerGroupPartitionMetadata(
            GROUP, epoch, (SubscribedTopicMetadata("foo", "foo-id", case.metadata.partition_count("foo")),)
        ),
        ConsumerGroupMetadata(GROUP, epoch),
    ]
    for member_id, partitions in assignment.items():
        records.append(
            ConsumerGroupMemberMetadata(
                GROUP, member_id, epoch, None, None, "", "", ("foo",), None, None, REBALANCE_TIMEOUT_MS
            )
        )
        records.append(ConsumerGroupTargetAssignmentMember(GROUP, member_id, partitions))
    records.append(ConsumerGroupTargetAssignmentMetadata(GROUP, epoch))
    for member_id, partitions in assignment.items():
        records.append(
            ConsumerGroupCurrentMemberAssignment(GROUP, member_id, epoch, epoch - 1, MemberState.STABLE, partitions, ())
        )
    for record in records:
        case.mgr.replay(record)
    case.log.extend(records)
    case.run(case.mgr.on_loaded(case.now))


def test_epoch_21_to_22_case_study_then_member_failure() -> None:
    case = Case(partitions=6)
    seed_group_at_epoch(case, 21, {"A": foo(0, 1, 2), "B": foo(3, 4, 5)})
    case.ids = iter("CDEF")
    assert_table(
        case.mgr, 21, 21, {"A": "foo-0, foo-1, foo-2", "B": "foo-3, foo-4, foo-5"},
        {"A": (21, "foo-0, foo-1, foo-2", ""), "B": (21, "foo-3, foo-4, foo-5", "")},
    )
    target_22 = {"A": "foo-0, foo-1", "B": "foo-3, foo-4", "C": "foo-2, foo-5"}

    # C joins: the coordinator adds it, bumps the group epoch and computes the target.
    start = len(case.log)
    result = case.join()
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        22, 22, target_22,
        {"A": (21, "foo-0, foo-1, foo-2", ""), "B": (21, "foo-3, foo-4, foo-5", ""), "C": (0, "", "")},
    )
    # C (in that heartbeat) moves to epoch 22 but gets nothing: its partitions are not revoked yet.
    assert epoch_of(result) == 22 and assigned(result) == frozenset()
    assert_table(
        case.mgr, 22, 22, target_22,
        {"A": (21, "foo-0, foo-1, foo-2", ""), "B": (21, "foo-3, foo-4, foo-5", ""), "C": (22, "", "foo-2, foo-5")},
    )

    # A heartbeats: revoke foo-2. B heartbeats: revoke foo-5. C heartbeats: no change.
    result = case.heartbeat("A", 21, foo(0, 1, 2))
    assert epoch_of(result) == 21 and assigned(result) == parse("foo-0, foo-1")
    result = case.heartbeat("B", 21, foo(3, 4, 5))
    assert epoch_of(result) == 21 and assigned(result) == parse("foo-3, foo-4")
    result = case.heartbeat("C", 22)
    assert epoch_of(result) == 22 and assigned(result) is None and result.records == ()

    # A acknowledges: epoch 22, foo-2 released. C heartbeats: it gets foo-2 but foo-5 is held.
    result = case.heartbeat("A", 21, foo(0, 1))
    assert epoch_of(result) == 22
    result = case.heartbeat("C", 22)
    assert assigned(result) == parse("foo-2")
    assert_table(
        case.mgr, 22, 22, target_22,
        {"A": (22, "foo-0, foo-1", ""), "B": (21, "foo-3, foo-4, foo-5", ""), "C": (22, "foo-2", "foo-5")},
    )

    # B acknowledges: epoch 22, foo-5 released. C heartbeats: it gets foo-2 and foo-5.
    result = case.heartbeat("B", 21, foo(3, 4))
    assert epoch_of(result) == 22
    result = case.heartbeat("C", 22)
    assert assigned(result) == parse("foo-2, foo-5")
    stable_22 = {"A": (22, "foo-0, foo-1", ""), "B": (22, "foo-3, foo-4", ""), "C": (22, "foo-2, foo-5", "")}
    assert_table(case.mgr, 22, 22, target_22, stable_22)

    # Member Failure: A fails to heartbeat; B and C keep heartbeating.
    last_a = case.now
    for _ in range(8):
        case.now += 5_000
        case.heartbeat("B", 22)
        case.heartbeat("C", 22)
    deadline = case.mgr.next_deadline_ms()
    assert deadline == last_a + BrokerConfig().consumer_session_timeout_ms
    assert case.run(case.mgr.expire(deadline - 1)).records == ()
    case.now = deadline
    case.run(case.mgr.expire(deadline))
    # Removed after the session timeout, group epoch bumped; the target is still epoch 22's.
    assert_table(
        case.mgr, 23, 22, target_22,
        {"B": (22, "foo-3, foo-4", ""), "C": (22, "foo-2, foo-5", "")},
    )
    # The coordinator computes the new target assignment (in the next heartbeat).
    target_23 = {"B": "foo-3, foo-4, foo-0", "C": "foo-2, foo-5, foo-1"}
    start = len(case.log)
    result = case.heartbeat("B", 22)
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        23, 23, target_23,
        {"B": (22, "foo-3, foo-4", ""), "C": (22, "foo-2, foo-5", "")},
    )
    # B and C heartbeat and transition to epoch 23.
    assert epoch_of(result) == 23 and assigned(result) == parse("foo-0, foo-3, foo-4")
    result = case.heartbeat("C", 22)
    assert epoch_of(result) == 23 and assigned(result) == parse("foo-1, foo-2, foo-5")
    assert_table(
        case.mgr, 23, 23, target_23,
        {"B": (23, "foo-3, foo-4, foo-0", ""), "C": (23, "foo-2, foo-5, foo-1", "")},
    )
    assert case.rebuilt(case.log).snapshot() == case.mgr.snapshot()


# --- Partition Added -------------------------------------------------------------------------


def test_partition_added_case_study() -> None:
    case = Case(partitions=1)
    seed_group_at_epoch(case, 22, {"A": foo(0), "B": ()})
    assert_table(case.mgr, 22, 22, {"A": "foo-0", "B": ""}, {"A": (22, "foo-0", ""), "B": (22, "", "")})

    # foo-1 is created: the coordinator detects it and bumps the group epoch.
    case.metadata = case.metadata.with_topic("foo", 2)
    case.run(case.mgr.on_metadata(case.metadata, case.now))
    assert_table(case.mgr, 23, 22, {"A": "foo-0", "B": ""}, {"A": (22, "foo-0", ""), "B": (22, "", "")})

    # It computes a new target assignment (in the next heartbeat).
    start = len(case.log)
    result = case.heartbeat("A", 22)
    assert_table(
        case.prefix_through(ConsumerGroupTargetAssignmentMetadata, start),
        23, 23, {"A": "foo-0", "B": "foo-1"}, {"A": (22, "foo-0", ""), "B": (22, "", "")},
    )
    # A and B heartbeat and transition to epoch 23.
    assert epoch_of(result) == 23
    result = case.heartbeat("B", 22)
    assert epoch_of(result) == 23 and assigned(result) == parse("foo-1")
    assert_table(case.mgr, 23, 23, {"A": "foo-0", "B": "foo-1"}, {"A": (23, "foo-0", ""), "B": (23, "foo-1", "")})
    assert case.rebuilt(case.log).snapshot() == case.mgr.snapshot()
