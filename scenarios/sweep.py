"""Sweeps: one scenario over a grid of parameter values × seeds; ``sharesim sweep``.

``plan_sweep(scenario, params, seeds)`` is the whole plan: one ``RunTask``
(``scenarios/campaign/plan.py``) per grid point and seed, the scenario already
changed for its point. ``run_sweep`` executes the tasks in this process; a
Spark campaign can execute the same list (``TaskList``) and hand its rows to
``write_sweep``.

A parameter is a key path into the scenario's TOML form, written as in the
validation messages or with dots only (both mean the same; the first is the
canonical form the outputs use)::

    groups[0].config."group.share.record.lock.duration.ms"=1000,2000
    groups.0.config.group.share.record.lock.duration.ms=1000,2000
    consumers[0].processing.value_ms=1,5,20
    faults.swarm.intensity=0.5,1,2

Inside a ``config``, ``rates`` or ``params`` table the rest of the path is one
key (Kafka keys hold dots). Each value is read as a TOML value (``1000``,
``0.5``, ``true``, ``"x"``), or else as a bare string (``earliest``); values
cannot contain commas. A key the scenario does not have, or a value it does
not allow, is an error before anything runs.

Run ids are ``point index × seeds + seed index``, the points in the order of
``itertools.product`` over the parameters as given. The seed of a run is
``derive_seed("sweep", scenario name, point as canonical JSON, seed index)``
(``model/sim/rng.py``), so a point's runs do not change when the grid grows.

Output (the sweep report reads exactly these two files):

* ``DIR/runs.parquet``: one row per run, ``reports.rows.ARROW_SCHEMA``;
  ``campaign_id`` = ``"sweep:<scenario>"``, ``params`` = the point (canonical
  key → value as JSON text). A run that raised is an error row; the sweep goes on.
* ``DIR/summary.json``::

    {"kind": "sweep", "campaign_id": "sweep:<scenario>", "scenario": "<name>",
     "params": {"<key>": [v1, v2, ...], ...},          # the grid, in the order given
     "seeds": N, "runs": R, "ok": .., "violated": .., "errors": ..,
     "violations": {"<invariant id>": runs that violated it, ...},
     "situations": {"<situation id>": runs that reached it, ...},   # model/situations.py
     "metrics": ["records_delivered", ...],            # the metrics summarised per point
     "points": [{"params": {"<key>": value, ...}, "run_ids": [..], "runs": .., "ok": .., "violated": ..,
                 "errors": .., "violations": {"<id>": runs}, "situations": {"<id>": runs},
                 "metrics": {"<metric>": {"n": .., "mean": .., "low": .., "high": ..}, ...}}, ...]}

  ``low``/``high`` bound the 95 % Student-t confidence interval of the mean
  over the point's finished runs (errors excluded); null when n < 2 (and
  ``mean`` null when n = 0). ``redelivery_rate`` = redeliveries / records
  delivered; ``wall_time_s`` is the row's column; every other metric is the
  run's own (``RunResult.metrics``).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow.parquet as pq

from model.sim.rng import derive_seed
from reports.rows import to_table
from scenarios.campaign.plan import SEED_MASK, RunTask, TaskList
from scenarios.campaign.worker import Simulate, run_row, simulate
from scenarios.spec import Scenario, ScenarioError
from scenarios.toml_format import scenario_from_data, scenario_to_data

MAX_RUNS: Final = 100_000
FREE_KEY_TABLES: Final = ("config", "rates", "params")  # tables whose keys are names, not fields
MAIN_METRICS: Final = (
    "records_delivered", "redeliveries", "redelivery_rate", "records_accepted", "offsets_archived_or_skipped",
    "records_unresolved", "latency_p50_ms", "latency_p99_ms", "members_fenced", "rebalances",
    "requests_timed_out", "requests_disconnected", "sim_time_ms", "wall_time_s",
)
SUMMARY_FILE: Final = "summary.json"
RUNS_FILE: Final = "runs.parquet"


class SweepError(ValueError):
    """A bad parameter, value or seed count; the message names it and says what is allowed."""


KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class SweepParam:
    """One swept key and its values; ``key`` is the canonical path text."""

    key: str
    path: KeyPath
    values: tuple[Any, ...]


# -- parameters -------------------------------------------------------------------------------------

_SEGMENT: Final = re.compile(r'\s*(?:"(?P<quoted>[^"]*)"|(?P<bare>[A-Za-z0-9_-]+))(?P<indexes>(?:\[\d+\])*)\s*')
_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")


def parse_key(text: str) -> KeyPath:
    """``groups[0].config."a.b"`` or ``groups.0.config.a.b`` → ``("groups", 0, "config", "a.b")``."""
    path: list[str | int] = []
    rest = text
    while True:
        match = _SEGMENT.match(rest)
        if match is None or not text.strip():
            raise SweepError(f"--param key {text!r}: not a key path (e.g. groups[0].config.\"group.share...\" "
                             f"or consumers.0.count)")
        name = match["quoted"] if match["quoted"] is not None else match["bare"]
        if path and path[-1] in FREE_KEY_TABLES and match["quoted"] is None and not match["indexes"]:
            # Inside a table of Kafka keys: the rest of the dotted path is one key.
            path.append(rest.strip())
            break
        path.append(int(name) if match["quoted"] is None and name.isdigit() else name)
        path.extend(int(i) for i in re.findall(r"\[(\d+)\]", match["indexes"]))
        rest = rest[match.end():]
        if not rest:
            break
        if not rest.startswith("."):
            raise SweepError(f"--param key {text!r}: expected '.' at {rest!r}")
        rest = rest[1:]
    return tuple(path)


def key_text(path: KeyPath) -> str:
    """The canonical form of a key path, as the validation messages write it."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = part if _BARE_KEY.fullmatch(part) else f'"{part}"'
            out += f".{name}" if out else name
    return out


def parse_value(text: str) -> Any:
    """A TOML value (``1000``, ``0.5``, ``true``, ``"x"``, ``[1, 2]``), or else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text.strip()


def parse_param(text: str) -> SweepParam:
    """``key=v1,v2,...`` → ``SweepParam``."""
    key, sep, values = text.partition("=")
    if not sep or not key.strip():
        raise SweepError(f"--param {text!r}: must be KEY=V1,V2,... (e.g. consumers.0.count=1,2,4)")
    parts = values.split(",")
    if not values.strip() or any(not v.strip() for v in parts):
        raise SweepError(f"--param {text!r}: needs one or more comma-separated values, none empty")
    path = parse_key(key)
    return SweepParam(key_text(path), path, tuple(parse_value(v) for v in parts))


def apply_params(scenario: Scenario, point: Mapping[KeyPath, Any]) -> Scenario:
    """``scenario`` with each key path set to its value; ``SweepError`` names every problem."""
    data = scenario_to_data(scenario)
    for path, value in point.items():
        _assign(data, path, value)
    try:
        return scenario_from_data(data)
    except ScenarioError as err:
        shown = ", ".join(f"{key_text(path)}={json.dumps(value)}" for path, value in point.items())
        raise SweepError(f"{scenario.name} with {shown} is not a valid scenario:\n  "
                         + "\n  ".join(err.problems)) from None


def _assign(data: dict[str, Any], path: KeyPath, value: Any) -> None:
    node: Any = data
    for depth, part in enumerate(path):
        where = key_text(path[: depth + 1])
        last = depth == len(path) - 1
        if isinstance(part, int):
            if not isinstance(node, list):
                raise SweepError(f"--param {key_text(path)}: {key_text(path[:depth]) or 'the scenario'} "
                                 "is not a list; drop the index")
            if part >= len(node):
                raise SweepError(f"--param {key_text(path)}: {where} does not exist "
                                 f"({key_text(path[:depth])} has {len(node)} item(s))")
        elif not isinstance(node, dict):
            raise SweepError(f"--param {key_text(path)}: {key_text(path[:depth])} is a list; "
                             f"give an index, e.g. {key_text(path[:depth])}[0]")
        if last:
            node[part] = value
        elif isinstance(part, str) and part not in node:
            node[part] = {}  # an absent table (an empty config, no transactions): create it
            node = node[part]
        else:
            node = node[part]


# -- the plan ----------------------------------------------------------------------------------------


def campaign_id(scenario: Scenario) -> str:
    return f"sweep:{scenario.name}"


def point_json(point: Mapping[str, Any]) -> str:
    return json.dumps(dict(point), sort_keys=True, separators=(",", ":"))


def sweep_seed(scenario_name: str, point: Mapping[str, Any], index: int) -> int:
    """The seed of a point's ``index``-th run: a stable hash of (scenario, point, index)."""
    return derive_seed("sweep", scenario_name, point_json(point), index) & SEED_MASK


def plan_sweep(scenario: Scenario, params: Sequence[SweepParam], seeds: int) -> list[RunTask]:
    """Every (grid point, seed index) as a task: run id, the changed scenario, seed, params (canonical keys)."""
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise SweepError(f"--seeds {seeds!r}: must be an integer >= 1")
    if not params:
        raise SweepError("a sweep needs at least one --param KEY=V1,V2,...")
    keys = [p.key for p in params]
    duplicated = sorted({k for k in keys if keys.count(k) > 1})
    if duplicated:
        raise SweepError(f"--param {duplicated[0]}: given twice; list all its values in one --param")
    runs = math.prod(len(p.values) for p in params) * seeds
    if runs > MAX_RUNS:
        raise SweepError(f"the grid has {runs} runs: more than {MAX_RUNS}; use a Spark campaign for that many")
    tasks: list[RunTask] = []
    for index, values in enumerate(itertools.product(*(p.values for p in params))):
        changed = apply_params(scenario, {p.path: v for p, v in zip(params, values, strict=True)})
        point = {p.key: v for p, v in zip(params, values, strict=True)}
        for seed_index in range(seeds):
            tasks.append(RunTask(index * seeds + seed_index, changed, sweep_seed(scenario.name, point, seed_index),
                                 params=point))
    return tasks


def run_sweep(tasks: Sequence[RunTask], sweep_id: str, *, simulate_fn: Simulate = simulate,
              on_run: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Run every task here, in order; one row each (an error row if it raised). ``on_run(row)`` after each."""
    workload = TaskList(sweep_id, tasks)
    rows = []
    for run_id in range(workload.runs):
        row = run_row(workload, run_id, simulate_fn)
        rows.append(row)
        if on_run is not None:
            on_run(row)
    return rows


# -- the summary -------------------------------------------------------------------------------------

# Student's t, 97.5 % quantile, for 1..30 degrees of freedom (two-sided 95 % interval).
_T975: Final = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
                2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
                2.045, 2.042)
_Z975: Final = 1.959963984540054


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (Cornish-Fisher beyond 30)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_interval(values: Sequence[float]) -> dict[str, Any]:
    """n, mean and the 95 % t-interval of the mean (null bounds when n < 2)."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "low": None, "high": None}
    mean = sum(values) / n
    if n < 2:
        return {"n": 1, "mean": mean, "low": None, "high": None}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return {"n": n, "mean": mean, "low": mean - half, "high": mean + half}


def row_metrics(row: Mapping[str, Any]) -> dict[str, float]:
    """A finished run's main metrics (the derived ones included); empty for an error row."""
    if row["verdict"] == "error":
        return {}
    metrics = dict(row["metrics"])
    delivered = metrics.get("records_delivered")
    if delivered:
        metrics["redelivery_rate"] = metrics.get("redeliveries", 0.0) / delivered
    metrics["wall_time_s"] = row["wall_time_s"]
    return {name: float(metrics[name]) for name in MAIN_METRICS if metrics.get(name) is not None}


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    violations: dict[str, int] = {}
    reached: dict[str, int] = {}  # situation (model/situations.py) -> runs that reached it
    for row in rows:
        for invariant in sorted({v["invariant"] for v in row["violations"]}):
            violations[invariant] = violations.get(invariant, 0) + 1
        for situation, times in dict(row.get("situations") or ()).items():
            if times:
                reached[situation] = reached.get(situation, 0) + 1
    return {
        "runs": len(rows),
        "ok": sum(r["verdict"] == "ok" for r in rows),
        "violated": sum(r["verdict"] == "violated" for r in rows),
        "errors": sum(r["verdict"] == "error" for r in rows),
        "violations": dict(sorted(violations.items())),
        "situations": dict(sorted(reached.items())),
    }


def summarize(scenario_name: str, params: Sequence[SweepParam], seeds: int,
              rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``summary.json`` (see the module docstring) from the rows of ``plan_sweep``'s tasks."""
    by_id = {row["run_id"]: row for row in rows}
    points = []
    for index, values in enumerate(itertools.product(*(p.values for p in params))):
        ids = [index * seeds + i for i in range(seeds)]
        mine = [by_id[i] for i in ids if i in by_id]
        per_run = [row_metrics(row) for row in mine]
        metrics = {name: mean_interval([m[name] for m in per_run if name in m]) for name in MAIN_METRICS}
        points.append({"params": {p.key: v for p, v in zip(params, values, strict=True)}, "run_ids": ids,
                       **_counts(mine), "metrics": metrics})
    return {
        "kind": "sweep",
        "campaign_id": f"sweep:{scenario_name}",
        "scenario": scenario_name,
        "params": {p.key: list(p.values) for p in params},
        "seeds": seeds,
        **_counts(rows),
        "metrics": list(MAIN_METRICS),
        "points": points,
    }


def write_sweep(out_dir: Path, scenario_name: str, params: Sequence[SweepParam], seeds: int,
                rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Write ``runs.parquet`` and ``summary.json`` into ``out_dir``; returns the summary."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(to_table([dict(r) for r in sorted(rows, key=lambda r: r["run_id"])]), out_dir / RUNS_FILE)
    summary = summarize(scenario_name, params, seeds, rows)
    (out_dir / SUMMARY_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
