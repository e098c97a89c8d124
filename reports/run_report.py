"""The report of one run directory (``reports.run_dir``): ``render_run(DIR) -> DIR/report.html``.

Sections, top to bottom: the verdict and the reproducer; the violation
(``reports.violation_report``) when an invariant broke; per share-partition
timelines of SPSO and SPEO, and of in-flight, acquired and archived counts,
with fault intervals shaded; group, assignment and member epochs over time;
deliveries and end-to-end latency over time; the delivery-count histogram;
the end-to-end latency CDF; the faults fired, the invariants checked and the
metrics, as tables.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from reports import html
from reports.checked import checked_invariants, find
from reports.render import ReportError
from reports.run_dir import REPORT, RESULT, TIMELINE, TRACE

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MAX_PARTITION_PANELS: Final = 12
FAULT_COLOURS: Final = ("#f4a261", "#e76f51", "#2a9d8f", "#8ab17d", "#e9c46a", "#9b5de5", "#f15bb5", "#00bbf9")


class RunDirError(ReportError):
    """A run directory is missing a file or holds one that cannot be read; the message names it."""


def load_run(directory: Path) -> tuple[dict[str, Any], pd.DataFrame]:
    """``result.json`` and ``timeline.parquet`` of a run directory."""
    result_file, timeline_file = directory / RESULT, directory / TIMELINE
    for needed in (result_file, timeline_file):
        if not needed.is_file():
            raise RunDirError(f"{needed}: missing (a run directory is written by `sharesim run SCENARIO --out DIR`)")
    try:
        result = json.loads(result_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise RunDirError(f"{result_file}: not JSON ({exc})") from exc
    return result, pd.read_parquet(timeline_file)


def render_run(directory: Path) -> Path:
    """Write ``DIR/report.html`` for the run in ``DIR``; returns its path."""
    from reports.violation_report import violation_section

    result, timeline = load_run(directory)
    samples = result.get("samples", {})
    faults = samples.get("fault_intervals", [])
    end_ms = int(result.get("sim_time_ms", 0))
    parts = [_summary(result)]
    if result.get("violations"):
        parts.append(violation_section(result, directory / TRACE))
    parts += [
        html.section("Share-partitions: SPSO and SPEO",
                     html.paragraph("The in-flight window of each share-partition is the band between its SPSO and "
                                    "SPEO. Shaded: faults in force; dotted lines: instant faults.", "note"),
                     _partition_figure(timeline, ("spso", "speo"), "offset", faults, end_ms)),
        html.section("Share-partitions: in-flight, acquired and archived records",
                     html.paragraph("in-flight = SPEO - SPSO; acquired = records locked by a consumer now; "
                                    "archived = records the group resolved without an accept so far.", "note"),
                     _partition_figure(timeline, ("in_flight", "acquired", "archived"), "records", faults, end_ms)),
        html.section("Group, assignment and member epochs", _epochs_figure(timeline, faults, end_ms)),
        html.section("Deliveries and end-to-end latency over time", _delivery_figure(timeline, faults, end_ms)),
        html.section("Delivery counts and end-to-end latency",
                     _histogram_and_cdf(samples.get("delivery_counts", {}), samples.get("latency_quantiles", []))),
        html.section("Faults fired", _faults_table(faults, end_ms)),
        html.section("Invariants checked", _invariants_table(result)),
        html.section("Metrics", html.table(("metric", "value"), sorted(result.get("metrics", {}).items()))),
    ]
    title = f"sharesim run {result.get('scenario_ref', result.get('scenario'))} --seed {result.get('seed')}"
    target = directory / REPORT
    target.write_text(html.page(title, *parts), encoding="utf-8")
    return target


# -- tables -------------------------------------------------------------------------------------


def _summary(result: dict[str, Any]) -> str:
    verdict = str(result.get("verdict"))
    css = "ok" if verdict == "ok" else "bad"
    rows = [
        ("scenario", result.get("scenario")),
        ("seed", result.get("seed")),
        ("mutant", result.get("mutant") or "none"),
        ("trace hash", result.get("trace_hash")),
        ("simulated time", f"{result.get('sim_time_ms')} ms"),
        ("events (simulator steps)", result.get("events")),
        ("wall time", f"{result.get('wall_time_s')} s"),
        ("reproduce with", result.get("command", "")),
    ]
    drawn = result.get("swarm_config") or {}
    if drawn:
        rows.insert(3, ("settings the swarm drew", ", ".join(f"{k} = {v}" for k, v in sorted(drawn.items()))))
    notes = "".join(html.paragraph(f"Note: {note}", "note") for note in result.get("notes") or [])
    return (f'<p>Verdict: <span class="{css}">{html.esc(verdict)}</span></p>' + notes
            + html.table(("", ""), rows))


def _faults_table(faults: list[dict[str, Any]], end_ms: int) -> str:
    if not faults:
        return html.paragraph("No fault fired.")
    rows = []
    for f in faults:
        if not f["durational"]:
            end = "(instant)"
        elif f["end_ms"] is None:
            end = f"still in force at the end ({end_ms} ms)"
        else:
            end = f["end_ms"]
        rows.append((f["index"], f["kind"], f["target"], f["start_ms"], end))
    return html.table(("plan index", "fault", "target", "start ms", "end ms"), rows)


def _invariants_table(result: dict[str, Any]) -> str:
    broken: dict[str, int] = {}
    for v in result.get("violations", []):
        entry = find(v["invariant"])
        name = entry.id if entry is not None else v["invariant"]
        broken[name] = broken.get(name, 0) + 1
    stopped = result.get("verdict") != "ok"
    rows = []
    for checked in checked_invariants():
        if checked.id in broken:
            outcome = f"VIOLATED ({broken.pop(checked.id)}x)"
        elif checked.kind == "liveness" and stopped:
            outcome = "not reached (the run stopped at a violation)"
        else:
            outcome = "held"
        rows.append((checked.id, checked.spec, checked.kind, checked.statement, outcome))
    rows += [(name, "", "", "(not in the catalogue)", f"VIOLATED ({n}x)") for name, n in sorted(broken.items())]
    return html.table(("id", "SPEC rule", "kind", "statement", "outcome"), rows)


# -- figures ------------------------------------------------------------------------------------


def _shade_faults(ax: Axes, faults: list[dict[str, Any]], end_ms: int, colours: dict[str, str]) -> None:
    for f in faults:
        colour = colours[f["kind"]]
        if f["durational"]:
            end = f["end_ms"] if f["end_ms"] is not None else end_ms
            ax.axvspan(f["start_ms"] / 1000, end / 1000, color=colour, alpha=0.18, lw=0)
        else:
            ax.axvline(f["start_ms"] / 1000, color=colour, ls=":", lw=1.5)


def _fault_colours(faults: list[dict[str, Any]]) -> dict[str, str]:
    kinds = sorted({f["kind"] for f in faults})
    return {kind: FAULT_COLOURS[i % len(FAULT_COLOURS)] for i, kind in enumerate(kinds)}


def _fault_legend(fig: Any, faults: list[dict[str, Any]], colours: dict[str, str]) -> None:
    from matplotlib.patches import Patch

    if faults:
        handles = [Patch(color=colour, alpha=0.5, label=kind) for kind, colour in colours.items()]
        fig.legend(handles=handles, loc="upper right", title="faults", fontsize=8, title_fontsize=8,
                   bbox_to_anchor=(1.0, 1.0), ncol=min(4, len(handles)))


def _steps(ax: Axes, frame: pd.DataFrame, label: str, **style: Any) -> None:
    ax.step(frame["time_ms"] / 1000, frame["value"], where="post", label=label, **style)


def _empty(text: str) -> str:
    return html.paragraph(text, "note")


SERIES_STYLE: Final = {
    "spso": {"color": "#1f77b4", "lw": 1.6},
    "speo": {"color": "#ff7f0e", "lw": 1.2, "ls": "--"},
    "in_flight": {"color": "#7f7f7f", "lw": 1.2},
    "acquired": {"color": "#2ca02c", "lw": 1.4},
    "archived": {"color": "#d62728", "lw": 1.4},
}


def _timeline_axes(lines: int, columns: int, height: float, faults: list[dict[str, Any]],
                   end_ms: int) -> tuple[Any, Any, dict[str, str]]:
    """A grid of time axes sharing x, each shaded with the faults; (figure, axes[line][column], fault colours)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(lines, columns, figsize=(11, height), sharex=True, squeeze=False)
    colours = _fault_colours(faults)
    for ax in axes.flat:
        _shade_faults(ax, faults, end_ms, colours)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    for ax in axes[-1]:
        ax.set_xlabel("simulated time (s)", fontsize=9)
    return fig, axes, colours


def _finish(fig: Any, faults: list[dict[str, Any]], colours: dict[str, str], alt: str) -> str:
    """The fault legend above the axes, and the figure as an ``<img>``."""
    _fault_legend(fig, faults, colours)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / fig.get_figheight() if faults else 1))
    return html.figure_img(fig, alt)


def _partition_figure(timeline: pd.DataFrame, series: tuple[str, ...], unit: str, faults: list[dict[str, Any]],
                      end_ms: int) -> str:
    rows = timeline[timeline["series"].isin(series)]
    subjects = sorted(rows["subject"].unique(), key=_natural)
    if not subjects:
        return _empty("No share-partition was sampled (no share group, or no leader became active).")
    shown = subjects[:MAX_PARTITION_PANELS]
    columns = 2 if len(shown) > 1 else 1
    lines = -(-len(shown) // columns)
    fig, axes, colours = _timeline_axes(lines, columns, 2.3 * lines + 0.6, faults, end_ms)
    for ax, subject in zip(axes.flat, shown, strict=False):
        mine = rows[rows["subject"] == subject]
        for name in series:
            _steps(ax, mine[mine["series"] == name], name.replace("_", "-"), **SERIES_STYLE[name])
        ax.set_title(subject, fontsize=10)
        ax.set_ylabel(unit, fontsize=9)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=8, loc="upper left")
    note = "" if len(subjects) == len(shown) else _empty(f"The first {len(shown)} of {len(subjects)} "
                                                         "share-partitions are shown.")
    return _finish(fig, faults, colours, f"{', '.join(series)} per share-partition over time") + note


def _epochs_figure(timeline: pd.DataFrame, faults: list[dict[str, Any]], end_ms: int) -> str:
    groups = timeline[timeline["series"].isin(("group_epoch", "assignment_epoch"))]
    members = timeline[timeline["series"] == "member_epoch"]
    if groups.empty and members.empty:
        return _empty("No group was sampled.")
    fig, axes, colours = _timeline_axes(2, 1, 5.5, faults, end_ms)
    top, bottom = axes[0][0], axes[1][0]
    for group in sorted(groups["subject"].unique()):
        mine = groups[groups["subject"] == group]
        # The group epoch wide and pale under the assignment epoch: equal, they read as one line.
        _steps(top, mine[mine["series"] == "group_epoch"], f"{group}: group epoch", lw=4, alpha=0.35)
        _steps(top, mine[mine["series"] == "assignment_epoch"], f"{group}: assignment epoch", lw=1.4, ls="--")
    top.set_ylabel("epoch (coordinator)", fontsize=9)
    top.set_title("group epoch and assignment epoch, as the group coordinator holds them", fontsize=10)
    top.legend(fontsize=8, loc="upper left")
    for member in sorted(members["subject"].unique(), key=_natural):
        _steps(bottom, members[members["subject"] == member], member, lw=1.2)
    bottom.set_ylabel("member epoch (client)", fontsize=9)
    bottom.set_title("member epoch of each consumer (0: joining; a gap: the consumer is down)", fontsize=10)
    if members["subject"].nunique() <= 12:
        bottom.legend(fontsize=8, loc="upper left", ncol=4)
    return _finish(fig, faults, colours, "group, assignment and member epochs over time")


def _delivery_figure(timeline: pd.DataFrame, faults: list[dict[str, Any]], end_ms: int) -> str:
    run = timeline[timeline["subject"] == "run"]
    if run.empty:
        return _empty("No delivery was sampled.")
    fig, axes, colours = _timeline_axes(2, 1, 4.8, faults, end_ms)
    top, bottom = axes[0][0], axes[1][0]
    for series, style in (("delivered", {"color": "#1f77b4"}), ("redeliveries", {"color": "#d62728"})):
        _steps(top, run[run["series"] == series], series, lw=1.5, **style)
    top.set_ylabel("records (cumulative)", fontsize=9)
    top.legend(fontsize=8, loc="upper left")
    for series, style in (("latency_p50", {"color": "#2ca02c"}), ("latency_p99", {"color": "#ff7f0e"}),
                          ("latency_max", {"color": "#7f7f7f"})):
        frame = run[run["series"] == series]
        # Points, not lines: a quiet stretch has no sample, and a line across it would invent values.
        bottom.plot(frame["time_ms"] / 1000, frame["value"], marker="o", ms=3, ls="none", label=series, **style)
    bottom.set_ylabel("end-to-end latency (ms)", fontsize=9)
    bottom.set_title("latency of the records accepted in each sample interval", fontsize=10)
    bottom.legend(fontsize=8, loc="upper left")
    return _finish(fig, faults, colours, "deliveries and end-to-end latency over time")


def _histogram_and_cdf(delivery_counts: dict[str, int], latency_quantiles: list[list[float]]) -> str:
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    if delivery_counts:
        counts = sorted((int(k), v) for k, v in delivery_counts.items())
        left.bar([str(k) for k, _ in counts], [v for _, v in counts], color="#1f77b4")
        for i, (_, v) in enumerate(counts):
            left.annotate(str(v), (i, v), ha="center", va="bottom", fontsize=8)
        if max(v for _, v in counts) > 50 * min(v for _, v in counts):
            left.set_yscale("log")
    else:
        left.text(0.5, 0.5, "no record was acquired", ha="center", transform=left.transAxes)
    left.set_xlabel("delivery count")
    left.set_ylabel("records acquired")
    left.set_title("delivery-count histogram", fontsize=10)
    left.grid(alpha=0.3, axis="y")
    if latency_quantiles:
        fractions = [q for q, _ in latency_quantiles]
        values = [v for _, v in latency_quantiles]
        right.step(values, fractions, where="post", color="#2ca02c", lw=1.6)
        if values[-1] > 20 * max(1, values[0]):
            right.set_xscale("log")
    else:
        right.text(0.5, 0.5, "no record was acknowledged", ha="center", transform=right.transAxes)
    right.set_xlabel("end-to-end latency (ms, from produce to processed, accepted records)")
    right.set_ylabel("fraction of records")
    right.set_ylim(0, 1.02)
    right.set_title("end-to-end latency CDF", fontsize=10)
    right.grid(alpha=0.3)
    fig.tight_layout()
    return html.figure_img(fig, "delivery-count histogram and end-to-end latency CDF")


def _natural(text: str) -> tuple[str, int]:
    """"orders-2" before "orders-10", "c2" before "c10"."""
    head = text.rstrip("0123456789")
    tail = text[len(head):]
    return head, int(tail) if tail else -1
