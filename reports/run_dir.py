"""``sharesim run SCENARIO --seed S --out DIR``: one run written as a directory a report is rendered from.

* ``DIR/result.json``: ``RunResult.to_json()`` plus ``kind: "run"``, the
  reproducer (``scenario_ref``, ``mutant``, ``command``) and what the sampler
  saw besides the timeline (``samples``: delivery counts, latency quantiles,
  fault intervals, bucket width);
* ``DIR/timeline.parquet``: the sampler's rows (``reports.sampler.TIMELINE_SCHEMA``);
* ``DIR/trace.ndjson``: with a violation only, every event of the run. The run
  is first made without keeping its trace (a long run's trace is large); a
  violated one is run again with ``trace=True`` — the same (scenario, seed)
  gives the same trace hash, which is checked — and its events written;
* ``DIR/report.html``: the run report, with the violation report at its top
  when an invariant broke (one file per run).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import pyarrow.parquet as pq

from reports.sampler import RunSampler, RunSamples

if TYPE_CHECKING:
    from invariants.monitors import Monitor
    from model.sim.runner import RunResult
    from model.sim.trace import Trace
    from scenarios.spec import Scenario

RESULT: Final = "result.json"
TIMELINE: Final = "timeline.parquet"
TRACE: Final = "trace.ndjson"
REPORT: Final = "report.html"


class ReproducibilityError(RuntimeError):
    """The re-run that keeps the trace did not reproduce the first run."""


def sampled_run(scenario: Scenario, seed: int | None = None, *, mutant: str | None = None,
                stop_on_first_violation: bool = True, trace: bool = False,
                extra_monitors: Sequence[Monitor] = ()) -> tuple[RunResult, RunSamples]:
    """Run ``scenario`` with a ``RunSampler`` watching; the RunResult is the one ``run`` gives."""
    from model.sim.runner import run_cluster

    sampler = RunSampler()
    result, _ = run_cluster(scenario, seed, trace=trace, stop_on_first_violation=stop_on_first_violation,
                            extra_monitors=[*extra_monitors, sampler], before_run=sampler.attach,
                            mutant=mutant)
    return result, sampler.close()


def run_to_dir(scenario: Scenario, seed: int | None, out: Path, *, scenario_ref: str | None = None,
               mutant: str | None = None, stop_on_first_violation: bool = True, trace_path: Path | None = None,
               extra_monitors: Callable[[], Sequence[Monitor]] = tuple) -> RunResult:
    """Run once, write ``out`` (see the module docstring) and render its report; returns the RunResult.

    ``trace_path`` keeps the trace from the start and writes it there too (no re-run on a
    violation). ``extra_monitors`` makes fresh monitors to check beside the standard ones (once
    per run made).
    """
    from reports.run_report import render_run

    keep = trace_path is not None
    result, samples = sampled_run(scenario, seed, mutant=mutant, stop_on_first_violation=stop_on_first_violation,
                                  trace=keep, extra_monitors=extra_monitors())
    out.mkdir(parents=True, exist_ok=True)
    if result.trace is not None and trace_path is not None:
        result.trace.write_ndjson(trace_path)
    trace_file = out / TRACE
    trace_file.unlink(missing_ok=True)
    if not result.ok:
        trace = result.trace or _trace_again(scenario, result, mutant, stop_on_first_violation, extra_monitors())
        trace.write_ndjson(trace_file)
    write_result(out, result, samples, scenario_ref or scenario.name, mutant)
    render_run(out)
    return result


def _trace_again(scenario: Scenario, result: RunResult, mutant: str | None, stop_on_first_violation: bool,
                 extra_monitors: Sequence[Monitor]) -> Trace:
    """The trace of ``result``'s run, by running it again with the trace kept (and checking it is the same run)."""
    from model.sim.runner import run_cluster

    again, _ = run_cluster(scenario, result.seed, trace=True, stop_on_first_violation=stop_on_first_violation,
                           extra_monitors=extra_monitors, mutant=mutant)
    if again.trace is None or again.trace_hash != result.trace_hash:
        raise ReproducibilityError(f"{scenario.name} seed {result.seed}: the re-run's trace hash "
                                   f"{again.trace_hash} differs from the run's {result.trace_hash}")
    return again.trace


def write_result(out: Path, result: RunResult, samples: RunSamples, scenario_ref: str,
                 mutant: str | None = None) -> None:
    """``result.json`` and ``timeline.parquet`` of ``out``."""
    from scenarios.check import reproducer

    data = {
        "kind": "run",
        **result.to_json(),
        "scenario_ref": scenario_ref,
        "mutant": mutant,
        "command": reproducer(scenario_ref, result.seed, mutant),
        "samples": samples.to_json(),
    }
    (out / RESULT).write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    pq.write_table(samples.timeline_table(), out / TIMELINE)
