"""``sharesim campaign ... --validate K``: K of a campaign's runs checked against ``tla/ShareGroup.tla`` by
TLC (trace validation, issue 27), on the Spark executors, into the sibling dataset ``DIR/validations/``.

Which runs: the first K run ids. Their seeds are already a seeded, stable hash of (campaign seed,
scenario, run id) (``plan.run_seed``), so the first K ids are a seeded sample of the campaign's seeds,
the same on every resume and independent of batches and partitions.

How: validation i re-runs run id i with the projection as an extra monitor (the same run: a pure
function of scenario and seed, ``model.sim.runner``), then TLC on its trace
(``tla.trace_validate.validate``), in the executor's Python worker; Java is there because Spark needs
it. The rows go through the campaign's own batch machinery (``execute.run_batches``: staging, one
rename per committed batch, resume by the ids published), so validations are exactly-once too. A
validation that cannot reach a verdict (Java missing, TLC without a verdict, the run raised) is an
``error`` row, never an accept.

The summary (``validation_summary``) gives the acceptance rate, the distinct rejections grouped like
failures (a signature with the numbers blanked), each with its ``sharesim validate`` reproducer, and
the spec coverage: per spec action and per case that matters, the validated runs that took it and how
often (over the matched part of each trace), and the actions never taken.
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pyarrow as pa

from scenarios.campaign.plan import RunTask, Workload
from scenarios.campaign.worker import row_batches

VALIDATIONS: Final = "validations"  # DIR/validations/batch=LO-HI-TOKEN/*.parquet
ROWS_PER_BATCH: Final = 8
MAX_GROUPS: Final = 20

ACCEPTED: Final = "accepted"
REJECTED: Final = "rejected"
ERROR: Final = "error"

SCHEMA: Final = pa.schema([
    ("campaign_id", pa.string()),
    ("run_id", pa.int64()),  # the campaign's run id (and this dataset's id: validation i is run id i)
    ("scenario", pa.string()),
    ("seed", pa.int64()),
    ("mutant", pa.string()),
    ("outcome", pa.string()),  # accepted | rejected | error
    ("partition", pa.string()),  # the share-partition validated
    ("events", pa.int64()),  # events in its trace
    ("rejected_event", pa.int64()),  # 1-based index of the first unmatched event (rejected only)
    ("rejected_action", pa.int64()),  # how many of its actions TLC took (all: the observation differs)
    ("rejected_step", pa.string()),  # the simulator step there, and why
    ("message", pa.string()),
    ("tlc_seconds", pa.float64()),
    ("wall_time_s", pa.float64()),
    ("coverage", pa.string()),  # JSON {spec action or case: times taken}, over the matched events
])


def sample(runs: int, validate: int) -> range:
    """The run ids a campaign of ``runs`` runs validates with ``--validate validate``: the first ones."""
    return range(min(max(validate, 0), runs))


@dataclass(frozen=True)
class ValidationWorkload:
    """Validation i of a campaign: its run id i (``sample``); ``runs`` is the number of validations."""

    campaign: Workload
    validations: int

    @property
    def campaign_id(self) -> str:
        return self.campaign.campaign_id

    @property
    def runs(self) -> int:
        return self.validations

    def task(self, run_id: int) -> RunTask:
        return self.campaign.task(run_id)


Validate = Callable[[RunTask], Any]  # RunTask -> tla.trace_validate.Validation


def validate_task(task: RunTask) -> Any:
    from tla.trace_validate import validate

    return validate(task.scenario, task.seed, mutant=task.mutant)


def _step(v: Any) -> str:
    """The first unmatched event of a rejected validation, and why: what `sharesim validate` prints."""
    if v.first_unmatched is None or v.first_unmatched >= len(v.events):
        return v.message
    ev = v.events[v.first_unmatched]
    if v.action is not None and v.action < len(ev.acts):
        a = ev.acts[v.action]
        return f"{ev.what}: {a['a']} not enabled"
    return f"{ev.what}: the observed state differs"


def validation_row(workload: Workload, run_id: int, validate_fn: Validate = validate_task) -> dict[str, Any]:
    """Validation of run id ``run_id`` → its row; anything that keeps TLC from a verdict is an error row."""
    from tla.trace_project import coverage

    started = time.perf_counter()
    task: RunTask | None = None
    row: dict[str, Any] = {"campaign_id": workload.campaign_id, "run_id": run_id, "scenario": "", "seed": 0,
                           "mutant": None, "outcome": ERROR, "partition": "", "events": 0, "rejected_event": None,
                           "rejected_action": None, "rejected_step": None, "message": "", "tlc_seconds": 0.0,
                           "coverage": "{}"}
    try:
        task = workload.task(run_id)
        row.update(scenario=task.scenario.name, seed=task.seed, mutant=task.mutant)
        v = validate_fn(task)
        matched = v.events if v.accepted else v.events[:v.first_unmatched or 0]
        row.update(outcome=ACCEPTED if v.accepted else REJECTED, partition=v.key, events=len(v.events),
                   message=v.message, tlc_seconds=float(v.seconds),
                   coverage=json.dumps(coverage(matched), sort_keys=True))
        if not v.accepted:
            row.update(rejected_event=None if v.first_unmatched is None else v.first_unmatched + 1,
                       rejected_action=v.action, rejected_step=_step(v))
    except Exception as exc:  # Java missing, no verdict, the run raised: data, never an accept
        lines = traceback.format_exception_only(type(exc), exc)
        row.update(outcome=ERROR, message="".join(lines).strip())
    row["wall_time_s"] = time.perf_counter() - started
    return row


def to_table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def validation_rows(workload: Workload, ids: Iterable[int], on_rows: Callable[[int], None] | None = None,
                    validate_fn: Validate = validate_task) -> Iterator[pa.RecordBatch]:
    return row_batches((validation_row(workload, run_id, validate_fn) for run_id in ids), to_table,
                       ROWS_PER_BATCH, on_rows)


def read_validations(out: Path) -> list[dict[str, Any]]:
    """The published validation rows of campaign ``out``, by run id (pyarrow: a few thousand rows)."""
    import pyarrow.parquet as pq

    from reports.aggregate import run_files

    files = run_files(out / VALIDATIONS)
    if not files:
        return []
    rows = pa.concat_tables([pq.read_table(p).select(SCHEMA.names) for p in files]).to_pylist()
    return sorted(rows, key=lambda r: r["run_id"])


# -- the summary -------------------------------------------------------------------------------------

_NUMBERS = re.compile(r"[0-9]+((, |-|[.][.]|/)[0-9]+)*")


def signature(row: dict[str, Any]) -> str:
    """What groups rejections (and errors) alike: the step and why, or the error, with numbers blanked
    (as the campaign's failure groups blank them)."""
    text = row["rejected_step"] if row["outcome"] == REJECTED and row["rejected_step"] else row["message"]
    first = (text or "").splitlines()[0] if text else ""
    return _NUMBERS.sub("#", first)


def reproducer(scenario_ref: str, row: dict[str, Any]) -> str:
    import shlex

    words = ["sharesim", "validate", scenario_ref, "--seed", str(row["seed"])]
    if row.get("mutant"):
        words += ["--mutant", row["mutant"]]
    return shlex.join(words)


def group_rejections(rows: Sequence[dict[str, Any]], scenario_ref: str,
                     max_groups: int = MAX_GROUPS) -> list[dict[str, Any]]:
    """Rejections and errors grouped by (outcome, signature), most runs first, each with its first run's
    reproducer."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:  # by run id: a group's example is its first run
        if row["outcome"] == ACCEPTED:
            continue
        sig = (row["outcome"], signature(row))
        group = groups.get(sig)
        if group is None:
            groups[sig] = {"outcome": row["outcome"], "signature": sig[1], "runs": 1, "run_id": row["run_id"],
                           "seed": row["seed"], "rejected_event": row["rejected_event"],
                           "example": row["rejected_step"] or row["message"],
                           "command": reproducer(scenario_ref, row)}
        else:
            group["runs"] += 1
    return sorted(groups.values(), key=lambda g: (-g["runs"], g["outcome"], g["signature"]))[:max_groups]


def coverage_table(rows: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per spec action and case (``tla.trace_project.SPEC_ACTIONS`` / ``SPEC_CASES``): the validated runs
    that took it and how often, over the matched events of the accepted and rejected runs; and the
    actions and cases no run took."""
    from tla.trace_project import SPEC_ACTIONS, SPEC_CASES

    runs: dict[str, int] = {}
    times: dict[str, int] = {}
    for row in rows:
        if row["outcome"] == ERROR:
            continue
        for key, n in json.loads(row["coverage"] or "{}").items():
            runs[key] = runs.get(key, 0) + 1
            times[key] = times.get(key, 0) + n
    keys = [*SPEC_ACTIONS, *SPEC_CASES]
    keys += sorted(k for k in runs if k not in keys)  # an action the catalogue lacks still shows
    table = [{"action": k, "runs": runs.get(k, 0), "times": times.get(k, 0)} for k in keys]
    return table, [k for k in keys if not runs.get(k)]


def validation_summary(rows: Sequence[dict[str, Any]], planned: int, scenario_ref: str) -> dict[str, Any]:
    """summary.json's ``validation`` section."""
    done = len(rows)
    accepted = sum(r["outcome"] == ACCEPTED for r in rows)
    rejected = sum(r["outcome"] == REJECTED for r in rows)
    errors = sum(r["outcome"] == ERROR for r in rows)
    table, never = coverage_table(rows)
    checked = accepted + rejected
    return {"planned": planned, "validated": done, "accepted": accepted, "rejected": rejected, "errors": errors,
            "acceptance_rate": accepted / checked if checked else 0.0,
            "tlc_seconds": sum(r["tlc_seconds"] or 0.0 for r in rows),
            "wall_time_s": sum(r["wall_time_s"] or 0.0 for r in rows),
            "groups": group_rejections(rows, scenario_ref), "coverage": table, "never": never}


def _read(spark: Any, directory: Path) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    from reports.aggregate import run_files

    if not run_files(directory):
        return None
    return spark.read.schema(from_arrow_schema(SCHEMA)).parquet(str(directory)).select(*SCHEMA.names)


def dataset(validate_fn: Validate = validate_task) -> Any:
    """The validations as a batch job's dataset (``execute.Dataset``)."""
    from scenarios.campaign.execute import Dataset

    return Dataset(SCHEMA, lambda workload, ids, on_rows: validation_rows(workload, ids, on_rows, validate_fn), _read)


# A validated swarm run costs a few seconds of a core (the JVM's start included): a batch is about a
# minute of the cores' work, as the runs' batches are.
VALIDATIONS_PER_CORE: Final = 10


def planned_validations(meta: dict[str, Any], validate: int | None, runs: int) -> int:
    """The validations a campaign plans: ``--validate`` as given (0 if not), or on resume the planned ones
    unless more are asked. ``ValueError`` (one line) for fewer than planned or more than the runs."""
    planned = int(meta.get("validate", 0))
    if validate is None:
        return planned
    if validate < planned:
        raise ValueError(f"--resume: --validate {validate} is fewer than the {planned} validations the campaign "
                         f"planned: pass --validate {planned} or more")
    if validate > runs:
        raise ValueError(f"--validate {validate}: more than the campaign's {runs} runs (it validates run ids "
                         f"0..K-1): pass at most --validate {runs}")
    return validate
