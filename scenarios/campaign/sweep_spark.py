"""``sharesim sweep ... --spark``: a sweep's tasks (``scenarios.sweep.plan_sweep``) run as a Spark job.

The same batches as a campaign (``execute.run_batches`` over a ``TaskList``:
run id = position in the plan), written to ``DIR/_spark_runs/`` (on a cluster,
DIR must be on storage every executor can write), read back and handed to
``write_sweep`` like the rows of an in-process sweep; the scratch directory is
then removed.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow.parquet as pq

from scenarios.campaign.execute import OnProgress, run_batches
from scenarios.campaign.plan import RunTask, TaskList
from scenarios.campaign.session import spark_session

SCRATCH: Final = "_spark_runs"


def run_sweep_on_spark(tasks: Sequence[RunTask], sweep_id: str, out_dir: Path, *, master: str | None = None,
                       partitions: int | None = None, on_progress: OnProgress | None = None) -> list[dict[str, Any]]:
    """The rows of ``tasks`` (one per task, ``reports.rows`` dicts), computed on Spark."""
    scratch = out_dir / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    spark = spark_session(master, app_name=f"sharesim {sweep_id}")
    try:
        run_batches(spark, TaskList(sweep_id, list(tasks)), scratch, partitions=partitions,
                    batch_runs=max(1, len(tasks)), on_progress=on_progress)
        rows: list[dict[str, Any]] = pq.read_table(scratch).to_pylist()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sorted(rows, key=lambda row: row["run_id"])
