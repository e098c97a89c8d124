"""The report of a sweep directory: ``render_sweep(DIR) -> DIR/report.html``.

A sweep directory holds ``runs.parquet`` (one row per run, ``reports.rows``)
and ``summary.json`` (``kind: "sweep"``). For each chosen metric the report
aggregates the runs of every grid point over their seeds (pandas): the mean and
a 95% confidence interval of the mean (Student's t over the seeds), then plots
it against the swept parameters:

* one parameter: the mean against it, the interval as a band, each seed a dot;
* two: a heatmap of the mean over the grid (each cell: mean ± half-width) and
  the mean against the first parameter, one line and band per value of the second;
* more: the mean against each parameter, the others averaged over.

Metrics are the run's metrics (``metrics['latency_p99_ms']`` …) and three
derived ones: ``redelivery_rate`` (redeliveries / records delivered),
``violated`` (1 for a violated run: its mean is the violation rate) and
``wall_time_s``. Runs that raised (verdict ``error``) are counted, not averaged.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from reports import html
from reports.render import ReportError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

RUNS: Final = "runs.parquet"
SUMMARY: Final = "summary.json"
REPORT: Final = "report.html"
DEFAULT_METRICS: Final = ("redelivery_rate", "latency_p99_ms", "offsets_archived_or_skipped", "violated")
DERIVED: Final = ("redelivery_rate", "violated", "wall_time_s")
class SweepDirError(ReportError):
    """A sweep directory is missing a file or a chosen metric is unknown; the message names it."""


def load_runs(directory: Path) -> tuple[pd.DataFrame, list[str], dict[str, Any]]:
    """The runs as one flat frame (a column per parameter and per metric), the parameter names and the summary."""
    runs_file, summary_file = directory / RUNS, directory / SUMMARY
    if not runs_file.is_file():
        raise SweepDirError(f"{runs_file}: missing (a sweep directory is written by `sharesim sweep ... --out DIR`)")
    summary = json.loads(summary_file.read_text(encoding="utf-8")) if summary_file.is_file() else {}
    raw = pd.read_parquet(runs_file)
    records = []
    names: list[str] = []
    row: dict[str, Any]
    for row in raw.to_dict("records"):  # type: ignore[assignment]  # the rows.py schema: str column names
        params = {key: _hashable(json.loads(value)) for key, value in (row["params"] or [])}
        for key in params:
            if key not in names:
                names.append(key)
        metrics: dict[str, float] = dict(row["metrics"] or [])
        delivered = metrics.get("records_delivered") or 0.0
        metrics["redelivery_rate"] = metrics.get("redeliveries", 0.0) / delivered if delivered else math.nan
        metrics["violated"] = 1.0 if row["verdict"] == "violated" else 0.0
        metrics["wall_time_s"] = row["wall_time_s"]
        records.append({"seed": row["seed"], "verdict": row["verdict"], **{f"param:{k}": v for k, v in params.items()},
                        **{f"metric:{k}": v for k, v in metrics.items()}})
    given = summary.get("params")
    if isinstance(given, dict):  # the order the sweep was given in (rows hold their params sorted)
        names.sort(key=lambda name: list(given).index(name) if name in given else len(given))
    return pd.DataFrame.from_records(records), names, summary


def _hashable(value: Any) -> Any:
    """A parameter value pandas can group by: a list or table (a distribution …) stays JSON text."""
    return json.dumps(value, sort_keys=True) if isinstance(value, list | dict) else value


def aggregate(runs: pd.DataFrame, params: Sequence[str], metric: str) -> pd.DataFrame:
    """Per grid point: count, mean and the 95% interval [low, high] of the mean over its finished runs
    (``scenarios.sweep.mean_interval``: Student's t; no width with one run)."""
    from scenarios.sweep import mean_interval

    keys = [f"param:{p}" for p in params]
    judged = runs[runs["verdict"] != "error"]
    groups = judged.groupby(keys, sort=True) if keys else [((), judged)]
    rows = []
    for point, part in groups:
        values = [float(v) for v in part[f"metric:{metric}"] if not pd.isna(v)]
        interval = mean_interval(values)
        mean = math.nan if interval["mean"] is None else interval["mean"]
        low = mean if interval["low"] is None else interval["low"]
        high = mean if interval["high"] is None else interval["high"]
        at = point if isinstance(point, tuple) else (point,)
        rows.append({**dict(zip(keys, at, strict=True)), "count": interval["n"], "mean": mean, "low": low,
                     "high": high})
    return pd.DataFrame(rows, columns=[*keys, "count", "mean", "low", "high"])


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)


def _positions(values: Sequence[Any]) -> tuple[list[float], list[str] | None]:
    """x positions of parameter values: the numbers themselves, or 0, 1, … with labels."""
    if _numeric(values):
        return [float(v) for v in values], None
    keys = sorted({json.dumps(v, sort_keys=True) for v in values})
    labels = [v if isinstance(v, str) else k for k, v in ((k, json.loads(k)) for k in keys)]  # text unquoted
    return [float(keys.index(json.dumps(v, sort_keys=True))) for v in values], labels


def _line(ax: Axes, table: pd.DataFrame, param: str, label: str | None, colour: str) -> None:
    xs, labels = _positions(table[f"param:{param}"].tolist())
    order = sorted(range(len(xs)), key=xs.__getitem__)
    x = [xs[i] for i in order]
    ax.plot(x, [table["mean"].iloc[i] for i in order], marker="o", color=colour, label=label, lw=1.6)
    ax.fill_between(x, [table["low"].iloc[i] for i in order], [table["high"].iloc[i] for i in order],
                    color=colour, alpha=0.18, lw=0)
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels, fontsize=8, rotation=20)


def _seed_dots(ax: Axes, runs: pd.DataFrame, param: str, metric: str) -> None:
    judged = runs[runs["verdict"] != "error"]
    xs, _ = _positions(judged[f"param:{param}"].tolist())
    ax.scatter(xs, judged[f"metric:{metric}"], s=10, color="#444444", alpha=0.5, label="one seed", zorder=3)


COLOURS: Final = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def metric_figure(runs: pd.DataFrame, params: Sequence[str], metric: str) -> str:
    """The plots of ``metric`` against the swept ``params`` (see the module docstring)."""
    import matplotlib.pyplot as plt

    if not params:
        return html.paragraph("Nothing was swept: one grid point.", "note")
    if len(params) == 1:
        fig, ax = plt.subplots(figsize=(7.5, 4))
        _line(ax, aggregate(runs, params, metric), params[0], "mean (95% CI band)", COLOURS[0])
        _seed_dots(ax, runs, params[0], metric)
        _axes(ax, params[0], metric)
        ax.legend(fontsize=8)
    elif len(params) == 2:
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
        table = aggregate(runs, params, metric)
        _heatmap(fig, left, table, params, metric)
        first, second = params
        for i, (value, part) in enumerate(table.groupby(f"param:{second}", sort=True)):
            at = value[0] if isinstance(value, tuple) else value
            _line(right, part, first, f"{axis_label(second)} = {at!s}", COLOURS[i % len(COLOURS)])
        _axes(right, first, metric)
        right.legend(fontsize=8, title="mean, 95% CI band", title_fontsize=8)
    else:
        fig, axes = plt.subplots(1, len(params), figsize=(4.2 * len(params), 4), squeeze=False)
        for ax, param in zip(axes[0], params, strict=True):
            _line(ax, aggregate(runs, [param], metric), param, None, COLOURS[0])
            _axes(ax, param, metric)
        fig.suptitle(f"{metric}: mean over seeds and the other parameters, 95% CI band", fontsize=10)
    fig.tight_layout()
    return html.figure_img(fig, f"{metric} against {', '.join(params)}")


def axis_label(key: str) -> str:
    """A swept key path as an axis label: the Kafka key of a config path, else the path itself."""
    quoted = re.findall(r'"([^"]+)"', key)
    return quoted[-1] if quoted else key


def _axes(ax: Axes, param: str, metric: str) -> None:
    ax.set_xlabel(axis_label(param))
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)


def _heatmap(fig: Any, ax: Axes, table: pd.DataFrame, params: Sequence[str], metric: str) -> None:
    first, second = params
    xs = _ordered(table[f"param:{first}"].unique().tolist())
    ys = _ordered(table[f"param:{second}"].unique().tolist())
    grid = [[math.nan] * len(xs) for _ in ys]
    text = [[""] * len(xs) for _ in ys]
    for x, y, mean, low, high, count in zip(table[f"param:{first}"], table[f"param:{second}"], table["mean"],
                                            table["low"], table["high"], table["count"], strict=True):
        i, j = ys.index(y), xs.index(x)
        grid[i][j] = float(mean)
        text[i][j] = mean_text(mean, low, high, count, _short, _short, "\n")
    image = ax.imshow(grid, origin="lower", aspect="auto", cmap="viridis")
    for i in range(len(ys)):
        for j in range(len(xs)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=8, color="white",
                    path_effects=_outline())
    ax.set_xticks(range(len(xs)), [str(v) for v in xs], fontsize=8)
    ax.set_yticks(range(len(ys)), [str(v) for v in ys], fontsize=8)
    ax.set_xlabel(axis_label(first))
    ax.set_ylabel(axis_label(second))
    ax.set_title(f"{metric}: mean over seeds ± 95% CI half-width", fontsize=10)
    fig.colorbar(image, ax=ax, label=metric)


def mean_text(mean: float, low: float, high: float, count: int, number: Callable[[float], str],
              half_number: Callable[[float], str], sep: str) -> str:
    """A grid point's mean and the half-width of its 95% interval: "-" when no finished run has the metric
    (e.g. a redelivery rate with nothing delivered), the mean alone from one run (one seed: no interval)."""
    if math.isnan(mean):
        return "-"
    if count < 2:
        return number(mean)
    return f"{number(mean)}{sep}±{half_number((high - low) / 2)}"


def _short(value: float) -> str:
    """A number for a heatmap cell: whole above 100 (no exponent), else three digits."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _ordered(values: Sequence[Any]) -> list[Any]:
    """Numbers by value, anything else by its JSON text."""
    if _numeric(values):
        return sorted(values)
    return sorted(values, key=lambda v: json.dumps(v, sort_keys=True))


def _outline() -> list[Any]:
    from matplotlib import patheffects

    return [patheffects.withStroke(linewidth=2, foreground="black")]


def available_metrics(runs: pd.DataFrame) -> list[str]:
    return sorted(c.removeprefix("metric:") for c in runs.columns if c.startswith("metric:"))


def render_sweep(directory: Path, metrics: Sequence[str] = ()) -> Path:
    """Write ``DIR/report.html`` for the sweep in ``DIR``; ``metrics`` default to ``DEFAULT_METRICS`` (those
    present)."""
    runs, params, summary = load_runs(directory)
    known = available_metrics(runs) if not runs.empty else list(DERIVED)
    unknown = [m for m in metrics if m not in known]
    if unknown:
        raise SweepDirError(f"--metric {', '.join(unknown)}: not a metric of {directory / RUNS}; "
                            f"known: {', '.join(known)}")
    chosen = list(metrics) or [m for m in DEFAULT_METRICS if m in known]
    parts = [_summary(summary, runs, params)]
    for metric in chosen:
        parts.append(html.section(metric, metric_figure(runs, params, metric)))
    parts.append(html.section("Per grid point", _grid_table(runs, params, chosen)))
    title = f"sharesim sweep {summary.get('scenario', '')}".strip()
    target = directory / REPORT
    target.write_text(html.page(title, *parts), encoding="utf-8")
    return target


def _summary(summary: dict[str, Any], runs: pd.DataFrame, params: Sequence[str]) -> str:
    scalars = [(k, json.dumps(v) if isinstance(v, list | dict) else v) for k, v in summary.items()
               if not isinstance(v, dict) and len(json.dumps(v, default=str)) < 200]
    verdicts = runs["verdict"].value_counts().to_dict() if not runs.empty else {}
    lines = [("runs", len(runs)), ("swept", ", ".join(params) or "nothing"),
             *((f"verdict {k}", v) for k, v in sorted(verdicts.items()))]
    return html.table(("", ""), [*lines, *scalars])


def _grid_table(runs: pd.DataFrame, params: Sequence[str], metrics: Sequence[str]) -> str:
    if runs.empty:
        return html.paragraph("No run.", "note")
    keys = [f"param:{p}" for p in params] or ["all"]
    runs = runs.assign(all="all") if not params else runs
    table = runs.groupby(keys, sort=True)["verdict"].value_counts().unstack(fill_value=0).reset_index()
    verdicts = [str(c) for c in table.columns if c not in keys]
    for metric in metrics:
        agg = aggregate(runs, params, metric) if params else aggregate(runs, [], metric).assign(all="all")
        agg[metric] = [mean_text(m, lo, h, n, "{:.4g}".format, " {:.2g}".format, " ")
                       for m, lo, h, n in zip(agg["mean"], agg["low"], agg["high"], agg["count"], strict=True)]
        table = table.merge(agg[[*keys, metric]], on=keys, how="left")
    headers = [*(params or ["grid point"]), *verdicts, *(f"{m} (mean ± 95% CI)" for m in metrics)]
    return html.table(headers, [["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in row]
                                for row in table.itertuples(index=False)])
