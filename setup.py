"""The build: pure Python by default; ``SHARESIM_COMPILE=1`` compiles the simulator with mypyc.

Everything else (metadata, dependencies, packages) is in ``pyproject.toml``. The compiled build
runs the same code about twice as fast and gives the same trace hashes (``tests/test_setup.py``
checks both); the README's "The compiled build" says how to use it. It needs a C compiler, the
Python headers and mypy in the build environment, hence ``pip install --no-build-isolation``
(``noxfile.py``: ``compiled``).

Compiled: the pure core (``model/core``), the simulation (``model/sim``) and the invariant monitors
(``invariants``): the code a run spends its time in. Interpreted: the fan-out of the monitors
(``invariants/fan_out.py`` sets methods per instance, which a native class cannot), the CLIs, the
mutant switch (``model/mutants.py``, module state set from outside), scenarios, reports and campaigns.
Classes that must stay Python classes inside compiled modules say so with ``mypyc_attr``.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

_INTERPRETED = {"invariants/fan_out.py", "invariants/cli.py"}


def _compiled_modules() -> list[str]:
    root = Path(__file__).parent
    paths = [*root.glob("model/core/**/*.py"), *root.glob("model/sim/*.py"), *root.glob("invariants/*.py")]
    modules = sorted(str(p.relative_to(root)) for p in paths)
    return [module for module in modules if module not in _INTERPRETED]


def _ext_modules() -> list[object]:
    if os.environ.get("SHARESIM_COMPILE") != "1":
        return []
    from mypyc.build import mypycify

    # multi_file: a C file per module rather than one big one; gcc takes half the time, runs are as fast.
    return list(mypycify(_compiled_modules(), opt_level="3", multi_file=True))


setup(ext_modules=_ext_modules())
