"""What every ``sharesim`` command's exit code means: one meaning per code, in every command.

| code | meaning |
| --- | --- |
| 0 | every run held every invariant |
| 1 | an invariant was violated (and no run raised) |
| 2 | bad input or environment: a bad scenario, option or path, an unreadable or non-UTF-8 file, an unwritable ``--out`` or ``--trace``, an unknown or unreachable Spark master, Java missing, a directory in use or of another kind; detected before work starts wherever it can be |
| 3 | a run raised: a defect of the simulator; the error rows exist and each distinct error is printed with its reproducer (also: an internal error of sharesim itself) |
| 4 | a campaign's output is inconsistent: a run id found twice, or a planned run id missing, after the campaign (never expected: a defect of sharesim's campaign machinery) |
| 130 | interrupted (Ctrl-C): the command to continue is printed first |

Where several apply, the highest of 1, 3 and 4 wins: an error row or an inconsistent output means
the verdict cannot be trusted, which matters more than any violation found beside it.

Commands that judge runs (``run``, ``check``, ``sweep``, ``campaign``, ``demo``, and ``report``, which
exits with the verdict of the runs it reports) use every code; commands that judge none (``list``,
``describe``, ``mutants``, ``invariants``, ``shrink``) exit 0 when they did what was asked, 2 on bad
input (``shrink`` of a run that violates nothing included), 3 on an internal error. ``validate`` judges
a run's trace against ``tla/ShareGroup.tla`` (``--consumer-group``: ``tla/ConsumerGroup.tla``): 0 accepted,
1 rejected by TLC, 2 bad input or a tool error (Java missing, no share group, TLC without a verdict), and
also a consumer group's run that leaves the spec's abstraction (its prefix was accepted, which is no
acceptance of the run), 3 the run raised.

Every failure prints one line ``error: ...`` on stderr and no traceback; ``sharesim --debug CMD``
(or ``SHARESIM_DEBUG=1``) prints the traceback before it (``scenarios/entry.py``).
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping
from enum import IntEnum
from typing import Any

import click


class Exit(IntEnum):
    OK = 0
    VIOLATED = 1
    BAD_INPUT = 2
    RUN_ERRORS = 3
    INCONSISTENT = 4
    INTERRUPTED = 130


class BadInput(click.ClickException):
    """Bad input or environment: printed as one ``error: ...`` line on stderr, exit 2.

    The message names the key or option, the value, and what is allowed."""

    exit_code = Exit.BAD_INPUT

    def show(self, file: object = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def verdict_exit(*, violated: int, errors: int, inconsistent: int = 0) -> Exit:
    """The exit code of a finished command from its counts of violating runs, error runs and
    inconsistencies (duplicate or missing run ids)."""
    if inconsistent:
        return Exit.INCONSISTENT
    if errors:
        return Exit.RUN_ERRORS
    if violated:
        return Exit.VIOLATED
    return Exit.OK


def exit_code_table() -> str:
    """The table above as plain text for ``sharesim --help`` (click keeps a paragraph that starts with
    \\b as it is), wrapped to 80 columns."""
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", __doc__ or "", re.MULTILINE)
    lines = [textwrap.fill(meaning.replace("``", ""), 76, initial_indent=f"{code:>3}  ", subsequent_indent=" " * 5)
             for code, meaning in rows]
    return "\b\nExit codes:\n" + "\n".join(lines)


def exit_codes_in_short() -> str:
    """The line every command's ``--help`` ends with: the codes, and where their table is."""
    return ("Exit codes: 0 every invariant held, 1 one was violated, 2 bad input or environment, 3 a run raised, "
            "4 inconsistent campaign output, 130 interrupted (`sharesim --help` has the table).")


def summary_exit(summary: Mapping[str, Any]) -> Exit:
    """The exit code of a campaign's or a sweep's summary.json (its counts and integrity check)."""
    return verdict_exit(violated=summary.get("violated", 0), errors=summary.get("errors", 0),
                        inconsistent=summary.get("inconsistent", 0))
