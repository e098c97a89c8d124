"""The list of deliberate differences from Kafka trunk (model/kafka_divergences.py) stays true:
every entry names tests that exist, and every mutant it names is registered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from model import mutants
from model.kafka_divergences import DIVERGENCES

ROOT = Path(__file__).resolve().parents[2]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


@pytest.mark.parametrize("divergence", DIVERGENCES, ids=lambda d: d.name)
def test_each_divergence_names_tests_that_exist_and_says_why(divergence) -> None:  # type: ignore[no-untyped-def]
    assert divergence.kind in ("divergence", "abstraction")
    assert divergence.sharesim and divergence.kafka and divergence.why and divergence.tests
    for test in divergence.tests:
        path, _, function = test.partition("::")
        assert (ROOT / path).is_file(), f"{divergence.name}: no file {path}"
        assert function in _functions(ROOT / path), f"{divergence.name}: no test {function} in {path}"
    if divergence.mutant is not None:
        assert divergence.mutant in {m.name for m in mutants.MUTANTS}


def test_names_are_unique() -> None:
    names = [d.name for d in DIVERGENCES]
    assert len(names) == len(set(names))
