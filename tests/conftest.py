"""``--mutant NAME``: run the selected tests with a protocol mutant injected.

This is how a property test is shown to bite: break the rule it checks and watch it fail,
e.g. ``python -m pytest tests/model/core/group --mutant handover-before-revoke``. Meant for the
pure-core tests; a simulation test that injects a mutant of its own is refused ("already injected").
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from model import mutants


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--mutant", default=None, choices=mutants.injectable_names(), metavar="NAME",
                     help="inject this model.mutants mutant into every selected test")


@pytest.fixture(autouse=True)
def _injected_mutant(request: pytest.FixtureRequest) -> Iterator[None]:
    name = request.config.getoption("--mutant")
    if name is None:
        yield
        return
    with mutants.injected(name):
        yield
