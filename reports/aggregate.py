"""A campaign's per-run Parquet → summary tables, with Spark SQL.

Every table is a Spark SQL query over the view ``runs`` (one row per run,
``reports.rows.ARROW_SCHEMA``); the tables are small (one row per invariant,
fault kind, metric or failure group) and are collected to the driver, written
as Parquet under ``DIR/summary/<table>/`` and folded into ``DIR/summary.json``.

* ``totals``: runs, ok, violated, errors (over the rows after ``integrity``'s dedupe).
* ``violations``: per invariant, the runs that violated it among the runs that
  finished (errors excluded), the rate and its 95% Wilson score interval.
* ``fault_mixes`` / ``violations_by_fault_mix``: the set of fault kinds that
  fired in a run (its "mix") and how often each mix ended in each violation. A
  run stops at its first violation, so the faults it counts are those that
  preceded the violation.
* ``fault_coverage``: per fault kind, the runs in which it fired, how often, and
  the violation rate of those runs.
* ``situations``: protocol situations a run counts in its metrics (a
  share-partition leader failover while records were acquired, a share-session
  reset, a fenced member, ...): the runs that reached each and how often.
* ``situation_coverage``: per situation of the catalogue (``model/situations.py``, every one, so a
  situation no run reached shows with 0), the runs that reached it among the runs that finished, how
  often, and the hit rate with its 95% Wilson score interval (from the rows' ``situations`` column; an
  older campaign's rows have none and count as reaching nothing).
* ``metric_percentiles``: p50 / p90 / p99 / max / mean of every metric;
  ``metric_histograms``: runs per each of 20 equal-width bins of a few (one row per bin).
* ``failure_groups``: distinct failures, grouped by invariant and a signature
  (the message of the first violation with each number, list of numbers or range blanked to one ``#``, so that
  "epochs 1, 2" and "epochs 1, 2, 3" are one failure; for an error
  the last line of the traceback), with the first run ids and seeds of each.

Before any table, ``check_integrity`` asks whether every planned run id is there exactly once (one
aggregation over the run ids). It never should be otherwise (``scenarios/campaign/execute.py``
publishes whole committed batches only); if it is, the summary says so loudly (``inconsistent``,
``duplicate_run_ids``, ``missing_run_ids``, ...), and the tables are computed over one row per run
id, kept deterministically: the dedupe (a shuffle of whole rows) is only paid for then.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reports.rows import ARROW_SCHEMA, COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Z_95: Final = 1.959963984540054
# Metrics that count a protocol situation a run reached (see model/sim/cluster.py's metrics()).
SITUATIONS: Final = (
    "leader_failovers_in_transition",
    "partition_failovers",
    "share_coordinator_failovers",
    "group_coordinator_failovers",
    "share_session_resets",
    "share_sessions_disconnected",
    "members_fenced",
    "rebalances",
    "redeliveries",
    "requests_timed_out",
    "requests_disconnected",
    "records_rejected",
    "ack_errors",
)
FIRST_SEEDS: Final = 5  # run ids kept per failure group
# The distributions the report draws (convergence time: when the run became quiescent after its faults).
HISTOGRAM_METRICS: Final = ("latency_p99_ms", "redeliveries", "quiescent_at_ms", "wall_time_s")
HISTOGRAM_BINS: Final = 20
TABLES: Final = ("totals", "violations", "fault_mixes", "violations_by_fault_mix", "fault_coverage", "situations",
                 "situation_coverage", "metric_percentiles", "metric_histograms", "failure_groups")


def run_files(runs_dir: Path) -> list[Path]:
    """The published Parquet files of ``runs_dir``: a campaign's ``batch=*/`` directories (an older
    campaign's ``scenario=*/``); ``_staging``, ``_progress``, Spark's ``_temporary`` and hidden files excluded."""
    if not runs_dir.is_dir():
        return []
    return sorted(p for p in runs_dir.rglob("*.parquet")
                  if not any(part.startswith(("_", ".")) for part in p.relative_to(runs_dir).parts))


def read_runs(spark: SparkSession, runs_dir: Path) -> DataFrame | None:
    """The per-run rows under ``runs_dir`` in the documented column order, or None if there are none."""
    from pyspark.sql.pandas.types import from_arrow_schema

    if not run_files(runs_dir):
        return None
    # The documented schema, so an older campaign's partition column (scenario=NAME) stays a string whatever
    # the scenario is called; a campaign's batch=LO-HI-TOKEN directory name becomes a column, dropped here.
    return spark.read.schema(from_arrow_schema(ARROW_SCHEMA)).parquet(str(runs_dir)).select(*COLUMNS)


def read_run_table(runs_dir: Path) -> Any:
    """The rows of ``runs_dir`` as one pyarrow table (no Spark: a sweep's few rows, tests), in file order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [_with_every_column(pq.read_table(path)) for path in run_files(runs_dir)]
    return pa.concat_tables(tables).select(list(COLUMNS)) if tables else pa.table({})


def _with_every_column(table: Any) -> Any:
    """``table`` with the columns of ``ARROW_SCHEMA`` an older file lacks (``situations``) added, all null."""
    import pyarrow as pa

    for field in ARROW_SCHEMA:
        if field.name not in table.column_names:
            table = table.append_column(field, pa.nulls(table.num_rows, field.type))
    return table


EXAMPLES: Final = 10  # run ids named in summary.json per kind of inconsistency


@dataclass(frozen=True)
class Integrity:
    """Whether the rows hold every planned run id ``0 .. planned - 1`` exactly once."""

    planned: int
    rows: int
    duplicate_run_ids: int = 0  # run ids found in more than one row
    duplicate_rows: int = 0  # rows beyond the first of each run id (left out of every table)
    disagreeing_run_ids: int = 0  # duplicated run ids whose rows differ in trace hash or verdict
    missing_run_ids: int = 0  # planned run ids without a row
    unplanned_run_ids: int = 0  # run ids outside 0 .. planned - 1
    examples: dict[str, list[int]] | None = None  # a few run ids of each kind

    @property
    def inconsistent(self) -> bool:
        return bool(self.duplicate_run_ids or self.missing_run_ids or self.unplanned_run_ids)

    def to_json(self) -> dict[str, Any]:
        return {"inconsistent": self.inconsistent, "duplicate_run_ids": self.duplicate_run_ids,
                "duplicate_rows": self.duplicate_rows, "duplicate_rows_disagree": self.disagreeing_run_ids,
                "missing_run_ids": self.missing_run_ids, "unplanned_run_ids": self.unplanned_run_ids,
                "inconsistent_examples": self.examples or {}, "inconsistent_message": self.message()}

    def message(self) -> str:
        """One line saying what is wrong (empty when nothing is)."""
        parts = []
        if self.duplicate_run_ids:
            agree = (f", {self.disagreeing_run_ids} of them with rows that DISAGREE (trace hash or verdict)"
                     if self.disagreeing_run_ids else ", their rows agree")
            parts.append(f"{self.duplicate_run_ids} run id(s) found more than once ({self.duplicate_rows} extra "
                         f"row(s), one row per run id kept{agree})")
        if self.missing_run_ids:
            parts.append(f"{self.missing_run_ids} planned run id(s) missing")
        if self.unplanned_run_ids:
            parts.append(f"{self.unplanned_run_ids} run id(s) outside 0..{self.planned - 1}")
        return ("INCONSISTENT CAMPAIGN OUTPUT: " + "; ".join(parts) + " (a defect of sharesim's campaign "
                "machinery: please report it)") if parts else ""


def check_integrity(spark: SparkSession, runs: DataFrame, planned: int) -> Integrity:
    """One aggregation over the run ids; the details (a second pass) only when something is wrong."""
    from pyspark.sql import functions as F

    in_plan = F.col("run_id").between(0, planned - 1)
    total = runs.agg(F.count(F.lit(1)).alias("rows"), F.countDistinct("run_id").alias("ids"),
                     F.countDistinct(F.when(in_plan, F.col("run_id"))).alias("planned_ids")).collect()[0]
    rows, ids, planned_ids = int(total["rows"]), int(total["ids"]), int(total["planned_ids"])
    if rows == ids == planned_ids == planned:
        return Integrity(planned, rows)
    per_id = (runs.groupBy("run_id")
              .agg(F.count(F.lit(1)).alias("n"),
                   F.countDistinct(F.coalesce(F.col("trace_hash"), F.lit("")), F.col("verdict")).alias("variants"))
              .where(F.col("n") > 1).cache())
    duplicated = per_id.agg(F.count(F.lit(1)).alias("ids"), F.count_if(F.col("variants") > 1).alias("differ")
                            ).collect()[0]
    first_duplicated = [int(r["run_id"]) for r in per_id.orderBy("run_id").limit(EXAMPLES).collect()]
    per_id.unpersist()
    missing = spark.range(0, planned).join(runs.select(F.col("run_id").alias("id")), "id", "left_anti")
    first_missing = ([int(r["id"]) for r in missing.orderBy("id").limit(EXAMPLES).collect()]
                     if planned_ids < planned else [])
    unplanned = runs.where(~in_plan).select("run_id").distinct().orderBy("run_id").limit(EXAMPLES).collect()
    return Integrity(planned, rows, duplicate_run_ids=int(duplicated["ids"]), duplicate_rows=rows - ids,
                     disagreeing_run_ids=int(duplicated["differ"] or 0), missing_run_ids=planned - planned_ids,
                     unplanned_run_ids=ids - planned_ids,
                     examples={"duplicated": first_duplicated, "missing": first_missing,
                               "unplanned": [int(r["run_id"]) for r in unplanned]})


def one_row_per_run_id(runs: DataFrame) -> DataFrame:
    """The first row of each run id in a fixed order of its content: the same rows kept in any run."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    order = Window.partitionBy("run_id").orderBy(F.col("trace_hash").asc_nulls_last(), "verdict", "seed",
                                                 F.col("error").asc_nulls_first(), "wall_time_s")
    return runs.withColumn("_nth", F.row_number().over(order)).where(F.col("_nth") == 1).drop("_nth")


def wilson_sql(k: str, n: str, z: float = Z_95) -> tuple[str, str]:
    """SQL expressions of the Wilson score interval of ``k`` successes in ``n`` trials (null when n = 0)."""
    p = f"({k} / {n})"
    centre = f"({p} + {z * z / 2!r} / {n})"
    spread = f"({z!r} * sqrt({p} * (1 - {p}) / {n} + {z * z / 4!r} / ({n} * {n})))"
    scale = f"(1 + {z * z!r} / {n})"
    # Clamped to contain the rate: at k = 0 or k = n the ends differ from it only by rounding.
    return (f"CASE WHEN {n} > 0 THEN greatest(0D, least({p}, ({centre} - {spread}) / {scale})) END",
            f"CASE WHEN {n} > 0 THEN least(1D, greatest({p}, ({centre} + {spread}) / {scale})) END")


def _rate(k: str, n: str) -> str:
    low, high = wilson_sql(k, n)
    return f"CASE WHEN {n} > 0 THEN {k} / {n} END AS rate, {low} AS ci_low, {high} AS ci_high"


_MIX: Final = ("CASE WHEN size(faults_fired) = 0 THEN '(none)' "
               "ELSE array_join(array_sort(map_keys(faults_fired)), ' + ') END")

# A run's first violation is get(violations, 0), NULL for an error row, never violations[0]: Spark may
# evaluate an expression outside the CASE or WHERE that guards it (one shared by two branches is computed
# once for every row), and an index past the end of an array is an error under ANSI SQL.
QUERIES: Final[dict[str, str]] = {
    "totals": """
        SELECT count(*) AS runs,
               count_if(verdict = 'ok') AS ok,
               count_if(verdict = 'violated') AS violated,
               count_if(verdict = 'error') AS errors,
               coalesce(sum(wall_time_s), 0D) AS run_seconds,
               coalesce(sum(sim_time_ms), 0L) AS simulated_ms
        FROM runs""",
    "violations": f"""
        WITH judged AS (SELECT count_if(verdict != 'error') AS n FROM runs),
             hit AS (SELECT violation.invariant AS invariant, count(DISTINCT run_id) AS k
                     FROM runs LATERAL VIEW explode(violations) v AS violation
                     GROUP BY violation.invariant),
             every AS (SELECT invariant FROM hit UNION SELECT explode(array({{invariants}})) AS invariant)
        SELECT every.invariant, coalesce(hit.k, 0L) AS runs_violated, judged.n AS runs_judged,
               {_rate("coalesce(hit.k, 0L)", "judged.n")}
        FROM every CROSS JOIN judged LEFT JOIN hit ON hit.invariant = every.invariant
        ORDER BY every.invariant""",
    "fault_mixes": f"""
        SELECT fault_mix, n AS runs, k AS runs_violated, {_rate("k", "n")}
        FROM (SELECT {_MIX} AS fault_mix, count(*) AS n, count_if(verdict = 'violated') AS k
              FROM runs WHERE verdict != 'error' GROUP BY 1)
        ORDER BY runs DESC, fault_mix""",
    "violations_by_fault_mix": f"""
        SELECT get(violations, 0).invariant AS invariant, {_MIX} AS fault_mix, count(*) AS runs
        FROM runs WHERE verdict = 'violated'
        GROUP BY 1, 2 ORDER BY invariant, runs DESC, fault_mix""",
    "fault_coverage": f"""
        WITH judged AS (SELECT count(*) AS all_runs FROM runs WHERE verdict != 'error'),
             fired AS (SELECT kind, count(*) AS n, sum(times) AS firings, count_if(verdict = 'violated') AS k
                       FROM runs LATERAL VIEW explode(faults_fired) f AS kind, times
                       WHERE verdict != 'error' AND times > 0 GROUP BY kind)
        SELECT kind, n AS runs_fired, firings, n / all_runs AS share_of_runs, k AS runs_violated,
               {_rate("k", "n")}
        FROM fired CROSS JOIN judged ORDER BY kind""",
    "situations": """
        SELECT situation, count_if(value > 0) AS runs_reached, coalesce(sum(value), 0D) AS times
        FROM (SELECT situation, metrics[situation] AS value
              FROM runs LATERAL VIEW explode(array({situations})) s AS situation WHERE verdict != 'error')
        GROUP BY situation ORDER BY situation""",
    "situation_coverage": f"""
        WITH judged AS (SELECT count_if(verdict != 'error') AS n FROM runs),
             hit AS (SELECT situation, count(DISTINCT run_id) AS k, sum(times) AS times
                     FROM runs LATERAL VIEW explode(situations) s AS situation, times
                     WHERE verdict != 'error' AND times > 0 GROUP BY situation),
             every AS (SELECT situation FROM hit UNION SELECT explode(array({{catalogue}})) AS situation)
        SELECT every.situation, coalesce(hit.k, 0L) AS runs_reached, coalesce(hit.times, 0L) AS times,
               judged.n AS runs_judged, {_rate("coalesce(hit.k, 0L)", "judged.n")}
        FROM every CROSS JOIN judged LEFT JOIN hit ON hit.situation = every.situation
        ORDER BY every.situation""",
    "metric_percentiles": """
        SELECT metric, count(*) AS runs, avg(value) AS mean,
               percentile_approx(value, 0.5) AS p50, percentile_approx(value, 0.9) AS p90,
               percentile_approx(value, 0.99) AS p99, max(value) AS max
        FROM (SELECT metric, value FROM runs LATERAL VIEW explode(metrics) m AS metric, value
              WHERE verdict != 'error'
              UNION ALL SELECT 'wall_time_s', wall_time_s FROM runs WHERE verdict != 'error')
        GROUP BY metric ORDER BY metric""",
    "metric_histograms": f"""
        WITH v AS (SELECT metric, value FROM runs LATERAL VIEW explode(metrics) m AS metric, value
                   WHERE verdict != 'error' AND metric IN ({{histograms}})
                   UNION ALL SELECT 'wall_time_s', wall_time_s FROM runs WHERE verdict != 'error'),
             r AS (SELECT metric, min(value) AS lo, max(value) AS hi FROM v GROUP BY metric),
             b AS (SELECT metric, lo, hi,
                          CASE WHEN hi = lo THEN 0
                               ELSE least({HISTOGRAM_BINS - 1}, floor((value - lo) / (hi - lo) * {HISTOGRAM_BINS}))
                          END AS bin
                   FROM v JOIN r USING (metric))
        SELECT metric, bin, lo + bin * (hi - lo) / {HISTOGRAM_BINS} AS low,
               lo + (bin + 1) * (hi - lo) / {HISTOGRAM_BINS} AS high, count(*) AS runs
        FROM b GROUP BY metric, lo, hi, bin ORDER BY metric, bin""",
    "failure_groups": f"""
        WITH failed AS (
            SELECT run_id, seed, scenario, mutant, verdict,
                   CASE WHEN verdict = 'error' THEN 'error' ELSE get(violations, 0).invariant END AS invariant,
                   CASE WHEN verdict = 'error' THEN element_at(filter(split(error, '\\n'), l -> trim(l) != ''), -1)
                        ELSE get(violations, 0).message END AS message
            FROM runs WHERE verdict != 'ok'),
        signed AS (SELECT *, regexp_replace(message, '[0-9]+((, |-|[.][.]|/)[0-9]+)*', '#') AS signature
                   FROM failed),
        ranked AS (SELECT *, row_number() OVER (PARTITION BY invariant, signature ORDER BY run_id) AS nth
                   FROM signed),
        firsts AS (SELECT invariant, signature,
                          sort_array(collect_list(named_struct('run_id', run_id, 'seed', seed))) AS first
                   FROM ranked WHERE nth <= {FIRST_SEEDS} GROUP BY invariant, signature)
        SELECT verdict, invariant, signature, scenario, mutant, runs, example,
               transform(first, r -> r.run_id) AS run_ids, transform(first, r -> r.seed) AS seeds
        FROM (SELECT min_by(verdict, run_id) AS verdict, invariant, signature, min_by(scenario, run_id) AS scenario,
                     min_by(mutant, run_id) AS mutant, count(*) AS runs, min_by(message, run_id) AS example
              FROM signed GROUP BY invariant, signature)
        JOIN firsts USING (invariant, signature)
        ORDER BY runs DESC, invariant, signature""",
}


def _sql_strings(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values) or "''"


def catalogued_situations() -> list[str]:
    """Every situation of the catalogue, so one no run reached is reported (rate 0) too."""
    from model.situations import SITUATIONS as CATALOGUE

    return sorted(s.id for s in CATALOGUE)


def checked_invariants() -> list[str]:
    """Every invariant a run checks (the catalogue's ids), so a rate of 0 is reported too."""
    from invariants.monitors import INVARIANTS

    return sorted(INVARIANTS)


@dataclass(frozen=True)
class Summary:
    """The summary tables, as lists of plain dicts (one per row), in ``TABLES`` order."""

    tables: dict[str, list[dict[str, Any]]]
    schemas: dict[str, Any]  # table → its Spark schema (for the Parquet copy)
    integrity: Integrity | None = None

    def to_json(self, campaign: dict[str, Any]) -> dict[str, Any]:
        """``summary.json``: ``campaign`` (id, scenario, attempts, runs_per_second, ...) and the tables."""
        totals = self.tables["totals"][0]
        return {
            **campaign,
            "runs": totals["runs"],
            "ok": totals["ok"],
            "violated": totals["violated"],
            "errors": totals["errors"],
            **(self.integrity or Integrity(totals["runs"], totals["runs"])).to_json(),
            "violations": {row["invariant"]: {k: row[k] for k in ("runs_violated", "runs_judged", "rate",
                                                                      "ci_low", "ci_high")}
                           for row in self.tables["violations"]},
            "faults_fired": {row["kind"]: {"runs": row["runs_fired"], "firings": row["firings"]}
                             for row in self.tables["fault_coverage"]},
            # Per situation of the catalogue: the runs that reached it and the hit rate (95% Wilson interval).
            "situation_coverage": {row["situation"]: {k: row[k] for k in ("runs_reached", "runs_judged", "rate",
                                                                          "ci_low", "ci_high")}
                                   for row in self.tables.get("situation_coverage", [])},
            "tables": {name: rows for name, rows in self.tables.items() if name != "totals"},
        }


def summarise(spark: SparkSession, runs: DataFrame, planned: int | None = None) -> Summary:
    """Run every query of ``QUERIES`` over ``runs``, after ``check_integrity`` when ``planned`` is given
    (over one row per run id if it found duplicates)."""
    integrity = check_integrity(spark, runs, planned) if planned is not None else None
    if integrity is not None and integrity.duplicate_rows:
        runs = one_row_per_run_id(runs)
    # Not cached: each query reads only the columns it names from the Parquet files. A cached copy of every
    # row outgrew local mode's 1 GiB default heap at a million runs (benchmarks.md), and was no faster.
    runs.createOrReplaceTempView("runs")
    # The tables are small: a few shuffle partitions per core, not Spark's 200 (half the time on 2 cores).
    shuffle = spark.conf.get("spark.sql.shuffle.partitions") or "200"
    spark.conf.set("spark.sql.shuffle.partitions", str(2 * spark.sparkContext.defaultParallelism))
    tables: dict[str, list[dict[str, Any]]] = {}
    schemas: dict[str, Any] = {}
    for name in TABLES:
        query = QUERIES[name].replace("{invariants}", _sql_strings(checked_invariants()))
        query = query.replace("{situations}", _sql_strings(list(SITUATIONS)))
        query = query.replace("{catalogue}", _sql_strings(catalogued_situations()))
        query = query.replace("{histograms}", _sql_strings(list(HISTOGRAM_METRICS)))
        result = spark.sql(query)
        schemas[name] = result.schema
        tables[name] = [row.asDict(recursive=True) for row in result.collect()]
    spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    return Summary(tables, schemas, integrity)


def write_summary(summary: Summary, out: Path, campaign: dict[str, Any]) -> dict[str, Any]:
    """``out/summary/<table>.parquet`` and ``out/summary.json``; returns the JSON written.

    The tables are a few rows each, already on the driver: pyarrow writes them without a Spark job.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    (out / "summary").mkdir(parents=True, exist_ok=True)
    for name, rows in summary.tables.items():
        schema = to_arrow_schema(summary.schemas[name])
        pq.write_table(pa.Table.from_pylist(rows, schema=schema), out / "summary" / f"{name}.parquet")
    data = summary.to_json(campaign)
    (out / "summary.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    return data
