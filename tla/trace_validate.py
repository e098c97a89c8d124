"""Validate one simulated run against ``ShareGroup.tla`` with TLC (issue 27).

``validate(scenario, seed)`` runs the scenario with the projection (``tla/trace_project.py``) as an
extra monitor, picks one share-partition (the busiest, or the one asked for), writes the trace as a
generated TLA+ module (``ShareGroupTraceData.tla``: TLC 2.15 has no Json module), and runs TLC on
``ShareGroupTrace.tla`` with one worker. The answer (printed by the trace spec's invariant
``Verdict``): accepted, the whole trace was matched; or rejected at event l, the first it could not
match, with the spec's state there.

The trace is cut into the lives of the share-partition's state (``trace_project.Life``: a group deleted
and re-created, an admin reset, start a new one at a higher state epoch). Each life is a behaviour of
its own from ShareGroup's Init (its leaders renumbered 1, 2, ..., the records produced before it and
the start offset its initialization wrote taken as its first actions); all are checked in one TLC run
(the trace spec's variable t picks the life), and the trace is accepted only if every life is. A
rejection names the first life not accepted and its first unmatched event.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tla.run import TLA_DIR, ToolMissing, _run_watched, find_jar, find_java
from tla.trace_project import Event, Life, Projection, UnprojectedStep, aborted_and_markers, act, batch_lasts

TRACE_SPEC = "ShareGroupTrace"
DATA_MODULE = "ShareGroupTraceData"


class NoSharePartition(Exception):
    """The run has no share-partition to validate (no share group, or nothing projected)."""


@dataclass
class Validation:
    accepted: bool
    events: list[Event]
    key: str
    seconds: float  # TLC's wall time
    first_unmatched: int | None = None  # 0-based index into events
    action: int | None = None  # how many of its actions TLC had taken
    spec_state: str = ""
    message: str = ""
    run: Any = None  # the RunResult
    gaps: dict[str, str] = field(default_factory=dict)
    lives: int = 1  # how many lives of the state the trace was cut into
    life: int | None = None  # the first life not accepted (1-based)


def tla_value(value: Any) -> str:
    """``value`` as a TLA+ expression: dicts as records, lists as sequences, tuples as tuples, sets as sets."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "[" + ", ".join(f"{k} |-> {tla_value(v)}" for k, v in value.items()) + "]"
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(tla_value(v) for v in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "<<" + ", ".join(tla_value(v) for v in value) + ">>"
    raise TypeError(f"no TLA+ form for {value!r}")


def event_record(ev: Event) -> dict[str, Any]:
    return {"acts": ev.acts, "hwm": ev.hwm, "e": ev.e, "spso": ev.spso, "speo": ev.speo,
            "mem": [tuple(r) for r in ev.mem], "dur": ev.durable, "dspso": ev.dspso,
            "dbatch": frozenset(tuple(b) for b in ev.dbatch), "dle": ev.dle}


def split_lives(events: list[Event], lives: list[Life] | None = None) -> list[list[Event]]:
    """``events`` cut by their ``life`` (runs of equal values, in order), each life ready to be a trace of
    its own: leader epochs renumbered from the life's first leader (``Life.base``), and its first event
    preceded by the records produced before it (``Produce``) and the start offset its initialization
    wrote (``Initialize``, when not -1). Without ``lives``: one life from Init."""
    runs: list[list[Event]] = []
    for ev in events:
        if runs and runs[-1][-1].life == ev.life:
            runs[-1].append(ev)
        else:
            runs.append([ev])
    out: list[list[Event]] = []
    hwm = 0
    for run in runs:
        life = lives[run[0].life] if lives and run[0].life < len(lives) else Life(0, -1, 0)
        b, n = life.base, len(out) + 1
        renumbered = [dataclasses.replace(ev, e=_epoch(ev.e, b, n), dle=_epoch(ev.dle, b, n),
                                          acts=[{**a, "e": _epoch(a["e"], b, n)} for a in ev.acts]) for ev in run]
        first = renumbered[0]
        setup = [act("Initialize", o=life.start_offset)] * (life.start_offset != -1) + [act("Produce")] * hwm
        renumbered[0] = dataclasses.replace(first, acts=setup + first.acts)
        out.append(renumbered)
        hwm = run[-1].hwm
    return out


def _epoch(e: int, base: int, life: int) -> int:
    """Leader epoch ``e`` (the projection's numbering; 0: none) in a life whose first leader is ``base`` + 1."""
    if e and e - base < 1:
        raise UnprojectedStep(f"a leader started before life {life}'s first leader acts in it")
    return e - base if e else 0


def data_module(events: list[Event], *, limit: int, max_in_flight: int, stop: tuple[int, int, int] = (0, 0, 0),
                batch_last: list[int] | None = None, lives: list[Life] | None = None,
                aborted: list[int] | None = None, gaps: list[int] | None = None) -> str:
    """The generated module: the trace cut into its lives (``split_lives``) and the constants' sizes
    (each fault budget the most any one life takes: every life is a behaviour of its own);
    ``batch_last`` the spec's BatchLast (the last offset of each offset's log batch; default one-record
    batches); ``aborted`` and ``gaps`` the spec's Aborted and Gaps (read_committed's aborted offsets,
    SP-13; transaction markers, acknowledged with GAP), offsets at or past LogSize left out."""
    traces = split_lives(events, lives)
    members = sorted({a["m"] for ev in events for a in ev.acts if a["m"]})
    log_size = max([ev.hwm for ev in events] + [1])

    def budget(name: str) -> int:
        return max(sum(a["a"] == name for ev in trace for a in ev.acts) for trace in traces)

    failovers, crashes = budget("Failover"), budget("ConsumerCrash")
    write_errors, write_retries = budget("WriteError"), budget("WriteRetry")
    lasts = list(range(log_size)) if batch_last is None else [min(b, log_size - 1) for b in batch_last[:log_size]]
    lasts += range(len(lasts), log_size)
    lines = [f"---- MODULE {DATA_MODULE} ----", "\\* Generated by tla/trace_validate.py: do not edit.",
             "EXTENDS Integers, Sequences",
             f"TMembers == {tla_value(frozenset(members) or frozenset({'m'}))}",
             f"TLogSize == {log_size}", f"TLimit == {limit}", f"TMaxInFlight == {max_in_flight}",
             f"TFailovers == {failovers}", f"TCrashes == {crashes}", f"TWriteErrors == {write_errors}",
             f"TWriteRetries == {write_retries}",
             f"TStop == <<{stop[0]}, {stop[1]}, {stop[2]}>>",
             f"TBatchLast == [o \\in 0..{log_size - 1} |-> {tla_value(lasts)}[o + 1]]",
             f"TAborted == {tla_value(frozenset(o for o in aborted or () if o < log_size))}",
             f"TGaps == {tla_value(frozenset(o for o in gaps or () if o < log_size))}", "Lives == <<"]
    lines.append(",\n".join("  <<\n" + ",\n".join("    " + tla_value(event_record(ev)) for ev in trace) + "\n  >>"
                            for trace in traces))
    lines += [">>", "===="]
    return "\n".join(lines) + "\n"


CFG = """SPECIFICATION TraceSpec
INVARIANT Verdict
"""

_AT = re.compile(r'^<<"AT", (\d+), (\d+), (\d+)>>$', re.MULTILINE)
_ACCEPTED = re.compile(r'<<"ACCEPTED", (\d+), \d+>>')
_STATE = re.compile(r'<<"STATE", \d+, \d+, \d+, "(.*)">>')


def tlc_trace(spec_files: tuple[str, ...], trace_spec: str, data_name: str, module: str,
              timeout: float | None) -> tuple[str, str, float]:
    """One TLC run (one worker) of the trace spec ``trace_spec`` over the specs ``spec_files`` of
    ``tla/`` with the generated module ``data_name`` = ``module``: (output, how it ended, seconds).
    Shared by the share-partition and the consumer-group trace validation."""
    java = find_java()
    if java is None:
        raise ToolMissing("java is not on PATH")
    jar = find_jar()
    with tempfile.TemporaryDirectory(prefix="tlc-trace-") as tmp:
        work = Path(tmp)
        for name in (*spec_files, f"{trace_spec}.tla"):
            shutil.copy(TLA_DIR / name, work / name)
        (work / f"{data_name}.tla").write_text(module)
        (work / f"{trace_spec}.cfg").write_text(CFG)
        cmd = [java, "-XX:+UseParallelGC", "-Xss16m", f"-Djava.io.tmpdir={tmp}", "-cp", str(jar), "tlc2.TLC",
               "-workers", "1", "-deadlock", "-metadir", str(work / "states"),
               "-config", f"{trace_spec}.cfg", trace_spec]
        started = time.perf_counter()
        out, how = _run_watched(cmd, work, timeout)
        return out, how, time.perf_counter() - started


def tlc_verdict(module_for: Callable[[tuple[int, int, int]], str], spec_files: tuple[str, ...], trace_spec: str,
                data_name: str, timeout: float | None,
                life_lengths: list[int] | None = None) -> tuple[bool, int | None, int | None, str, float, str]:
    """(accepted, l, k, spec state, seconds, message) of TLC on the trace module ``module_for(stop)``, whose
    trace spec checks each life of ``life_lengths`` (their events; default one life) as a behaviour of its
    own and prints ("AT", life, l, k) at each step and ("ACCEPTED", life, n) at a life's end: l is the first
    event not matched (1-based, over all lives), in the first life not accepted, and k how many of its
    actions were taken; a rejection runs TLC again with ``stop`` = (life, l, k) for the spec state there
    (the trace spec's ``Verdict``). Shared by the share-partition and the consumer-group validation."""
    lengths = life_lengths or [0]
    out, how, seconds = tlc_trace(spec_files, trace_spec, data_name, module_for((0, 0, 0)), timeout)
    if how != "exited":
        raise ToolMissing(f"TLC {how} after {seconds:.0f} s")
    if "Semantic errors" in out or "Parsing or semantic analysis failed" in out:
        raise ToolMissing("the trace spec does not parse: " + " | ".join(out.splitlines()[-12:]))
    accepted = {int(t) for t in _ACCEPTED.findall(out)}
    rejected = [t for t in range(1, len(lengths) + 1) if t not in accepted]
    if not rejected:
        return True, None, None, "", seconds, "accepted" if len(lengths) == 1 else f"accepted ({len(lengths)} lives)"
    life = rejected[0]
    positions = [(int(l_), int(k_)) for t_, l_, k_ in _AT.findall(out) if int(t_) == life]
    pos, sub = max(positions) if positions else (1, 0)
    message = "no spec step matches"
    assertion = next((ln for ln in out.splitlines() if "Assert" in ln or "assertion" in ln.lower()), None)
    if assertion:
        message = f"the spec's assertion failed: {assertion.strip()}"
    second, how2, more = tlc_trace(spec_files, trace_spec, data_name, module_for((life, pos, sub)), timeout)
    if len(lengths) > 1:
        first = sum(lengths[:life - 1])
        message = f"life {life} of {len(lengths)} (from event #{first + 1}): {message}"
        pos += first
    shown = _STATE.search(second) if how2 == "exited" else None
    state = shown.group(1).replace('\\"', '"') if shown else ""
    return False, pos, sub, state, seconds + more, message


def run_tlc(events: list[Event], *, limit: int, max_in_flight: int, batch_last: list[int] | None = None,
            aborted: list[int] | None = None, gaps: list[int] | None = None, timeout: float | None = 900,
            lives: list[Life] | None = None) -> tuple[bool, int | None, int | None, str, float, str]:
    """(accepted, l, k, spec state, seconds, message) of TLC on the trace ``events``, cut into ``lives``
    (``split_lives``): l is the first event not matched (1-based, in ``events``), in the first life not
    accepted, and k how many of its actions were taken (counting the life's setup actions, if it is the
    life's first event: ``split_lives(events, lives)`` has them)."""
    return tlc_verdict(
        lambda stop: data_module(events, limit=limit, max_in_flight=max_in_flight, stop=stop, batch_last=batch_last,
                                 lives=lives, aborted=aborted, gaps=gaps),
        ("ShareGroup.tla",), TRACE_SPEC, DATA_MODULE, timeout, [len(tr) for tr in split_lives(events, lives)])


def project(scenario: Any, seed: int, *, mutant: str | None = None,
            partition: int | None = None) -> tuple[Projection, Any, Any]:
    """Run ``scenario`` with the projection; (projection, chosen key, RunResult)."""
    from model.sim.runner import run_cluster

    projection = Projection()
    result, _ = run_cluster(scenario, seed, mutant=mutant, extra_monitors=[projection])
    keys = [k for k, evs in projection.events.items() if evs]
    if partition is not None:
        keys = [k for k in keys if k.partition == partition]
    if not keys:
        raise NoSharePartition("the run has no share-partition with a leader that loaded its state"
                               + (f" on partition {partition}" if partition is not None else ""))
    key = max(keys, key=lambda k: (len(projection.events[k]), str(k)))
    return projection, key, result


def validate(scenario: Any, seed: int, *, mutant: str | None = None, partition: int | None = None,
             corrupt: Any = None) -> Validation:
    """Run, project and check one run. ``corrupt(events)`` may alter the projected events (tests)."""
    projection, key, result = project(scenario, seed, mutant=mutant, partition=partition)
    events = list(projection.events[key])
    if corrupt is not None:
        events = corrupt(events)
    limit, locks = projection.limits.get(key, (5, 2000))
    log_size = max([ev.hwm for ev in events] + [1])
    lives = projection.lives.get(key, [])
    log = projection.logs.get(key)
    aborted, markers = aborted_and_markers(log, log_size, key in projection.read_committed)
    accepted, pos, sub, state, seconds, message = run_tlc(
        events, limit=limit, max_in_flight=locks, batch_last=batch_lasts(log, log_size), aborted=aborted,
        gaps=markers, lives=lives)
    traces = split_lives(events, lives)
    shown = [ev for trace in traces for ev in trace]  # the events as validated (the lives' setup actions in)
    v = Validation(accepted, shown, str(key), seconds, spec_state=state, message=message, run=result,
                   gaps={str(k): g for k, g in projection.gaps.items()}, lives=len(traces))
    if not accepted and pos is not None:
        v.first_unmatched, v.action = pos - 1, sub
        v.life = next(i for i, n in enumerate(itertools.accumulate(len(tr) for tr in traces), 1) if n >= pos)
    return v
