"""``sharesim situations [--json]``: the catalogue of protocol situations (``model/situations.py``).

JSON: a list of objects with ``id``, ``statement``, ``where`` (the module and function whose hook
counts it), ``rules`` (SPEC.md ids), ``swarms`` (the library swarms tested to reach it) and ``rare``
(why none does within the test's seeds, if so), in catalogue order; otherwise a table. A run's JSON
(``sharesim run --json``) has ``situations``: the ones it reached, id -> count.
"""

from __future__ import annotations

import json

import click
from rich.table import Table

from model.situations import SITUATIONS, SWARM_RUNS
from scenarios.terminal import make_console, print_table

console = make_console()


@click.command("situations")
@click.option("--json", "as_json", is_flag=True, help="Print the catalogue as a JSON list.")
def situations_command(as_json: bool) -> None:
    """List the protocol situations a run counts when it reaches them (code probes): id, where the
    hook is, the SPEC.md rules it concerns, the library swarms that reach it, and what it is. A
    run's result (`sharesim run --json`) has the ones it reached; a campaign gives their hit rates."""
    if as_json:
        click.echo(json.dumps([situation.to_json() for situation in SITUATIONS], indent=2))
        return
    table = Table(title=f"{len(SITUATIONS)} situations (swarms: those tested to reach it within {SWARM_RUNS} seeds)")
    table.add_column("id", no_wrap=True)
    table.add_column("where", overflow="fold", max_width=40)
    table.add_column("rules", no_wrap=True)
    table.add_column("swarms", overflow="fold", max_width=24)
    table.add_column("statement", overflow="fold", min_width=30)
    for s in SITUATIONS:
        table.add_row(s.id, s.where, ", ".join(s.rules), ", ".join(s.swarms) or "none (rare)",
                      s.statement + (f" [rare: {s.rare}]" if s.rare else ""))
    print_table(console, table)
