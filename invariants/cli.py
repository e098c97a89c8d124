"""``sharesim invariants [--json]``: the invariant catalogue (``invariants/catalogue.py``).

JSON: a list of objects with ``id``, ``spec`` (a list of SPEC.md ids),
``kind``, ``statement`` and ``source`` (where its expectation comes from), in
catalogue order; otherwise a table.
"""

from __future__ import annotations

import json

import click
from rich.table import Table

from invariants.catalogue import CATALOGUE
from scenarios.terminal import make_console, print_table

console = make_console()


@click.command("invariants")
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as a JSON list.")
def invariants_command(as_json: bool) -> None:
    """List the invariants every run checks: id, the SPEC.md rules it protects, its kind
    (state, transition, liveness), what it states and its source of truth (where its expectation comes
    from). A violation names the id."""
    if as_json:
        click.echo(json.dumps([invariant.to_json() for invariant in CATALOGUE], indent=2))
        return
    table = Table(title=f"{len(CATALOGUE)} invariants")
    for column in ("id", "spec", "kind"):
        table.add_column(column, no_wrap=True)
    table.add_column("statement", overflow="fold", min_width=30)
    table.add_column("source of truth", overflow="fold", min_width=30)
    for invariant in CATALOGUE:
        table.add_row(invariant.id, ", ".join(invariant.spec), invariant.kind, invariant.statement,
                      invariant.source)
    print_table(console, table)
