"""Campaign throughput (issue 7's "done when"): runs per second of a scenario run sequentially in this
process, and through the Spark campaign in ``local[2]``; their ratio (target >= 1.7 on 2 cores) and the
projected wall time of 1 000 000 runs (target < 1 hour).

The sequential side runs ids 0, 1, ... for a time budget. The campaign side runs one batch of the size a
campaign chooses for itself (about a minute of the cores' work, ``default_batch_runs``), which is what
each of a million-run campaign's jobs is: a shorter campaign would charge a job's own seconds (start,
commit, tail) to fewer runs than a real one does. Both sides draw their seeds the same way, from (campaign
seed 0, scenario, run id); the campaign's ids include the sequential ones. The campaign is measured after
a warm-up campaign of a few runs, so the Python workers have started and imported sharesim (a one-off of
seconds, paid once per worker); Spark's session start is printed apart, and so is what two plain Python
processes side by side achieve over one at the time (on a shared machine the ceiling of any 2-way
parallelism is below 2). ``swarm`` is the scenario the issue names (the small cluster under a dense
swarm); ``swarm_wide`` adds a KIP-848 group and transactions at about twice the cost, measured and
labelled separately. ``bench/swarm_power.py`` measures what each finds per second.

    python -m bench campaign                 # swarm (40 s of runs) and swarm_wide (30 s of runs)
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pyarrow.parquet as pq

from scenarios import library
from scenarios.campaign import Campaign, spark_session
from scenarios.campaign.execute import default_batch_runs, run_batches
from scenarios.campaign.worker import simulate

TARGET_RATIO = 1.7
TARGET_MILLION_S = 3600.0
CORES = 2
MASTER = f"local[{CORES}]"
# Seconds of sequential runs per scenario: as many run ids as fit, then the same ids as a campaign. A budget
# rather than a count keeps the campaign long enough for a job's fixed cost not to show, on either build.
CASES = (("swarm", 40.0), ("swarm_wide", 30.0))


def sequential_runs(name: str, budget_s: float) -> tuple[int, float]:
    """Runs ids 0, 1, ... in this process until ``budget_s`` has passed; (runs, runs per second)."""
    # The run count is only an upper bound here: a run's seed depends on (campaign seed, scenario, run id) alone.
    campaign = Campaign(library.get(name), 1_000_000, campaign_seed=0)
    started = time.perf_counter()
    runs = 0
    while runs < 4 or time.perf_counter() - started < budget_s:
        simulate(campaign.task(runs))
        runs += 1
    return runs, runs / (time.perf_counter() - started)


def _timed_runs(name: str, run_ids: range) -> float:
    campaign = Campaign(library.get(name), run_ids.stop, campaign_seed=0)
    started = time.perf_counter()
    for run_id in run_ids:
        simulate(campaign.task(run_id))
    return time.perf_counter() - started


def plain_parallel_ratio(name: str, runs: int) -> float:
    """What two plain Python processes side by side give over one, right now: the machine's own ceiling
    for any 2-way parallelism (other work on the machine lowers it below 2)."""
    half = runs // 2
    one = _timed_runs(name, range(half))
    with ProcessPoolExecutor(CORES) as pool:
        list(pool.map(_timed_runs, [name] * CORES, [range(0, 2)] * CORES))  # start and import
        both = max(pool.map(_timed_runs, [name] * CORES, [range(0, half), range(half, 2 * half)]))
    return (2 * half / both) / (half / one)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def main() -> None:
    print(f"   two plain processes vs one (swarm, 400 runs): {plain_parallel_ratio('swarm', 400):.2f}x "
          "(the machine's 2-way ceiling now)")
    started = time.perf_counter()
    spark = spark_session(MASTER, app_name="sharesim bench")
    print(f"   Spark {MASTER} session start: {time.perf_counter() - started:.1f} s")
    try:
        with tempfile.TemporaryDirectory(prefix="sharesim-bench-") as tmp:
            warm = Campaign(library.get("small"), 8, campaign_seed=99)
            run_batches(spark, warm, Path(tmp) / "warm", partitions=4)
            for name, budget_s in CASES:
                runs, sequential = sequential_runs(name, budget_s)
                batch = default_batch_runs(spark, Campaign(library.get(name), 1_000_000, campaign_seed=0))
                campaign = Campaign(library.get(name), max(runs, batch), campaign_seed=0)
                attempt = run_batches(spark, campaign, Path(tmp) / name, batch_runs=campaign.runs)
                in_workers = sum(pq.read_table(Path(tmp) / name, columns=["wall_time_s"]).column(0).to_pylist())
                ratio = attempt.runs_per_second / sequential
                million = 1_000_000 / attempt.runs_per_second
                print(f"   {name}: sequential in-process {runs} runs, {sequential:.2f} runs/s "
                      f"({1 / sequential:.4f} s/run); campaign {MASTER}, one batch of {campaign.runs} runs, "
                      f"{attempt.runs_per_second:.2f} runs/s ({attempt.partitions} tasks); ratio {ratio:.2f} "
                      f"(target >= {TARGET_RATIO}: "
                      f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}); 1 000 000 runs: {_hours(million)} "
                      f"(target < 1 h: {'met' if million < TARGET_MILLION_S else 'NOT met'})")
                # Where the time went: a run in a worker slower than in-process means the cores were shared. The
                # runs' own time (wall_time_s) leaves out each run's garbage collection, its row and Arrow batches,
                # the sizing runs in the driver and the jobs' start, commit and tail.
                print(f"      in the workers {in_workers / campaign.runs:.4f} s/run; the runs themselves filled "
                      f"{in_workers / (attempt.seconds * CORES):.0%} of the {CORES} task slots over the campaign's "
                      f"{attempt.seconds:.1f} s")
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
