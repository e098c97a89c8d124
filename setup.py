"""The build: the simulator compiled with mypyc wherever a C compiler and the Python headers are, the same
modules interpreted where they are not.

Everything else (metadata, dependencies, packages) is in ``pyproject.toml``, whose ``[build-system]``
brings mypy (mypyc) and SimPy (whose types mypyc compiles against) into pip's isolated build
environment, so a plain ``pip install .`` or ``pip wheel .`` compiles. The compiled build runs the same
code about twice as fast and gives the same trace hashes (``tests/test_setup.py`` checks both).

``SHARESIM_COMPILE`` chooses:

- unset (or ``auto``): compiled when this machine can build a C extension: a tiny one is compiled and
  linked first, with the compiler setuptools would use, so a missing compiler or missing headers are
  named before mypyc's minutes of work. Otherwise, or if the mypyc build itself fails, the interpreted
  modules, said in one line on stderr (``sharesim: no C compiler (gcc not found): ...``; pip shows a
  build's output with ``-v``);
- ``0``: interpreted;
- ``1``: compiled, or the build fails.

A wheel built interpreted says why in ``model/interpreted.txt`` (``model.build_description()``, printed by
``sharesim --version``); it is a pure wheel (``py3-none-any``). An editable install (``pip install -e .``)
and ``build_ext --inplace`` are always interpreted: an extension in the source tree would be imported
instead of the ``.py`` beside it, and run stale code once that is edited.

Compiled: the pure core (``model/core``), the simulation (``model/sim``) and the invariant monitors
(``invariants``, with the fan-out to them): the code a run spends its time in. Interpreted: the CLIs, the
mutant switch (``model/mutants.py``, module state set from outside), scenarios, reports and campaigns.
Classes that must stay Python classes inside compiled modules say so with ``mypyc_attr``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_ext import build_ext

MODE_ENV = "SHARESIM_COMPILE"
_MODES = {"": "auto", "auto": "auto", "0": "off", "1": "on"}
NOTE = "model/interpreted.txt"  # in an interpreted wheel: why it is not compiled
_INTERPRETED = {"invariants/cli.py"}
# Declared so that build_ext runs (it decides, when it runs, what to compile); never built itself.
_PLACEHOLDER = Extension("model._compiled", sources=[])


def _mode() -> str:
    value = os.environ.get(MODE_ENV, "").strip().lower()
    if value not in _MODES:
        sys.exit(f"error: {MODE_ENV}={value!r}: not one of 0 (interpreted), 1 (compiled, or the build fails), "
                 "auto or unset (compiled where a C compiler is, else interpreted)")
    return _MODES[value]


def _compiled_modules() -> list[str]:
    root = Path(__file__).parent
    paths = [*root.glob("model/core/**/*.py"), *root.glob("model/sim/*.py"), *root.glob("invariants/*.py")]
    modules = sorted(str(p.relative_to(root)) for p in paths)
    return [module for module in modules if module not in _INTERPRETED]


def _say(line: str) -> None:
    print(f"sharesim: {line}", file=sys.stderr, flush=True)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _cannot_build_extensions(command: build_ext) -> str | None:
    """Why ``command`` could not build a C extension here, or None: the compiler it would use
    (``CC`` and sysconfig, as setuptools reads them) must exist, the Python headers too, and a tiny
    extension must compile and link."""
    from distutils.ccompiler import new_compiler
    from distutils.errors import CCompilerError, DistutilsError
    from distutils.sysconfig import customize_compiler

    compiler = new_compiler(compiler=command.compiler, force=True)
    customize_compiler(compiler)
    program = getattr(compiler, "compiler_so", None)  # unix compilers; MSVC says what it misses when it fails
    if program and shutil.which(program[0]) is None:
        return f"no C compiler ({program[0]} not found)"
    include_dirs = [str(d) for d in command.include_dirs or []]
    if not any(Path(d, "Python.h").is_file() for d in include_dirs):
        return f"no Python headers (Python.h is not in {', '.join(include_dirs) or 'any include directory'})"
    probe = Path(command.build_temp, "sharesim-probe")
    probe.mkdir(parents=True, exist_ok=True)
    source = probe / "probe.c"
    source.write_text("#include <Python.h>\nPyMODINIT_FUNC PyInit_probe(void) { return NULL; }\n")
    try:
        objects = compiler.compile([str(source)], output_dir=str(probe), include_dirs=include_dirs)
        compiler.link_shared_object(objects, str(probe / "probe.so"))
    except (CCompilerError, DistutilsError, OSError) as error:
        return f"the C compiler cannot build a test extension ({_first_line(error)})"
    return None


class BuildExt(build_ext):
    """Compiles the simulator with mypyc, or leaves it interpreted and says why (the module docstring)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.inplace:  # an editable install sets it too (editable_mode)
            self.extensions: list[Extension] = []

    def run(self) -> None:
        if self.inplace:
            _say("an editable install (or build_ext --inplace) stays interpreted: a module compiled into the "
                 "source tree would run stale code once its .py is edited")
            return
        if self.distribution.ext_modules != [_PLACEHOLDER]:  # decided earlier in this process: bdist_wheel's
            super().run()  # install step runs build_ext again, which finds the extensions (if any) up to date
            return
        mode = _mode()
        reason = f"{MODE_ENV}=0" if mode == "off" else _cannot_build_extensions(self)
        if reason is not None and mode == "on":
            sys.exit(f"error: {MODE_ENV}=1 and {reason}")
        if reason is None:
            try:
                self._compile()
            except (Exception, SystemExit) as error:  # mypyc reports its own failures with sys.exit
                if mode == "on":
                    raise
                reason = f"the mypyc build failed ({_first_line(error)})"
        if reason is None:
            self._keep_only(self.get_outputs())
            Path(self.build_lib, NOTE).unlink(missing_ok=True)
        else:
            _say(f"{reason}: building the interpreted modules, about 2x slower ({MODE_ENV}=1 makes this an error)")
            self.extensions = self.distribution.ext_modules = []
            self._keep_only([])  # nothing half-built, nor left by an earlier build in this build directory
            Path(self.build_lib, NOTE).parent.mkdir(parents=True, exist_ok=True)
            Path(self.build_lib, NOTE).write_text(reason + "\n")

    def _compile(self) -> None:
        from mypyc.build import mypycify

        _say(f"compiling the simulator with mypyc (minutes; {MODE_ENV}=0 skips it)")
        # multi_file: a C file per module rather than one big one; gcc takes half the time, runs are as fast.
        self.distribution.ext_modules = list(mypycify(
            _compiled_modules(), opt_level="3", multi_file=True, target_dir=os.path.join(self.build_temp, "mypyc")))
        # This command again, finalized for the extensions it builds now (setuptools prepares each one then).
        self.reinitialize_command("build_ext")
        self.ensure_finalized()
        super().run()

    def _keep_only(self, outputs: list[str]) -> None:
        """Removes every extension module under the build directory but ``outputs``: one an earlier build
        left there would go into this wheel."""
        keep = {Path(path).resolve() for path in outputs}
        for pattern in ("*.so", "*.pyd"):
            for path in Path(self.build_lib).rglob(pattern):
                if path.resolve() not in keep:
                    path.unlink()


class BdistWheel(bdist_wheel):
    """A pure wheel (``py3-none-any``) when nothing was compiled: it runs on any platform, as it should."""

    def run(self) -> None:
        if not self.skip_build:
            self.run_command("build")  # BuildExt decides; running it again below does nothing
        self.root_is_pure = not self.distribution.ext_modules
        super().run()


_mode()  # a bad value is refused before any work
setup(ext_modules=[_PLACEHOLDER], cmdclass={"build_ext": BuildExt, "bdist_wheel": BdistWheel})
