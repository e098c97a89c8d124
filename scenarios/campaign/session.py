"""The Spark session a campaign runs in: local by default, any cluster by ``--master`` or ``spark-submit``.

Python workers get a fixed ``PYTHONHASHSEED`` (``spark.executorEnv.*`` is
applied to the workers of every master, local mode included). A run never
depends on it (DESIGN.md principle 2), but any library code that iterates a
``set`` of strings would, and a campaign must not differ between executors.

Output is committed by Hadoop's FileOutputCommitter, algorithm version 1, pinned
here: a task's file moves into the output directory only when the job commits
(version 2 moves it at the task's commit, so a killed job leaves part of its
output in place), and speculation stays off (one attempt of each task at a
time). ``execute.py`` relies on both: a batch's staging directory holds its
rows only once the whole job committed.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

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


def spark_session(master: str | None = None, app_name: str = "sharesim campaign") -> SparkSession:
    """A session on ``master``; without one, the master ``spark-submit`` was given, else ``local[*]``."""
    from pyspark.sql import SparkSession

    configured = submitted_master()
    chosen = master or configured or DEFAULT_MASTER
    builder = (SparkSession.builder.appName(app_name)
               .config("spark.executorEnv.PYTHONHASHSEED", PYTHONHASHSEED)
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
