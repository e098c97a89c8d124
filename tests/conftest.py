"""``--mutant NAME``: run the selected tests with a protocol mutant injected.

This is how a property test is shown to bite: break the rule it checks and watch it fail,
e.g. ``python -m pytest tests/model/core/group --mutant handover-before-revoke``. Meant for the
pure-core tests; a simulation test that injects a mutant of its own is refused ("already injected").
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from model import mutants
from tests.wheels import Built, build_wheel


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


@pytest.fixture(scope="session")
def compiled_wheel(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The compiled wheel (``SHARESIM_COMPILE=1``), built once a session: it takes minutes. Its users
    (``tests/test_setup.py``, the standalone-cluster test) share the xdist group ``compiled``, so one
    worker builds it."""
    built = build_wheel(tmp_path_factory.mktemp("compiled-wheel"), SHARESIM_COMPILE="1")
    assert built.returncode == 0 and built.wheel is not None, built.output[-3000:]
    return built
