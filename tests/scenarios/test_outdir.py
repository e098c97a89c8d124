"""One writer per directory, and no command deletes or overwrites what it did not create (scenarios/outdir.py).

Each test attacks the guarantee: a real second process holds the lock, a holder is SIGKILLed, processes
race for the lock, and every refusal is checked to leave the tree exactly as it was (a snapshot before and
after) and, for campaign and demo, to come before Spark starts. Only the last two tests start Spark.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from scenarios import outdir
from scenarios.cli import main

REPO = Path(__file__).resolve().parents[2]
NOTES = b"my notes\n\x00\xff binary too\n"
SWEEP = ("sweep", "small", "--param", "consumers.0.count=1", "--seeds", "1")
SHRINK = ("shrink", "swarm", "--seed", "204", "--mutant", "no-limit-on-lock-timeout", "--max-runs", "2")


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a directory)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def refused(result: Result, *needles: str) -> str:
    """The one error line of a command refused with exit 2 (no traceback), which holds every needle."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def manifest(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / outdir.MANIFEST).read_text())
    return data


def listed(out: Path) -> list[str]:
    return sorted(e for writer in manifest(out)["writers"].values() for e in writer["entries"])


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Spark must not start: any start is recorded and stops the command."""
    import scenarios.campaign.session as session

    started: list[str] = []

    def start(*args: object, **kwargs: object) -> None:
        started.append("spark")
        raise AssertionError("Spark started")

    monkeypatch.setattr(session, "spark_session", start)
    return started


@pytest.fixture
def fake_campaign(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """A campaign that writes a campaign's files, then is interrupted (exit 130): the rule is the point."""
    import scenarios.campaign.cli as campaign_cli
    import scenarios.campaign.session as session

    class FakeSpark:
        class sparkContext:  # pyspark's name
            @staticmethod
            def cancelAllJobs() -> None:
                pass

    written: list[Path] = []

    def run_campaign(_spark: object, _workload: object, out: Path, **_: object) -> None:
        (out / "campaign.json").write_text('{"fake": true}\n')
        (out / "runs").mkdir()
        (out / "runs" / "part-0.parquet").write_bytes(b"rows")
        (out / "report.html").write_text("<html>fake</html>")
        written.append(out)
        raise KeyboardInterrupt

    monkeypatch.setattr(session, "spark_session", lambda *a, **k: FakeSpark())
    monkeypatch.setattr(campaign_cli, "run_campaign", run_campaign)
    monkeypatch.setattr(campaign_cli, "open_campaign", lambda *a, **k: {})  # the identity is not the point here
    return written


# -- the lock ------------------------------------------------------------------------------------------

HOLDER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from scenarios import outdir

    out = Path(sys.argv[1])
    with outdir.claim(out, sys.argv[2]):
        (out / "result.json").write_text("the holder's result")
        print("held", flush=True)
        sys.stdin.read()  # until the test closes stdin
""")


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Callable[[Path, str], subprocess.Popen[str]]]:
    """Start a process that claims a directory and holds it until its stdin closes."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    started: list[subprocess.Popen[str]] = []

    def start(out: Path, kind: str = "run") -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        process = subprocess.Popen([sys.executable, str(script), str(out), kind], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, env=env)
        started.append(process)
        assert process.stdout is not None and process.stdout.readline() == "held\n"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_second_writer_is_refused_at_once_naming_the_holder(tmp_path: Path, holder: Any) -> None:
    out = tmp_path / "D"
    first = holder(out)
    before = snapshot(tmp_path)
    line = refused(invoke("run", "small", "--out", str(out), "--force"),
                   f"--out {out} is in use by pid {first.pid} on host {socket.gethostname()}: holder.py {out} run "
                   "(since ", "); wait for it to finish or stop it")
    assert line.count("\n") == 0
    refused(invoke(*SWEEP, "--out", str(out), "--force"), f"is in use by pid {first.pid}")
    assert snapshot(tmp_path) == before  # the holder's output and its lock untouched
    first.communicate("")
    assert first.returncode == 0
    assert (out / "result.json").read_text() == "the holder's result"
    assert not (out / outdir.LOCK).exists() and listed(out) == ["result.json"]


def test_a_lock_naming_a_dead_process_is_taken_over_with_a_note(tmp_path: Path) -> None:
    out = tmp_path / "D"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    record = {"pid": dead.pid, "host": socket.gethostname(), "command": "sharesim run gone --out D",
              "since": "2026-01-02T03:04:05+00:00"}
    (out / outdir.LOCK).write_text(json.dumps(record))
    result = invoke("run", "small", "--seed", "1", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (f"note: --out {out}: taking over the lock of pid {dead.pid} on host {socket.gethostname()}: "
            "sharesim run gone --out D (since 2026-01-02 03:04:05): it is no longer running") in result.stderr
    assert not (out / outdir.LOCK).exists() and (out / "result.json").exists()


def test_the_lock_of_a_sigkilled_holder_is_taken_over(tmp_path: Path, holder: Any) -> None:
    out = tmp_path / "D"
    victim = holder(out)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert (out / outdir.LOCK).exists()  # left behind: the kernel released the flock, not the file
    assert listed(out) == sorted(outdir.KINDS["run"].outputs)  # listed before written: a crash leaves none unlisted
    again = invoke("run", "small", "--seed", "1", "--out", str(out), "--force")
    assert again.exit_code == 0, again.output
    assert f"taking over the lock of pid {victim.pid}" in again.stderr and "it is no longer running" in again.stderr
    assert json.loads((out / "result.json").read_text())["seed"] == 1  # the killed holder's file replaced: its own
    assert listed(out) == ["report.html", "result.json", "timeline.parquet"]


RACER = textwrap.dedent("""\
    import os, sys, time
    from pathlib import Path
    from scenarios import outdir
    from scenarios.exits import BadInput

    out, held = Path(sys.argv[1]), 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            with outdir.claim(out, "run", force=True):
                fd = os.open(out / "alone", os.O_CREAT | os.O_EXCL | os.O_WRONLY)  # fails if another is inside
                os.close(fd)
                time.sleep(0.001)
                os.unlink(out / "alone")
                held += 1
        except BadInput as exc:
            assert "is in use" in str(exc), exc
    print(held)
""")


def test_racing_writers_never_hold_the_directory_together(tmp_path: Path) -> None:
    # The lock file is removed by each holder as it finishes: a newcomer that opened the old file must not
    # lock it beside one that made a new one (the inode check in outdir.lock).
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    racers = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "D")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outputs = [racer.communicate() for racer in racers]
    assert all(racer.returncode == 0 for racer in racers), outputs
    assert sum(int(out) for out, _ in outputs) > 30  # they did take turns


FDS = textwrap.dedent("""\
    import os

    def fds(pid):
        found = []
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                found.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except FileNotFoundError:  # the descriptor listdir itself used
                pass
        return sorted(found)

""")


def test_a_child_process_does_not_inherit_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "D"
    with outdir.claim(out, "run"):
        child = subprocess.run([sys.executable, "-c", FDS + "print(*fds('self'))"], close_fds=False,
                               capture_output=True, text=True, check=True)
    assert str(out / outdir.LOCK) not in child.stdout and child.stdout


# -- the rule: run, sweep, campaign, demo ----------------------------------------------------------------


def other_kinds(tmp_path: Path) -> dict[str, Path]:
    """A directory of each kind, as an older sharesim left it (no manifest): recognised by its marker files."""
    dirs = {"run": ("result.json", "timeline.parquet"), "sweep": ("runs.parquet", "summary.json"),
            "campaign": ("campaign.json", "summary.json")}
    made = {}
    for kind, names in dirs.items():
        made[kind] = tmp_path / f"a-{kind}"
        made[kind].mkdir()
        for name in names:
            (made[kind] / name).write_bytes(f"{kind}'s {name}".encode())
    return made


COMMANDS: dict[str, Callable[[Path], tuple[str, ...]]] = {
    "run": lambda out: ("run", "small", "--seed", "1", "--out", str(out)),
    "sweep": lambda out: (*SWEEP, "--out", str(out)),
    "campaign": lambda out: ("campaign", "small", "--runs", "3", "--out", str(out)),
    "demo": lambda out: ("demo", "--runs", "3", "--out", str(out)),
}
OF_KIND = {"run": "run", "sweep": "sweep", "campaign": "campaign", "demo": "campaign"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_directory_of_another_kind_is_refused_before_any_work(command: str, tmp_path: Path,
                                                                no_spark: list[str]) -> None:
    for kind, directory in other_kinds(tmp_path).items():
        if kind == OF_KIND[command]:
            continue
        before = snapshot(tmp_path)
        # Refused as another kind's output (--force would write beside it), or, where the command writes a
        # name that kind wrote (a campaign's summary.json in a sweep's directory), refused even with --force.
        line = refused(invoke(*COMMANDS[command](directory)), f"--out {directory}", f"`sharesim {kind}`")
        assert f"holds the output of `sharesim {kind}`" in line or "not even with --force" in line
        assert snapshot(tmp_path) == before
    assert no_spark == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_directory_holding_a_users_file_is_refused_without_force(command: str, tmp_path: Path,
                                                                   no_spark: list[str]) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_bytes(NOTES)
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS[command](out)), f"--out {out} holds files sharesim did not write (notes.txt)",
            "--force writes beside them and keeps them")
    assert snapshot(tmp_path) == before and no_spark == []


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_name_clash_is_refused_even_with_force(command: str, tmp_path: Path, no_spark: list[str]) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    clash = "summary.json" if command == "sweep" else "report.html"  # a name the command writes
    (out / clash).write_bytes(NOTES)
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS[command](out), "--force"), f"--out {out}: {clash} was not written by sharesim",
            "never replaced, not even with --force")
    assert snapshot(tmp_path) == before and no_spark == []
    # And the campaign's report.html in a campaign directory is not a run's (the report).
    campaign = other_kinds(tmp_path)["campaign"]
    (campaign / "report.html").write_text("the campaign's report")
    if command == "run":
        before = snapshot(tmp_path)
        refused(invoke(*COMMANDS[command](campaign), "--force"),
                "report.html was written by `sharesim campaign`, and `sharesim run` writes report.html")
        assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_force_writes_beside_a_users_file_and_keeps_it_byte_for_byte(command: str, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_bytes(NOTES)
    result = invoke(*COMMANDS[command](out), "--force")
    assert result.exit_code == 0, result.output
    assert (out / "notes.txt").read_bytes() == NOTES
    assert "notes.txt" not in listed(out)
    assert listed(out) == sorted(set(os.listdir(out)) - {"notes.txt", outdir.MANIFEST})


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_own_earlier_output_needs_force_and_force_replaces_only_it(command: str, tmp_path: Path) -> None:
    out = tmp_path / "D"
    assert invoke(*COMMANDS[command](out)).exit_code == 0
    (out / "notes.txt").write_bytes(NOTES)
    if command == "sweep":  # `sharesim report` writes report.html, and lists it as the sweep's
        assert invoke("report", str(out)).exit_code == 0 and "report.html" in listed(out)
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS[command](out)), f"--out {out} already holds the output of an earlier "
            f"`sharesim {command}`", "give --force to replace it")
    assert snapshot(tmp_path) == before
    again = invoke(*COMMANDS[command](out), "--force")
    assert again.exit_code == 0, again.output
    assert (out / "notes.txt").read_bytes() == NOTES
    if command == "sweep":
        assert not (out / "report.html").exists()  # the sweep's own old report went with its data
    assert listed(out) == sorted(set(os.listdir(out)) - {"notes.txt", outdir.MANIFEST})


def test_a_run_replaced_with_force_leaves_no_trace_of_the_earlier_run(tmp_path: Path) -> None:
    # A violated run writes trace.ndjson; the ok run that replaces it with --force must not leave it behind.
    out = tmp_path / "D"
    first = invoke("run", "small", "--seed", "1", "--mutant", "spso-before-durable", "--out", str(out))
    assert first.exit_code == 1 and (out / "trace.ndjson").exists()
    again = invoke("run", "small", "--seed", "1", "--out", str(out), "--force")
    assert again.exit_code == 0 and not (out / "trace.ndjson").exists()


def test_campaign_refuses_its_own_earlier_output_then_resumes_or_replaces_it(
        tmp_path: Path, fake_campaign: list[Path]) -> None:
    out = tmp_path / "D"
    assert invoke(*COMMANDS["campaign"](out)).exit_code == 130  # the fake campaign wrote, then was interrupted
    (out / "notes.txt").write_bytes(NOTES)
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS["campaign"](out)), "holds the output of an earlier `sharesim campaign`",
            "give --resume to continue it or --force to replace it")
    refused(invoke(*COMMANDS["campaign"](out), "--resume", "--force"), "--resume and --force: give one")
    assert snapshot(tmp_path) == before and len(fake_campaign) == 1
    # --resume continues: nothing is removed (the fake campaign then finds its own files in the way).
    (out / "runs" / "part-0.parquet").write_bytes(b"rows of the first attempt")
    resumed = invoke(*COMMANDS["campaign"](out), "--resume")  # an OSError: one error line, exit 2
    assert resumed.exit_code == 2 and "File exists" in resumed.output, resumed.output
    assert (out / "runs" / "part-0.parquet").read_bytes() == b"rows of the first attempt"
    # --force replaces the campaign's own files and keeps the user's.
    assert invoke(*COMMANDS["campaign"](out), "--force").exit_code == 130
    assert (out / "runs" / "part-0.parquet").read_bytes() == b"rows"
    assert (out / "notes.txt").read_bytes() == NOTES
    assert listed(out) == ["campaign.json", "report.html", "runs"]


def test_demo_replaces_its_own_earlier_output_unasked_and_keeps_a_users_file(
        tmp_path: Path, fake_campaign: list[Path]) -> None:
    out = tmp_path / "D"
    assert invoke(*COMMANDS["demo"](out)).exit_code == 130
    (out / "runs" / "part-0.parquet").write_bytes(b"an older demo's rows")
    (out / "notes.txt").write_bytes(NOTES)
    assert invoke(*COMMANDS["demo"](out)).exit_code == 130  # no --force: the demo's own output
    assert (out / "runs" / "part-0.parquet").read_bytes() == b"rows"
    assert (out / "notes.txt").read_bytes() == NOTES and manifest(out)["kind"] == "demo"
    # A campaign's directory is not the demo's: refused, even with --force (its campaign.json is not the demo's).
    campaign = tmp_path / "C"
    assert invoke(*COMMANDS["campaign"](campaign)).exit_code == 130
    before = snapshot(tmp_path)
    for force in ((), ("--force",)):
        refused(invoke(*COMMANDS["demo"](campaign), *force), "campaign.json was written by `sharesim campaign`, "
                "and `sharesim demo` writes campaign.json; it is never replaced, not even with --force")
    assert snapshot(tmp_path) == before


def test_a_demo_directory_of_an_older_sharesim_needs_force(tmp_path: Path, fake_campaign: list[Path]) -> None:
    # Older sharesim left a campaign directory without a manifest. Another campaign's: the demo asks, and
    # --force replaces it (only its files).
    out = tmp_path / "demo-campaign"
    out.mkdir()
    (out / "campaign.json").write_text('{"scenario": "small"}')
    (out / "runs").mkdir()
    (out / "notes.txt").write_bytes(NOTES)
    refused(invoke(*COMMANDS["demo"](out)), "holds an older sharesim's `sharesim campaign` output "
            "(campaign.json, runs)", "--force replaces it")
    assert invoke(*COMMANDS["demo"](out), "--force").exit_code == 130
    assert (out / "notes.txt").read_bytes() == NOTES and (out / "campaign.json").read_text() == '{"fake": true}\n'


def test_an_older_sharesims_demo_output_is_replaced_unasked(tmp_path: Path, fake_campaign: list[Path]) -> None:
    # The quickstart's `./dev demo` on a machine that ran an older one: that demo's campaign (swarm, no mutant)
    # is replaced without --force, as that demo replaced it; a user's file beside it is kept.
    out = tmp_path / "demo-campaign"
    out.mkdir()
    (out / "campaign.json").write_text('{"scenario": "swarm", "campaign_seed": 1, "mutant": null}')
    (out / "runs").mkdir()
    (out / "notes.txt").write_bytes(NOTES)
    assert invoke(*COMMANDS["demo"](out)).exit_code == 130
    assert (out / "notes.txt").read_bytes() == NOTES and (out / "campaign.json").read_text() == '{"fake": true}\n'
    (out / ".sharesim.json").unlink()  # an older one again, now of a mutant: not the demo's
    (out / "campaign.json").write_text('{"scenario": "swarm", "mutant": "spso-before-durable"}')
    refused(invoke(*COMMANDS["demo"](out)), "--force replaces it")


@pytest.mark.parametrize("command", [*sorted(COMMANDS), "shrink", "trace"])
def test_an_unwritable_out_is_one_line_exit_2_before_any_work(command: str, tmp_path: Path,
                                                              no_spark: list[str]) -> None:
    # As root, permissions do not stop a write: a path under a regular file cannot be written by anyone.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    target = blocker / "sub"
    args = {"shrink": (*SHRINK, "--out", str(target)),
            "trace": ("run", "small", "--trace", str(target))}.get(command) or COMMANDS[command](target)
    option = "--trace" if command == "trace" else "--out"
    before = snapshot(tmp_path)
    refused(invoke(*args), f"error: {option} {target}: not writable (Not a directory)")
    assert snapshot(tmp_path) == before and no_spark == []


def test_a_refusal_once_the_command_began_puts_the_directory_back(tmp_path: Path) -> None:
    # E.g. --resume of a directory holding another campaign: found by the campaign, inside the claim.
    out = tmp_path / "D"
    with outdir.claim(out, "campaign"):
        (out / "campaign.json").write_text("{}")
    (out / "notes.txt").write_bytes(NOTES)
    before = snapshot(tmp_path)
    with pytest.raises(outdir.BadInput), outdir.claim(out, "campaign", resume=True):
        raise outdir.BadInput("--resume: another campaign")
    assert snapshot(tmp_path) == before
    with pytest.raises(outdir.BadInput), outdir.claim(tmp_path / "new" / "E", "campaign"):
        raise outdir.BadInput("--master: unreachable")
    assert snapshot(tmp_path) == before  # and the directories it made are gone


def test_a_corrupt_manifest_is_refused_not_guessed(tmp_path: Path) -> None:
    out = tmp_path / "D"
    out.mkdir()
    (out / outdir.MANIFEST).write_text("{not json")
    (out / "result.json").write_text("{}")
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS["run"](out), "--force"), f"--out {out}: {outdir.MANIFEST} is not readable")
    assert snapshot(tmp_path) == before


def test_a_kind_from_a_newer_sharesim_is_another_kind(tmp_path: Path) -> None:
    out = tmp_path / "D"
    out.mkdir()
    (out / "result.json").write_bytes(NOTES)
    newer = {"kind": "future", "writers": {"future": {"entries": ["result.json"]}}}
    (out / outdir.MANIFEST).write_text(json.dumps(newer))
    before = snapshot(tmp_path)
    refused(invoke(*COMMANDS["run"](out), "--force"), "result.json was written by `sharesim future`")
    refused(invoke(*COMMANDS["sweep"](out)), "holds the output of `sharesim future`")
    assert snapshot(tmp_path) == before


def test_every_command_states_the_one_rule_in_its_help() -> None:
    flat = " ".join(outdir.RULE.split())
    for command in ("run", "sweep", "campaign", "demo"):
        text = " ".join(invoke(command, "--help").output.split())
        assert flat in text, command
        assert "--force" in text
    assert "continued with --resume" in " ".join(invoke("campaign", "--help").output.split())
    assert "replaces its own earlier demo output without asking" in " ".join(invoke("demo", "--help").output.split())
    for args in (("shrink", "--help"), ("run", "--help")):
        assert " ".join(outdir.FILE_RULE.split()) in " ".join(invoke(*args).output.split())


def test_the_kinds_know_the_names_their_commands_write() -> None:
    from reports import run_dir
    from scenarios import sweep
    from scenarios.campaign import identity, sweep_spark

    assert {run_dir.RESULT, run_dir.TIMELINE, run_dir.TRACE, run_dir.REPORT} == set(outdir.KINDS["run"].outputs)
    assert {sweep.RUNS_FILE, sweep.SUMMARY_FILE, sweep_spark.SCRATCH} < set(outdir.KINDS["sweep"].outputs)
    assert identity.META in outdir.KINDS["campaign"].outputs


# -- files the user names: shrink --out, run --trace --------------------------------------------------


def test_shrink_out_refuses_a_users_file_and_replaces_its_own_only_with_force(tmp_path: Path) -> None:
    users = tmp_path / "mine.toml"
    users.write_bytes(NOTES)
    before = snapshot(tmp_path)
    for force in ((), ("--force",)):
        refused(invoke(*SHRINK, "--out", str(users), *force), f"--out {users}: exists and was not written by "
                "`sharesim shrink`", "not even with --force")
    assert snapshot(tmp_path) == before
    out = tmp_path / "shrunk.toml"
    assert invoke(*SHRINK, "--out", str(out)).exit_code == 0
    first = out.read_bytes()
    (out).write_bytes(first + b"# my edit\n")
    before = snapshot(tmp_path)
    refused(invoke(*SHRINK, "--out", str(out)), "holds an earlier `sharesim shrink` output; give --force")
    assert snapshot(tmp_path) == before
    assert invoke(*SHRINK, "--out", str(out), "--force").exit_code == 0
    assert out.read_bytes() == first and sorted(os.listdir(tmp_path)) == ["mine.toml", "shrunk.toml"]


def test_shrink_does_not_replace_a_file_that_appeared_while_it_worked(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_bytes(NOTES)  # after the check, before the write
    for force in (False, True):
        with pytest.raises(outdir.BadInput, match="not written by `sharesim shrink`"):
            outdir.publish_file(path, "# Written by `sharesim shrink`\n", "--out", "shrink",
                                outdir.written_by_shrink, force=force)
    assert path.read_bytes() == NOTES and os.listdir(tmp_path) == ["x.toml"]


def test_trace_refuses_a_users_file_and_replaces_an_earlier_trace_only_with_force(tmp_path: Path) -> None:
    users = tmp_path / "notes.ndjson"
    users.write_bytes(NOTES)
    before = snapshot(tmp_path)
    refused(invoke("run", "small", "--trace", str(users), "--force"),
            "exists and was not written by `sharesim run`")
    assert snapshot(tmp_path) == before
    trace = tmp_path / "t.ndjson"
    trace.touch()  # an empty file (mktemp's) is as good as none
    assert invoke("run", "small", "--seed", "1", "--trace", str(trace)).exit_code == 0
    first = trace.read_bytes()
    refused(invoke("run", "small", "--seed", "2", "--trace", str(trace)), "holds an earlier `sharesim run` output")
    assert trace.read_bytes() == first
    assert invoke("run", "small", "--seed", "2", "--trace", str(trace), "--force").exit_code == 0
    assert trace.read_bytes() != first


# -- with Spark ----------------------------------------------------------------------------------------

JVM_PROBE = FDS + textwrap.dedent("""\
    import json, sys
    from pathlib import Path
    from scenarios import outdir
    from scenarios.campaign.session import spark_session

    def worker(batches):
        import pyarrow as pa
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pylist([{"fds": json.dumps(fds("self"))}])

    out = Path(sys.argv[1])
    with outdir.claim(out, "campaign"):
        spark = spark_session("local[1]", app_name="sharesim outdir test")
        workers = [json.loads(r["fds"]) for r in spark.range(0, 2, 1, 2).mapInArrow(worker, "fds string").collect()]
        jvm = spark.sparkContext._gateway.proc.pid
        print(json.dumps({"driver": fds("self"), "jvm": fds(jvm), "workers": workers}))
        spark.stop()
""")


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_neither_the_spark_jvm_nor_its_workers_hold_the_lock(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(JVM_PROBE)
    out = tmp_path / "D"
    probe = subprocess.run([sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(REPO)}, check=True)
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    lock = str(out / outdir.LOCK)
    assert lock in seen["driver"]  # the probe sees descriptors: the lock is open in the driver
    assert lock not in seen["jvm"] and seen["jvm"]
    assert seen["workers"] and all(lock not in fds for fds in seen["workers"])


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_the_real_demo_replaces_its_own_output_and_keeps_a_users_file(tmp_path: Path) -> None:
    # An earlier demo's directory, as the demo leaves it (the lock and rule tests above run a fake campaign),
    # with a user's notes beside it and a name the real campaign does not write again (repro/).
    out = tmp_path / "demo"
    with outdir.claim(out, "demo"):
        for name in ("campaign.json", "summary.json", "report.html"):
            (out / name).write_text("an earlier demo's")
        (out / "repro" / "swarm").mkdir(parents=True)
    (out / "notes.txt").write_bytes(NOTES)
    result = invoke("demo", "--runs", "6", "--seed", "2", "--out", str(out))
    assert result.exit_code in (0, 1), result.output
    assert (out / "notes.txt").read_bytes() == NOTES
    assert json.loads((out / "summary.json").read_text())["runs"] == 6
    assert (out / "report.html").read_text() != "an earlier demo's" and not (out / "repro" / "swarm").exists()
    assert manifest(out)["kind"] == "demo"
    assert listed(out) == sorted(set(os.listdir(out)) - {"notes.txt", outdir.MANIFEST})
    assert set(listed(out)) <= set(outdir.KINDS["demo"].outputs)  # the real campaign writes only the kind's names


def test_a_refused_demo_does_no_work_first(tmp_path: Path) -> None:
    """The demo's part 1 (the KIP-932 table) comes only once --out is accepted."""
    (tmp_path / "D").mkdir()
    (tmp_path / "D" / "notes.txt").write_bytes(NOTES)
    result = invoke("demo", "--runs", "5", "--out", str(tmp_path / "D"))
    refused(result, "holds files sharesim did not write (notes.txt)")
    assert result.stdout == ""


def test_a_campaign_whose_spark_does_not_start_leaves_no_directory(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark failing to start (no worker answers, a bad local master) is not output: the --out the command
    made is gone again, as if refused; one it found keeps what it held."""
    import scenarios.campaign.session as session

    def no_spark(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("Cannot call methods on a stopped SparkContext.")

    monkeypatch.setattr(session, "spark_session", no_spark)
    out = tmp_path / "new" / "D"
    result = invoke("campaign", "small", "--runs", "3", "--out", str(out))
    assert result.exit_code == 3 and "stopped SparkContext" in result.output, result.output
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_bytes(NOTES)
    before = snapshot(tmp_path / "mine")
    assert invoke("campaign", "small", "--runs", "3", "--out", str(tmp_path / "mine"), "--force").exit_code == 3
    assert snapshot(tmp_path / "mine") == before
