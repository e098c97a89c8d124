"""Errors never look like success (scenarios/exits.py, scenarios/entry.py).

* every exception a command lets escape is one ``error:`` line with its exit code, the traceback only
  with ``--debug`` or ``SHARESIM_DEBUG=1``;
* a run that raises is exit 3 with its reproducer, in ``run``, ``check`` (tests/scenarios/test_check.py),
  ``sweep`` and a campaign, whose report leads with the errors;
* Ctrl-C in a campaign prints the resume command and nothing else, and the command finishes it.

The campaign tests run the real console script in a subprocess; the runs raise because a
``sitecustomize`` module (imported by every Python process at start, the Spark workers included)
replaces ``model.sim.runner.run`` when ``SHARESIM_TEST_RAISE`` is set: the CLI path is the user's.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from model.sim import runner
from scenarios import library
from scenarios.cli import main

REPO = Path(__file__).resolve().parents[2]
SHARESIM = str(Path(sys.executable).with_name("sharesim"))
INTERNAL = "(run again with --debug for the traceback)"

SITECUSTOMIZE = '''
import os

if os.environ.get("SHARESIM_TEST_RAISE"):
    import model.sim.runner as runner

    def run(*args, **kwargs):
        raise RuntimeError("injected: every run raises (seed " + str(args[1] if len(args) > 1 else "-") + ")")

    runner.run = run
'''


def _raising(exc: BaseException) -> Callable[..., None]:
    def raise_it(*_args: object, **_kwargs: object) -> None:
        raise exc

    return raise_it


# -- the entry: what escapes a command -------------------------------------------------------------


@pytest.mark.parametrize(("exc", "code", "line"), [
    (RuntimeError("the loader broke"), 3, f"error: internal error: RuntimeError: the loader broke {INTERNAL}"),
    (PermissionError(13, "Permission denied", "/data/x.toml"), 2, "error: /data/x.toml: Permission denied"),
    (OSError(28, "No space left on device", "/data/out/runs"), 2, "error: /data/out/runs: No space left on device"),
    (KeyboardInterrupt(), 130, "interrupted"),
])
def test_an_escaping_exception_is_one_line_and_its_exit_code(exc: BaseException, code: int, line: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SHARESIM_DEBUG", raising=False)
    monkeypatch.setattr(library, "load", _raising(exc))
    result = CliRunner().invoke(main, ["describe", "small"])
    assert result.exit_code == code, result.output
    assert [ln for ln in result.stderr.splitlines() if ln] == [line]
    assert "Traceback" not in result.output


def test_spark_errors_are_one_line_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from py4j.protocol import Py4JNetworkError
    from pyspark.errors import PySparkRuntimeError

    gateway = PySparkRuntimeError(errorClass="JAVA_GATEWAY_EXITED", messageParameters={})
    for exc, expected in ((gateway, "JAVA_GATEWAY_EXITED"), (Py4JNetworkError("Answer from Java side is empty"),
                                                             "Answer from Java side is empty")):
        monkeypatch.setattr(library, "load", _raising(exc))
        result = CliRunner().invoke(main, ["describe", "small"])
        lines = result.stderr.splitlines()
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert lines[0].startswith("error: Spark: ") and expected in lines[0]


def test_sharesim_alone_prints_the_help_with_the_exit_code_table() -> None:
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0 and result.stderr == ""
    assert result.stdout.startswith("Usage: sharesim") and "Exit codes:" in result.stdout
    assert "  130  interrupted (Ctrl-C)" in result.stdout


@pytest.mark.parametrize("how", ["--debug", "SHARESIM_DEBUG=1"])
def test_debug_prints_the_traceback_before_the_error_line(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library, "load", _raising(RuntimeError("the loader broke")))
    if how == "--debug":
        result = CliRunner().invoke(main, ["--debug", "describe", "small"])
    else:
        result = CliRunner().invoke(main, ["describe", "small"], env={"SHARESIM_DEBUG": "1"})
    assert result.exit_code == 3
    assert result.stderr.startswith("Traceback (most recent call last):")
    assert 'raise exc' in result.stderr  # the frame that raised
    assert result.stderr.splitlines()[-1] == f"error: internal error: RuntimeError: the loader broke {INTERNAL}"
    quiet = CliRunner().invoke(main, ["describe", "small"])  # --debug does not stick to the next command
    assert "Traceback" not in quiet.output


# -- a run that raises -----------------------------------------------------------------------------


def test_run_of_a_run_that_raises_is_one_line_with_its_reproducer_and_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run", _raising(KeyError("c9")))
    result = CliRunner().invoke(main, ["run", "small", "--seed", "4", "--mutant", "spso-before-durable"])
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        "error: the run raised KeyError: 'c9'; reproduce with: sharesim run small --seed 4 --mutant "
        "spso-before-durable (`sharesim --debug run ...` prints the traceback)"]
    assert result.stdout == ""
    debug = CliRunner().invoke(main, ["--debug", "run", "small", "--seed", "4"])
    assert debug.exit_code == 3 and "Traceback" in debug.stderr and "KeyError: 'c9'" in debug.stderr


def test_a_sweep_with_runs_that_raise_exits_3_with_each_distinct_error(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    real = runner.run

    def raise_for_two_consumers(spec: object, seed: int, **kwargs: object) -> object:
        if spec.consumers[0].count == 2:  # type: ignore[attr-defined]
            raise KeyError("c9")
        return real(spec, seed, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "run", raise_for_two_consumers)
    result = CliRunner().invoke(main, ["sweep", "small", "--param", "consumers.0.count=1,2", "--seeds", "2",
                                       "--out", str(tmp_path / "sweep")])
    assert result.exit_code == 3, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith("error in 2 run(s): KeyError: 'c#'; reproduce with: sharesim run small --seed ")
    assert errors[0].endswith('# with {"consumers[0].count": 2}')
    assert json.loads((tmp_path / "sweep" / "summary.json").read_text())["errors"] == 2


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    (tmp / "site").mkdir(exist_ok=True)
    (tmp / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": f"{tmp / 'site'}{os.pathsep}{REPO}", **extra}
    env.pop("SHARESIM_DEBUG", None)
    return env


def test_the_console_script_exits_3_for_a_run_that_raises(tmp_path: Path) -> None:
    done = subprocess.run([SHARESIM, "run", "small", "--seed", "2"], env=_env(tmp_path, SHARESIM_TEST_RAISE="1"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert done.stderr.splitlines() == [
        "error: the run raised RuntimeError: injected: every run raises (seed 2); reproduce with: "
        "sharesim run small --seed 2 (`sharesim --debug run ...` prints the traceback)"]


def test_ctrl_c_in_another_command_prints_interrupted_and_exits_130(tmp_path: Path) -> None:
    proc = subprocess.Popen([SHARESIM, "check", "--scenarios", "standard", "--seeds", "50"], env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(4)  # past the imports: the check is running (it shows no progress when piped)
    assert proc.poll() is None
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert [line for line in stderr.splitlines() if line.strip()] == ["interrupted"], stderr
    assert stdout == ""


# -- campaigns (Spark) -----------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_an_all_error_campaign_exits_3_and_leads_with_its_errors(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    done = subprocess.run([SHARESIM, "campaign", "small", "--runs", "12", "--partitions", "2", "--batch-runs", "12",
                           "--master", "local[2]", "--out", str(out)], env=_env(tmp_path, SHARESIM_TEST_RAISE="1"),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["runs"], summary["errors"], summary["ok"], summary["violated"]) == (12, 12, 0, 0)
    # One error group (the seed is blanked in the signature), its first seeds re-run and reproduced.
    signature = "RuntimeError: injected: every run raises (seed #)"
    reproducers = summary["reproducers"]
    assert len(reproducers) == 2 and all(r["invariant"] == "error" and r["signature"] == signature
                                         and r["reproduced"] for r in reproducers)
    for r in reproducers:
        assert r["command"] == f"sharesim run small --seed {r['seed']}"
        assert f"injected: every run raises (seed {r['seed']})" in (out / r["path"] / "traceback.txt").read_text()
        assert f"  reproducer: {r['command']}" in done.stdout
    report = (out / "report.html").read_text()
    headline = report[report.index("<body>"):report.index("<table")]
    assert '<p class="bad">12 of 12 run(s) raised an error, a defect of the simulator: 1 distinct error(s)</p>' \
        in headline
    assert "error in 12 run(s): RuntimeError: injected: every run raises (seed " in done.stdout
    assert "RuntimeError: injected: every run raises (seed " in headline and reproducers[0]["command"] in headline
    assert 'class="ok"' not in headline and "no failure to reproduce" not in report


def _read_lines(stream: object, into: list[tuple[float, str]]) -> threading.Thread:
    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append((time.monotonic(), line.rstrip("\n")))

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_ctrl_c_prints_only_the_resume_command_which_finishes_the_campaign(tmp_path: Path) -> None:
    out = tmp_path / "campaign"
    runs = 600
    command = [SHARESIM, "campaign", "swarm", "--runs", str(runs), "--out", str(out), "--partitions", "2",
               "--batch-runs", "150"]
    # A session of its own: the SIGINT goes to the whole process group, as a terminal's Ctrl-C does.
    proc = subprocess.Popen(command, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    stderr: list[tuple[float, str]] = []
    stdout: list[tuple[float, str]] = []
    readers = [_read_lines(proc.stderr, stderr), _read_lines(proc.stdout, stdout)]
    deadline = time.monotonic() + 300
    while not any(out.rglob("*.parquet")):  # some tasks have finished: the campaign is under way
        assert proc.poll() is None and time.monotonic() < deadline, stderr
        time.sleep(0.2)
    while stderr and time.monotonic() - stderr[-1][0] < 0.5:  # let Spark's start-up lines pass
        time.sleep(0.1)
    interrupted = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    for reader in readers:
        reader.join(timeout=30)
    after = [line for at, line in stderr if at >= interrupted]
    expected = shlex.join(["sharesim", "campaign", "swarm", "--runs", str(runs), "--out", str(out),
                           "--partitions", "2", "--batch-runs", "150", "--campaign-seed", "0", "--resume"])
    assert after == [f"interrupted: continue with: {expected}"], after
    assert not any("Traceback" in line for _, line in stderr + stdout)
    with pytest.raises(ProcessLookupError):  # the JVM and the Python workers are gone too
        time.sleep(5)
        os.killpg(proc.pid, 0)
    resumed = subprocess.run([SHARESIM, *shlex.split(expected)[1:]], env=_env(tmp_path), capture_output=True,
                             text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["runs"], summary["runs_planned"], summary["duplicate_run_ids"]) == (runs, runs, 0)
