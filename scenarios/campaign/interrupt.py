"""Ctrl-C during a campaign: the command that continues it, and nothing else.

Left to itself, a Ctrl-C in a campaign prints hundreds of lines: the Python
tracebacks of the py4j calls under way, the JVM's log lines of the tasks
cancelled while Spark shuts down, and the tracebacks of the executors' Python
workers (in local mode they are in the terminal's process group, so they get
the SIGINT too). So while Spark works, the driver handles SIGINT itself: it
prints the resume command, kills its JVM (SIGKILL: no shutdown hook logs a
cancelled task; pyspark's daemon then stops its workers with SIGHUP, silently)
and leaves with exit 130 at once. The workers ignore SIGINT
(``ignore_sigint_in_worker``): they stop with their JVM, not with a traceback.

An abrupt stop loses nothing: a batch's rows are published only when the
batch is whole, and ``--resume`` runs exactly the run ids not published.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType

from scenarios.exits import Exit

_SHOW_CURSOR = "\x1b[?25h"  # a live progress bar hides the cursor; os._exit skips rich's restoring it


def resume_on_interrupt(command: str) -> AbstractContextManager[Callable[[], None]]:
    """Within the block, Ctrl-C prints ``interrupted: continue with: COMMAND`` and exits 130 at once."""
    return exit_on_interrupt(f"interrupted: continue with: {command}")


@contextmanager
def exit_on_interrupt(line: str) -> Iterator[Callable[[], None]]:
    """Within the block, Ctrl-C prints ``line`` on stderr, stops Spark's JVM and exits 130 at once.

    Yields ``rearm``, to call once the SparkContext exists: pyspark installs a SIGINT handler of its own
    (it cancels the jobs and raises KeyboardInterrupt, and the py4j calls under way print tracebacks)."""

    def on_sigint(_signum: int, _frame: FrameType | None) -> None:
        if sys.stdout.isatty():
            sys.stdout.write(_SHOW_CURSOR)
        sys.stdout.flush()
        # On a terminal the line starts after the ^C the terminal echoed.
        sys.stderr.write(("\n" if sys.stderr.isatty() else "") + f"{line}\n")
        sys.stderr.flush()
        _kill_jvm()
        os._exit(Exit.INTERRUPTED)

    def rearm() -> None:
        signal.signal(signal.SIGINT, on_sigint)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield rearm
    finally:
        signal.signal(signal.SIGINT, previous)


def _kill_jvm() -> None:
    """SIGKILL the JVM this driver started, if it did (under spark-submit, the JVM started the driver)."""
    context = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    gateway = getattr(getattr(context, "SparkContext", None), "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.kill()


def ignore_sigint_in_worker() -> None:
    """Called in an executor's Python worker: a terminal's Ctrl-C is the driver's to handle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
