"""``sharesim report DIR``: render the report of a run, sweep or campaign directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from scenarios.exits import BadInput, summary_exit, verdict_exit
from scenarios.terminal import make_console


@click.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="A metric a sweep report plots (repeat for several; default: redelivery_rate, "
                   "latency_p99_ms, offsets_archived_or_skipped, violated).")
def report_command(directory: Path, metrics: tuple[str, ...]) -> None:
    """Render DIRECTORY/report.html and print its path: a run (`sharesim run SCENARIO --out DIR`),
    a sweep (`sharesim sweep ... --out DIR`) or a campaign directory. The exit code is the verdict
    of the runs it reports (0 held, 1 violated, 3 a run raised); 2 if DIRECTORY is missing or holds
    none of these, or --metric is not one of the sweep's."""
    from reports.render import ReportError, directory_kind, render

    try:
        kind, data = directory_kind(directory)
        with make_console(stderr=True).status(f"rendering the report of {directory}"):
            path = render(directory, metrics)
    except ReportError as exc:
        raise BadInput(str(exc)) from None
    click.echo(str(path))
    sys.exit(_verdict(kind, data))


def _verdict(kind: str, data: dict[str, Any]) -> int:
    """The exit code of the reported runs (scenarios/exits.py)."""
    if kind == "run":
        return verdict_exit(violated=data.get("verdict") == "violated", errors=data.get("verdict") == "error")
    return summary_exit(data)
