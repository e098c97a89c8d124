"""The documentation site: the generated parts are current and ``mkdocs build --strict`` succeeds."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from docs.gen import ROOT, Citations, collect, expected_outputs, generated_block, stale, tla_citations

pytestmark = [pytest.mark.xdist_group("docs")]


def test_generated_pages_are_current() -> None:
    expected = expected_outputs()
    old = [path for path in stale()]
    # The first differing lines of each stale page say why (e.g. a page that depends on the process).
    diffs = ["".join(list(difflib.unified_diff(
        path.read_text(encoding="utf-8").splitlines(keepends=True) if path.is_file() else [],
        expected[path].splitlines(keepends=True), str(path.relative_to(ROOT)), "generated now", n=1))[:30])
        for path in old]
    assert not old, (f"stale generated docs {[str(p.relative_to(ROOT)) for p in old]}: run "
                     f"`PYTHONPATH=. python -m docs.gen`\n" + "\n".join(diffs))


def test_every_generated_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for path in expected_outputs():
        assert path.relative_to(ROOT / "docs").as_posix() in nav, path


def test_a_rule_table_names_its_implementation_invariant_tla_and_tests() -> None:
    sp6 = collect()["SP-6"]
    assert "model/core/share_partition.py" in sp6.implemented
    assert "spso-monotonic" in sp6.checked
    assert ("tla/ShareGroup.tla", "SP6_SpsoMonotonic") in sp6.specified
    assert any(test.startswith("tests/") for test in sp6.tested)
    block = generated_block("SP-6", sp6)
    assert "[`spso-monotonic`](../invariants.md#spso-monotonic)" in block


def test_an_uncited_rule_gets_dashes() -> None:
    assert generated_block("SP-99", Citations()).count("| —") == 5


def test_tla_comments_belong_to_the_definition_they_are_on_or_in() -> None:
    spec = "\n".join([
        "---- MODULE M ----",
        "(* Rule ids SP-1 are in the header. *)",
        "EXTENDS Naturals",
        "CONSTANTS",
        "    Limit \\* the delivery limit (SP-5)",
        "",
        "(* SP-6: the start offset. *)",
        "Spso == 0",
        "",
        "(* SP-9: a note on its own. *)",
        "",
        "Ack(o) ==",
        "    /\\ o = 1 \\* SP-3",
        "====",
    ])
    assert tla_citations(spec) == {"SP-5": {"CONSTANTS"}, "SP-6": {"Spso"}, "SP-3": {"Ack"}}


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed on CI (the test extra installs it)")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    mkdocs = shutil.which("mkdocs") or str(Path(sys.executable).parent / "mkdocs")
    result = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "rules" / "sp" / "index.html").is_file()
    assert not (tmp_path / "site" / "gen").exists()  # the generator is not published
    page = (tmp_path / "site" / "reference" / "rules" / "sp" / "index.html").read_text(encoding="utf-8")
    assert 'id="SP-5"' in page
