"""The build (``setup.py``): compiled by mypyc where a C compiler is, interpreted where it is not, and
says which.

The compiled build: a run on it is the same run as on the interpreted code: the same trace hash,
events, faults and verdict, for faulted scenarios, swarm plans and a mutant; the scenarios a campaign
pickles for its workers unpickle; a bad scenario file gets the same problems. It also checks that the
modules really are the compiled ones, so the comparison cannot pass by running the interpreted code twice.

The fallback: without a C compiler (``CC`` names none; setuptools takes its compiler from ``CC``) the
wheel is a pure one, says why in one line and in ``sharesim --version``; ``SHARESIM_COMPILE`` forces
either build; an editable install never puts an extension into the source tree.

The wheels are built as ``pip wheel .`` builds them (``tests/wheels.py``); the compiled one once a
test run (``compiled_wheel``, a few minutes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scenarios import library
from tests.scenarios.test_toml_format import BROKEN
from tests.wheels import EXTENSIONS, ROOT, Built, build_wheel

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
       "build": model.build(), "description": model.build_description()}
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


def _installed(site: Path) -> dict[str, str]:
    """The environment of a process that imports sharesim from ``site`` (an unpacked wheel) before the test
    venv (whose editable finder comes after the path), and not from the checkout: PYTHONSAFEPATH keeps the
    working directory off sys.path."""
    return {**os.environ, "PYTHONPATH": str(site), "PYTHONSAFEPATH": "1"}


def _version(site: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "scenarios.cli", "--version"], cwd=site.parent, env=_installed(site),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_the_compiled_build_runs_the_same_runs(compiled_wheel: Built, tmp_path: Path) -> None:
    assert compiled_wheel.wheel is not None and not compiled_wheel.wheel.name.endswith("-none-any.whl")
    assert compiled_wheel.lines() == ["sharesim: compiling the simulator with mypyc (minutes; SHARESIM_COMPILE=0 "
                                      "skips it)"]
    assert "model/interpreted.txt" not in compiled_wheel.names()
    site = compiled_wheel.unpacked(tmp_path / "site")
    compiled = _runs(_installed(site), tmp_path)
    interpreted = _runs({**os.environ, "PYTHONSAFEPATH": "1"}, ROOT)

    assert (compiled.pop("build"), interpreted.pop("build")) == ("compiled", "interpreted")
    assert (compiled.pop("description"), interpreted.pop("description")) == (
        "compiled build", "interpreted build, about 2x slower: run from the sources (an editable install or a "
                          "checkout), which are never compiled")
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
    assert _version(site) == "sharesim 0.1.0 (compiled build)"


def test_the_compiled_wheel_on_sys_path_as_a_zip_runs_interpreted_and_says_why(compiled_wheel: Built) -> None:
    """What ``spark-submit --py-files`` does with it (docs/how-to/run-a-campaign.md): zipimport loads the
    ``.py`` files the wheel holds beside its extension modules, which it cannot load."""
    assert compiled_wheel.wheel is not None
    assert _version(compiled_wheel.wheel) == ("sharesim 0.1.0 (interpreted build, about 2x slower: imported from a "
                                              "zip (--py-files), from which extension modules cannot load)")


def _interpreted(built: Built, tmp_path: Path, reason: str) -> None:
    """``built`` is a pure wheel without an extension module, whose package says ``reason``."""
    assert built.returncode == 0 and built.wheel is not None, built.output[-3000:]
    assert built.wheel.name.endswith("-py3-none-any.whl"), built.wheel.name
    assert built.extensions() == []
    site = built.unpacked(tmp_path / "site")
    assert (site / "model" / "interpreted.txt").read_text() == reason + "\n"
    assert _version(site) == f"sharesim 0.1.0 (interpreted build, about 2x slower: {reason})"


def test_without_a_c_compiler_the_wheel_is_interpreted_and_says_why(compiled_wheel: Built, tmp_path: Path) -> None:
    """Built after the compiled wheel, in the same build directory: none of its extension modules may
    come along."""
    built = build_wheel(tmp_path / "wheels", CC="/nonexistent/cc")
    assert built.lines() == ["sharesim: no C compiler (/nonexistent/cc not found): building the interpreted modules, "
                             "about 2x slower (SHARESIM_COMPILE=1 makes this an error)"]
    _interpreted(built, tmp_path, "no C compiler (/nonexistent/cc not found)")


def test_compile_0_builds_the_interpreted_wheel_where_a_compiler_is(tmp_path: Path) -> None:
    built = build_wheel(tmp_path / "wheels", SHARESIM_COMPILE="0")
    _interpreted(built, tmp_path, "SHARESIM_COMPILE=0")
    assert built.lines() == ["sharesim: SHARESIM_COMPILE=0: building the interpreted modules, about 2x slower "
                             "(SHARESIM_COMPILE=1 makes this an error)"]


def test_compile_1_makes_a_missing_compiler_an_error(tmp_path: Path) -> None:
    built = build_wheel(tmp_path / "wheels", CC="/nonexistent/cc", SHARESIM_COMPILE="1")
    assert built.returncode != 0 and built.wheel is None
    assert "error: SHARESIM_COMPILE=1 and no C compiler (/nonexistent/cc not found)" in built.output, \
        built.output[-3000:]


def test_a_bad_compile_setting_is_one_line(tmp_path: Path) -> None:
    built = build_wheel(tmp_path / "wheels", SHARESIM_COMPILE="yes")
    assert built.returncode != 0 and built.wheel is None
    assert "error: SHARESIM_COMPILE='yes': not one of 0 (interpreted), 1 (compiled, or the build fails), auto or " \
           "unset (compiled where a C compiler is, else interpreted)" in built.output, built.output[-3000:]
    assert "Traceback" not in built.output


def _source_copy(where: Path) -> Path:
    """What setup.py builds from, copied: a failure must not leave an extension in the checkout."""
    where.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, where / name)
    for package in ("model", "invariants", "scenarios", "reports"):
        shutil.copytree(ROOT / package, where / package, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def _extensions_under(where: Path) -> list[Path]:
    return [path for path in where.rglob("*") if path.name.endswith(EXTENSIONS)]


def test_an_editable_install_never_compiles_into_the_source_tree(tmp_path: Path) -> None:
    """A C compiler is here and SHARESIM_COMPILE is unset: a wheel would be compiled; the editable one
    (PEP 660, what ``pip install -e .`` builds) and ``build_ext --inplace`` stay interpreted."""
    source = _source_copy(tmp_path / "source")
    env = {key: value for key, value in os.environ.items() if key != "SHARESIM_COMPILE"}
    editable = subprocess.run(
        [sys.executable, "-c", "import sys; from setuptools import build_meta; "
                               "print(build_meta.build_editable(sys.argv[1]))", str(tmp_path / "editable")],
        cwd=source, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert editable.returncode == 0, editable.stderr[-3000:]
    assert "sharesim: an editable install (or build_ext --inplace) stays interpreted" in editable.stderr
    wheel = Built(0, "", tmp_path / "editable" / editable.stdout.strip().splitlines()[-1])
    assert wheel.extensions() == []
    inplace = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=source, env=env,
                             capture_output=True, text=True, timeout=600, check=False)
    assert inplace.returncode == 0, inplace.stderr[-3000:]
    assert "stays interpreted" in inplace.stderr
    assert _extensions_under(source) == []


@pytest.mark.spark
def test_a_local_campaign_started_in_the_checkout_runs_the_installed_compiled_build(compiled_wheel: Built,
                                                                                   tmp_path: Path) -> None:
    """A campaign's Python workers start in the driver's working directory (local mode), and as
    ``python -m pyspark.daemon``, which puts it first on their path: in a checkout its ``model/`` would
    shadow the installed compiled one. The session keeps it off (``PYTHONSAFEPATH``). The driver here
    imports only the wheel (a script's own directory, not the working one, starts its path)."""
    site = compiled_wheel.unpacked(tmp_path / "site")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONSAFEPATH"}
    done = subprocess.run(
        [sys.executable, str(site / "scenarios" / "campaign_main.py"), "small", "--runs", "4", "--master", "local[1]",
         "--out", str(tmp_path / "campaign")],
        cwd=ROOT, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((tmp_path / "campaign" / "summary.json").read_text())
    assert data["runs"] == 4 and data["build"] == "compiled", data["attempts"]
