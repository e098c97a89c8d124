"""One writer per output directory, and no command deletes or overwrites what it did not create.

Every command that writes a directory (``run --out``, ``sweep``, ``campaign``,
``demo``) holds it through ``claim``; the files a command is told to write
(``run --trace FILE``, ``shrink --out FILE``) go through ``check_file`` and
``publish_file``.

* **The lock.** ``DIR/.sharesim.lock``, held with ``flock(LOCK_EX | LOCK_NB)``
  for the whole command, names its holder (pid, host, command line, start
  time). A second writer is refused at once, naming the holder. The kernel
  releases a flock when its holder dies, however it dies, so a lock file that
  can be locked is stale: it is taken over with a note. Python opens files
  non-inheritable (PEP 446), so neither the Spark JVM nor its Python workers
  hold it (tests/scenarios/test_outdir.py checks the JVM's descriptors). The
  file is removed when its holder finishes; whoever locks it checks that the
  file it locked is still the one at the path, so a remover and a newcomer
  never both hold it. On shared storage the lock is only as good as the
  filesystem's flock: NFSv4, CephFS, GPFS and Lustre (mounted with ``flock``)
  share it between hosts; where flock is host-local (NFS with
  ``local_lock=flock``, SMB) two hosts can both hold it, and a holder on
  another host whose lock looks free here is taken over with a note that
  names its host.
* **Ownership.** ``DIR/.sharesim.json`` records which command kind wrote which
  top-level entry (``writers``: kind -> entries, the sharesim version and the
  command line). A command lists the names it may write before writing them
  (a crash leaves none of its files unlisted) and, when it finishes, the names
  it did write. A directory written by an older sharesim, without this file,
  is recognised by its marker files (``campaign.json``, ``result.json``,
  ``runs.parquet`` + ``summary.json``); there a demo's output looks like a
  campaign's, so the demo replaces such a campaign directory with ``--force``.
* **The rule** (``RULE``, in each command's ``--help``), applied by ``plan``.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import click

from scenarios.exits import BadInput

LOCK: Final = ".sharesim.lock"
MANIFEST: Final = ".sharesim.json"
_OWN_FILES: Final = frozenset({LOCK, MANIFEST, MANIFEST + ".tmp"})

RULE: Final = (
    "--out may be new or empty. If it holds this command's own earlier output, replacing it needs --force. "
    "A directory holding another command's output, or files no sharesim command of this kind wrote, is "
    "refused unless --force; --force replaces only this command's own files: other files are never deleted "
    "or overwritten, and a directory where one of them has a name this command writes is refused even with "
    "--force. One command at a time writes a directory (DIR/.sharesim.lock names the holder)."
)
CAMPAIGN_RULE: Final = RULE + " A campaign's own earlier output is continued with --resume, replaced with --force."
DEMO_SCENARIO: Final = "swarm"  # what the demo's campaign runs
DEMO_RULE: Final = RULE + (" The demo replaces its own earlier demo output without asking (the quickstart re-runs "
                           "it); files beside it are kept. So it does with an older sharesim's demo output (no "
                           "DIR/.sharesim.json; its campaign.json names swarm and no mutant); another campaign "
                           "directory an older sharesim wrote is replaced only with --force.")
FILE_RULE: Final = ("FILE may be new or empty; an earlier FILE written by this command is replaced only with "
                    "--force; a file sharesim did not write is never overwritten.")


@dataclass(frozen=True)
class Kind:
    """A kind of output directory: the top-level names its command writes (``sharesim report`` writes
    ``report.html`` too) and its format (the demo writes a campaign's)."""

    name: str
    outputs: tuple[str, ...]
    format: str
    replaces_unasked: bool = False  # the demo: the quickstart's main job, re-run as is


_CAMPAIGN_OUTPUTS: Final = ("campaign.json", "runs", "summary", "summary.json", "repro", "report.html")
KINDS: Final[Mapping[str, Kind]] = {
    # reports/run_dir.py: RESULT, TIMELINE, TRACE, REPORT
    "run": Kind("run", ("result.json", "timeline.parquet", "trace.ndjson", "report.html"), "run"),
    # scenarios/sweep.py: RUNS_FILE, SUMMARY_FILE; scenarios/campaign/sweep_spark.py: SCRATCH
    "sweep": Kind("sweep", ("runs.parquet", "summary.json", "report.html", "_spark_runs"), "sweep"),
    # scenarios/campaign/driver.py's layout
    "campaign": Kind("campaign", _CAMPAIGN_OUTPUTS, "campaign"),
    "demo": Kind("demo", _CAMPAIGN_OUTPUTS, "campaign", replaces_unasked=True),
}


def command_line() -> str:
    """This process's command line as the user would type it."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "sharesim"
    return shlex.join([program, *sys.argv[1:]])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sharesim")
    except PackageNotFoundError:
        return "unknown"


def _now() -> str:
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _not_writable(option: str, path: Path, exc: OSError) -> BadInput:
    return BadInput(f"{option} {path}: not writable ({exc.strerror or exc})")


# -- the lock ------------------------------------------------------------------------------------------


def _running(pid: int) -> bool:
    if pid <= 0:  # no pid recorded: nothing to check
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _pid(record: Mapping[str, Any]) -> int:
    pid = record.get("pid")
    return pid if isinstance(pid, int) else 0


def _since(stamp: object) -> str:
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    same_day = when.date() == datetime.now(when.tzinfo).date()
    return when.strftime("%H:%M:%S" if same_day else "%Y-%m-%d %H:%M:%S")


def _holder(record: Mapping[str, Any]) -> str:
    return (f"pid {record.get('pid', '?')} on host {record.get('host', '?')}: {record.get('command', '?')} "
            f"(since {_since(record.get('since', '?'))})")


def _read_record(fd: int) -> dict[str, Any] | None:
    """The holder a lock file names, or None when it is empty (or not a record: a holder cut short)."""
    raw = os.pread(fd, 1 << 16, 0)
    try:
        record = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {"command": "(unreadable lock record)"}
    return record if isinstance(record, dict) else None


@dataclass
class _Lock:
    path: Path
    fd: int
    created: bool  # this process made the lock file (it was not there)
    previous: dict[str, Any] | None  # the record of a holder that died holding it

    def take(self, out: Path) -> None:
        """Write this process into the lock file, noting a stale holder it replaces."""
        if self.previous is not None:
            dead = self.previous.get("host") == socket.gethostname() and not _running(_pid(self.previous))
            why = "it is no longer running" if dead else "it no longer holds the lock"
            click.echo(f"note: --out {out}: taking over the lock of {_holder(self.previous)}: {why}", err=True)
        record = {"pid": os.getpid(), "host": socket.gethostname(), "command": command_line(), "since": _now()}
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, (json.dumps(record) + "\n").encode(), 0)
        os.fsync(self.fd)

    def release(self) -> None:
        """Remove the lock file (while still holding it), then let go."""
        try:
            if _same_file(self.fd, self.path):
                self.path.unlink()
        finally:
            os.close(self.fd)

    def abandon(self) -> None:
        """Let go without a trace: the lock file stays as it was found (removed if this process made it)."""
        if self.created:
            self.release()
        else:
            os.close(self.fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _open_lock(path: Path) -> tuple[int, bool] | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        pass
    try:
        return os.open(path, os.O_RDWR), False
    except FileNotFoundError:  # its holder finished meanwhile: try again
        return None


def lock(out: Path) -> _Lock:
    """Hold ``out``'s lock, or raise ``BadInput`` naming the process that holds it."""
    path = out / LOCK
    for _ in range(100):
        try:
            opened = _open_lock(path)
        except OSError as exc:
            raise _not_writable("--out", out, exc) from exc
        if opened is None:
            continue
        fd, created = opened
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            record = _read_record(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise BadInput(f"--out {out}: cannot lock {LOCK} ({exc.strerror})") from exc
            raise BadInput(_in_use(out, record)) from None
        if not _same_file(fd, path):  # its holder removed it between our open and our lock: the next one
            os.close(fd)
            continue
        return _Lock(path, fd, created, None if created else _read_record(fd))
    raise BadInput(f"--out {out}: could not take {path} (it keeps being replaced)")


def _in_use(out: Path, record: Mapping[str, Any] | None) -> str:
    if record is None:
        return f"--out {out} is in use by another sharesim command (starting); wait for it to finish or stop it"
    here = record.get("host") == socket.gethostname()
    if here and not _running(_pid(record)):
        return (f"--out {out} is locked by a process that inherited the lock of {_holder(record)}, which is no "
                f"longer running; find it with `fuser {out / LOCK}` and stop it")
    return f"--out {out} is in use by {_holder(record)}; wait for it to finish or stop it"


# -- ownership -----------------------------------------------------------------------------------------


def _listing(out: Path) -> list[str]:
    return sorted(name for name in os.listdir(out) if name not in _OWN_FILES)


def read_manifest(out: Path) -> dict[str, Any] | None:
    """``out``'s manifest, None when it has none; a manifest sharesim cannot read is ``BadInput``."""
    path = out / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"--out {out}: {MANIFEST} is not readable ({exc}); remove it and sharesim infers "
                       "the directory's kind from its files") from exc
    if not isinstance(data, dict) or not isinstance(data.get("writers"), dict):
        raise BadInput(f"--out {out}: {MANIFEST} is not a sharesim manifest (no writers); remove it and "
                       "sharesim infers the directory's kind from its files")
    return data


def infer_kind(names: list[str]) -> str | None:
    """The kind of a directory an older sharesim wrote (no manifest), from its marker files."""
    if "campaign.json" in names:
        return "campaign"
    if "result.json" in names:
        return "run"
    if "runs.parquet" in names and "summary.json" in names:
        return "sweep"
    return None


def owners(out: Path, names: list[str]) -> dict[str, str | None]:
    """Each top-level entry's writer kind; None for a file no sharesim command wrote."""
    manifest = read_manifest(out)
    if manifest is not None:
        owned = {name: kind for kind, writer in sorted(manifest["writers"].items())
                 for name in writer.get("entries", [])}
        return {name: owned.get(name) for name in names}
    kind = infer_kind(names)
    outputs = KINDS[kind].outputs if kind else ()
    return {name: kind if name in outputs else None for name in names}


# -- the rule ------------------------------------------------------------------------------------------


def _format(kind: str) -> str:
    """The output format of ``kind``; a kind this version does not know (a newer sharesim's) is its own."""
    return KINDS[kind].format if kind in KINDS else kind


def _some(names: list[str]) -> str:
    return ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")


def _whose(name: str, owner: str | None) -> str:
    return f"{name} was written by `sharesim {owner}`" if owner else f"{name} was not written by sharesim"


def plan(out: Path, kind: Kind, found: Mapping[str, str | None], *, force: bool, resume: bool = False,
         inferred: bool = False) -> list[str]:
    """The entries to remove before ``kind``'s command writes ``out``, or ``BadInput`` saying why it may not.

    ``found``: each top-level entry's writer kind (None: no sharesim command wrote it); ``inferred``: read
    from marker files (an older sharesim's directory), where a demo's output and a campaign's look alike."""
    same_format = [n for n, k in found.items() if k is not None and k != kind.name and _format(k) == kind.format]
    mine = [n for n, k in found.items() if k == kind.name]
    kin = same_format if resume or inferred else []  # a campaign continues the demo's; an old demo looks a campaign
    others = [n for n, k in found.items() if k is not None and k != kind.name and n not in kin]
    foreign = [n for n, k in found.items() if k is None]
    if resume or (kin and kind.replaces_unasked and _an_older_demo(out)):
        mine, kin = mine + kin, []
    clash = [n for n in kind.outputs if n in others or n in foreign]
    if clash:
        raise BadInput(f"--out {out}: {_whose(clash[0], found[clash[0]])}, and `sharesim {kind.name}` writes "
                       f"{clash[0]}; it is never replaced, not even with --force: choose another --out")
    if resume:
        return []
    if mine and not force and not kind.replaces_unasked:
        how = "--resume to continue it or --force to replace it" if kind.name == "campaign" else \
            "--force to replace it"
        raise BadInput(f"--out {out} already holds the output of an earlier `sharesim {kind.name}` "
                       f"({_some(mine)}); give {how}")
    if not mine and not force:
        for names, what, then in (
            (kin, f"an older sharesim's `sharesim {found[kin[0]] if kin else ''}` output", "--force replaces it"),
            (others, f"the output of `sharesim {found[others[0]] if others else ''}`", "--force writes beside it"),
            (foreign, "files sharesim did not write", "--force writes beside them and keeps them"),
        ):
            if names:
                raise BadInput(f"--out {out} holds {what} ({_some(names)}); choose another --out, or give --force "
                               f"({then})")
    return sorted(mine + kin)


def _an_older_demo(out: Path) -> bool:
    """An older sharesim's demo output: its campaign.json names the demo's scenario and no mutant (that demo
    replaced such a directory whole, unasked; this one replaces only those files, and keeps the rest)."""
    try:
        meta = json.loads((out / "campaign.json").read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return isinstance(meta, dict) and meta.get("scenario") == DEMO_SCENARIO and not meta.get("mutant")


# -- the claim -----------------------------------------------------------------------------------------


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    temporary = out / (MANIFEST + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, out / MANIFEST)


def _manifest_after(manifest: Mapping[str, Any] | None, kind: Kind, entries: list[str],
                    removed: list[str]) -> dict[str, Any]:
    writers: dict[str, Any] = {}
    for name, writer in sorted((manifest or {}).get("writers", {}).items()):
        kept = [e for e in writer.get("entries", []) if e not in removed and e not in entries]
        if kept and name != kind.name:
            writers[name] = {**writer, "entries": kept}
    writers[kind.name] = {"entries": sorted(entries), "sharesim": _version(), "command": command_line(),
                          "updated": _now()}
    first = (manifest or {}).get("kind")
    return {"kind": first if first in writers else next(iter(writers)), "writers": writers}


@contextmanager
def claim(out: Path, kind: str, *, force: bool = False, resume: bool = False) -> Iterator[Path]:
    """Hold ``out`` for a command of ``kind`` while the block runs: lock it, apply the rule (``plan``),
    remove the command's own earlier entries it replaces, and list what it writes in the manifest.

    Refused (``BadInput``, exit 2) before anything in ``out`` changes: a directory in use, against the
    rule, or not writable."""
    what = KINDS[kind]
    made = [d for d in (out, *out.parents) if not d.exists()]  # the directories mkdir -p makes, deepest first
    try:
        out.mkdir(parents=True, exist_ok=True)
        held = lock(out)
    except OSError as exc:
        _unmake(made)
        raise _not_writable("--out", out, exc) from exc
    except BadInput:
        _unmake(made)
        raise
    try:
        names = _listing(out)
        manifest = read_manifest(out)
        found = owners(out, names)
        removed = plan(out, what, found, force=force, resume=resume, inferred=manifest is None)
    except BaseException:
        held.abandon()
        raise
    original = (out / MANIFEST).read_bytes() if manifest is not None else None
    kept = [n for n in names if n not in removed]
    continued = [n for n in kept if resume and found[n] is not None and _format(str(found[n])) == what.format]
    claimed = sorted(set(what.outputs) | set(continued))
    refused = failed = False
    try:
        held.take(out)
        for name in removed:
            _remove(out / name)
        _write_manifest(out, _manifest_after(manifest, what, claimed, removed))
        yield out
    except (click.ClickException, SystemExit) as exc:
        # Bad input found once the command began (a resume of another campaign, an unreachable master):
        # a refusal too, so the directory is put back as it was found when nothing was removed.
        refused = not removed and (isinstance(exc, click.ClickException) or exc.code == 2)
        failed = True
        raise
    except BaseException:
        failed = True
        raise
    finally:
        try:
            # what it wrote: its names present now, and any entry new since it began
            written = [n for n in _listing(out) if n in claimed or n not in kept] if out.is_dir() else []
            # A command that failed before writing anything (Spark did not start) leaves no trace either.
            refused = refused or (failed and not removed and not written)
            if refused:
                _put_back(out / MANIFEST, original)
            elif out.is_dir():
                _write_manifest(out, _manifest_after(read_manifest(out), what, written, []))
        finally:
            held.release()
        if refused:
            _unmake(made)


def _unmake(made: list[Path]) -> None:
    """Remove the directories a refused command made, deepest first, those still empty."""
    for directory in made:
        if directory.is_dir() and not os.listdir(directory):
            directory.rmdir()


def _put_back(path: Path, content: bytes | None) -> None:
    if content is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(content)


def record(out: Path, name: str) -> None:
    """Note in ``out``'s manifest (when it has one) that ``name`` belongs to the directory's kind:
    ``sharesim report`` writing ``report.html`` into a sweep's directory."""
    try:
        manifest = read_manifest(out)
    except BadInput:
        return
    if manifest is None:
        return
    owned = {entry for writer in manifest["writers"].values() for entry in writer.get("entries", [])}
    kind = manifest.get("kind")
    if name in owned or kind not in manifest["writers"] or kind not in KINDS or name not in KINDS[str(kind)].outputs:
        return
    writer = manifest["writers"][kind]
    writer["entries"] = sorted([*writer.get("entries", []), name])
    _write_manifest(out, manifest)


# -- files the user names ------------------------------------------------------------------------------


def written_by_shrink(head: str) -> bool:
    return head.startswith("# Written by `sharesim shrink")


def written_by_trace(head: str) -> bool:
    try:
        event = json.loads(head)
    except json.JSONDecodeError:
        return False
    return isinstance(event, dict) and set(event) == {"fields", "kind", "node", "time_ms"}


def _head(path: Path) -> str | None:
    """The first line of ``path``; None when it is empty."""
    with path.open("rb") as stream:
        line = stream.readline(1 << 16)
    return line.decode("utf-8", errors="replace").rstrip("\n") if line else None


def check_file(path: Path, option: str, command: str, ours: Callable[[str], bool], *, force: bool) -> None:
    """Refuse, before any work, to write ``path`` where it may not be written (``FILE_RULE``), or where it
    cannot be (``BadInput``, exit 2)."""
    parent = path.parent
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise _not_writable(option, path, exc) from exc
    if not path.exists() and not path.is_symlink():
        return
    if path.is_dir():
        raise BadInput(f"{option} {path}: is a directory; give a file name")
    try:
        head = _head(path)
    except OSError as exc:
        raise BadInput(f"{option} {path}: exists and is not readable ({exc.strerror}); choose another file") from exc
    if head is None:
        return
    if not ours(head):
        raise BadInput(f"{option} {path}: exists and was not written by `sharesim {command}`; it is never "
                       "replaced, not even with --force: choose another file")
    if not force:
        raise BadInput(f"{option} {path}: holds an earlier `sharesim {command}` output; give --force to replace it")


def publish_file(path: Path, text: str, option: str, command: str, ours: Callable[[str], bool], *,
                 force: bool) -> None:
    """Write ``text`` to ``path`` at once (a file beside it, then renamed), checking again that the rule
    allows it: a file that appeared while the command worked is not replaced unless the rule says so."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        try:
            os.link(temporary, path)  # fails if path exists: nothing is replaced unchecked
        except FileExistsError:
            check_file(path, option, command, ours, force=force)
            os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
