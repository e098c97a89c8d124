"""Every command of the README's tour, of the how-to guides and of the findings page runs, page by page in
order, in one directory per page, and exits as the page says.

The same convention as the tutorial (``test_tutorial.py``): a ``sh`` block is preceded by
``<!-- run: exit N -->`` (each of its ``$`` commands is run and must exit N) or ``<!-- not run: why -->``.
A command is ``sharesim ...`` or ``python ...``, optionally with its stdout sent to a file (``> FILE``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from docs.gen import ROOT

pytestmark = [pytest.mark.xdist_group("docs-pages")]

BLOCK = re.compile(r"(?:<!-- (run: exit (\d+)|not run: [^>]+) -->\n)?```sh\n(.*?)```", re.DOTALL)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "how-to").glob("*.md")),
         ROOT / "docs" / "explanation" / "findings.md"]


def blocks(page: Path) -> list[tuple[str | None, int | None, list[str]]]:
    """(directive, expected exit code, commands) of each sh block of ``page``, in page order."""
    found = []
    for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
        directive, code, body = match.groups()
        commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
        found.append((directive, int(code) if code is not None else None, commands))
    return found


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def test_every_how_to_guide_is_a_page_here() -> None:
    names = {page.stem for page in PAGES if page.parent.name == "how-to"}
    assert {"write-a-scenario", "sweep-a-parameter", "run-a-campaign", "add-an-invariant", "add-a-mutant",
            "add-a-fault-kind", "run-tlc", "read-a-report"} <= names


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_command_block_says_whether_it_runs(page: Path) -> None:
    for directive, _, commands in blocks(page):
        if not commands and page.name == "README.md":
            continue  # the quickstart: ./dev demo and ./dev tests, which CI runs as they are
        assert commands, f"{_name(page)}: a sh block with no $ command"
        assert directive is not None, (f"{_name(page)}: say <!-- run: exit N --> or <!-- not run: why --> "
                                       f"before {commands}")


def _argv(command: str) -> tuple[list[str], str | None]:
    """The command's argv, with ``python`` and ``sharesim`` run by this interpreter, and its stdout file."""
    words = shlex.split(command, comments=True)
    out = None
    if ">" in words:
        at = words.index(">")
        words, out = words[:at], words[at + 1]
    if words[0] == "sharesim":
        return [sys.executable, "-m", "scenarios.cli", *words[1:]], out
    assert words[0] == "python", command
    return [sys.executable, *words[1:]], out


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_the_commands_of_the_page_run(page: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "SHARESIM_DEBUG": ""}
    ran = 0
    for _, code, commands in blocks(page):
        if code is None:
            continue
        for command in commands:
            argv, out = _argv(command)
            result = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert result.returncode == code, f"$ {command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            if out is not None:
                (tmp_path / out).write_text(result.stdout, encoding="utf-8")
            ran += 1
    assert ran or all(code is None for _, code, _ in blocks(page)), f"{_name(page)} runs no command"
