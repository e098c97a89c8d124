"""The runner: RunResult and its JSON, stopping at the first violation or not, quiescence, traces."""

from __future__ import annotations

import json
from pathlib import Path

from invariants.monitors import Monitor, ViolationSink
from model.core.share_partition import AcquiredRecords
from model.core.share_state import SharePartitionKey
from model.sim.runner import RunResult, run, run_cluster
from model.sim.trace import read_ndjson
from scenarios import library


class _AlwaysUpset(Monitor):
    """Reports a violation at every acquisition (to drive the runner's violation paths)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        self.sink.report("exclusive-acquisition", now_ms, f"{key}: test violation", key=str(key))


class _UpsetAtLoad(Monitor):
    """Reports a violation when a share coordinator first loads, which happens while the cluster is built."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))

    def on_share_coordinator_loaded(self, partition: int, shard: object, committed: object, uncommitted: object,
                                    now_ms: int, *, log_start_offset: int = 0) -> None:
        self.sink.report("coordinator-replay-equal", now_ms, f"__share_group_state-{partition}: test violation")


def test_a_violation_while_the_cluster_is_built_ends_the_run_at_once() -> None:
    result, _ = run_cluster(library.get("small"), 1, extra_monitors=[_UpsetAtLoad()])
    assert result.verdict == "violated" and result.sim_time_ms == 0
    assert result.violations[0].invariant == "coordinator-replay-equal"


def test_run_result_json_is_plain_data_and_complete() -> None:
    result = run(library.get("small"), 4)
    assert isinstance(result, RunResult) and result.ok and result.verdict == "ok"
    data = json.loads(json.dumps(result.to_json()))
    assert data["scenario"] == "small" and data["seed"] == 4
    assert data["events"] == result.events > 0 and data["sim_time_ms"] == result.sim_time_ms
    assert len(data["trace_hash"]) == 32
    metrics = data["metrics"]
    for key in ("records_produced", "records_delivered", "records_accepted", "records_released",
                "records_rejected", "offsets_archived_or_skipped", "redeliveries", "latency_p50_ms", "latency_p99_ms",
                "rebalances", "failovers", "events", "sim_time_ms"):
        assert key in metrics
    assert metrics["records_produced"] == metrics["records_accepted"] == 400
    assert result.trace is None  # not kept unless asked


def test_the_scenario_seed_is_the_default_seed() -> None:
    scenario = library.get("small")
    assert run(scenario).trace_hash == run(scenario, scenario.seed).trace_hash


def test_a_quiescent_run_stops_at_the_end_of_the_fault_phase() -> None:
    result = run(library.get("small"), 1)
    assert result.metrics["quiescent_at_ms"] == result.sim_time_ms == library.get("small").duration_ms


def test_stop_on_first_violation_stops_the_run_there() -> None:
    first, cluster = run_cluster(library.get("small"), 1, extra_monitors=[_AlwaysUpset()])
    assert first.verdict == "violated" and len(first.violations) == 1
    assert first.violations[0].invariant == "exclusive-acquisition" and first.violations[0].seed == 1
    assert first.sim_time_ms == first.violations[0].time_ms < 1_000
    every, _ = run_cluster(library.get("small"), 1, stop_on_first_violation=False, extra_monitors=[_AlwaysUpset()])
    assert len(every.violations) > 1 and every.sim_time_ms == library.get("small").duration_ms
    assert cluster.sink is cluster.observer.sink  # type: ignore[attr-defined]


def test_trace_keeps_every_event_and_writes_ndjson(tmp_path: Path) -> None:
    path = tmp_path / "run.ndjson"
    kept = run(library.get("leadership_move"), 2, trace_path=path)
    plain = run(library.get("leadership_move"), 2)
    assert kept.trace_hash == plain.trace_hash  # keeping the events does not change them
    assert kept.trace is not None and len(kept.trace.events) == kept.trace.count
    events = read_ndjson(path)
    assert len(events) == kept.trace.count
    assert [e.kind for e in events if e.kind == "fault_start"] == ["fault_start"]
    assert events[-1].kind == "run.end"


def test_liveness_deadline_reports_e1_when_records_stay_unresolved() -> None:
    # Every message is lost for a second: the requests then in flight wait out their 30 s timeouts,
    # far past a 1 s healing phase, so records are still unresolved at the deadline.
    from dataclasses import replace

    from model.sim.faults import FaultEvent
    from scenarios.spec import FaultsSpec

    base = library.small("stuck", consumers=1, duration_ms=2_000)
    stuck = replace(base, heal_ms=1_000,
                    faults=FaultsSpec(plan=(FaultEvent(100, "message_loss", duration_ms=1_000, probability=1.0),)))
    result = run(stuck, 1, stop_on_first_violation=False)
    assert result.verdict == "violated"
    assert [v.invariant for v in result.violations][:1] == ["eventual-resolution"]
    assert result.sim_time_ms == 3_000


def test_e1_names_each_share_partition_its_offsets_and_the_states_and_members_holding_them() -> None:
    # The producer is still sending at the deadline: E-1 used to say "0 record(s) on 1 share-partition(s)".
    import re
    from dataclasses import replace

    from scenarios.spec import ProducerSpec

    base = library.small("busy", consumers=1, duration_ms=2_000)
    busy = replace(base, heal_ms=1_000, producers=(ProducerSpec("events", records=100_000, rate_per_s=1_000),))
    result = run(busy, 1, stop_on_first_violation=False)
    [e1] = [v for v in result.violations if v.invariant == "eventual-resolution"]
    head, _, details = e1.message.partition(" ms after the faults stopped: ")
    total = int(head.split(" ")[0])
    assert head.startswith(f"{total} offset(s) on 2 share-partition(s) neither acknowledged nor archived and "
                           "1 producer(s) not finished 1000")
    assert total == e1.state["records"] > 0
    listed = 0
    for part in details.split("; ")[:2]:
        match = re.fullmatch(r"g events-\d: offsets (\d+)-(\d+) \((.*)\)", part)
        assert match is not None, part
        first, last, states = int(match[1]), int(match[2]), match[3]
        counts = [int(word.split(" ")[0]) for word in states.split(", ")]
        assert sum(counts) == last - first + 1 and "ACQUIRED by c1" in states
        listed += last - first + 1
    assert listed == total
    assert re.fullmatch(r"producer p1: \d+ of 100000 record\(s\) produced so far", details.split("; ")[2])


def test_e1_lists_a_bounded_number_of_share_partitions() -> None:
    from dataclasses import replace

    from scenarios.spec import ProducerSpec, TopicSpec

    base = library.small("wide", consumers=1, duration_ms=2_000)
    wide = replace(base, heal_ms=1_000, topics=(TopicSpec("events", partitions=40),),
                   producers=(ProducerSpec("events", records=100_000, rate_per_s=2_000),))
    result = run(wide, 1, stop_on_first_violation=False)
    [e1] = [v for v in result.violations if v.invariant == "eventual-resolution"]
    assert e1.state["partitions"] > 5 and f"and {e1.state['partitions'] - 5} more share-partition(s)" in e1.message
    assert len(e1.message) < 1_000


def test_a_run_whose_group_got_none_of_the_records_produced_says_so_and_why() -> None:
    from dataclasses import replace

    small = library.get("small")
    group = small.groups[0]
    reading_latest = replace(group, config={**group.config, "group.share.auto.offset.reset": "latest"})
    latest = replace(small, groups=(reading_latest,), producers=(replace(small.producers[0], records=120),))
    result = run(latest, 1)
    assert result.ok and result.metrics["records_produced"] == 120 and result.metrics["records_delivered"] == 0
    [note] = result.notes
    assert note.startswith("120 record(s) produced to events, none delivered to share group g: its "
                           "group.share.auto.offset.reset is latest, so each share-partition started at the end of "
                           "its log when the group first read it (events-0 at offset 60, events-1 at offset 60)")
    assert note.endswith('set "group.share.auto.offset.reset" = "earliest" to read them')
    assert json.loads(json.dumps(result.to_json()))["notes"] == [note]
    assert run(replace(latest, groups=(group,)), 1).notes == []  # earliest: every record delivered, no note
    assert run(replace(small, consumers=()), 1).notes == [
        "400 record(s) produced to events, none delivered to share group g: it has no consumers"]


def test_trace_events_counts_the_lines_trace_writes_and_events_the_simulator_steps(tmp_path: Path) -> None:
    path = tmp_path / "trace.ndjson"
    result = run(library.get("small"), 2, trace_path=path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert result.metrics["trace_events"] == len(lines) == run(library.get("small"), 2).metrics["trace_events"]
    assert result.events == result.metrics["events"] != len(lines)  # steps that record nothing, or several


def test_offsets_archived_or_skipped_counts_offsets_an_offset_reset_skips_not_records() -> None:
    # swarm_lifecycle seed 18 resets its groups' offsets to 173, 381, 371 and 917 on a topic of 600 records: the
    # SPSO jumps over offsets never archived, some past the log end (this was records_archived = 1839).
    result = run(library.get("swarm_lifecycle"), 18)
    assert "records_archived" not in result.metrics
    assert [event["params"]["offset"] for event in result.fault_plan if event["kind"] == "admin_alter_offsets"] == [
        173, "latest", 381, 371, 917]
    assert result.metrics["offsets_archived_or_skipped"] > result.metrics["records_produced"] == 600
