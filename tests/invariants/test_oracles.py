"""Issue 25: oracles that never trust the code they check.

* The independent reference of the state log (``invariants/state_log_reference.py``) agrees with the
  correct share coordinator's replay over any log of snapshots, updates and tombstones (Hypothesis), so
  ``coordinator-replay-equal`` raises no false alarm, and it disagrees with a wrong ``apply``.
* The ghost ledger's justification (``Ledger.unjustified``): an offset a leader may leave behind is one a
  client acknowledged terminal, one handed out at the delivery limit, one without a deliverable record in
  the data log, or one below its log start offset; nothing a leader wrote justifies anything.
* The rewritten ``spso-monotonic`` and ``eventual-resolution`` catch, in library scenarios, mutants the
  versions before issue 25 could not see (a start offset moved wrongly but durably; records held back by
  a wrong last stable offset), by the part of each check that is new.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from invariants.ledger import Ledger
from invariants.sink import ViolationSink
from invariants.state_log_reference import StateLogReference, normal_batches
from model.core.log import PartitionLog
from model.core.share_coordinator import ShareCoordinatorShard
from model.core.share_partition import AcknowledgementBatch, AcquiredRecords
from model.core.share_records import ShareSnapshot, ShareTombstone, ShareUpdate
from model.core.share_state import AcknowledgeType, RecordState, SharePartitionKey, StateBatch
from model.sim.runner import run
from scenarios import library

KEY = SharePartitionKey("g", "t-id", 0)
OTHER = SharePartitionKey("g", "t-id", 1)
_STATES = (RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)

# -- the state log's reference -------------------------------------------------------------------------


@st.composite
def _batches(draw: st.DrawFn) -> tuple[StateBatch, ...]:
    out = []
    for _ in range(draw(st.integers(0, 4))):
        first = draw(st.integers(0, 30))
        out.append(StateBatch(first, first + draw(st.integers(0, 8)), draw(st.sampled_from(_STATES)),
                              draw(st.integers(0, 4))))
    return tuple(out)


@st.composite
def _logs(draw: st.DrawFn) -> list[object]:
    """Logs a coordinator could have written: each update carries its key's latest snapshot epoch."""
    log: list[object] = []
    snapshot_epoch: dict[SharePartitionKey, int] = {}
    start: dict[SharePartitionKey, int] = {}
    for _ in range(draw(st.integers(1, 25))):
        key = draw(st.sampled_from((KEY, OTHER)))
        kind = draw(st.sampled_from(("snapshot", "update", "update", "update", "tombstone")))
        if kind == "snapshot" or key not in snapshot_epoch:
            epoch = snapshot_epoch[key] = snapshot_epoch.get(key, -1) + 1
            start[key] = max(start.get(key, 0), draw(st.integers(0, 20)))
            batches = tuple(b for b in draw(_batches()) if b.first_offset >= start[key])
            log.append(ShareSnapshot(key, epoch, draw(st.integers(0, 2)), draw(st.integers(0, 3)), start[key],
                                     normal_to_batches(normal_batches(batches)),
                                     draw(st.integers(-1, 9)), draw(st.integers(0, 5)), draw(st.integers(0, 5))))
        elif kind == "update":
            moved = draw(st.booleans())
            if moved:
                start[key] += draw(st.integers(0, 6))
            log.append(ShareUpdate(key, snapshot_epoch[key], draw(st.sampled_from((-1, 3))),
                                   start[key] if moved else -1, draw(_batches()), draw(st.integers(-1, 9))))
        else:
            log.append(ShareTombstone(key))
            snapshot_epoch.pop(key)
            start.pop(key)
    return log


def normal_to_batches(batches: tuple[tuple[int, int, int, int], ...]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(f, last, RecordState(state), count) for f, last, state, count in batches)


@settings(max_examples=300, deadline=None)
@given(_logs())
def test_the_reference_agrees_with_the_correct_coordinators_replay(log: list[object]) -> None:
    shard = ShareCoordinatorShard.replay(log)  # type: ignore[arg-type]
    reference = StateLogReference()
    for record in log:
        reference.replay(record)
    assert sorted(reference.states) == shard.keys()
    for key, expected in reference.states.items():
        state = shard.state(key)
        assert state is not None
        assert (expected.state_epoch, expected.leader_epoch, expected.snapshot_epoch, expected.start_offset,
                expected.delivery_complete_count, expected.create_timestamp_ms, expected.write_timestamp_ms) == (
            state.state_epoch, state.leader_epoch, state.snapshot_epoch, state.start_offset,
            state.delivery_complete_count, state.create_timestamp_ms, state.write_timestamp_ms)
        assert expected.batches == normal_batches(state.state_batches)


def test_the_reference_is_not_the_coordinators_apply() -> None:
    """A later update with a lower delivery count does not take an offset back (higher count wins)."""
    reference = StateLogReference()
    reference.replay(ShareSnapshot(KEY, 0, 1, 0, 0, ()))
    reference.replay(ShareUpdate(KEY, 0, -1, -1, (StateBatch(0, 4, RecordState.ACKNOWLEDGED, 2),)))
    reference.replay(ShareUpdate(KEY, 0, -1, -1, (StateBatch(2, 6, RecordState.AVAILABLE, 1),)))
    assert reference.states[KEY].batches == ((0, 4, 2, 2), (5, 6, 0, 1))


# -- the ledger's justification ------------------------------------------------------------------------


def _ack(first: int, last: int, kind: AcknowledgeType) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, (int(kind),))


def test_only_a_protocol_reason_justifies_leaving_an_offset_behind() -> None:
    ledger = Ledger(ViolationSink(1), delivery_count_limit=3)
    log = PartitionLog()
    log.append(10)
    log.advance_high_watermark()
    assert ledger.unjustified(KEY, 0, 9, log, False) == (10, 0)
    ledger.on_acknowledge(KEY, "m", (_ack(0, 2, AcknowledgeType.ACCEPT), _ack(3, 3, AcknowledgeType.RELEASE)), 0, 0)
    assert ledger.unjustified(KEY, 0, 9, log, False) == (7, 3)  # a RELEASE is no reason
    ledger.on_acquire(KEY, "m", [AcquiredRecords(3, 4, 3), AcquiredRecords(5, 5, 2)], 0, 0)  # 3-4 at the limit
    assert ledger.unjustified(KEY, 0, 9, log, False) == (5, 5)
    log.compact([6])  # no record there any more
    assert ledger.unjustified(KEY, 0, 9, log, False) == (4, 5)
    log.delete_records(8)  # below the log start
    assert ledger.unjustified(KEY, 0, 9, log, False) == (2, 8)
    ledger.on_acknowledge(KEY, "m", (AcknowledgementBatch(8, 9, (int(AcknowledgeType.REJECT),
                                                                 int(AcknowledgeType.GAP))),), 0, 0)
    assert ledger.unjustified(KEY, 0, 9, log, False) == (0, -1)


def test_a_groups_own_delivery_limit_and_a_new_life_count() -> None:
    ledger = Ledger(ViolationSink(1), delivery_count_limit=5, limits={"g": 2})
    log = PartitionLog()
    log.append(4)
    log.advance_high_watermark()
    ledger.on_acquire(KEY, "m", [AcquiredRecords(0, 3, 2)], 0, 0)
    assert ledger.unjustified(KEY, 0, 3, log, False) == (0, -1)
    ledger.on_share_state_created(KEY, 2, 1)  # the group deleted and created again: nothing carries over
    assert ledger.unjustified(KEY, 0, 3, log, False) == (4, 0)


# -- the rewritten checks catch what the old ones could not -------------------------------------------


def test_spso_monotonic_catches_a_start_offset_moved_wrongly_but_durably() -> None:
    """start-offset-skips-released: every offset the next leader's SPSO passes was made durable by the
    write that carried the start offset, so the check before issue 25 (durably terminal or below a
    durable start offset) passed it; the justification the ledger saw does not."""
    result = run(library.get("slow_consumers_leader_moves"), 0, mutant="start-offset-skips-released",
                 stop_on_first_violation=False)
    spso = [v for v in result.violations if v.invariant == "spso-monotonic"]
    assert spso, [v.describe() for v in result.violations]
    assert all("no client acknowledged" in v.message for v in spso)  # the new part, none of the old
    assert not any("not durably terminal" in v.message for v in spso)


def _lost_only(message: str) -> bool:
    """Every share-partition E-1 lists shows only records outside the window: the E-1 before issue 25
    (the window from the current SPSO to the log's own bound) counted none of them."""
    parts = message.split(": ", 1)[1].split("; g ")
    return all(re.search(r"events-\d: \d+ record\(s\) the producers had acknowledged", "g " + p.lstrip("g "))
               for p in parts)


def test_eventual_resolution_counts_what_the_producers_had_acknowledged() -> None:
    result = run(library.get("read_committed_transactions"), 0, mutant="aborted-transaction-holds-lso",
                 stop_on_first_violation=False)
    e1 = [v for v in result.violations if v.invariant == "eventual-resolution"]
    assert len(e1) == 1 and _lost_only(e1[0].message), [v.describe() for v in result.violations]
    assert e1[0].state["records"] > 0


def test_eventual_resolution_sees_records_lost_to_a_wrong_start_offset() -> None:
    result = run(library.get("slow_consumers_leader_moves"), 0, mutant="start-offset-skips-released",
                 stop_on_first_violation=False)
    e1 = [v for v in result.violations if v.invariant == "eventual-resolution"]
    assert len(e1) == 1 and _lost_only(e1[0].message), [v.describe() for v in result.violations]


def test_the_correct_model_leaves_nothing_unjustified_in_those_scenarios() -> None:
    for name in ("slow_consumers_leader_moves", "read_committed_transactions"):
        result = run(library.get(name), 0, stop_on_first_violation=False)
        assert result.violations == [], [v.describe() for v in result.violations]


def test_assign_initialized_only_reads_the_state_log_not_only_the_group_coordinators_set() -> None:
    """initialized-when-sent: the group coordinator's own initialized set holds the partitions it assigns
    (what the check read before issue 25); the committed state log has no ShareSnapshot of them yet."""
    result = run(library.get("swarm"), 0, mutant="initialized-when-sent", stop_on_first_violation=False)
    found = [v for v in result.violations if v.invariant == "assign-initialized-only"]
    assert found, [v.describe() for v in result.violations]
    assert all("no share coordinator has committed" in v.message for v in found)
