"""Sessions a developer or CI runs: tests, lint, typecheck, tla, demo, bench, compiled, docs."""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"


def _install(session: nox.Session, *extras: str) -> None:
    """Editable: always interpreted (setup.py never compiles into the source tree), so an edit always runs."""
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


_COMPILED_ENV = {"PYTHONSAFEPATH": "1"}  # no checkout first on sys.path, so `model` is the installed one


def _install_compiled(session: nox.Session, *, required: bool = True) -> None:
    """The package as ``pip install .`` builds it, compiled by mypyc where a C compiler is (setup.py);
    ``required``: or fail (``SHARESIM_COMPILE=1``), else as ``SHARESIM_COMPILE`` says. Installed, never
    in place (a stale extension would shadow an edited source file); pip keeps the build directory
    (``build/``), so an unchanged checkout reinstalls without compiling again. The checkout is put on
    sys.path after site-packages, for bench/ and tests/, and PYTHONSAFEPATH keeps the working directory
    off it."""
    session.install(".", env={"SHARESIM_COMPILE": "1"} if required else {})
    site = session.run("python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", silent=True)
    if isinstance(site, str):
        Path(site.strip(), "sharesim-checkout.pth").write_text(f"{Path.cwd()}\n")
    session.run("sharesim", "--version", env=_COMPILED_ENV)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (unit, golden, property, simulation, CLI, Spark, TLC)."""
    _install(session, "test")
    # --durations: the slowest tests, to keep CI under its 30 minutes.
    session.run("pytest", "-n", "2", "--dist", "loadgroup", "--durations=30", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    _install(session, "lint")
    session.run("ruff", "check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    _install(session, "lint")
    session.run("mypy")


@nox.session
def demo(session: nox.Session) -> None:
    """The main job: the KIP-932 worked example, then a fault campaign of 1000 swarm runs on local
    Spark (needs Java 17); ends with the path of the campaign report (out/demo-campaign/report.html).
    On the compiled build where a C compiler is (the first install takes a few minutes), else interpreted."""
    _install_compiled(session, required=False)
    session.run("sharesim", "demo", *session.posargs, env=_COMPILED_ENV)


@nox.session
@nox.parametrize("build", ["interpreted", "compiled"])
def bench(session: nox.Session, build: str) -> None:
    """Benchmarks of the hot paths, on the interpreted build and then on the compiled one (setup.py);
    prints figures for docs/explanation/benchmarks.md."""
    if build == "interpreted":
        _install(session)
    else:
        _install_compiled(session)
    session.run("python", "-m", "bench", *session.posargs, env=_COMPILED_ENV if build == "compiled" else {})


@nox.session
def compiled(session: nox.Session) -> None:
    """Any ``sharesim`` command on the compiled build, about twice as fast (setup.py), e.g.
    ``./dev compiled campaign swarm --runs 100000 --out out/big``; needs a C compiler."""
    _install_compiled(session)
    session.run("sharesim", *(session.posargs or ["--help"]), env=_COMPILED_ENV)


@nox.session
def mutants(session: nox.Session) -> None:
    """Runs to first detection of every mutant (docs/explanation/mutant-detection.md)."""
    _install(session)
    session.run("python", "-m", "bench", "mutants", *session.posargs)


@nox.session
def tla(session: nox.Session) -> None:
    """Every TLC configuration, small and nightly (tla/README.md)."""
    _install(session, "test")
    session.run("python", "-m", "tla.run", "--all", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml): checks that the generated pages are current
    (``python -m docs.gen`` refreshes them), builds with warnings as errors into out/site/ and prints
    where to open it."""
    _install(session, "docs")
    session.run("python", "-m", "docs.gen", "--check")
    session.run("mkdocs", "build", "--strict", *session.posargs)
    session.log(f"open {Path.cwd() / 'out' / 'site' / 'index.html'}")
