"""README "Scenario files": the example file and its Python twin are the same scenario and run clean; the
library table lists exactly the named scenarios with their descriptions."""

from __future__ import annotations

import re
from pathlib import Path

from scenarios import library
from scenarios.toml_format import loads

README = Path(__file__).resolve().parents[2] / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Scenario files\n")
    return text[start:text.index("\n## ", start + 1)]


def _block(language: str) -> str:
    match = re.search(rf"```{language}\n(.*?)```", _section(), re.S)
    assert match is not None, f"no {language} block"
    return match.group(1)


def test_the_example_file_and_the_python_api_example_are_the_same_scenario_and_it_runs_clean() -> None:
    from_file = loads(_block("toml"))
    namespace: dict[str, object] = {}
    exec(compile(_block("python"), "README.md", "exec"), namespace)  # the README's own code, as a reader runs it
    assert namespace["scenario"] == from_file
    result = namespace["result"]
    assert getattr(result, "ok", False) and getattr(result, "seed", None) == 7
    quoted = re.search(r"give trace hash\s+`([0-9a-f]+)…` for seed 7", _section())
    assert quoted is not None and getattr(result, "trace_hash", "").startswith(quoted.group(1))


def test_the_library_table_lists_every_named_scenario_with_its_description() -> None:
    named = _section().split("### The named library", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (.*) \| ([a-z_, -]+) \|$", named, re.M)
    listed = sorted(name for name, _, _ in rows)
    missing = sorted(set(library.names()) - set(listed))
    assert missing == [], f"add a row to README's 'The named library' table for each of {missing}"
    assert listed == library.names()
    for name, description, kinds in rows:
        scenario = library.get(name)
        assert description == scenario.description and kinds == (", ".join(scenario.fault_kinds) or "-")
