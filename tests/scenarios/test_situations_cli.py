"""``sharesim situations [--json]``, and the situations in ``sharesim run``'s output."""

from __future__ import annotations

import json

from click.testing import CliRunner

from model.situations import SITUATIONS
from scenarios.cli import main


def test_situations_json_lists_the_catalogue() -> None:
    result = CliRunner().invoke(main, ["situations", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [d["id"] for d in data] == [s.id for s in SITUATIONS] and len(data) >= 35
    assert all(set(d) == {"id", "statement", "where", "rules", "swarms", "rare"} for d in data)
    gap = next(d for d in data if d["id"] == "ack-gap")
    assert gap["where"] == "model/core/share_partition.py: _apply_acknowledgement" and "SP-14" in gap["rules"]


def test_situations_table_help_and_bad_option() -> None:
    result = CliRunner().invoke(main, ["situations"])
    assert result.exit_code == 0, result.output
    assert f"{len(SITUATIONS)} situations" in result.output and "release-on-session-end" in result.output
    helped = CliRunner().invoke(main, ["situations", "--help"])
    assert helped.exit_code == 0 and "--json" in helped.output
    assert CliRunner().invoke(main, ["situations", "--bogus"]).exit_code == 2


def test_a_run_shows_the_situations_it_reached() -> None:
    as_json = CliRunner().invoke(main, ["run", "small", "--seed", "1", "--json"])
    assert as_json.exit_code == 0, as_json.output
    reached = json.loads(as_json.output)["situations"]
    assert reached["ack-accept"] > 0 and list(reached) == sorted(reached)
    table = CliRunner().invoke(main, ["run", "small", "--seed", "1"])
    assert table.exit_code == 0 and "situations reached" in table.output and "ack-acceptx" in table.output
