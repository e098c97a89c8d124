"""Every rule id the repository cites has its rule in docs/, and every rule there is well formed.

The rules live in ``docs/reference/rules/<family>.md``, one ``## ID Title {#ID}`` heading each
(``docs.gen.load_rules``); a clone of the repository alone must resolve every citation, so nothing
here reads ``../shared/``.
"""

from __future__ import annotations

import re

import pytest

from docs.gen import (
    FAMILIES,
    HEADING,
    ROOT,
    RULE_ID,
    RULES_DIR,
    cited_ids,
    load_rules,
    rule_ids_in,
    scanned_files,
)

# How many rules each family has (the numbering of the design documents the code has always cited).
EXPECTED = {"SP": 15, "SC": 9, "GC": 9, "CG": 7, "CL": 3, "E": 5}


def test_every_cited_rule_id_has_its_rule() -> None:
    rules = load_rules()
    missing = {rule_id: files[:3] for rule_id, files in cited_ids().items() if rule_id not in rules}
    assert not missing, f"rule ids cited but not in {RULES_DIR.relative_to(ROOT)}: {missing}"


def test_the_scan_sees_code_tests_tla_scenarios_and_docs() -> None:
    tops = {path.relative_to(ROOT).parts[0] for path in scanned_files()}
    assert {"model", "invariants", "scenarios", "tla", "tests", "docs"} <= tops
    cited = cited_ids()
    suffixes = {file.rsplit(".", 1)[-1] for files in cited.values() for file in files}
    assert {"py", "tla", "toml", "md", "cfg"} <= suffixes
    assert len(cited) == sum(EXPECTED.values())  # every rule is cited somewhere


def test_each_family_is_numbered_without_gaps() -> None:
    rules = load_rules()
    assert set(EXPECTED) == set(FAMILIES)
    for family, count in EXPECTED.items():
        numbers = sorted(rule.number for rule in rules.values() if rule.family == family)
        assert numbers == list(range(1, count + 1)), family
        assert {rule.page for rule in rules.values() if rule.family == family} == {family.lower() + ".md"}


@pytest.mark.parametrize("rule_id", [f"{f}-{n}" for f, count in EXPECTED.items() for n in range(1, count + 1)])
def test_a_rule_is_well_formed(rule_id: str) -> None:
    rule = load_rules()[rule_id]
    assert rule.title and rule.title[0].isupper() and not rule.title.endswith(".")
    assert len(rule.statement.split()) >= 15, f"{rule_id}: a statement of a sentence or more"
    assert "TODO" not in rule.statement and "TBD" not in rule.statement
    text = (RULES_DIR / rule.page).read_text(encoding="utf-8")
    assert text.count(f"<!-- BEGIN generated: {rule_id} ") == 1
    assert text.count(f"<!-- END generated: {rule_id} -->") == 1


def test_every_rule_heading_is_recognised() -> None:
    """A heading that looks like a rule but does not parse (a missing anchor, a typo) would drop the rule."""
    for page in RULES_DIR.glob("*.md"):
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith("## ") and RULE_ID.match(line[3:]):
                assert HEADING.match(line), f"{page.name}: {line!r} (expected '## ID Title {{#ID}}')"


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("SP-5 and SC-3", {"SP-5", "SC-3"}),
        ("(SP-3..SP-5)", {"SP-3", "SP-4", "SP-5"}),
        ("SC-1..SC-9", {f"SC-{n}" for n in range(1, 10)}),
        ("E-4 bounds it", {"E-4"}),
        # Not rule ids: exponents, other prefixes, longer words.
        ("1e-3, 2E-5, KIP-932, KAFKA-19972, SPEC-1, CLE-2, ISE-1", set()),
    ],
)
def test_rule_ids_are_found_and_only_they(text: str, ids: set[str]) -> None:
    assert rule_ids_in(text) == ids


def test_no_cited_id_looks_like_something_else() -> None:
    """Measured: every match of the id pattern in the repository is a citation of a rule (an ``E-n``
    that were an exponent or a part of another name would show up here as an id past its family's end)."""
    pattern = re.compile(r"\b(SP|SC|GC|CG|CL|E)-(\d+)\b")
    for path in scanned_files():
        for family, number in pattern.findall(path.read_text(encoding="utf-8")):
            assert 1 <= int(number) <= EXPECTED[family], f"{path.relative_to(ROOT)}: {family}-{number}"
