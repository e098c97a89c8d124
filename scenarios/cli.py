"""The `sharesim` command line.

Exit codes: 0 ok, 1 an invariant was violated (or a check failed), 2 bad input.
"""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console
from rich.table import Table

console = Console()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sharesim")
def main() -> None:
    """sharesim: a simulation and formal-model testbed for Kafka share groups (KIP-932)
    and the KIP-848 consumer rebalance protocol."""


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON instead of a table.")
def demo(as_json: bool) -> None:
    """Replay the worked SPSO/SPEO example of KIP-932 (seed 002) through the
    share-partition leader and share coordinator, checking every printed value."""
    from model.core.kip932_example import replay

    rows = replay()
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
        return
    table = Table(title="KIP-932 worked example, replayed (seed 002_6b3a98b13b89437f.txt)")
    for column in ("step", "SPSO", "SPEO", "in-flight records", "WriteShareGroupState"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row.step, str(row.spso), str(row.speo), row.cumulative_state, row.write_text)
    console.print(table)
    mismatches = [row for row in rows if not row.matches_seed]
    if mismatches:
        console.print(f"[red]{len(mismatches)} step(s) differ from the seed's table[/red]")
        sys.exit(1)
    console.print(f"[green]all {len(rows)} steps match the seed's table[/green]")


if __name__ == "__main__":
    main()
