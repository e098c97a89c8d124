"""Run a workload's run ids on Spark and append their rows to ``DIR/runs/`` as Parquet.

The run ids are cut into batches of ``batch_runs`` consecutive ids; each batch
is one Spark job: ``spark.range`` → ``mapInArrow`` (many runs per task in the
Python workers) → ``write.partitionBy("scenario").parquet`` in append mode.
Nothing is shuffled before the write (a partitioned write only sorts within a
task). A job's files appear only when the job commits, so after an
interruption ``DIR/runs/`` holds whole batches, or for a commit cut short whole
task files: each file holds complete rows of distinct run ids.

``resume`` reads the run ids already written and, batch by batch, skips full
batches and runs the rest of a partial one through a broadcast left-anti join
(still no shuffle): a run id is run again only if its row is not there, so
none is lost or written twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reports.aggregate import read_runs, run_files
from scenarios.campaign.plan import Workload
from scenarios.campaign.worker import Simulate, rows_of, run_ids, run_row, simulate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Progress: (runs done, runs in total, runs per second of this attempt).
OnProgress = Callable[[int, int, float], None]
PROGRESS_EVERY_S = 1.0


class CampaignExists(Exception):
    """The output already holds runs and ``--resume`` was not given."""


@dataclass(frozen=True)
class Attempt:
    """What one invocation did: runs found done, runs run now, and how long that took."""

    runs_before: int
    runs_run: int
    seconds: float
    partitions: int
    batch_runs: int
    master: str
    build: str  # what the executors' Python workers ran: "compiled" or "interpreted" (model.build())

    @property
    def runs_per_second(self) -> float:
        return self.runs_run / self.seconds if self.seconds > 0 else 0.0


def worker_build(spark: SparkSession) -> str:
    """``model.build()`` as an executor's Python worker sees it: a rate means little without it."""
    import pyarrow as pa

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import model

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"build": [model.build()]})

    return str(spark.range(0, 1, 1, 1).mapInArrow(probe, "build string").collect()[0]["build"])


def default_partitions(spark: SparkSession) -> int:
    # Two tasks per core: an uneven core (or executor) does not hold the whole batch back, and a task's own
    # cost (its start, its Parquet file, the last wave's tail) is paid few times. On 2 cores, 6 000 swarm runs
    # in one batch: 291 runs/s in 2 tasks, 281 in 4, 271 in 8.
    return 2 * spark.sparkContext.defaultParallelism


# A job costs a few seconds of its own (scheduling, the tasks' start and tail, the Parquet commit), and
# an interruption loses the batch under way: so a batch is about a minute of the cores' work.
BATCH_TARGET_S = 60.0
_PROBE_RUNS = 10  # timed in the driver, after one untimed run (imports)
_PROBE_S = 1.0


def default_batch_runs(spark: SparkSession, workload: Workload, simulate_fn: Simulate = simulate) -> int:
    """About ``BATCH_TARGET_S`` of work for the cores per batch, from a few of the workload's runs timed
    here in the driver (a swarm run takes milliseconds, a 20 000-record run most of a second). Which
    batch a run falls in changes nothing in its row; ``--resume`` works with any batch size."""
    cores = spark.sparkContext.defaultParallelism
    if workload.runs == 0:
        return cores
    probe = min(workload.runs, 1 + _PROBE_RUNS)
    run_row(workload, 0, simulate_fn)
    started = time.perf_counter()
    timed = 0
    for run_id in range(1, probe):
        run_row(workload, run_id, simulate_fn)
        timed += 1
        if time.perf_counter() - started > _PROBE_S:
            break
    per_run_s = (time.perf_counter() - started) / timed if timed else 1.0
    return max(cores, int(BATCH_TARGET_S * cores / max(per_run_s, 1e-4)))


def _done_per_batch(spark: SparkSession, runs_dir: Path, batch_runs: int) -> dict[int, int]:
    from pyspark.sql import functions as F

    done = read_runs(spark, runs_dir)
    if done is None:
        return {}
    counts = done.groupBy(F.floor(F.col("run_id") / batch_runs).alias("batch")).count().collect()
    return {int(row["batch"]): int(row["count"]) for row in counts}


def _done_ids(spark: SparkSession, runs_dir: Path, lo: int, hi: int) -> list[int]:
    from pyspark.sql import functions as F

    done = read_runs(spark, runs_dir)
    assert done is not None
    rows = done.where(F.col("run_id").between(lo, hi - 1)).select("run_id").collect()
    return sorted(int(row["run_id"]) for row in rows)


def batch_frame(spark: SparkSession, workload: Workload, lo: int, hi: int, partitions: int,
                skip: list[int], simulate_fn: Simulate, on_rows: Callable[[int], None] | None) -> DataFrame:
    """The rows of run ids [lo, hi) minus ``skip``, computed in ``partitions`` tasks."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from reports.rows import ARROW_SCHEMA

    ids = spark.range(lo, hi, 1, partitions)
    if skip:
        done = spark.createDataFrame([(i,) for i in skip], "id bigint")
        ids = ids.join(F.broadcast(done), "id", "left_anti")

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        from scenarios.campaign.interrupt import ignore_sigint_in_worker

        ignore_sigint_in_worker()  # in an executor's Python worker: Ctrl-C is the driver's to handle
        yield from rows_of(workload, run_ids(batches), simulate_fn, on_rows)

    return ids.mapInArrow(run_partition, from_arrow_schema(ARROW_SCHEMA))


class _Progress:
    """Runs done so far, from an accumulator the tasks add to, reported by a polling thread."""

    def __init__(self, spark: SparkSession, before: int, total: int, on_progress: OnProgress | None) -> None:
        self.before, self.total, self.on_progress = before, total, on_progress
        self.committed = 0  # runs in committed batches of this attempt
        self.started = time.perf_counter()
        self.accumulator = spark.sparkContext.accumulator(0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="campaign-progress", daemon=True)

    def report(self) -> None:
        if self.on_progress is None:
            return
        run = max(self.committed, int(self.accumulator.value))
        elapsed = time.perf_counter() - self.started
        self.on_progress(self.before + run, self.total, run / elapsed if elapsed > 0 else 0.0)

    def _poll(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY_S):
            self.report()

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.report()


def run_batches(
    spark: SparkSession,
    workload: Workload,
    runs_dir: Path,
    *,
    partitions: int | None = None,
    batch_runs: int | None = None,
    resume: bool = False,
    simulate_fn: Simulate = simulate,
    stop_after_batches: int | None = None,
    on_progress: OnProgress | None = None,
    job_group: str = "sharesim-campaign",
) -> Attempt:
    """Run every run id of ``workload`` not yet in ``runs_dir``; ``stop_after_batches`` interrupts
    the campaign after that many batches (what a Ctrl-C between two batches does)."""
    partitions = partitions or default_partitions(spark)
    batch_runs = batch_runs or default_batch_runs(spark, workload, simulate_fn)
    if partitions < 1 or batch_runs < 1:
        raise ValueError(f"partitions = {partitions}, batch runs = {batch_runs}: must be integers >= 1")
    if run_files(runs_dir) and not resume:
        raise CampaignExists(f"{runs_dir} already holds runs: pass --resume to continue that campaign, "
                             "or choose a new --out")
    done = _done_per_batch(spark, runs_dir, batch_runs) if resume else {}
    before = sum(done.values())
    total = workload.runs
    batches = (total + batch_runs - 1) // batch_runs
    spark.sparkContext.setJobGroup(job_group, f"sharesim {workload.campaign_id}", interruptOnCancel=True)
    started = time.perf_counter()
    ran = 0
    with _Progress(spark, before, total, on_progress) as progress:
        for index in range(batches):
            if stop_after_batches is not None and index >= stop_after_batches:
                break
            lo, hi = index * batch_runs, min(total, (index + 1) * batch_runs)
            already = done.get(index, 0)
            if already >= hi - lo:
                continue
            skip = _done_ids(spark, runs_dir, lo, hi) if already else []
            frame = batch_frame(spark, workload, lo, hi, min(partitions, hi - lo), skip, simulate_fn,
                                progress.accumulator.add)
            frame.write.mode("append").partitionBy("scenario").parquet(str(runs_dir))
            ran += hi - lo - len(skip)
            progress.committed = ran
    seconds = time.perf_counter() - started
    return Attempt(before, ran, seconds, partitions, batch_runs, spark.sparkContext.master or "", worker_build(spark))
