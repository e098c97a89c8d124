"""What a campaign does around its runs, without Spark: the worker frees each run's garbage, and a batch
is sized to about a minute of the cores' work from runs timed in the driver."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from scenarios import library
from scenarios.campaign import Campaign, execute
from scenarios.campaign.worker import simulate


def test_a_run_leaves_no_cyclic_garbage_and_what_survives_it_is_frozen() -> None:
    campaign = Campaign(library.get("swarm"), 3, campaign_seed=0)
    simulate(campaign.task(0))
    simulate(campaign.task(1))
    try:
        # Whatever survived the run is frozen: nothing is left for a collection to walk. (Not "the
        # frozen count only grows": a full LRU cache evicts frozen entries, and every 1000th run of
        # the process thaws everything once; a pytest worker that ran many tests before reaches both.)
        assert len(gc.get_objects()) < 100 and gc.get_freeze_count() > 0
        assert gc.collect() == 0  # the cluster, one big cycle, was collected as the run ended
        assert gc.get_threshold()[0] >= 10_000
    finally:
        gc.unfreeze()


class _Clock:
    """``perf_counter`` for execute.py: advances only when a (fake) run runs."""

    def __init__(self) -> None:
        self.now_s = 0.0

    def perf_counter(self) -> float:
        return self.now_s


@pytest.mark.parametrize(("run_s", "cores", "expected"), [
    (0.005, 2, 24_000),  # a swarm run: a batch of tens of thousands
    (0.5, 2, 240),  # a 20 000-record run: a few hundred
    (0.5, 8, 960),
    (200.0, 2, 2),  # never fewer runs than cores
])
def test_a_batch_is_about_a_minute_of_the_cores_work(monkeypatch: pytest.MonkeyPatch, run_s: float, cores: int,
                                                     expected: int) -> None:
    clock = _Clock()
    monkeypatch.setattr(execute, "time", clock)
    ran: list[int] = []

    def fake_simulate(task: Any) -> Any:
        ran.append(task.run_id)
        clock.now_s += run_s
        raise RuntimeError("not a real run")  # an error row still times the run

    spark = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=cores))
    campaign = Campaign(library.get("swarm"), 1_000, campaign_seed=0)
    assert execute.default_batch_runs(spark, campaign, fake_simulate) == expected  # type: ignore[arg-type]
    assert ran[0] == 0 and len(ran) <= 11  # one untimed run, then at most ten timed ones


def test_progress_sums_each_partitions_furthest_attempt_written_whole(tmp_path: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios.campaign import worker

    clock = _Clock()
    monkeypatch.setattr(worker, "time", SimpleNamespace(monotonic=clock.perf_counter))
    task = worker.TaskProgress(str(tmp_path))  # outside Spark: named after the process
    task.add(1)
    assert execute._task_runs(tmp_path) == 0  # not yet written: at most every 0.5 s
    clock.now_s += worker.PROGRESS_WRITE_EVERY_S
    task.add(1)
    assert execute._task_runs(tmp_path) == 2
    # Partition 0's first attempt failed after 7 runs, its second is at 3; partition 1 is at 5; a write under way.
    for name, runs in (("0-0", "7"), ("0-1", "3"), ("1-0", "5"), (".1-0.tmp", "9")):
        (tmp_path / name).write_text(runs)
    assert execute._task_runs(tmp_path) == 2 + 7 + 5
    assert execute._task_runs(tmp_path / "absent") == 0


def test_without_a_terminal_progress_is_a_plain_line_every_ten_seconds(monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    import scenarios.campaign.cli as campaign_cli

    clock = _Clock()
    monkeypatch.setattr(campaign_cli, "time", SimpleNamespace(monotonic=clock.perf_counter))
    with campaign_cli.progress_bar(3000) as update:  # stderr is captured: not a terminal
        for done in range(0, 3001, 150):
            clock.now_s += 1.0
            update(done, 3000, 150.2)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["runs 1350/3000 (45%), 150.2 runs/s, elapsed 10 s",
                     "runs 2850/3000 (95%), 150.2 runs/s, elapsed 20 s",
                     "runs 3000/3000 (100%), 150.2 runs/s, elapsed 21 s"]
