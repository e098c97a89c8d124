"""What a run report plots: a sampler that watches a run and never changes it.

``RunSampler`` is an extra monitor (``run_cluster(extra_monitors=[sampler],
before_run=sampler.attach)``). It sets no timer and records no trace event, so
a run's trace hash and event count are the same with and without it. It
samples when the run calls it (a share-partition step, a group coordinator
step, a committed produce, a leader election …): at the first such step of each
time bucket (``bucket_ms``, chosen so a run has at most ``MAX_BUCKETS`` buckets:
memory is bounded by buckets × series, not by records) and once more at the end
(``close``). A quiet stretch with no protocol step has no sample; the plots
hold the last value.

Each sample is a set of rows ``(time_ms, series, subject, value)``:

* per share-partition (subject "topic-N", or "group/topic-N" with several share
  groups), from its latest leader: ``spso``, ``speo``, ``in_flight`` (SPEO −
  SPSO), ``acquired`` (records ACQUIRED now) and ``archived`` (offsets the group
  resolved without an accept so far, as the run's ``offsets_archived_or_skipped`` metric);
* per group, from its current coordinator: ``group_epoch``, ``assignment_epoch``;
* per consumer, from the client: ``member_epoch`` (0 while joining, absent once dead);
* for the run: ``delivered`` and ``redeliveries`` (cumulative), and the p50 / p99 /
  max of the end-to-end latencies that arrived since the previous sample.

Beside the rows: records acquired per delivery count (``on_acquire``), every
end-to-end latency's quantiles (``close``) and the faults that fired with when
they started and ended (from the injector).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

from invariants.monitors import Monitor, ViolationSink
from model.sim.controller import topic_id_for
from model.sim.faults import FAULT_KINDS, FaultEvent

if TYPE_CHECKING:
    from model.core.group.coordinator import GroupCoordinatorShard
    from model.core.share_partition import AcknowledgementBatch, AcquiredRecords, SharePartition
    from model.core.share_state import SharePartitionKey, WriteShareGroupStateRequest
    from model.sim.cluster import Cluster

MAX_BUCKETS: Final = 400
MIN_BUCKET_MS: Final = 50
LATENCY_POINTS: Final = 200  # quantiles kept for the latency CDF

TIMELINE_SCHEMA: Final = pa.schema([
    ("time_ms", pa.int64()),
    ("series", pa.string()),
    ("subject", pa.string()),
    ("value", pa.int64()),
])
PARTITION_SERIES: Final = ("spso", "speo", "in_flight", "acquired", "archived")


def bucket_ms_for(total_ms: int) -> int:
    """The bucket width that keeps a run of ``total_ms`` within ``MAX_BUCKETS`` samples."""
    return max(MIN_BUCKET_MS, -(-total_ms // MAX_BUCKETS))


@dataclass(frozen=True)
class FaultInterval:
    index: int  # in the fault plan
    kind: str
    target: str
    start_ms: int
    end_ms: int | None  # None: instant, or still active when the run stopped
    durational: bool

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "kind": self.kind, "target": self.target, "start_ms": self.start_ms,
                "end_ms": self.end_ms, "durational": self.durational}


@dataclass
class RunSamples:
    """Everything the sampler saw; ``timeline_table`` is ``timeline.parquet``."""

    bucket_ms: int
    rows: list[tuple[int, str, str, int]] = field(default_factory=list)
    delivery_counts: dict[int, int] = field(default_factory=dict)  # delivery count -> records acquired with it
    latency_quantiles: list[tuple[float, int]] = field(default_factory=list)  # (fraction, latency ms)
    fault_intervals: list[FaultInterval] = field(default_factory=list)

    def timeline_table(self) -> pa.Table:
        rows = self.rows
        return pa.Table.from_arrays([pa.array([row[i] for row in rows], type=f.type)
                                     for i, f in enumerate(TIMELINE_SCHEMA)], schema=TIMELINE_SCHEMA)

    def to_json(self) -> dict[str, Any]:
        """What ``result.json`` keeps beside the RunResult (the timeline goes to Parquet)."""
        return {
            "bucket_ms": self.bucket_ms,
            "delivery_counts": {str(k): v for k, v in sorted(self.delivery_counts.items())},
            "latency_quantiles": [[q, v] for q, v in self.latency_quantiles],
            "fault_intervals": [f.to_json() for f in self.fault_intervals],
        }


def quantiles(values: list[int], points: int = LATENCY_POINTS) -> list[tuple[float, int]]:
    """At most ``points`` (fraction ≤ value, value) pairs of the empirical CDF of ``values``."""
    if not values:
        return []
    ordered = sorted(values)
    n = len(ordered)
    k = min(points, n)
    picks = sorted({(i * (n - 1)) // (k - 1) for i in range(k)}) if k > 1 else [n - 1]
    return [((i + 1) / n, ordered[i]) for i in picks]


class RunSampler(Monitor):
    def __init__(self, bucket_ms: int | None = None) -> None:
        super().__init__(ViolationSink(0))  # never reports; the cluster swaps in its own sink
        self._bucket_ms = bucket_ms
        self._next_ms = 0
        self._cluster: Cluster | None = None
        self._topic_names: dict[str, str] = {}
        self._latencies_seen: dict[str, int] = {}
        self.samples = RunSamples(bucket_ms or MIN_BUCKET_MS)

    def attach(self, cluster: Cluster) -> None:
        """``before_run``: the cluster the samples read (after it is built, before it runs)."""
        scenario = cluster.scenario
        self._cluster = cluster
        self.samples.bucket_ms = self._bucket_ms or bucket_ms_for(scenario.duration_ms + scenario.heal_ms)
        self._topic_names = {topic_id_for(t.name): t.name for t in scenario.topics}

    # -- the hooks: each may take the sample of a new bucket ------------------------------------

    def on_acquire(self, key: SharePartitionKey, member_id: str, acquired: list[AcquiredRecords],
                   leader_epoch: int, now_ms: int) -> None:
        counts = self.samples.delivery_counts
        for batch in acquired:
            counts[batch.delivery_count] = (counts.get(batch.delivery_count, 0)
                                            + batch.last_offset - batch.first_offset + 1)
        self._tick(now_ms)

    def on_ack_confirmed(self, key: SharePartitionKey, member_id: str, batches: tuple[AcknowledgementBatch, ...],
                         leader_epoch: int, state_epoch: int, now_ms: int) -> None:
        self._tick(now_ms)

    def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
        self._tick(now_ms)

    def on_write_accepted(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self._tick(now_ms)

    def on_leader_start(self, key: SharePartitionKey, broker: int, leader_epoch: int, now_ms: int) -> None:
        self._tick(now_ms)

    def on_event(self, kind: str, now_ms: int, **fields: Any) -> None:
        self._tick(now_ms)

    def on_group_coordinator_step(self, partition: int, leader_epoch: int, shard: GroupCoordinatorShard,
                                  group_id: str | None, now_ms: int) -> None:
        self._tick(now_ms)  # heartbeats: samples in a consumer group too, which has no share-partition step

    def on_records_committed(self, topic: str, partition: int, first_offset: int, count: int,
                             producer_id: int | None, transactional: bool, now_ms: int) -> None:
        self._tick(now_ms)

    def _tick(self, now_ms: int) -> None:
        # Hooks fire while the cluster is built, before ``attach``: nothing to sample yet.
        if now_ms >= self._next_ms and self._cluster is not None:
            self._sample(now_ms)

    def close(self) -> RunSamples:
        """The last sample, the latency quantiles and the fault intervals; call after the run."""
        cluster = self._require()
        now = cluster.scheduler.now_ms
        self._sample(now)
        latencies: list[int] = []
        for name in sorted(cluster.consumers):
            latencies.extend(cluster.consumers[name].metrics.end_to_end_latencies_ms)
        self.samples.latency_quantiles = quantiles(latencies)
        self.samples.fault_intervals = fault_intervals(cluster)
        return self.samples

    # -- a sample ---------------------------------------------------------------------------------

    def _require(self) -> Cluster:
        if self._cluster is None:
            raise RuntimeError("RunSampler.attach(cluster) was not called: pass before_run=sampler.attach")
        return self._cluster

    def _sample(self, now_ms: int) -> None:
        cluster = self._require()
        bucket = self.samples.bucket_ms
        self._next_ms = (now_ms // bucket + 1) * bucket
        rows = self.samples.rows
        rows.extend(self._partition_rows(cluster, now_ms))
        rows.extend(self._group_rows(cluster, now_ms))
        rows.extend(self._client_rows(cluster, now_ms))

    def _subject(self, key: SharePartitionKey, several_groups: bool) -> str:
        name = f"{self._topic_names.get(key.topic_id, key.topic_id)}-{key.partition}"
        return f"{key.group_id}/{name}" if several_groups else name

    def _partition_rows(self, cluster: Cluster, now_ms: int) -> Iterator[tuple[int, str, str, int]]:
        tracker = cluster.tracker
        several = sum(1 for g in cluster.scenario.groups if g.kind == "share") > 1
        for key in sorted(tracker.latest):
            partition = tracker.latest[key]
            if not partition.ready:
                continue  # a leader still loading shows SPSO 0: no sample rather than a false dip
            subject = self._subject(key, several)
            spso = partition.spso
            first = tracker.first_spso.get(key, spso)
            archived = max(0, spso - first - tracker.accepted_between(key, first, spso))
            for series, value in zip(PARTITION_SERIES, (spso, partition.speo, partition.in_flight_count,
                                                        partition.acquired_count, archived), strict=True):
                yield now_ms, series, subject, value

    def _group_rows(self, cluster: Cluster, now_ms: int) -> Iterator[tuple[int, str, str, int]]:
        for group in sorted(cluster.scenario.groups, key=lambda g: g.name):
            shard = cluster.group_coordinator(group.name)
            if shard is None:
                continue
            manager = shard.share if group.kind == "share" else shard.consumer
            state = manager.group(group.name)
            if state is not None:
                yield now_ms, "group_epoch", group.name, state.group_epoch
                yield now_ms, "assignment_epoch", group.name, state.assignment_epoch

    def _client_rows(self, cluster: Cluster, now_ms: int) -> Iterator[tuple[int, str, str, int]]:
        delivered = redeliveries = 0
        fresh: list[int] = []
        for name in sorted(cluster.consumers):
            consumer = cluster.consumers[name]
            metrics = consumer.metrics
            delivered += metrics.records_delivered
            redeliveries += metrics.redeliveries
            latencies = metrics.end_to_end_latencies_ms
            seen = self._latencies_seen.get(name, 0)
            fresh.extend(latencies[seen:])
            self._latencies_seen[name] = len(latencies)
            if consumer.alive:
                yield now_ms, "member_epoch", name, consumer.member.member_epoch
        yield now_ms, "delivered", "run", delivered
        yield now_ms, "redeliveries", "run", redeliveries
        if fresh:
            fresh.sort()
            for series, fraction in (("latency_p50", 0.5), ("latency_p99", 0.99)):
                yield now_ms, series, "run", fresh[min(len(fresh) - 1, int(fraction * len(fresh)))]
            yield now_ms, "latency_max", "run", fresh[-1]


def fault_intervals(cluster: Cluster) -> list[FaultInterval]:
    """The plan's faults that were applied, with when they started and (durational ones) ended."""
    injector = cluster.injector
    events = injector.plan.events
    out = []
    for index in sorted(injector.applied_at_ms):
        event = events[index]
        durational = FAULT_KINDS[event.kind].durational
        out.append(FaultInterval(index, event.kind, fault_target(event), injector.applied_at_ms[index],
                                 injector.ended_at_ms.get(index), durational))
    return out


def fault_target(event: FaultEvent) -> str:
    """What a fault hit, in a few words (network faults name sides, links, nodes or kinds, not a target)."""
    if event.target:
        return event.target
    if event.side_a or event.side_b:
        return f"{','.join(event.side_a)} | {','.join(event.side_b)}"
    parts = [",".join(event.nodes), ",".join(f"{a}>{b}" for a, b in event.links), ",".join(event.kinds)]
    return " ".join(p for p in parts if p) or "all"
