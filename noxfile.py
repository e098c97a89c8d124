"""Sessions a developer or CI runs: tests, lint, typecheck, tla, demo, bench."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"


def _install(session: nox.Session, *extras: str) -> None:
    spec = f".[{','.join(extras)}]" if extras else "."
    session.install("-e", spec)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (unit, golden, property, simulation, CLI, Spark, TLC)."""
    _install(session, "test")
    session.run("pytest", "-n", "2", "--dist", "loadgroup", *session.posargs)


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
    """The main job: the KIP-932 worked example, then a fault campaign of 400 swarm_small runs on local
    Spark (needs Java 17); ends with the path of the campaign report (out/demo-campaign/report.html)."""
    _install(session)
    session.run("sharesim", "demo", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks of the hot paths; prints figures for the README."""
    _install(session)
    session.run("python", "-m", "bench", *session.posargs)


@nox.session
def mutants(session: nox.Session) -> None:
    """Runs to first detection of every mutant (the README "Mutants" table)."""
    _install(session)
    session.run("python", "-m", "bench", "mutants", *session.posargs)


@nox.session
def tla(session: nox.Session) -> None:
    """Every TLC configuration, small and nightly (tla/README.md)."""
    _install(session, "test")
    session.run("python", "-m", "tla.run", "--all", *session.posargs)
