"""The compiled build (``setup.py`` with ``SHARESIM_COMPILE=1``): mypyc compiles the simulator, and
a run on it is the same run as on the interpreted code: the same trace hash, events, faults and
verdict, for faulted scenarios, swarm plans and a mutant; the scenarios a campaign pickles for its
workers unpickle; a bad scenario file gets the same problems. It also checks that the modules really
are the compiled ones, so the comparison cannot pass by running the interpreted code twice.

The wheel is built here, as the ``compiled`` nox session builds it (a C compiler, the Python
headers and mypy; about a minute and a half on one core of this machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from scenarios import library
from tests.scenarios.test_toml_format import BROKEN

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.xdist_group("compiled")]

# (scenario, seed, mutant): faults of every family, swarm plans drawn from the seed, a mutant's hook.
CASES = (
    ("standard", 1, None),
    ("broker_crash", 5, None),
    ("share_coordinator_failover", 0, None),
    ("read_committed_transactions", 0, None),
    ("swarm_small", 0, None),
    ("swarm_small", 3, None),
    ("swarm", 1, None),
    ("swarm_wide", 2, None),
    ("swarm_failovers", 34, None),
    ("small", 0, "spso-before-durable"),
)

_SCRIPT = """
import json, pickle, sys
import invariants.monitors, model, model.core.share_partition, model.sim.network
from model.sim.runner import run
from scenarios import library
from scenarios.toml_format import ScenarioError, loads
out = {"modules": [m.__file__ for m in (invariants.monitors, model.core.share_partition, model.sim.network)],
       "build": model.build()}
# What a campaign sends its workers, and what a bad scenario file is told.
out["unpickled"] = [n for n in library.names() if pickle.loads(pickle.dumps(library.get(n))) == library.get(n)]
from model.core.metadata import TopicPartition
from model.core.produce_fetch import ProduceRequest
from model.core.share_state import SharePartitionKey
messages = (TopicPartition("t", 1), SharePartitionKey("g", "t-id", 1), ProduceRequest("t", 0, 3, keys=(1, 2, 3)))
out["messages"] = [[repr(m), pickle.loads(pickle.dumps(m)) == m, hash(m) == hash(pickle.loads(pickle.dumps(m)))]
                   for m in messages]
try:
    loads(sys.argv[2])
except ScenarioError as error:
    out["problems"] = error.problems
for name, seed, mutant in json.loads(sys.argv[1]):
    r = run(library.get(name), seed, mutant=mutant)
    out[f"{name}/{seed}/{mutant}"] = [r.trace_hash, r.events, r.sim_time_ms, r.faults_fired, r.verdict,
                                      sorted({v.invariant for v in r.violations})]
print(json.dumps(out, sort_keys=True))
"""


def _runs(env: dict[str, str], cwd: Path) -> dict[str, list[object]]:
    done = subprocess.run([sys.executable, "-c", _SCRIPT, json.dumps(CASES), BROKEN], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _compiled_site(tmp_path: Path) -> Path:
    wheels = tmp_path / "wheels"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--quiet", "-w", str(wheels),
         str(ROOT)],
        env={**os.environ, "SHARESIM_COMPILE": "1"}, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (wheel,) = wheels.glob("sharesim-*.whl")
    assert not wheel.name.endswith("-none-any.whl"), wheel.name  # a platform wheel: it holds extensions
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def test_the_compiled_build_runs_the_same_runs(tmp_path: Path) -> None:
    site = _compiled_site(tmp_path)
    # The wheel's directory before the test venv (whose editable finder comes after the path), and not
    # the checkout: PYTHONSAFEPATH keeps the working directory off sys.path.
    compiled = _runs({**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}, tmp_path)
    interpreted = _runs({**os.environ, "PYTHONSAFEPATH": "1"}, ROOT)

    assert (compiled.pop("build"), interpreted.pop("build")) == ("compiled", "interpreted")
    compiled_modules = compiled.pop("modules")
    interpreted_modules = interpreted.pop("modules")
    assert all(str(path).startswith(str(site)) and str(path).endswith(".so") for path in compiled_modules), \
        compiled_modules
    assert all(str(path).endswith(".py") for path in interpreted_modules), interpreted_modules
    assert compiled == interpreted
    assert compiled["unpickled"] == library.names()
    assert all(equal and same_hash for _, equal, same_hash in compiled["messages"])  # compiled classes pickle too
    assert len(compiled["problems"]) > 5
    assert compiled["small/0/spso-before-durable"][4] == "violated"  # the mutant's hook runs compiled
    assert compiled["broker_crash/5/None"][3] == {"broker_crash": 1}
