"""``--mutant NAME``: run the selected tests with a protocol mutant injected.

This is how a property test is shown to bite: break the rule it checks and watch it fail,
e.g. ``python -m pytest tests/model/core/group --mutant handover-before-revoke``. Meant for the
pure-core tests; a simulation test that injects a mutant of its own is refused ("already injected").
"""

from __future__ import annotations

import fcntl
import os
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
    """The compiled wheel (``SHARESIM_COMPILE=1``), built once per test run: it takes minutes. Its users
    (``tests/test_setup.py``, the standalone-cluster test) may run on two xdist workers, so the first
    builds it under a lock in the run's shared temporary directory and the other waits and takes it."""
    # Under xdist every worker's base directory is inside this run's own one, which they share; without
    # xdist the base directory's parent holds the earlier runs too, whose wheel may be of older code.
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with open(shared / "compiled-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = shared / "compiled-wheel"
        saved = out / "build.json"
        if saved.exists():
            return Built.from_json(saved.read_text())
        out.mkdir(exist_ok=True)
        built = build_wheel(out, SHARESIM_COMPILE="1")
        assert built.returncode == 0 and built.wheel is not None, built.output[-3000:]
        saved.write_text(built.to_json())
        return built
