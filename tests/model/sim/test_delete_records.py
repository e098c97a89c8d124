"""DeleteRecords (the delete_records fault kind): the log start offset moves under the share-partition
leaders, which follow it as Kafka trunk's SharePartition.updateCacheAndOffsets does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import scenarios
from model.core.share_partition import SharePartition
from model.core.share_state import RecordState
from model.sim.faults import FaultEvent, FaultPlanError
from model.sim.runner import run
from scenarios import library


def _instrument(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count what the run's share-partitions did when the log start passed their records."""
    seen = {"kept_acquired": 0, "archived_available": 0, "acks_across": 0, "acks_below": 0}
    keep_below, kafka_spans = SharePartition._keep_below, SharePartition._kafka_spans

    def counting_keep_below(self: SharePartition, log_start: int) -> None:
        keep_below(self, log_start)
        for b in self.below_start:
            key = "kept_acquired" if b.state == RecordState.ACQUIRED else "archived_available"
            seen[key] += b.last_offset - b.first_offset + 1

    def counting_spans(self: SharePartition, member_id: str, batches: Any, now_ms: int,
                       spans: list[Any]) -> Any:
        gone = self.log.log_start_offset
        for b in batches:
            if b.last_offset < gone:
                seen["acks_below"] += 1
            elif b.first_offset < gone:
                seen["acks_across"] += 1
        return kafka_spans(self, member_id, batches, now_ms, spans)

    monkeypatch.setattr(SharePartition, "_keep_below", counting_keep_below)
    monkeypatch.setattr(SharePartition, "_kafka_spans", counting_spans)
    return seen


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_delete_records_passes_available_acquired_and_acknowledged_records_and_runs_clean(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _instrument(monkeypatch)
    result = run(library.get("delete_records"), seed=seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"delete_records": 4}
    assert seen["kept_acquired"] > 0 and seen["archived_available"] > 0
    assert seen["acks_across"] + seen["acks_below"] > 0
    # The records deleted before delivery are neither lost (E-1 ran clean) nor delivered.
    assert result.metrics["records_accepted"] < result.metrics["records_produced"]


def test_an_acknowledgement_spans_the_new_log_start_on_some_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _instrument(monkeypatch)
    for seed in (1, 2, 3):
        assert run(library.get("delete_records"), seed=seed).ok
    assert seen["acks_across"] > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_leader_that_never_hears_the_log_start_is_caught(seed: int) -> None:
    result = run(library.get("delete_records"), seed=seed, mutant="log-start-unheard")
    assert not result.ok
    assert {v.invariant for v in result.violations} == {"eventual-resolution"}


def test_swarm_failovers_draws_delete_records_and_reaches_the_across_log_start_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = library.get("swarm_failovers")
    assert "delete_records" in scenario.fault_kinds
    seen = _instrument(monkeypatch)
    fired = 0
    for seed in (5, 8):  # seeds whose plan switches delete_records on
        result = run(scenario, seed)
        assert result.ok, [v.describe() for v in result.violations]
        fired += result.faults_fired.get("delete_records", 0)
    assert fired >= 2
    assert seen["kept_acquired"] > 0 and seen["acks_across"] + seen["acks_below"] > 0


@pytest.mark.parametrize("to", ["top", -1, True, ""])
def test_delete_records_params_are_checked(to: object) -> None:
    with pytest.raises(FaultPlanError, match=r"params\.to"):
        FaultEvent(0, "delete_records", "events-0", params=(("to", to),))  # type: ignore[arg-type]


@pytest.mark.parametrize("to", ["hwm", "half", 0, 120])
def test_delete_records_takes_hwm_half_or_an_offset(to: int | str) -> None:
    assert FaultEvent(0, "delete_records", "events-0", params=(("to", to),)).param("to") == to


def test_under_protocol_kip_the_window_drops_what_the_log_start_passed(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The KIP's reading: the SPSO jumps to the log start and the records below it leave the window whatever
    their state (a LOG_START write makes it durable at once); runs clean too."""
    text = (Path(library.__file__).parent / "library" / "delete_records.toml").read_text()
    text = text.replace('"group.share.session.timeout.ms" = 3000',
                        '"group.share.session.timeout.ms" = 3000\n"sharesim.protocol" = "kip"')
    path = tmp_path / "delete_records_kip.toml"
    path.write_text(text)
    seen = _instrument(monkeypatch)
    result = run(scenarios.load(path), seed=1)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"delete_records": 4}
    assert seen["kept_acquired"] == seen["archived_available"] == 0  # nothing kept below the start
