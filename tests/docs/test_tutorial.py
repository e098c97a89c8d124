"""Every command of the tutorial runs, in order, in one directory, and exits as the page says.

A ``sh`` block of ``docs/tutorial.md`` is preceded by ``<!-- run: exit N -->`` (each of its ``$``
commands is run and must exit N) or ``<!-- not run: why -->``; a block with neither fails the test.
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

pytestmark = [pytest.mark.xdist_group("docs-tutorial")]

TUTORIAL = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r"(?:<!-- (run: exit (\d+)|not run: [^>]+) -->\n)?```sh\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str | None, int | None, list[str]]]:
    """(directive, expected exit code, commands) of each sh block, in page order."""
    found = []
    for match in BLOCK.finditer(TUTORIAL.read_text(encoding="utf-8")):
        directive, code, body = match.groups()
        commands = [line[2:] for line in body.splitlines() if line.startswith("$ ")]
        found.append((directive, int(code) if code is not None else None, commands))
    return found


def test_every_command_block_says_whether_it_runs() -> None:
    found = blocks()
    assert len(found) >= 8
    for directive, _, commands in found:
        assert commands, "a sh block with no $ command"
        assert directive is not None, f"say <!-- run: exit N --> or <!-- not run: why --> before {commands}"


def test_the_tutorial_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", "SHARESIM_DEBUG": ""}
    ran = 0
    outputs: dict[str, str] = {}
    for directive, code, commands in blocks():
        if code is None:
            assert directive is not None and directive.startswith("not run: ")
            continue
        for command in commands:
            argv = shlex.split(command)
            assert argv[0] == "sharesim", command
            result = subprocess.run([sys.executable, "-m", "scenarios.cli", *argv[1:]], cwd=tmp_path, env=env,
                                    capture_output=True, text=True, timeout=600)
            assert result.returncode == code, f"$ {command}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            outputs[command] = result.stdout
            ran += 1
    assert ran >= 8
    # What the page quotes of the outputs.
    mutant = "sharesim run swarm_locks --seed 34 --mutant lock-timeout-before-write"
    assert "offsets 0-0 delivered 5 times" in outputs[mutant]
    shrink = next(command for command in outputs if command.startswith("sharesim shrink"))
    assert "faults 18 -> 3, records 10 -> 3, fault window 10000 -> 6641 ms" in outputs[shrink]
    assert (tmp_path / "swarm_locks-seed34-shrunk.toml").is_file()
    assert (tmp_path / "shrunk-run" / "report.html").is_file()
