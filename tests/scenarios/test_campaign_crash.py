"""Fault injection into the campaign itself: ``sharesim campaign`` (``python -m scenarios.campaign_main``)
in its own process group, killed with SIGKILL at four points decided by watching its output directory
(tasks committed, batches published), each time resumed with the same command and ``--resume``, ends with
every planned run id exactly once, in the rows of an uninterrupted campaign.

One campaign goes through every kill point in turn (a Spark start is the costly part): before its first
batch commits, inside a batch after some of its tasks committed, between two batches, during the
aggregation. Before the last resume, a killed attempt's leftovers of the old failure mode are planted
(committed task files under a staging directory and under ``runs/_temporary``): they must not count.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from reports.aggregate import read_run_table, run_files
from scenarios import library
from scenarios.campaign import Campaign
from scenarios.campaign.worker import run_row
from scenarios.toml_format import dumps

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

ROOT = Path(__file__).resolve().parents[2]
RUNS, BATCH_RUNS, PARTITIONS, SEED = 240, 60, 6, 5  # 4 batches of 6 tasks of 10 runs in local[2]
WAIT_S = 240.0
FIELDS = ("run_id", "seed", "trace_hash", "verdict")


def small_short() -> Any:
    small = library.get("small")
    return replace(small, name="small_short", duration_ms=2_000, heal_ms=10_000,
                   producers=(replace(small.producers[0], records=100),)).validate()


def published(out: Path) -> list[Path]:
    runs = out / "runs"
    return sorted(p for p in runs.iterdir() if p.name.startswith("batch=")) if runs.is_dir() else []


def committed_task_files(staging: Path) -> list[Path]:
    """Files of tasks that committed in a job not yet committed (FileOutputCommitter v1's layout)."""
    return sorted(staging.glob("_temporary/0/task_*/*.parquet"))


def stagings(out: Path) -> list[Path]:
    return sorted((out / "runs" / "_staging").glob("*")) if (out / "runs" / "_staging").is_dir() else []


class Campaign_:
    """The campaign command, started and killed as a whole process group."""

    def __init__(self, scenario: Path, out: Path, log: Path) -> None:
        self.command = [sys.executable, "-m", "scenarios.campaign_main", str(scenario), "--runs", str(RUNS),
                        "--out", str(out), "--batch-runs", str(BATCH_RUNS), "--partitions", str(PARTITIONS),
                        "--master", "local[2]", "--campaign-seed", str(SEED)]
        self.out, self.log = out, log
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def start(self, *extra: str) -> subprocess.Popen[bytes]:
        with self.log.open("ab") as log:
            return subprocess.Popen([*self.command, *extra], stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                    cwd=self.out.parent, start_new_session=True)

    def kill_when(self, process: subprocess.Popen[bytes], point: Callable[[], bool], name: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not point():
            if process.poll() is not None or time.monotonic() > deadline:
                os.killpg(process.pid, signal.SIGKILL)
                raise AssertionError(f"{name}: never reached (exit {process.poll()}):\n{self.log.read_text()[-3000:]}")
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        _wait_group_gone(process.pid)


def _wait_group_gone(pgid: int) -> None:
    """SIGKILL is delivered to the whole group at once; wait until none of it is left (the JVM's exit)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


@pytest.fixture(scope="module")
def reference() -> list[tuple[Any, ...]]:
    """The rows of the uninterrupted campaign, computed here (the same ``run_row`` a Spark task runs)."""
    workload = Campaign(small_short(), RUNS, campaign_seed=SEED)
    return [tuple(run_row(workload, i)[f] for f in FIELDS) for i in range(RUNS)]


def test_a_campaign_killed_anywhere_resumes_to_every_run_id_once(tmp_path: Path,
                                                                 reference: list[tuple[Any, ...]]) -> None:
    scenario = tmp_path / "small_short.toml"
    scenario.write_text(dumps(small_short()))
    out = tmp_path / "out"
    campaign = Campaign_(scenario, out, tmp_path / "campaign.log")

    # 1. Before the first batch commits: a task of batch 0 committed, nothing published.
    campaign.kill_when(campaign.start(), lambda: any(committed_task_files(s) for s in stagings(out)),
                       "a task file in staging")
    assert published(out) == [] and not run_files(out / "runs")
    assert json.loads((out / "campaign.json").read_text())["runs"] == RUNS  # the identity is written first

    # 2. Inside a batch after some tasks finished: a batch published, the next one's staging holds >= 2 task files.
    campaign.kill_when(campaign.start("--resume"),
                       lambda: bool(published(out)) and any(len(committed_task_files(s)) >= 2 for s in stagings(out)),
                       "two task files of a batch in staging")
    done = len(published(out))
    assert 1 <= done < RUNS // BATCH_RUNS

    # 3. Between batches: the moment one more batch is published.
    campaign.kill_when(campaign.start("--resume"), lambda: len(published(out)) > done, "one more batch published")
    assert len(published(out)) < RUNS // BATCH_RUNS

    # 4. During the aggregation: every batch published, summary.json not yet written.
    campaign.kill_when(campaign.start("--resume"),
                       lambda: len(published(out)) == RUNS // BATCH_RUNS and not (out / "summary.json").exists(),
                       "every batch published")
    assert not (out / "summary.json").exists()

    # The old failure mode, planted: a killed job's committed task files, which Spark used to publish
    # when the resumed job committed, and a stale staging directory with a whole (unpublished) batch.
    first = run_files(out / "runs")[0]
    stale_task = out / "runs" / "_temporary" / "0" / "task_202611261200_0001_m_000000"
    stale_task.mkdir(parents=True)
    shutil.copy(first, stale_task / "part-00000-stale.parquet")
    stale_batch = out / "runs" / "_staging" / "killed-0"
    (stale_batch / "_temporary" / "0" / "task_0").mkdir(parents=True)
    shutil.copy(first, stale_batch / "part-00000-killed.parquet")
    shutil.copy(first, stale_batch / "_temporary" / "0" / "task_0" / "part-00001-killed.parquet")
    (stale_batch / "_SUCCESS").touch()

    final = campaign.start("--resume")
    assert final.wait(timeout=WAIT_S) == 0, campaign.log.read_text()[-3000:]
    table = read_run_table(out / "runs")
    rows = sorted(zip(*(table.column(f).to_pylist() for f in FIELDS)))
    assert [r[0] for r in rows] == list(range(RUNS))  # every planned run id, once
    assert rows == reference
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["runs"], summary["runs_planned"], summary["duplicate_run_ids"], summary["missing_run_ids"],
            summary["inconsistent"]) == (RUNS, RUNS, 0, 0, False)
    # Attempts are recorded as they end (the killed ones are not): the last one found every run done.
    assert summary["attempts"][-1]["runs_before"] == RUNS and summary["attempts"][-1]["runs_run"] == 0
    assert not (out / "runs" / "_staging").exists() and not (out / "runs" / "_progress").exists()

    # Were a run id ever published twice, the aggregation counts it once and says so: exit 4, a loud line,
    # the report's first words.
    batch = published(out)[0]
    shutil.copytree(batch, batch.with_name(batch.name + "-copy"))
    again = subprocess.run([*campaign.command, "--resume"], capture_output=True, text=True, env=campaign.env,
                           timeout=WAIT_S, check=False)
    assert again.returncode == 4, again.stdout + again.stderr
    assert f"error: {out}: INCONSISTENT CAMPAIGN OUTPUT: {BATCH_RUNS} run id(s) found more than once" in again.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["runs"], summary["duplicate_run_ids"], summary["duplicate_rows_disagree"]) == (RUNS, BATCH_RUNS, 0)
    report = (out / "report.html").read_text()
    assert report.index("INCONSISTENT CAMPAIGN OUTPUT") < report.index("run(s)</p>")
