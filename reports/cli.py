"""``sharesim report DIR``: render the report of a run, sweep or campaign directory."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from scenarios.terminal import make_console


@click.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--metric", "metrics", multiple=True, metavar="NAME",
              help="A metric a sweep report plots (repeat for several; default: redelivery_rate, "
                   "latency_p99_ms, offsets_archived_or_skipped, violated).")
def report_command(directory: Path, metrics: tuple[str, ...]) -> None:
    """Render DIRECTORY/report.html and print its path: a run (`sharesim run SCENARIO --out DIR`),
    a sweep (`sharesim sweep ... --out DIR`) or a campaign directory. Exit 2 if DIRECTORY is
    missing or holds none of these."""
    from reports.render import ReportError, render

    try:
        with make_console(stderr=True).status(f"rendering the report of {directory}"):
            path = render(directory, metrics)
    except ReportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(str(path))
