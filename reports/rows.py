"""One row per run: the schema shared by sweeps (pandas, in-process) and campaigns (Spark).

A row is plain Python values; ``ARROW_SCHEMA`` fixes their Parquet types so a
sweep's file and a campaign's files read the same way. Metrics and fault
counts are maps (the set of metrics grows; SQL reads ``metrics['latency_p99_ms']``),
violations an array of structs. A run that raised is an error row: verdict
``"error"``, the traceback in ``error``, everything else empty, and the seed kept
so ``sharesim run SCENARIO --seed S`` reproduces it.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

if TYPE_CHECKING:
    from model.sim.runner import RunResult

VIOLATION_TYPE: Final = pa.struct([
    ("invariant", pa.string()),
    ("time_ms", pa.int64()),
    ("message", pa.string()),
])

ARROW_SCHEMA: Final = pa.schema([
    ("campaign_id", pa.string()),
    ("scenario", pa.string()),
    # Swept parameter → its value as JSON text (the same row type whatever was swept).
    ("params", pa.map_(pa.string(), pa.string())),
    ("mutant", pa.string()),
    ("run_id", pa.int64()),
    ("seed", pa.int64()),
    ("verdict", pa.string()),  # "ok", "violated" or "error"
    ("violations", pa.list_(VIOLATION_TYPE)),
    ("metrics", pa.map_(pa.string(), pa.float64())),
    ("faults_fired", pa.map_(pa.string(), pa.int64())),
    ("trace_hash", pa.string()),
    ("sim_time_ms", pa.int64()),
    ("wall_time_s", pa.float64()),
    ("error", pa.string()),
    # The protocol situations the run reached (model/situations.py): id -> times, only nonzero.
    ("situations", pa.map_(pa.string(), pa.int64())),
])

COLUMNS: Final = tuple(ARROW_SCHEMA.names)

# What each column holds: the reference page "Campaign row schema" is generated from this (docs/gen), and
# tests/reports/test_rows.py checks that every column has a description.
COLUMN_DOCS: Final[dict[str, str]] = {
    "campaign_id": "the campaign (`SCENARIO/seed=S[/mutant=M]`, S its campaign seed) or the sweep "
                   "(`sweep:SCENARIO`) the run belongs to",
    "scenario": "the scenario's name",
    "params": "a sweep's grid point: each swept key and its value as JSON text; empty in a campaign",
    "mutant": "the mutant injected into the run, or null for the correct model",
    "run_id": "the run's id in its campaign or sweep, 0 .. N-1: each planned id appears exactly once",
    "seed": "the run's seed, derived from the campaign seed, the scenario and the run id; "
            "`sharesim run SCENARIO --seed S [--mutant M]` reproduces the run",
    "verdict": "`ok`, `violated` (an invariant was violated) or `error` (the run raised)",
    "violations": "the violations, in order: `invariant` (a catalogue id), `time_ms` and `message`; a run "
                  "stops at its first unless run with every violation",
    "metrics": "the run's metrics by name (records delivered, redeliveries, latency percentiles, "
               "`quiescent_at_ms`, …); SQL reads `metrics['latency_p99_ms']`",
    "faults_fired": "how many faults of each kind fired",
    "trace_hash": "the hash of every event the run recorded: equal hashes, equal runs",
    "sim_time_ms": "simulated time when the run ended",
    "wall_time_s": "the run's wall-clock time: the one value that is not reproducible",
    "error": "a run that raised: its traceback (everything else but the seed empty); else null",
    "situations": "the protocol situations the run reached (model/situations.py), each with how often; null in rows "
                  "written before situations were counted",
}


def _params(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(key, json.dumps(params[key], sort_keys=True)) for key in sorted(params)]


def result_row(result: RunResult, *, campaign_id: str = "", run_id: int = 0,
               params: Mapping[str, Any] | None = None, mutant: str | None = None) -> dict[str, Any]:
    """The row of a finished run."""
    metrics = [(name, float(value)) for name, value in sorted(result.metrics.items())
               if isinstance(value, int | float) and not isinstance(value, bool)]
    return {
        "campaign_id": campaign_id,
        "scenario": result.scenario,
        "params": _params(params or {}),
        "mutant": mutant,
        "run_id": run_id,
        "seed": result.seed,
        "verdict": result.verdict,
        "violations": [{"invariant": v.invariant, "time_ms": v.time_ms, "message": v.message}
                       for v in result.violations],
        "metrics": metrics,
        "faults_fired": sorted(result.faults_fired.items()),
        "trace_hash": result.trace_hash,
        "sim_time_ms": result.sim_time_ms,
        "wall_time_s": result.wall_time_s,
        "error": None,
        "situations": sorted(result.situations.items()),
    }


def error_row(scenario: str, seed: int, error: BaseException, *, campaign_id: str = "", run_id: int = 0,
              params: Mapping[str, Any] | None = None, mutant: str | None = None,
              wall_time_s: float = 0.0) -> dict[str, Any]:
    """The row of a run that raised: it is recorded, not lost, and the campaign goes on."""
    return {
        "campaign_id": campaign_id,
        "scenario": scenario,
        "params": _params(params or {}),
        "mutant": mutant,
        "run_id": run_id,
        "seed": seed,
        "verdict": "error",
        "violations": [],
        "metrics": [],
        "faults_fired": [],
        "trace_hash": "",
        "sim_time_ms": 0,
        "wall_time_s": wall_time_s,
        "error": "".join(traceback.format_exception(error)),
        "situations": [],
    }


def to_table(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows as an Arrow table of ``ARROW_SCHEMA`` (what Parquet files hold)."""
    return pa.Table.from_pylist(rows, schema=ARROW_SCHEMA)
