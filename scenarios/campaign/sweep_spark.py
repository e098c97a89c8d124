"""``sharesim sweep ... --spark``: a sweep's tasks (``scenarios.sweep.plan_sweep``) run as a Spark job.

The same batches as a campaign (``execute.run_batches`` over a ``TaskList``:
run id = position in the plan), written to ``DIR/_spark_runs/`` (on a cluster,
DIR must be on storage every executor can write), published batch by batch as a
campaign's are, read back and handed to ``write_sweep`` like the rows of an
in-process sweep; the scratch directory is then removed. The rows must hold
every task's run id exactly once (``InconsistentSweep`` otherwise: never expected).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from reports.aggregate import read_run_table
from scenarios.campaign.execute import OnProgress, run_batches
from scenarios.campaign.plan import RunTask, TaskList
from scenarios.campaign.session import spark_session

SCRATCH: Final = "_spark_runs"


class InconsistentSweep(Exception):
    """The rows read back do not hold each task's run id exactly once."""


def run_sweep_on_spark(tasks: Sequence[RunTask], sweep_id: str, out_dir: Path, *, master: str | None = None,
                       partitions: int | None = None, on_progress: OnProgress | None = None) -> list[dict[str, Any]]:
    """The rows of ``tasks`` (one per task, ``reports.rows`` dicts), computed on Spark."""
    scratch = out_dir / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    spark = spark_session(master, app_name=f"sharesim {sweep_id}")
    try:
        run_batches(spark, TaskList(sweep_id, list(tasks)), scratch, partitions=partitions,
                    batch_runs=max(1, len(tasks)), on_progress=on_progress)
        rows: list[dict[str, Any]] = read_run_table(scratch).to_pylist()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ids = sorted(row["run_id"] for row in rows)
    if ids != list(range(len(tasks))):
        raise InconsistentSweep(f"{len(rows)} rows for {len(tasks)} tasks, {len(set(ids))} distinct run ids: "
                                "a defect of sharesim's Spark path, please report it")
    return sorted(rows, key=lambda row: row["run_id"])
