"""The TLC runner's watchdog (tla/run.py `_run_watched`), on stand-in processes.

TLC 2.15's lost wake-up in StateQueue.suspendAll (tlaplus/tlaplus#1438) cannot
be provoked on demand, so these tests give the watchdog processes that look
like each case: one that hangs as the deadlocked JVM does (quiet and idle), one
that is quiet but working (as TLC is while it checks a liveness graph), and
one that keeps talking.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tla import run

HANG = "print('Finished computing initial states', flush=True); import time; time.sleep(60)"
QUIET_BUT_BUSY = "import time\nend = time.monotonic() + 4\nwhile time.monotonic() < end: pass\nprint('done')"
TALKATIVE_BUT_IDLE = "import time\nfor i in range(6):\n    print(i, flush=True); time.sleep(0.6)"


def _watch(code: str, *, timeout: float | None = 30, stall_s: float = 2.5) -> tuple[str, str, float]:
    start = time.monotonic()
    text, ended = run._run_watched([sys.executable, "-c", code], Path.cwd(), timeout, stall_s=stall_s)
    return text, ended, time.monotonic() - start


@pytest.mark.skipif(run._cpu_seconds(1) is None, reason="no /proc: the watchdog cannot read CPU time")
def test_a_quiet_idle_process_is_stalled_and_killed_early() -> None:
    text, ended, seconds = _watch(HANG)
    assert ended == "stalled"
    assert "Finished computing initial states" in text  # what it printed before hanging is kept
    assert seconds < 15  # killed, not waited out


def test_a_quiet_process_that_burns_cpu_is_not_stalled() -> None:
    text, ended, _ = _watch(QUIET_BUT_BUSY)
    assert (ended, text) == ("exited", "done\n")


def test_a_process_that_keeps_printing_is_not_stalled() -> None:
    text, ended, _ = _watch(TALKATIVE_BUT_IDLE, stall_s=2.0)
    assert ended == "exited"
    assert text.split() == [str(i) for i in range(6)]


def test_the_overall_timeout_still_holds() -> None:
    _, ended, seconds = _watch(QUIET_BUT_BUSY.replace("4", "60"), timeout=2, stall_s=30)
    assert ended == "timeout"
    assert seconds < 15


def test_cpu_seconds_reads_this_process() -> None:
    cpu = run._cpu_seconds(os.getpid())
    if cpu is None:
        pytest.skip("no /proc")
    assert cpu > 0


OK_OUTPUT = (
    "Model checking completed. No error has been found.\n"
    "500 states generated, 100 distinct states found, 0 states left on queue.\n"
)
CLEAN = run.Model("ShareGroup_small", "ShareGroup.tla", "small", min_distinct=50)  # its .cfg exists


def _scripted(monkeypatch: pytest.MonkeyPatch, answers: list[tuple[str, str]]) -> list[int]:
    calls: list[int] = []

    def fake_run_tlc(model: run.Model, workers: int, timeout: float | None) -> tuple[str, str]:
        calls.append(workers)
        return answers[len(calls) - 1]

    monkeypatch.setattr(run, "_run_tlc", fake_run_tlc)
    return calls


def test_a_stalled_tlc_is_restarted_and_its_later_answer_judged(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [("", "stalled"), (OK_OUTPUT, "exited")])
    result = run.run_model(CLEAN, workers=1)
    assert len(calls) == 2
    assert result.passed and result.outcome == "ok" and result.distinct == 100
    assert "restarted 1 time" in result.message


def test_a_tlc_that_keeps_stalling_fails_after_the_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [("", "stalled")] * 3)
    result = run.run_model(CLEAN, workers=1, retries=2)
    assert len(calls) == 3
    assert not result.passed and result.outcome == "stalled"
    assert "restarted 2 times" in result.message


def test_a_timeout_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _scripted(monkeypatch, [("", "timeout")])
    result = run.run_model(CLEAN, workers=1, timeout=5)
    assert len(calls) == 1
    assert not result.passed and result.message == "timed out after 5 s"
