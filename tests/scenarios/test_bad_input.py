"""Every bad input, to every command: exit 2, one ``error:`` line naming the option or key and the value,
no traceback, nothing written or deleted (scenarios/exits.py, scenarios/entry.py).

One table drives the test. Most cases go through click's CliRunner (the group's ``main`` is the
same guarded entry as the console script); the cases marked ``real`` run the installed console
script (or ``python -m scenarios.campaign_main``) in a subprocess, so the entry itself is attacked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from scenarios.cli import main

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # {tmp} is the test's directory
    names: tuple[str, ...]  # what the error line must name: the option or key, the value
    real: bool = False  # through the console script in a subprocess
    max_seconds: float | None = None  # the failure must come this fast (a bounded wait)


CASES = (
    Case("binary scenario file", ("run", "{tmp}/binary.toml"), ("binary.toml", "not UTF-8", "0x89"), real=True),
    Case("non-UTF-8 scenario file", ("run", "{tmp}/latin1.toml"), ("latin1.toml", "not UTF-8", "0xe9")),
    Case("non-UTF-8 file to campaign", ("campaign", "{tmp}/latin1.toml", "--runs", "3", "--out", "{tmp}/new"),
         ("latin1.toml", "not UTF-8")),
    Case("non-UTF-8 file to describe", ("describe", "{tmp}/latin1.toml"), ("latin1.toml", "not UTF-8")),
    Case("non-UTF-8 file in check --scenarios", ("check", "--scenarios", "small,{tmp}/latin1.toml"),
         ("--scenarios", "latin1.toml", "not UTF-8")),
    Case("not TOML", ("run", "{tmp}/notes.toml"), ("notes.toml", "not valid TOML")),
    Case("missing scenario file", ("run", "{tmp}/missing.toml"), ("missing.toml", "no such scenario file")),
    Case("scenario file is a directory", ("run", "{tmp}/dir.toml"), ("dir.toml", "no such scenario file")),
    Case("unknown scenario", ("run", "nosuch"), ("unknown scenario 'nosuch'", "known: ")),
    Case("unknown scenario to sweep", ("sweep", "nosuch", "--param", "consumers.0.count=1", "--out", "{tmp}/new"),
         ("unknown scenario 'nosuch'",)),
    Case("negative seed", ("run", "small", "--seed", "-1"), ("--seed", "-1")),
    Case("seed not an integer", ("run", "small", "--seed", "x"), ("--seed", "'x'")),
    Case("seed beyond int64", ("run", "small", "--seed", str(2**63)), ("--seed", str(2**63))),
    Case("unknown mutant", ("run", "small", "--mutant", "nope"), ("--mutant", "'nope'", "known: ")),
    Case("unknown option", ("run", "small", "--bogus"), ("--bogus",)),
    Case("run without a scenario", ("run",), ("Missing argument 'SCENARIO'",)),
    Case("trace under a regular file", ("run", "small", "--trace", "{tmp}/afile/trace.ndjson"),
         ("--trace", "afile/trace.ndjson", "not writable (Not a directory)")),
    Case("trace into a missing directory", ("run", "small", "--trace", "{tmp}/nodir/trace.ndjson"),
         ("--trace", "nodir/trace.ndjson", "not writable (No such file or directory)")),
    Case("trace is a directory", ("run", "small", "--trace", "{tmp}/dir.toml"), ("--trace", "dir.toml")),
    Case("check --seeds 0", ("check", "--seeds", "0"), ("--seeds", "0")),
    Case("check --seeds x", ("check", "--seeds", "x"), ("--seeds", "'x'")),
    Case("check unknown scenario", ("check", "--scenarios", "nope"), ("--scenarios", "unknown scenario 'nope'")),
    Case("check no scenario", ("check", "--scenarios", ","), ("--scenarios", "','", "name at least one")),
    Case("check unknown mutant", ("check", "--mutant", "nope"), ("--mutant", "'nope'")),
    Case("campaign --runs 0", ("campaign", "small", "--runs", "0", "--out", "{tmp}/new"), ("--runs", "0")),
    Case("campaign --runs x", ("campaign", "small", "--runs", "x", "--out", "{tmp}/new"), ("--runs", "'x'")),
    Case("campaign without --runs", ("campaign", "small", "--out", "{tmp}/new"), ("--runs",)),
    Case("campaign --partitions 0", ("campaign", "small", "--runs", "3", "--partitions", "0", "--out", "{tmp}/new"),
         ("--partitions", "0")),
    Case("campaign --batch-runs 0", ("campaign", "small", "--runs", "3", "--batch-runs", "0", "--out", "{tmp}/new"),
         ("--batch-runs", "0")),
    Case("campaign --campaign-seed -1",
         ("campaign", "small", "--runs", "3", "--campaign-seed", "-1", "--out", "{tmp}/new"),
         ("--campaign-seed", "-1")),
    Case("campaign unknown mutant", ("campaign", "small", "--runs", "3", "--mutant", "nope", "--out", "{tmp}/new"),
         ("--mutant", "'nope'")),
    Case("campaign --master of no known scheme",
         ("campaign", "small", "--runs", "3", "--master", "bogus://x", "--out", "{tmp}/new"),
         ("--master bogus://x", "not a Spark master URL", "local[N]", "spark://HOST:PORT", "yarn", "k8s://"),
         real=True, max_seconds=15),
    Case("campaign --master local[0]",
         ("campaign", "small", "--runs", "3", "--master", "local[0]", "--out", "{tmp}/new"),
         ("--master local[0]", "not a Spark master URL", "N, C, M, F >= 1")),
    Case("campaign --master local[x]", ("campaign", "small", "--runs", "3", "--master", "local[x]", "--out",
                                        "{tmp}/new"), ("--master local[x]", "not a Spark master URL")),
    Case("campaign --master on an unknown host",
         ("campaign", "small", "--runs", "3", "--master", "spark://nosuchhost:7077", "--out", "{tmp}/new"),
         ("--master spark://nosuchhost:7077", "not reachable", "nosuchhost"), real=True, max_seconds=15),
    Case("campaign --master where nothing listens",
         ("campaign", "small", "--runs", "3", "--master", "spark://127.0.0.1:9", "--out", "{tmp}/new"),
         ("--master spark://127.0.0.1:9", "not reachable", "127.0.0.1:9"), max_seconds=10),
    Case("campaign_main --master of no known scheme",
         ("campaign_main", "small", "--runs", "3", "--master", "bogus://x", "--out", "{tmp}/new"),
         ("--master bogus://x", "not a Spark master URL"), real=True, max_seconds=15),
    Case("demo --runs 0", ("demo", "--runs", "0", "--out", "{tmp}/new"), ("--runs", "0")),
    Case("sweep bad --param", ("sweep", "small", "--param", "nosuch=1", "--out", "{tmp}/new"), ("nosuch",)),
    Case("sweep --param without values", ("sweep", "small", "--param", "consumers.0.count", "--out", "{tmp}/new"),
         ("consumers.0.count",)),
    Case("sweep --seeds 0", ("sweep", "small", "--param", "consumers.0.count=1", "--seeds", "0", "--out",
                             "{tmp}/new"), ("--seeds", "0")),
    Case("sweep --master without --spark", ("sweep", "small", "--param", "consumers.0.count=1", "--master",
                                            "local[2]", "--out", "{tmp}/new"), ("--master local[2]", "--spark")),
    Case("sweep --spark --master bogus", ("sweep", "small", "--param", "consumers.0.count=1", "--spark",
                                          "--master", "bogus://x", "--out", "{tmp}/new"), ("--master bogus://x",)),
    Case("shrink unknown invariant", ("shrink", "small", "--invariant", "nope"), ("--invariant", "'nope'")),
    Case("shrink --max-runs 1", ("shrink", "small", "--max-runs", "1"), ("--max-runs", "1")),
    Case("shrink unknown mutant", ("shrink", "small", "--mutant", "nope"), ("--mutant", "'nope'")),
    Case("report of a missing directory", ("report", "{tmp}/nodir"), ("nodir", "no such directory"), real=True),
    Case("report of a directory of no kind", ("report", "{tmp}/empty"), ("empty", "neither result.json")),
    Case("report --metric of a run", ("report", "{tmp}/a_run", "--metric", "nosuch"), ("--metric nosuch", "run")),
    Case("describe unknown scenario", ("describe", "nosuch"), ("unknown scenario 'nosuch'",)),
    Case("unknown command", ("nosuch",), ("nosuch",)),
)


def _inputs(tmp: Path) -> None:
    (tmp / "binary.toml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp / "latin1.toml").write_bytes('name = "café"\n'.encode("latin-1"))
    (tmp / "notes.toml").write_text("these are notes, not a scenario\n")
    (tmp / "dir.toml").mkdir()
    (tmp / "afile").write_text("a regular file\n")
    (tmp / "empty").mkdir()
    (tmp / "a_run").mkdir()
    (tmp / "a_run" / "result.json").write_text('{"kind": "run", "verdict": "ok"}\n')


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _real(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """The installed console script (or the spark-submit entry), on this checkout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SHARESIM_DEBUG", None)
    if args[0] == "campaign_main":
        command = [sys.executable, "-m", "scenarios.campaign_main", *args[1:]]
    else:
        command = [str(Path(sys.executable).with_name("sharesim")), *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_error_line_exit_2_and_changes_nothing(case: Case, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _inputs(tmp_path)
    monkeypatch.chdir(tmp_path)  # shrink and others write beside the cwd by default: it is watched too
    monkeypatch.delenv("SHARESIM_DEBUG", raising=False)
    before = _snapshot(tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in case.args]
    started = time.monotonic()
    if case.real:
        code, stdout, stderr = _real(args, tmp_path)
    else:
        result = CliRunner().invoke(main, args)
        code, stdout, stderr = result.exit_code, result.stdout, result.stderr
    elapsed = time.monotonic() - started
    assert code == 2, (stdout, stderr)
    lines = stderr.splitlines()
    # One error line; a scenario with several problems lists them below it, indented.
    assert lines and lines[0].startswith("error: "), stderr
    assert all(line.startswith("  ") for line in lines[1:]), stderr
    assert stdout == "", stdout
    for name in case.names:
        assert name in stderr, (name, stderr)
    assert "Traceback" not in stdout + stderr
    assert _snapshot(tmp_path) == before
    if case.max_seconds is not None:
        assert elapsed < case.max_seconds, f"took {elapsed:.1f} s"
