"""The Spark session a campaign runs in: local by default, any cluster by ``--master`` or ``spark-submit``.

Python workers get a fixed ``PYTHONHASHSEED`` (``spark.executorEnv.*`` is
applied to the workers of every master, local mode included). A run never
depends on it (DESIGN.md principle 2), but any library code that iterates a
``set`` of strings would, and a campaign must not differ between executors.
They also get ``PYTHONSAFEPATH=1``: a worker starts as ``python -m pyspark.daemon``
in the driver's working directory (local mode), which would otherwise come first
on its ``sys.path``, so a campaign started in a checkout would run the checkout's
interpreted modules instead of the installed compiled ones.

Output is committed by Hadoop's FileOutputCommitter, algorithm version 1, pinned
here: a task's file moves into the output directory only when the job commits
(version 2 moves it at the task's commit, so a killed job leaves part of its
output in place), and speculation stays off (one attempt of each task at a
time). ``execute.py`` relies on both: a batch's staging directory holds its
rows only once the whole job committed.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER: Final = "local[*]"
PYTHONHASHSEED: Final = "0"
_LOCAL_HOSTS: Final = ("spark://127.0.0.1:", "spark://localhost:")


def _is_local(master: str) -> bool:
    return master.startswith("local") or master.startswith(_LOCAL_HOSTS)


def submitted_master() -> str | None:
    """The master ``spark-submit`` was given, when it launched this process, else None.

    spark-submit passes its settings to the JVM it starts, not to Python; a ``SparkConf`` made before
    this process has joined that JVM (``PYSPARK_GATEWAY_PORT`` names it) is empty."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # joins spark-submit's JVM; starts nothing
    return SparkConf().get("spark.master")


# The master URLs Spark takes (spark.apache.org/docs/latest/submitting-applications.html#master-urls).
MASTER_FORMS: Final = ("local", "local[N]", "local[*]", "local[N,F]", "local-cluster[N,C,M] (N, C, M, F >= 1)",
                       "spark://HOST:PORT[,HOST:PORT...]", "yarn", "k8s://[https://]HOST[:PORT]")
_MASTER_PATTERNS: Final = (r"local", r"local\[([1-9]\d*|\*)(,[1-9]\d*)?\]",
                           r"local-cluster\[[1-9]\d*, *[1-9]\d*, *[1-9]\d*\]",
                           r"spark://[^,/:]+:\d+(,[^,/:]+:\d+)*", r"yarn", r"k8s://.+")
CONNECT_TIMEOUT_S: Final = 3.0


def check_master(master: str | None) -> None:
    """``BadInput`` (exit 2) for a ``--master`` Spark does not take, a master that does not answer within
    a few seconds, or no Java: said in one line before Spark starts (Spark itself would print a JVM stack,
    or wait minutes for an unreachable master)."""
    import shutil

    from scenarios.exits import BadInput

    if master is not None:
        if not any(re.fullmatch(pattern, master) for pattern in _MASTER_PATTERNS):
            raise BadInput(f"--master {master}: not a Spark master URL; one of {', '.join(MASTER_FORMS)}")
        endpoints = _endpoints(master)
        unreachable = [why for why in map(_unreachable, endpoints) if why]
        if endpoints and len(unreachable) == len(endpoints):  # a standby master of several may be down
            raise BadInput(f"--master {master}: not reachable: {'; '.join(unreachable)}")
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise BadInput("Spark needs Java 17 or later: none on PATH and JAVA_HOME is not set")


def _endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a master URL names (none for local, yarn: nothing to reach here)."""
    if master.startswith("spark://"):
        return [(host, int(port)) for host, port in (hp.rsplit(":", 1) for hp in master.removeprefix("spark://")
                                                                                .split(","))]
    if master.startswith("k8s://"):
        url = urlsplit(master.removeprefix("k8s://") if "://" in master[6:] else "https://" + master[6:])
        return [(url.hostname or "", url.port or (443 if url.scheme == "https" else 80))]
    return []


def _unreachable(endpoint: tuple[str, int]) -> str | None:
    """Why ``endpoint`` cannot be connected to within ``CONNECT_TIMEOUT_S`` (the name resolved too), or None."""
    host, port = endpoint
    resolving = ThreadPoolExecutor(1)  # getaddrinfo takes no timeout; a stuck resolver must not hang the command
    try:
        address = resolving.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM).result(CONNECT_TIMEOUT_S)
    except socket.gaierror as exc:
        return f"unknown host {host} ({exc.strerror})"
    except TimeoutError:
        return f"the name {host} did not resolve within {CONNECT_TIMEOUT_S:.0f} s"
    finally:
        resolving.shutdown(wait=False)
    family, kind, proto, _, sockaddr = address[0]
    try:
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(CONNECT_TIMEOUT_S)
            sock.connect(sockaddr)
    except TimeoutError:
        return f"no answer from {host}:{port} within {CONNECT_TIMEOUT_S:.0f} s"
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
    return None


def spark_session(master: str | None = None, app_name: str = "sharesim campaign") -> SparkSession:
    """A session on ``master``; without one, the master ``spark-submit`` was given, else ``local[*]``."""
    from pyspark.sql import SparkSession

    configured = submitted_master()
    chosen = master or configured or DEFAULT_MASTER
    builder = (SparkSession.builder.appName(app_name)
               .config("spark.executorEnv.PYTHONHASHSEED", PYTHONHASHSEED)
               .config("spark.executorEnv.PYTHONSAFEPATH", "1")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version", "1")
               .config("spark.speculation", "false"))
    if _is_local(chosen):
        # Workers on this machine run this interpreter, so they import this very sharesim.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # Everything stays on the loopback interface: no port opened on the machine's network address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (builder.config("spark.driver.host", "127.0.0.1")
                   .config("spark.driver.bindAddress", "127.0.0.1")
                   .config("spark.ui.enabled", "false"))
    if master or not configured:
        builder = builder.master(chosen)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark
