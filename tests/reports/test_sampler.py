"""The run sampler: it only observes (same trace hash and event count), stays bounded, and sees what happened."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model.sim.cluster import Cluster
from model.sim.runner import run, run_cluster
from reports.run_dir import sampled_run
from reports.sampler import MAX_BUCKETS, PARTITION_SERIES, RunSampler, bucket_ms_for, quantiles
from scenarios import library

FAULTED = ("consumer_pause", "network_partition", "broker_crash", "leadership_move")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(FAULTED), seed=st.integers(0, 10_000))
def test_the_sampler_only_observes(name: str, seed: int) -> None:
    scenario = library.get(name)
    plain = run(scenario, seed)
    sampled, samples = sampled_run(scenario, seed)
    assert (sampled.trace_hash, sampled.events, sampled.metrics) == (plain.trace_hash, plain.events, plain.metrics)
    assert samples.rows


class _Meddler(RunSampler):
    """A sampler that sets a timer of its own: the check above must catch it."""

    def attach(self, cluster: Cluster) -> None:
        super().attach(cluster)
        cluster.scheduler.timer_at(500, lambda: None)


def test_a_sampler_that_touches_the_run_is_caught() -> None:
    scenario = library.get("small")
    plain = run(scenario, 1)
    meddler = _Meddler()
    touched, _ = run_cluster(scenario, 1, extra_monitors=[meddler], before_run=meddler.attach)
    assert touched.events != plain.events


def test_samples_are_bounded_and_hold_every_series() -> None:
    scenario = library.get("consumer_pause")
    _, samples = sampled_run(scenario, 1)
    times = sorted({row[0] for row in samples.rows})
    assert len(times) <= MAX_BUCKETS + 1
    assert samples.bucket_ms == bucket_ms_for(scenario.duration_ms + scenario.heal_ms)
    series = {row[1] for row in samples.rows}
    assert set(PARTITION_SERIES) <= series
    assert {"group_epoch", "assignment_epoch", "member_epoch", "delivered", "redeliveries", "latency_p99"} <= series
    subjects = {row[2] for row in samples.rows if row[1] == "spso"}
    assert subjects == {"events-0", "events-1"}
    # Every produced record was acquired once at least; the SPSO ends at the log end on both partitions.
    assert sum(samples.delivery_counts.values()) >= 400 and min(samples.delivery_counts) == 1
    last = {row[2]: row[3] for row in samples.rows if row[1] == "spso"}
    assert sum(last.values()) == 400
    assert samples.latency_quantiles[-1][0] == 1.0


def test_fault_intervals_are_the_applied_faults_with_their_times() -> None:
    _, samples = sampled_run(library.get("consumer_pause"), 1)
    (pause,) = samples.fault_intervals
    assert (pause.kind, pause.target, pause.start_ms, pause.durational) == ("consumer_pause", "c1", 1_000, True)
    assert pause.end_ms is not None and pause.end_ms > pause.start_ms
    _, moved = sampled_run(library.get("leadership_move"), 1)
    assert [(f.kind, f.start_ms, f.end_ms, f.durational) for f in moved.fault_intervals] == [
        ("leadership_move", 1_000, None, False)]
    _, none = sampled_run(library.get("small"), 1)
    assert none.fault_intervals == []


def test_a_sampler_must_be_attached() -> None:
    with pytest.raises(RuntimeError, match=r"before_run=sampler\.attach"):
        RunSampler().close()


@given(st.integers(0, 10**9))
def test_bucket_width_bounds_the_sample_count(total_ms: int) -> None:
    width = bucket_ms_for(total_ms)
    assert width >= 50 and total_ms // width <= MAX_BUCKETS


@given(st.lists(st.integers(0, 10**6), max_size=2_000), st.integers(2, 300))
def test_quantiles_are_an_empirical_cdf(values: list[int], points: int) -> None:
    cdf = quantiles(values, points)
    if not values:
        assert cdf == []
        return
    assert len(cdf) <= points
    fractions = [q for q, _ in cdf]
    latencies = [v for _, v in cdf]
    assert fractions == sorted(fractions) and latencies == sorted(latencies)
    assert cdf[-1] == (1.0, max(values)) and cdf[0][1] == min(values)
    for fraction, value in cdf:
        assert sum(1 for v in values if v <= value) >= fraction * len(values) - 1e-9


def test_a_consumer_group_run_is_sampled_on_its_heartbeats() -> None:
    scenario = library.get("consumer_group")
    plain = run(scenario, 1)
    sampled, samples = sampled_run(scenario, 1)
    assert (sampled.trace_hash, sampled.events) == (plain.trace_hash, plain.events)
    epochs = [row for row in samples.rows if row[1] == "group_epoch"]
    assert len({row[0] for row in epochs}) > 20 and {row[2] for row in epochs} == {"order-readers"}
    assert {row[2] for row in samples.rows if row[1] == "member_epoch"} == {f"c{i}" for i in range(1, 7)}
    assert not [row for row in samples.rows if row[1] == "spso"]  # no share group, no share-partition
