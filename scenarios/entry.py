"""How a ``sharesim`` process ends: every exception becomes one ``error: ...`` line and its exit code.

The console script (``scenarios.cli:main``) and the spark-submit entry
(``python -m scenarios.campaign_main``) run their command through ``guarded``,
which maps what escapes it to the codes of ``scenarios/exits.py``:

* ``BadInput`` and click's usage errors: their one line, exit 2;
* ``OSError`` (an unwritable path, a full disk): the path and the system's reason, exit 2;
* Py4J and PySpark errors (Java missing, the gateway gone, a Spark job failed): their first line, exit 2;
* Ctrl-C: ``interrupted``, exit 130 (a campaign prints its resume command instead:
  ``scenarios/campaign/interrupt.py``);
* anything else is a defect of sharesim: ``error: internal error: <Type>: <message>``, exit 3.

No traceback is printed unless debugging is asked for (``sharesim --debug CMD`` or
``SHARESIM_DEBUG=1``); then it comes before the error line.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, Final

import click

from scenarios.exits import BadInput, Exit

DEBUG_ENV: Final = "SHARESIM_DEBUG"
# click >= 8.2 raises it for a group called without a command; older versions print the help themselves.
_NO_ARGS_IS_HELP: Final[Any] = getattr(click.exceptions, "NoArgsIsHelpError", ())
_debug = False


def set_debug(on: bool) -> None:
    global _debug
    _debug = on


def debugging() -> bool:
    return _debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def error(message: str) -> None:
    """The one line a failure prints on stderr."""
    click.echo(f"error: {message}", err=True)


def guarded(call: Callable[[], Any]) -> int:
    """Run ``call`` (a click command's ``main`` in non-standalone mode) and return the process's exit code."""
    try:
        returned = call()
    except SystemExit as exc:
        return _system_exit_code(exc.code)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort as exc:  # click turns KeyboardInterrupt (and EOF at a prompt) into Abort
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return _interrupted()
        return _failed(exc, "aborted (end of input)", Exit.BAD_INPUT)
    except BadInput as exc:
        _traceback(exc)
        exc.show()
        return exc.exit_code
    except _NO_ARGS_IS_HELP as exc:  # `sharesim` alone: the help is what was asked for
        click.echo(exc.format_message())
        return Exit.OK
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "sharesim"
        error(f"{exc.format_message()} (see {command} --help)")
        return exc.exit_code
    except click.ClickException as exc:
        _traceback(exc)
        error(exc.format_message())
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    except OSError as exc:
        return _failed(exc, os_error_line(exc), Exit.BAD_INPUT)
    except Exception as exc:
        if _is_spark_error(exc):
            return _failed(exc, f"Spark: {spark_error_line(exc)}", Exit.BAD_INPUT)
        return _failed(exc, f"internal error: {type(exc).__name__}: {first_line(str(exc))} "
                            "(run again with --debug for the traceback)", Exit.RUN_ERRORS)
    return returned if isinstance(returned, int) else Exit.OK


def os_error_line(exc: OSError) -> str:
    """``PATH: reason`` of an OSError (both paths of a rename), or its text when it names no path."""
    reason = exc.strerror or str(exc)
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


def spark_error_line(exc: BaseException) -> str:
    """The one line of a Py4J / PySpark error that says what went wrong (not the JVM's stack)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return first_line(str(java.toString()))
        except Exception:  # the JVM may be gone: fall back to the Python side's text
            pass
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # Py4JJavaError: "An error occurred while calling o45.parquet." then ": java.io.IOException: ..."
    cause = next((line.removeprefix(": ") for line in lines if line.startswith(": ")), None)
    return cause or (lines[0] if lines else type(exc).__name__)


def _is_spark_error(exc: BaseException) -> bool:
    return any(k.__module__.split(".")[0] in ("py4j", "pyspark") for k in type(exc).__mro__)


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _system_exit_code(code: object) -> int:
    if code is None:
        return Exit.OK
    if isinstance(code, int):
        return code
    error(str(code))  # sys.exit("message"): Python would print it and exit 1, which means "violated" here
    return Exit.BAD_INPUT


def _interrupted() -> int:
    click.echo("interrupted", err=True)
    return Exit.INTERRUPTED


def _traceback(exc: BaseException) -> None:
    if debugging():
        traceback.print_exception(exc, file=sys.stderr)


def _failed(exc: BaseException, line: str, code: int) -> int:
    _traceback(exc)
    error(line)
    return code
