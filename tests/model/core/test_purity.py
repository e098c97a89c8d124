"""DESIGN.md principle 1: the protocol core imports no SimPy and reads no clock."""

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[3] / "model" / "core"
FORBIDDEN_MODULES = {"simpy", "time", "datetime"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


CORE_FILES = sorted(CORE.rglob("*.py"))


def test_core_has_modules() -> None:
    assert len(CORE_FILES) >= 4


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_is_pure(path: Path) -> None:
    bad = _imports(path) & FORBIDDEN_MODULES
    assert not bad, f"{path.name} imports {sorted(bad)}: model/core must take now_ms and seeds explicitly"


def test_checker_catches_simpy(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text("import simpy.events\nfrom time import monotonic\n")
    assert _imports(sample) & FORBIDDEN_MODULES == {"simpy", "time"}
