"""The share coordinator as Kafka trunk runs it, in whole simulations (issue 24): deliveryCompleteCount
(KIP-1226) written by the leaders and kept by the coordinators, the idempotent initialize, the metadata
image and the cold snapshots; each scenario runs clean, and the mutant of each mechanism is caught there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from invariants.monitors import Monitor, ViolationSink
from model.core.errors import Errors
from model.core.share_records import ShareSnapshot, ShareUpdate
from model.core.share_state import (
    InitializeShareGroupStateRequest,
    ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest,
)
from model.sim.runner import run, run_cluster
from scenarios import library


class _Seen(Monitor):
    """What the share coordinators served and committed."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.served: list[tuple[object, object, int]] = []
        self.committed: list[object] = []

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        self.served.append((request, response, len(records)))

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        self.committed.extend(records)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_leaders_write_a_delivery_complete_count_and_the_coordinators_keep_it(seed: int) -> None:
    seen = _Seen()
    result, cluster = run_cluster(library.get("hostile_complete_count"), seed, extra_monitors=[seen])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert cluster.hostile is not None
    hostile = {id(body) for _, body in cluster.hostile.sent}  # the negative-epoch writes carry no count
    writes = [r for r, _, _ in seen.served if isinstance(r, WriteShareGroupStateRequest) and id(r) not in hostile]
    assert writes and all(w.delivery_complete_count >= 0 for w in writes)
    assert max(w.delivery_complete_count for w in writes) > 0  # released heads leave completions above them
    counts = [r.delivery_complete_count for r in seen.committed if isinstance(r, ShareSnapshot | ShareUpdate)]
    assert max(counts) > 0
    # At the end every record is resolved and no completion lies above a start offset: the count is 0.
    assert result.metrics["records_unresolved"] == 0
    for partition in cluster.tracker.latest.values():
        assert partition.delivery_complete_count == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_duplicate_initialize_is_answered_without_writing(seed: int) -> None:
    seen = _Seen()
    result, cluster = run_cluster(library.get("duplicate_initialize"), seed, extra_monitors=[seen])
    assert result.violations == [], [v.describe() for v in result.violations]
    assert cluster.hostile is not None
    repeated = [(request, response, records) for request, response, records in seen.served
                if any(body is request for name, body in cluster.hostile.sent if name == "repeated_initialize")]
    assert len(repeated) == 2  # one per partition
    for request, response, records in repeated:
        assert isinstance(request, InitializeShareGroupStateRequest)
        assert getattr(response, "error_code", None) == Errors.NONE and records == 0
    summaries = [response for _, response, _ in seen.served if isinstance(response, ReadShareGroupStateSummaryResponse)
                 and response.error_code == Errors.NONE]
    assert any(s.delivery_complete_count > 0 for s in summaries)  # the summary carries the count (KIP-1226)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_partition_added_is_initialized_once_the_coordinator_knows_it(seed: int) -> None:
    seen = _Seen()
    result, cluster = run_cluster(library.get("share_coordinator_new_partition"), seed, extra_monitors=[seen])
    assert result.violations == [], [v.describe() for v in result.violations]
    initialized = {r.key.partition for r, response, records in seen.served
                   if isinstance(r, InitializeShareGroupStateRequest) and records}
    assert initialized == {0, 1, 2}
    assert result.metrics["records_unresolved"] == 0
    assert any(k.partition == 2 and p.spso > 0 for k, p in cluster.tracker.latest.items())


@pytest.mark.parametrize(("mutant", "scenario", "invariant"), [
    ("delivery-complete-count-wrong", "small", "delivery-complete-count"),
    ("delivery-complete-count-last-write", "hostile_complete_count", "stored-delivery-complete-count"),
    ("initialize-overwrites", "duplicate_initialize", "stored-delivery-complete-count"),
    ("share-coordinator-stale-metadata", "share_coordinator_new_partition", "eventual-resolution"),
    ("cold-snapshot-ignores-updates", "share_coordinator_pruning", "stored-start-offset-monotonic"),
])
def test_each_mechanism_s_mutant_is_caught_on_seeds_0_to_2(mutant: str, scenario: str, invariant: str) -> None:
    caught = [seed for seed in range(3)
              if invariant in {v.invariant for v in run(library.get(scenario), seed, stop_on_first_violation=False,
                                                        mutant=mutant).violations}]
    assert caught, f"{mutant} was not caught by {invariant} in {scenario} seeds 0-2"


class _Reached(_Seen):
    """Besides what ``_Seen`` keeps: the answers UNKNOWN_TOPIC_OR_PARTITION / INVALID_REQUEST served."""

    def __init__(self) -> None:
        super().__init__()
        self.errors: dict[str, set[Errors]] = {}

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        error = Errors(getattr(response, "error_code", Errors.NONE))
        self.errors.setdefault(type(request).__name__, set()).add(error)
        if isinstance(request, WriteShareGroupStateRequest):
            self.served.append((request, response, len(records)))


@pytest.mark.parametrize("seed", [1])
def test_the_swarm_config_runs_trunk_s_coordinator_clean_and_reaches_its_mechanisms(seed: int) -> None:
    """swarm_config (which draws share.coordinator.cold.partition.snapshot.interval.ms and adds partitions)
    on protocol kafka: the leaders' writes carry counts above zero, cold snapshots (create != write
    timestamp) commit, and the run is clean."""
    seen = _Reached()
    result, _ = run_cluster(library.get("swarm_config"), seed, extra_monitors=[seen])
    assert result.violations == [], [v.describe() for v in result.violations]
    writes = [r for r, _, _ in seen.served if isinstance(r, WriteShareGroupStateRequest)]
    assert any(w.delivery_complete_count > 0 for w in writes)
    cold = [r for r in seen.committed if isinstance(r, ShareSnapshot) and r.create_timestamp_ms != r.write_timestamp_ms]
    assert cold, "no cold snapshot committed"


def test_a_swarm_reaches_the_idempotent_initialize(monkeypatch: pytest.MonkeyPatch) -> None:
    """swarm_lifecycle draws it without a hostile client: the group coordinator sends an
    InitializeShareGroupState again when it heard no answer (after a retry interval: a failover, a delayed
    message), and the share coordinator answers the duplicate (same state epoch and start offset) without
    writing, as trunk's initializeState does. Seeds 290 and 294 are the first of 300 to reach it (18 and 19
    while a loading group coordinator re-sent at once)."""
    from model.core.share_coordinator import ShareCoordinatorShard

    duplicates: list[int] = []
    initialize = ShareCoordinatorShard.initialize

    def counted(self: ShareCoordinatorShard, req: InitializeShareGroupStateRequest) -> Any:
        stored = self.state(req.key)
        resp, records = initialize(self, req)
        if stored is not None and resp.error_code == Errors.NONE and not records:
            assert (stored.state_epoch, stored.start_offset) == (req.state_epoch, req.start_offset)
            duplicates.append(req.state_epoch)
        return resp, records

    monkeypatch.setattr(ShareCoordinatorShard, "initialize", counted)
    for seed in (290, 294):
        assert run(library.get("swarm_lifecycle"), seed).ok
    assert duplicates, "no duplicate initialize reached the share coordinators"
