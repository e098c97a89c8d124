"""The rule coverage table (``invariants/rule_coverage.py``): every SPEC.md rule appears exactly once, with
invariants that exist or a reason; ``sharesim invariants --rules`` prints it."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from invariants import catalogue, rule_coverage
from invariants.cli import invariants_command
from invariants.rule_coverage import COVERAGE, KAFKA_GUARANTEES, SPEC_RULES

SPEC_MD = Path(os.environ.get("SHARESIM_SPEC", "/work/shared/SPEC.md"))
RULE_ID = re.compile(r"^- \*\*((?:SP|SC|GC|CG|CL|E)-\d+) ([^*]+?)\.?\*\*", re.MULTILINE)


def test_every_rule_appears_exactly_once_in_the_table_and_in_order() -> None:
    source = Path(rule_coverage.__file__).read_text(encoding="utf-8")
    table = next(node for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "COVERAGE")
    assert isinstance(table.value, ast.Dict)
    keys = [k.value for k in table.value.keys if isinstance(k, ast.Constant)]
    assert len(keys) == len(set(keys))  # a duplicate key in the literal would silently win
    assert keys == rule_coverage.rule_ids()
    assert len({rule for rule, _ in SPEC_RULES + KAFKA_GUARANTEES}) == len(SPEC_RULES) + len(KAFKA_GUARANTEES)


@pytest.mark.skipif(not SPEC_MD.exists(), reason=f"{SPEC_MD} is not here (set SHARESIM_SPEC)")
def test_the_rule_list_is_spec_md_s() -> None:
    found = RULE_ID.findall(SPEC_MD.read_text(encoding="utf-8"))
    assert [(rule, title.strip()) for rule, title in found] == list(SPEC_RULES)


def test_every_named_invariant_exists_and_every_rule_without_one_says_why() -> None:
    known = set(catalogue.ids())
    for rule, coverage in COVERAGE.items():
        assert set(coverage.invariants) <= known, (rule, set(coverage.invariants) - known)
        assert coverage.invariants or len(coverage.reason) >= 20, rule


def test_every_invariant_of_the_catalogue_checks_some_rule_of_the_table() -> None:
    assert set(catalogue.ids()) - set(rule_coverage.by_invariant()) == set()


def test_every_invariant_s_own_spec_rules_list_it() -> None:
    # the catalogue's spec field and the coverage table agree: an invariant protecting rule R is listed under R
    listed = rule_coverage.by_invariant()
    missing = {(i.id, rule) for i in catalogue.CATALOGUE for rule in i.spec if rule not in listed[i.id]}
    assert missing == set()


def test_the_cli_prints_the_rules_as_a_table_and_as_json() -> None:
    runner = CliRunner()
    table = runner.invoke(invariants_command, ["--rules"])
    assert table.exit_code == 0 and "SP-15" in table.output and "release-on-session-end" in table.output
    out = runner.invoke(invariants_command, ["--rules", "--json"])
    assert out.exit_code == 0
    rows = json.loads(out.output)
    assert [row["rule"] for row in rows] == rule_coverage.rule_ids()
    assert set(rows[0]) == {"rule", "title", "invariants", "reason"}
