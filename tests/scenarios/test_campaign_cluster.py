"""The cluster path: a Spark standalone master and worker on 127.0.0.1, started from the pyspark
installation (``bin/spark-class``; the pip package has no ``sbin/start-master.sh``), run a tiny campaign
given ``--master spark://127.0.0.1:PORT``, and spark-submitted with the code shipped as ``--py-files`` (the
interpreted sources) or the compiled wheel shipped as ``--archives``. Both JVMs are always stopped."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from scenarios.cli import main
from tests.wheels import Built

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def spark_env(**extra: str) -> dict[str, str]:
    """This environment, for Spark's scripts: its home is the pyspark installation, and it binds to 127.0.0.1."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1", **extra}


def start(log: Path, *args: str) -> subprocess.Popen[bytes]:
    env = spark_env(SPARK_NO_DAEMONIZE="1")
    with log.open("wb") as out:
        return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)


def wait_for(log: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not in {log} within {START_TIMEOUT_S} s:\n{log.read_text(errors='replace')}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=20)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``(master URL, worker dir)`` of a running standalone cluster of one 2-core worker."""
    logs = tmp_path_factory.mktemp("standalone")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master = start(logs / "master.log", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                   "--port", str(port), "--webui-port", str(free_port()))
    processes = [master]
    try:
        wait_for(logs / "master.log", "I have been elected leader", master)
        worker = start(logs / "worker.log", "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
                       "--cores", "2", "--memory", "1g", "--webui-port", str(free_port()),
                       "--work-dir", str(logs / "work"))
        processes.append(worker)
        wait_for(logs / "worker.log", "Successfully registered with master", worker)
        yield url, logs / "work"
    finally:
        for process in reversed(processes):
            stop(process)


def test_a_campaign_runs_on_a_standalone_cluster(standalone: tuple[str, Path], tmp_path: Path) -> None:
    from pyspark.sql import SparkSession

    url, work = standalone
    active = SparkSession.getActiveSession()
    if active is not None:  # one SparkContext per process: the cluster gets its own
        active.stop()
    try:
        result = CliRunner().invoke(main, ["campaign", "small", "--runs", "8", "--out", str(tmp_path),
                                           "--master", url, "--partitions", "2", "--campaign-seed", "5"])
    finally:
        session = SparkSession.getActiveSession()
        if session is not None:
            session.stop()
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["runs"] == 8 and data["ok"] == 8 and data["attempts"][0]["master"] == url
    # The runs were executed by the worker's executors, not in the driver.
    assert list(work.glob("app-*/*/stderr"))


# --- spark-submit with the code shipped as --py-files (docs/how-to/run-a-campaign.md) ----------

_SHIPPED_PACKAGES = ("model", "invariants", "scenarios", "reports")

# An interpreter that cannot import the installed sharesim: the editable install's finder is taken off
# sys.meta_path before the script (the driver) or the module (``-m pyspark.daemon``, the executors) runs,
# so both import sharesim only from what the job ships, as on a cluster that has only the dependencies.
_WITHOUT_SHARESIM = """#!/bin/sh
exec "{python}" -c '
import runpy, sys
sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
if sys.argv[1:2] == ["-m"]:
    sys.argv = [sys.argv[2], *sys.argv[3:]]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
elif sys.argv[1:]:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    sys.exit("usage: (-m MODULE | SCRIPT) [ARG ...]")
' "$@"
"""


def sharesim_zip(where: Path) -> Path:
    """What ``zip -r sharesim.zip model invariants scenarios reports`` makes in the checkout."""
    import zipfile

    import scenarios

    checkout = Path(scenarios.__file__).resolve().parent.parent
    archive = where / "sharesim.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for package in _SHIPPED_PACKAGES:
            for path in sorted((checkout / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    out.write(path, path.relative_to(checkout).as_posix())
    return archive


def python_without_sharesim(where: Path) -> Path:
    script = where / "python-without-sharesim"
    script.write_text(_WITHOUT_SHARESIM.format(python=sys.executable))
    script.chmod(0o755)
    return script


def test_the_interpreter_of_the_submit_test_imports_sharesim_only_from_the_zip(tmp_path: Path) -> None:
    """The control for the test below: without the zip on its path the interpreter cannot import
    sharesim; with it, it can."""
    python = python_without_sharesim(tmp_path)
    archive = sharesim_zip(tmp_path)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    probe = [str(python), "-m", "scenarios.campaign_main", "--help"]
    hidden = subprocess.run(probe, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert hidden.returncode != 0 and "No module named 'scenarios'" in hidden.stderr, hidden.stderr
    shipped = subprocess.run(probe, cwd=tmp_path, env={**env, "PYTHONPATH": str(archive)}, capture_output=True,
                             text=True, timeout=60)
    assert shipped.returncode == 0 and "--runs" in shipped.stdout, shipped.stderr


def test_spark_submit_runs_a_campaign_with_the_code_shipped_as_py_files(standalone: tuple[str, Path],
                                                                       tmp_path: Path) -> None:
    import scenarios.campaign_main

    url, work = standalone
    out = tmp_path / "campaign"
    env = spark_env(PYSPARK_PYTHON=str(python_without_sharesim(tmp_path)))
    env.pop("PYTHONPATH", None)
    submitted = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", url, "--py-files", str(sharesim_zip(tmp_path)),
         scenarios.campaign_main.__file__, "small", "--runs", "8", "--out", str(out), "--partitions", "2",
         "--campaign-seed", "5"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-6000:]
    data = json.loads((out / "summary.json").read_text())
    # No --master on the campaign's command line: the session took the one spark-submit configured.
    assert data["runs"] == 8 and data["ok"] == 8 and data["attempts"][0]["master"] == url
    assert (out / "report.html").is_file()
    assert data["build"] == "interpreted"  # from a zip: the .py files
    # The worker's executors ran them, with the zip the job shipped.
    assert list(work.glob("app-*/*/sharesim.zip")), sorted(str(path) for path in work.rglob("*"))[:40]


# --- the compiled wheel, built once and shipped with --archives (docs/how-to/run-a-campaign.md) ---------

def test_spark_submit_runs_a_campaign_on_the_compiled_wheel_shipped_as_an_archive(standalone: tuple[str, Path],
                                                                                 compiled_wheel: Built,
                                                                                 tmp_path: Path) -> None:
    """A wheel is a zip: ``--archives`` unpacks it into each executor's working directory, where its
    extension modules load (``--py-files`` imports from the zip, where they cannot), and the executors'
    ``PYTHONPATH`` puts it first. The driver runs the checkout's code, the executors the wheel's: the
    campaign accepts them as the same code (the fingerprint reads the ``.py`` files a wheel keeps)."""
    import scenarios.campaign_main

    assert compiled_wheel.wheel is not None and compiled_wheel.extensions()
    url, work = standalone
    out = tmp_path / "campaign"
    archive = tmp_path / "sharesim.zip"  # Spark unpacks .zip, .tar.gz, .tgz, .tar and .jar archives
    shutil.copy(compiled_wheel.wheel, archive)
    submitted = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", url, "--archives", f"{archive}#sharesim",
         "--conf", "spark.executorEnv.PYTHONPATH=sharesim", scenarios.campaign_main.__file__, "small", "--runs", "8",
         "--out", str(out), "--partitions", "2", "--campaign-seed", "5"],
        cwd=tmp_path, env=spark_env(PYSPARK_PYTHON=sys.executable), capture_output=True, text=True, timeout=600)
    assert submitted.returncode == 0, submitted.stdout[-3000:] + submitted.stderr[-6000:]
    data = json.loads((out / "summary.json").read_text())
    assert data["runs"] == 8 and data["ok"] == 8 and data["attempts"][0]["master"] == url
    assert data["build"] == "compiled" and data["attempts"][0]["build"] == "compiled", data["attempts"]
    # The worker's executors ran them, from the archive the job shipped.
    assert list(work.glob("app-*/*/sharesim/model/sim/network.*.so")), sorted(str(p) for p in work.rglob("*"))[:40]
