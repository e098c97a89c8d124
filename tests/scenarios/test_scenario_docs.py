"""The how-to "Write a scenario" (docs/how-to/write-a-scenario.md): its example file and its Python twin are
the same scenario and run clean. The reference page of the named scenarios (docs/reference/scenarios.md,
generated) lists exactly the library with its descriptions, and the scenario keys page documents every
field of every table of a scenario file."""

from __future__ import annotations

import re
from pathlib import Path

from scenarios import library
from scenarios.toml_format import loads

DOCS = Path(__file__).resolve().parents[2] / "docs"
HOW_TO = DOCS / "how-to" / "write-a-scenario.md"
LIBRARY_PAGE = DOCS / "reference" / "scenarios.md"


def _section() -> str:
    return HOW_TO.read_text(encoding="utf-8")


def _block(language: str) -> str:
    match = re.search(rf"```{language}\n(.*?)```", _section(), re.S)
    assert match is not None, f"no {language} block"
    return match.group(1)


def test_the_example_file_and_the_python_api_example_are_the_same_scenario_and_it_runs_clean() -> None:
    from_file = loads(_block("toml"))
    namespace: dict[str, object] = {}
    exec(compile(_block("python"), str(HOW_TO), "exec"), namespace)  # the page's own code, as a reader runs it
    assert namespace["scenario"] == from_file
    result = namespace["result"]
    assert getattr(result, "ok", False) and getattr(result, "seed", None) == 7
    quoted = re.search(r"give trace hash\s+`([0-9a-f]+)…` for seed 7", _section())
    assert quoted is not None and getattr(result, "trace_hash", "").startswith(quoted.group(1))


def test_the_library_table_lists_every_named_scenario_with_its_description() -> None:
    named = LIBRARY_PAGE.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([a-z0-9_]+)` \| (.*) \| ([a-z_, -]+) \|$", named, re.M)
    listed = sorted(name for name, _, _ in rows)
    missing = sorted(set(library.names()) - set(listed))
    assert missing == [], f"refresh the generated page (python -m docs.gen) for {missing}"
    assert listed == library.names()
    for name, description, kinds in rows:
        scenario = library.get(name)
        assert description == scenario.description and kinds == (", ".join(scenario.fault_kinds) or "-")


def test_every_field_of_a_scenario_file_has_its_documentation() -> None:
    import dataclasses

    from scenarios.spec import SCENARIO_TABLES

    for table, cls, docs in SCENARIO_TABLES:
        fields = [f.name for f in dataclasses.fields(cls)]
        assert sorted(docs) == sorted(fields), table
        assert all(description.strip() for _, description in docs.values()), table
