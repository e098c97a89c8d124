"""A share-partition leader that outlives its group's deletion must not write its old life into the new one.

Dense swarm seeds 4300022205136953387 and 6394583595046328460 violated spso-monotonic (SP-6): the
group was deleted (its share-group state tombstoned, GC-8/SC-8) while a leader kept the
share-partition in memory; the group, created again, re-initialized the state at state epoch 1
(GC-7: the new group's epoch) with no leader epoch stored, so nothing fenced the old leader (SC-5),
whose writes of changed batches, computed against the old life's durable state, were accepted and
let its SPSO jump past offsets the new state has no terminal record of. A leader now drops its
state and reads again when the share coordinator answers that the state does not exist (SC-9):
the summary read when a share session opens, or a write.

That left a leader that says nothing to the share coordinator between the delete and the
re-initialize (swarm seed 1871750372800869190; admin_alter_and_delete seed 1, where c3, paused
past its session timeout, comes back on its old share sessions). Now every live broker hears of a
share group's committed deletion and drops the group's share sessions and share-partitions (Kafka:
ShareGroupListener, KAFKA-19116), so the re-created group's leaders read the new state (SP-10).
"""

from __future__ import annotations

import pytest

from model.sim.runner import run
from model.sim.trace import TraceEvent
from scenarios import library

SEEDS = (4300022205136953387, 6394583595046328460, 1871750372800869190)


@pytest.mark.parametrize("seed", SEEDS)
def test_swarm_seed_with_a_deleted_and_recreated_group_runs_clean(seed: int) -> None:
    result = run(library.get("swarm"), seed, stop_on_first_violation=False)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.faults_fired.get("admin_delete_group", 0) >= 1


def _first_writes_after(events: list[TraceEvent], group_id: str, after_ms: int) -> dict[str, TraceEvent]:
    """The first WriteShareGroupState each share coordinator took for ``group_id``'s keys after ``after_ms``."""
    first: dict[str, TraceEvent] = {}
    for e in events:
        key = str(e.fields.get("key", ""))
        if e.kind == "coordinator.write" and e.time_ms > after_ms and key.startswith(group_id + ":"):
            first.setdefault(key, e)
    return first


def test_a_leader_of_a_deleted_group_does_not_write_its_old_life_into_the_recreated_group() -> None:
    """admin_alter_and_delete seed 1: g2 is deleted at 7 s while its leaders (b1, b2) still hold its
    share-partitions and c3's sessions; c3 comes back at 8 s, the group is created again and its state
    re-initialized (start offset -1). Before the fix c3's old session acquired from the old window and
    the acknowledgement's write set the new life's start offset to 200; now the new life starts at
    the earliest offset (share.auto.offset.reset = earliest) and c3 reads the topic again."""
    result = run(library.get("admin_alter_and_delete"), 1, trace=True, stop_on_first_violation=False)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.trace is not None
    events = result.trace.events
    deleted_at = next(e.time_ms for e in events if e.kind == "admin.result"
                      and e.fields.get("operation") == "delete_group" and e.fields.get("error") == 0)
    first = _first_writes_after(events, "g2", deleted_at)
    assert sorted(first) == ["g2:events-id:0", "g2:events-id:1"]
    for key, write in first.items():
        assert write.fields["start_offset"] == 0, (key, write)
    # c3 got g2's 400 records again (g: 400, g2 before the pause: 400).
    assert result.metrics["records_delivered"] >= 1190
    dropped = {e.node for e in events if e.kind == "share.group_deleted" and e.fields.get("group") == "g2"}
    assert dropped == {"b1", "b2"}  # the leaders of events-0 and events-1


def test_a_write_of_the_deleted_group_delayed_past_its_recreation_is_fenced() -> None:
    """deleted_group_late_write seed 1: g2's only consumer pauses holding records; their lock times out
    and b1's WriteShareGroupState is held 7 s on the link to the share coordinator (b2), past the
    group's deletion (5.6 s) and its re-creation (8 s). The re-created group's epochs carry on above the
    deleted one's, so its state epoch is higher and the late write is fenced (SC-5): nothing from the
    earlier life is accepted into the new one (earlier-life-write-fenced; mutant
    recreated-group-restarts-epoch)."""
    result = run(library.get("deleted_group_late_write"), 1, trace=True, stop_on_first_violation=False)
    assert result.violations == [], [v.describe() for v in result.violations]
    assert result.faults_fired == {"admin_delete_group": 1, "consumer_pause": 1, "message_delay": 1}
    assert result.trace is not None
    events = result.trace.events
    deleted_at = next(e.time_ms for e in events if e.kind == "admin.result"
                      and e.fields.get("operation") == "delete_group" and e.fields.get("error") == 0)
    initialize = next(e for e in events if e.time_ms > deleted_at and e.kind == "deliver"
                      and e.fields["msg_kind"] == "InitializeShareGroupState")
    recreated_at = initialize.time_ms
    # Sent before the new life's initialize (message ids go in send order), delivered in the new life.
    late = [e for e in events if e.kind == "deliver" and e.fields["msg_kind"] == "WriteShareGroupState"
            and e.fields["src"] == "b1" and e.time_ms > recreated_at and e.fields["id"] < initialize.fields["id"]]
    assert late and late[0].time_ms > 10_000  # the delayed write arrived in the new life
    writes = [e for e in events if e.kind == "coordinator.write" and str(e.fields["key"]).startswith("g2:")]
    old = max(e.fields["state_epoch"] for e in writes if e.time_ms < deleted_at)
    new = {e.fields["state_epoch"] for e in writes if e.time_ms > recreated_at}
    assert new and min(new) > old
