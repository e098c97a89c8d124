"""Run a workload's run ids on Spark and publish their rows under ``DIR/runs/``, one whole batch at a time.

The run ids are cut into batches of ``batch_runs`` consecutive ids; each batch
is one Spark job: ``spark.range`` → ``mapInArrow`` (many runs per task in the
Python workers) → ``write.parquet`` into the batch's own fresh staging
directory ``DIR/runs/_staging/<token>-<batch>/`` (``token``: this attempt's, random).
Nothing is shuffled before the write.

Exactly once, whatever kills what (README "Spark campaigns"): the session pins
FileOutputCommitter algorithm 1 with speculation off (``session.py``), so a task's
file reaches the staging directory itself only when the job commits, after every
task committed. When the write returns, the driver publishes the batch with one
directory rename, ``_staging/<token>-<batch>`` → ``batch=<lo>-<hi>-<token>``, atomic
on a POSIX file system: ``DIR/runs/`` holds whole committed batches and nothing
else outside directories whose names start with ``_``, which the readers skip.
An attempt starts by removing ``_staging/`` (uncommitted or unpublished output of
a killed attempt: its runs are run again); a lingering writer of a killed attempt
can only write into its own token's staging directory, which nobody publishes.

``resume`` reads the run ids already published and, batch by batch, skips full
batches and runs the rest of a partial one (a batch of another ``batch_runs``)
through a broadcast left-anti join (still no shuffle).
"""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reports.aggregate import read_runs, run_files
from scenarios.campaign.identity import code_fingerprint
from scenarios.campaign.plan import Workload
from scenarios.campaign.worker import Simulate, TaskProgress, rows_of, run_ids, run_row, simulate

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Progress: (runs done, runs in total, runs per second of this attempt).
OnProgress = Callable[[int, int, float], None]
PROGRESS_EVERY_S = 1.0
STAGING: Final = "_staging"  # DIR/runs/_staging/<token>-<batch>/: a batch's job writes here
PROGRESS: Final = "_progress"  # DIR/runs/_progress/<token>-<batch>/<partition>-<attempt>: runs a task finished


class CampaignExists(Exception):
    """The output already holds runs and ``--resume`` was not given."""


class StaleWorkers(Exception):
    """The executors' Python workers run other code than the driver (their ``code_fingerprint`` differs)."""


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


def worker_code(spark: SparkSession) -> tuple[str, str]:
    """(``model.build()``, ``identity.code_fingerprint()``) as an executor's Python worker sees them: a rate
    means little without the build, and rows of other code must not join the campaign's."""
    import pyarrow as pa

    def probe(batches: Iterator[Any]) -> Iterator[Any]:
        import model
        from scenarios.campaign.identity import code_fingerprint

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"build": [model.build()], "code": [code_fingerprint()]})

    row = spark.range(0, 1, 1, 1).mapInArrow(probe, "build string, code string").collect()[0]
    return str(row["build"]), str(row["code"])


def check_workers(spark: SparkSession) -> str:
    """The workers' build; ``StaleWorkers`` if their code fingerprint is not the driver's."""
    build, code = worker_code(spark)
    if code != code_fingerprint():
        raise StaleWorkers(f"--master {spark.sparkContext.master}: the executors run other sharesim code than this "
                           f"driver (code fingerprint {code[:12]}, here {code_fingerprint()[:12]}): install this "
                           "sharesim on every worker")
    return build


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


@dataclass(frozen=True)
class Dataset:
    """What a batch job computes and publishes: a campaign's runs (the default) or a sibling dataset
    keyed by the same ids (``validation.py``'s validations). ``rows(workload, ids, on_rows)`` runs in the
    executors' Python workers; ``read(spark, dir)`` reads the published rows back (None if none)."""

    schema: Any  # pyarrow.Schema
    rows: Callable[[Workload, Iterator[int], Callable[[int], None] | None], Iterator[Any]]
    read: Callable[[SparkSession, Path], DataFrame | None]


def _done_per_batch(spark: SparkSession, runs_dir: Path, batch_runs: int,
                    dataset: Dataset | None = None) -> dict[int, int]:
    from pyspark.sql import functions as F

    done = (dataset.read if dataset else read_runs)(spark, runs_dir)
    if done is None:
        return {}
    counts = done.groupBy(F.floor(F.col("run_id") / batch_runs).alias("batch")).count().collect()
    return {int(row["batch"]): int(row["count"]) for row in counts}


def _done_ids(spark: SparkSession, runs_dir: Path, lo: int, hi: int, dataset: Dataset | None = None) -> list[int]:
    from pyspark.sql import functions as F

    done = (dataset.read if dataset else read_runs)(spark, runs_dir)
    assert done is not None
    rows = done.where(F.col("run_id").between(lo, hi - 1)).select("run_id").collect()
    return sorted(int(row["run_id"]) for row in rows)


def batch_frame(spark: SparkSession, workload: Workload, lo: int, hi: int, partitions: int,
                skip: list[int], simulate_fn: Simulate, progress_dir: Path | None = None,
                dataset: Dataset | None = None) -> DataFrame:
    """The rows of run ids [lo, hi) minus ``skip``, computed in ``partitions`` tasks, each writing its
    finished runs under ``progress_dir`` (``worker.TaskProgress``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from reports.rows import ARROW_SCHEMA

    ids = spark.range(lo, hi, 1, partitions)
    if skip:
        done = spark.createDataFrame([(i,) for i in skip], "id bigint")
        ids = ids.join(F.broadcast(done), "id", "left_anti")

    where = str(progress_dir) if progress_dir is not None else None

    def run_partition(batches: Iterator[Any]) -> Iterator[Any]:
        from scenarios.campaign.interrupt import ignore_sigint_in_worker

        ignore_sigint_in_worker()  # in an executor's Python worker: Ctrl-C is the driver's to handle
        progress = TaskProgress(where) if where is not None else None
        on_rows = progress.add if progress else None
        if dataset is None:
            yield from rows_of(workload, run_ids(batches), simulate_fn, on_rows)
        else:
            yield from dataset.rows(workload, run_ids(batches), on_rows)
        if progress is not None:
            progress.write()

    return ids.mapInArrow(run_partition, from_arrow_schema(dataset.schema if dataset else ARROW_SCHEMA))


def _task_runs(progress_dir: Path) -> int:
    """Runs finished by the tasks of a batch under way: per partition, its furthest attempt's count."""
    furthest: dict[str, int] = {}
    try:
        files = [p for p in progress_dir.iterdir() if not p.name.startswith(".")]
    except OSError:
        return 0
    for path in files:
        partition = path.name.split("-")[0]
        try:
            furthest[partition] = max(furthest.get(partition, 0), int(path.read_text()))
        except (OSError, ValueError):
            continue
    return sum(furthest.values())


class _Progress:
    """Runs done so far: those of the batches published by this attempt, plus what the tasks of the batch
    under way wrote in its progress directory; reported by a polling thread."""

    def __init__(self, before: int, total: int, on_progress: OnProgress | None) -> None:
        self.before, self.total, self.on_progress = before, total, on_progress
        self.committed = 0  # runs in batches this attempt published
        self.current: Path | None = None  # the progress directory of the batch under way
        self.started = time.perf_counter()
        self.lock = threading.Lock()  # committed and current change together
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="campaign-progress", daemon=True)

    def report(self) -> None:
        if self.on_progress is None:
            return
        with self.lock:
            run = self.committed + (_task_runs(self.current) if self.current is not None else 0)
        elapsed = time.perf_counter() - self.started
        self.on_progress(min(self.total, self.before + run), self.total, run / elapsed if elapsed > 0 else 0.0)

    def _poll(self) -> None:
        while not self._stop.wait(PROGRESS_EVERY_S):
            self.report()

    def __enter__(self) -> _Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        with self.lock:
            self.current = None
        self.report()


def clear_unpublished(runs_dir: Path) -> None:
    """Remove what a killed attempt left: its staging directories (committed or not, never published) and
    its progress files. Safe because one process writes DIR at a time (the out directory's lock)."""
    for name in (STAGING, PROGRESS):
        shutil.rmtree(runs_dir / name, ignore_errors=True)


def publish(staging: Path, runs_dir: Path, lo: int, hi: int, token: str) -> Path:
    """One rename: the committed batch appears in ``runs_dir`` whole, or not at all."""
    if not (staging / "_SUCCESS").exists():  # the job's commit writes it last
        raise RuntimeError(f"{staging}: the batch's job returned without committing")
    published = runs_dir / f"batch={lo}-{hi}-{token}"
    staging.rename(published)
    return published


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
    dataset: Dataset | None = None,
) -> Attempt:
    """Run every run id of ``workload`` not yet in ``runs_dir``; ``stop_after_batches`` interrupts
    the campaign after that many batches (what a Ctrl-C between two batches does). ``dataset``: what the
    ids compute (default: the workload's runs); ``batch_runs`` must then be given."""
    partitions = partitions or default_partitions(spark)
    if run_files(runs_dir) and not resume:
        raise CampaignExists(f"{runs_dir} already holds runs: pass --resume to continue that campaign, "
                             "or choose a new --out")
    build = check_workers(spark)
    if dataset is not None and batch_runs is None:
        raise ValueError("a dataset other than the runs needs its batch_runs")
    batch_runs = batch_runs or default_batch_runs(spark, workload, simulate_fn)
    if partitions < 1 or batch_runs < 1:
        raise ValueError(f"partitions = {partitions}, batch runs = {batch_runs}: must be integers >= 1")
    clear_unpublished(runs_dir)
    token = uuid.uuid4().hex[:12]
    done = _done_per_batch(spark, runs_dir, batch_runs, dataset) if resume else {}
    before = sum(done.values())
    total = workload.runs
    batches = (total + batch_runs - 1) // batch_runs
    spark.sparkContext.setJobGroup(job_group, f"sharesim {workload.campaign_id}", interruptOnCancel=True)
    started = time.perf_counter()
    ran = 0
    with _Progress(before, total, on_progress) as progress:
        for index in range(batches):
            if stop_after_batches is not None and index >= stop_after_batches:
                break
            lo, hi = index * batch_runs, min(total, (index + 1) * batch_runs)
            already = done.get(index, 0)
            if already >= hi - lo:
                continue
            skip = _done_ids(spark, runs_dir, lo, hi, dataset) if already else []
            staging = runs_dir / STAGING / f"{token}-{index}"
            progress_dir = runs_dir / PROGRESS / f"{token}-{index}"
            with progress.lock:
                progress.current = progress_dir
            frame = batch_frame(spark, workload, lo, hi, min(partitions, hi - lo), skip, simulate_fn, progress_dir,
                                dataset)
            frame.write.mode("errorifexists").parquet(str(staging))
            with progress.lock:
                publish(staging, runs_dir, lo, hi, token)
                ran += hi - lo - len(skip)
                progress.committed, progress.current = ran, None
            shutil.rmtree(progress_dir, ignore_errors=True)
    clear_unpublished(runs_dir)
    seconds = time.perf_counter() - started
    return Attempt(before, ran, seconds, partitions, batch_runs, spark.sparkContext.master or "", build)
