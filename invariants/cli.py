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
@click.option("--rules", is_flag=True,
              help="Print the rule coverage instead: every SPEC.md rule and Kafka guarantee, with its invariants "
                   "or the reason none checks it.")
def invariants_command(as_json: bool, rules: bool) -> None:
    """List the invariants every run checks: id, the SPEC.md rules it protects, its kind
    (state, transition, liveness), what it states and its source of truth (where its expectation comes
    from). A violation names the id."""
    if rules:
        _print_rules(as_json)
        return
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


def _print_rules(as_json: bool) -> None:
    """``--rules``: JSON: a list of objects with ``rule``, ``title``, ``invariants`` (a list) and ``reason``."""
    from invariants.rule_coverage import COVERAGE, rule_ids, title_of

    rows = [(rule, title_of(rule), COVERAGE[rule].invariants, COVERAGE[rule].reason) for rule in rule_ids()]
    if as_json:
        click.echo(json.dumps([{"rule": rule, "title": title, "invariants": list(invariants), "reason": reason}
                               for rule, title, invariants, reason in rows], indent=2))
        return
    covered = sum(1 for _, _, invariants, _ in rows if invariants)
    table = Table(title=f"{len(rows)} rules, {covered} checked by invariants")
    for column in ("rule", "title"):
        table.add_column(column, no_wrap=True)
    table.add_column("invariants", overflow="fold", min_width=20)
    table.add_column("reason / not covered", overflow="fold", min_width=20)
    for rule, title, invariants, reason in rows:
        table.add_row(rule, title, ", ".join(invariants) or "-", reason)
    print_table(console, table)
