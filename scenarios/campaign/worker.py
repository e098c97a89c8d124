"""What runs inside Spark's Python workers: a stream of run ids in, a stream of run rows out.

``mapInArrow`` hands each task its slice of ``spark.range`` as Arrow batches;
every id becomes one simulation and one row of ``reports.rows.ARROW_SCHEMA``.
A run that raises becomes an error row with its traceback: one bad seed must
not cost the other million runs. A task reports its finished runs through a small
file (``TaskProgress``): Spark's accumulators reach the driver only when a task ends.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

from reports.rows import error_row, result_row, to_table
from scenarios.campaign.plan import RunTask, Workload

# Rows are sent back to the JVM in small Arrow batches so a task's memory stays flat.
ROWS_PER_BATCH: Final = 32

Simulate = Callable[[RunTask], Any]  # RunTask -> RunResult


def simulate(task: RunTask, trace_path: Path | None = None) -> Any:
    """The run of ``task`` (``model.sim.runner.run``; a mutant only when one is named).

    The entry point of the campaign workers, so it also tunes this process's cyclic garbage
    collector for many runs in a row (``_collect`` below): a caller of its own inherits that."""
    from model.sim.runner import run

    options: dict[str, Any] = {"trace_path": trace_path}
    if task.mutant:
        options["mutant"] = task.mutant
    try:
        return run(task.scenario, task.seed, **options)
    finally:
        _collect()


# The cyclic collector's defaults cost a campaign about a tenth of its time (600 swarm runs in one
# process, compiled: 7.3 against 8.2 ms a run), and far more once a big library (pyarrow, pandas) is
# imported: every young collection walks objects that live for the whole run, and every full one
# walks every imported module. So a run ends with a full collection (its cluster is one big cycle:
# freed at once, while it is in cache), then whatever survived it (modules, caches: the process's
# own) is frozen, never walked again, and young collections are rarer. Now and then everything is
# thawed and collected once, so a frozen object that became cyclic garbage is not kept for good.
_GC_YOUNG_THRESHOLD: Final = 10_000
_RUNS_BETWEEN_THAWS: Final = 1_000
_runs_collected = 0


def _collect() -> None:
    global _runs_collected
    if _runs_collected == 0:
        gc.set_threshold(_GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    _runs_collected += 1
    if _runs_collected % _RUNS_BETWEEN_THAWS == 0:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


def run_row(workload: Workload, run_id: int, simulate_fn: Simulate = simulate) -> dict[str, Any]:
    """One run id → its row (an error row if building the task or the run raised)."""
    started = time.perf_counter()
    task: RunTask | None = None
    try:
        task = workload.task(run_id)
        return result_row(simulate_fn(task), campaign_id=workload.campaign_id, run_id=run_id,
                          params=task.params, mutant=task.mutant)
    except Exception as exc:  # any failure of one run is data, not a crash
        return error_row(task.scenario.name if task else "", task.seed if task else 0, exc,
                         campaign_id=workload.campaign_id, run_id=run_id,
                         params=task.params if task else None, mutant=task.mutant if task else None,
                         wall_time_s=time.perf_counter() - started)


PROGRESS_WRITE_EVERY_S: Final = 0.5


class TaskProgress:
    """The runs this Spark task has finished, in ``DIR/<partition>-<attempt>`` (``DIR`` is the batch's
    progress directory, on storage the driver reads): written whole (a temporary file renamed) at most
    every ``PROGRESS_WRITE_EVERY_S`` and at the task's end. Best effort: progress never fails a run."""

    def __init__(self, directory: str) -> None:
        from pyspark import TaskContext

        context = TaskContext.get()
        name = f"{context.partitionId()}-{context.attemptNumber()}" if context else f"pid{os.getpid()}-0"
        self.directory, self.path = directory, os.path.join(directory, name)
        self.done = 0
        self.written_at = time.monotonic()

    def add(self, runs: int) -> None:
        self.done += runs
        if time.monotonic() - self.written_at >= PROGRESS_WRITE_EVERY_S:
            self.write()

    def write(self) -> None:
        self.written_at = time.monotonic()
        temporary = os.path.join(self.directory, f".{os.path.basename(self.path)}.tmp")
        try:
            os.makedirs(self.directory, exist_ok=True)
            with open(temporary, "w") as file:
                file.write(str(self.done))
            os.replace(temporary, self.path)
        except OSError:
            pass


def run_ids(batches: Iterable[pa.RecordBatch]) -> Iterator[int]:
    for batch in batches:
        yield from batch.column(0).to_pylist()


def row_batches(rows: Iterable[dict[str, Any]], table: Callable[[list[dict[str, Any]]], pa.Table],
                per_batch: int, on_rows: Callable[[int], None] | None = None) -> Iterator[pa.RecordBatch]:
    """Arrow batches of ``rows``, ``per_batch`` rows at a time (``table`` gives them their schema);
    ``on_rows(1)`` after each row is made (progress)."""
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if on_rows is not None:
            on_rows(1)
        if len(batch) == per_batch:
            yield from table(batch).to_batches()
            batch = []
    if batch:
        yield from table(batch).to_batches()


def rows_of(workload: Workload, ids: Iterable[int], simulate_fn: Simulate = simulate,
            on_rows: Callable[[int], None] | None = None) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the rows of ``ids``; ``on_rows(1)`` after each run (progress)."""
    return row_batches((run_row(workload, run_id, simulate_fn) for run_id in ids), to_table, ROWS_PER_BATCH,
                       on_rows)
