"""The cluster path: a Spark standalone master and worker on 127.0.0.1, started from the pyspark
installation (``bin/spark-class``; the pip package has no ``sbin/start-master.sh``), run a tiny campaign
given ``--master spark://127.0.0.1:PORT``. Both JVMs are always stopped."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from scenarios.cli import main

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def start(log: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_NO_DAEMONIZE": "1"}
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
