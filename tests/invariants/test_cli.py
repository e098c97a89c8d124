"""``sharesim invariants [--json]``."""

from __future__ import annotations

import json

from click.testing import CliRunner

from invariants.catalogue import CATALOGUE
from scenarios.cli import main


def test_invariants_json_lists_the_catalogue() -> None:
    result = CliRunner().invoke(main, ["invariants", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [d["id"] for d in data] == [i.id for i in CATALOGUE]
    assert all(set(d) == {"id", "spec", "kind", "statement", "source"} for d in data)
    assert data[0] == {"id": "record-state-transition", "spec": ["SP-1"], "kind": "transition",
                       "statement": CATALOGUE[0].statement, "source": CATALOGUE[0].source}
    assert all(d["source"] for d in data)
    assert next(d for d in data if d["id"] == "group-epoch-order")["spec"] == ["GC-2", "GC-3", "GC-4", "CG-1"]


def test_invariants_table_and_help() -> None:
    result = CliRunner().invoke(main, ["invariants"])
    assert result.exit_code == 0, result.output
    assert f"{len(CATALOGUE)} invariants" in result.output and "coordinator-replay-equal" in result.output
    assert "stored-start-offset-monotonic" in result.output and "negative-epoch-changes-nothing" in result.output
    assert "target-assignment-balanced" in result.output
    assert "SC-6" in result.output and "liveness" in result.output
    assert "source of truth" in result.output
    helped = CliRunner().invoke(main, ["invariants", "--help"])
    assert helped.exit_code == 0 and "--json" in helped.output
    assert CliRunner().invoke(main, ["invariants", "--bogus"]).exit_code == 2
