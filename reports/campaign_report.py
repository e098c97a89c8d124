"""The campaign report: ``DIR/report.html``, one self-contained page (``reports/html.py``).

It reads only ``summary.json``'s content, so it can be rebuilt without Spark:
the totals, violation rates with their 95% Wilson intervals, the distinct
failures with links to their reproducers, fault coverage and the protocol
situations reached, the fault mixes that preceded violations, metric
distributions, and with ``--validate`` the trace validation against
``tla/ShareGroup.tla`` (acceptance, rejections, spec coverage).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from reports.html import esc, figure_img, page, paragraph, section, table

MAX_ROWS: Final = 25  # rows shown of the long tables (summary.json has them all)


def _rows(rows: Sequence[dict[str, Any]], columns: Sequence[str], limit: int = MAX_ROWS) -> str:
    if not rows:
        return paragraph("(none)", "note")
    shown = table(columns, ([", ".join(map(str, v)) if isinstance(v := row.get(c), list) else v for c in columns]
                            for row in rows[:limit]))
    return shown + (paragraph(f"… {len(rows) - limit} more rows in summary.json", "note") if len(rows) > limit else "")


def _violation_figure(rows: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["rate"] is not None]
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1))
    rates = [r["rate"] for r in rows]
    errors = [[r["rate"] - r["ci_low"] for r in rows], [r["ci_high"] - r["rate"] for r in rows]]
    ax.errorbar(rates, range(len(rows)), xerr=errors, fmt="o", capsize=3, color="#cf222e")
    ax.set_yticks(range(len(rows)), [r["invariant"] for r in rows])
    ax.set_xlabel("violation rate (95% Wilson interval)")
    ax.set_xlim(left=0)
    ax.invert_yaxis()
    return figure_img(fig, "violation rate per invariant with 95% Wilson intervals")


def _coverage_figure(rows: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt

    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rows) + 1))
    ax.barh(range(len(rows)), [r["share_of_runs"] for r in rows], color="#3a6ea5")
    ax.set_yticks(range(len(rows)), [r["kind"] for r in rows])
    ax.set_xlabel("share of runs in which the fault fired")
    ax.invert_yaxis()
    return figure_img(fig, "fault coverage: share of runs in which each fault kind fired")


def _histogram_figure(bins: list[dict[str, Any]]) -> str:
    import matplotlib.pyplot as plt

    metrics = sorted({b["metric"] for b in bins})
    if not metrics:
        return ""
    fig, axes = plt.subplots(1, len(metrics), figsize=(3.2 * len(metrics), 2.6), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        mine = [b for b in bins if b["metric"] == metric]
        ax.bar([b["low"] for b in mine], [b["runs"] for b in mine],
               width=[max(b["high"] - b["low"], 1e-9) for b in mine], align="edge", color="#5b8c5a")
        ax.set_title(metric, fontsize=9)
        ax.set_ylabel("runs")
    fig.tight_layout()
    return figure_img(fig, "distributions of latency p99, redeliveries, convergence time and wall time per run")


def _reproducers(data: dict[str, Any]) -> str:
    items = []
    for r in data.get("reproducers", []):
        outcome = "reproduced" if r["reproduced"] else "not reproduced"
        # A run that raised has no run report: its re-run's traceback is what there is to read.
        target = "traceback.txt" if r["invariant"] == "error" else "report.html"
        items.append(f'<li>{esc(r["invariant"])} <code>{esc(r["signature"])}</code>: '
                     f'<a href="{esc(r["path"])}/{target}">run {r["run_id"]}, seed {r["seed"]}</a> ({outcome})<br>'
                     f'<code>{esc(r["command"])}</code>{_shrunk(r.get("shrunk"))}</li>')
    return f"<ul>{''.join(items)}</ul>" if items else paragraph("(no failure to reproduce)", "note")


def _verdict(data: dict[str, Any]) -> str:
    """The headline: runs that raised first (the verdict cannot be trusted while the simulator fails),
    then violations; green only when every run finished and held every invariant."""
    runs, errors, violated = data["runs"], data["errors"], data["violated"]
    parts = []
    if errors:
        groups = [g for g in data["tables"]["failure_groups"] if g["invariant"] == "error"]
        commands: dict[str, str] = {}
        for r in data.get("reproducers", []):
            if r["invariant"] == "error":
                commands.setdefault(r["signature"], r["command"])
        parts.append(paragraph(f"{errors} of {runs} run(s) raised an error, a defect of the simulator: "
                               f"{len(groups)} distinct error(s)", "bad"))
        parts.append("<ul>" + "".join(  # the first run's own line (the signature blanks its numbers)
            f'<li class="bad"><code>{esc(g["example"])}</code> in {g["runs"]} run(s)'
            + (f': <code>{esc(commands[g["signature"]])}</code>' if g["signature"] in commands else "") + "</li>"
            for g in groups) + "</ul>")
    if violated:
        parts.append(paragraph(f"{violated} of {runs} run(s) violated an invariant", "bad"))
    elif errors and runs > errors:
        parts.append(paragraph(f"no invariant was violated in the {runs - errors} run(s) that finished", "note"))
    elif not errors:
        parts.append(paragraph(f"no invariant was violated in {runs} run(s)", "ok"))
    return "".join(parts)


def _shrunk(shrunk: dict[str, Any] | None) -> str:
    if not shrunk:
        return ""
    if "error" in shrunk:
        return f"<br>not shrunk: {esc(shrunk['error'])}"
    return (f'<br><a href="{esc(shrunk["path"])}">shrunk</a> in {shrunk["runs"]} runs '
            f'({esc(", ".join(shrunk["changes"]))}): <code>{esc(shrunk["command"])}</code>')


def _validation(data: dict[str, Any]) -> str:
    """The ``--validate`` section (``scenarios/campaign/validation.py``), empty without one."""
    v = data.get("validation")
    if not v:
        return ""
    verdict = (paragraph(f"{v['accepted']} of {v['validated']} validated run(s) accepted "
                         f"({100 * v['acceptance_rate']:.1f}% of those with a verdict)",
                         "ok" if v["accepted"] == v["validated"] else "bad"))
    if v["rejected"]:
        verdict += paragraph(f"{v['rejected']} trace(s) rejected: the simulator did what ShareGroup.tla does not "
                             "allow (a simulator bug, a spec bug or an abstraction gap: tla/README.md, Triage)", "bad")
    if v["errors"]:
        verdict += paragraph(f"{v['errors']} validation(s) reached no verdict (Java, TLC or the run failed)", "bad")
    never = v["never"]
    return section(
        "Trace validation against tla/ShareGroup.tla",
        paragraph(f"The first {v['planned']} run ids re-run with the projection and checked by TLC "
                  f"({v['tlc_seconds']:.0f} s of TLC, {v['wall_time_s']:.0f} s in all)."),
        verdict,
        paragraph("Distinct rejections and errors, grouped by the first unmatched step with its numbers blanked, "
                  "each with the command that reproduces its first run:"),
        _rows(v["groups"], ["outcome", "runs", "example", "rejected_event", "seed", "command"]),
        paragraph("Spec coverage: per action of the spec (and the cases that matter), the validated runs that took "
                  "it and how often, over the matched part of each trace."),
        _rows(v["coverage"], ["action", "runs", "times"], 100),
        paragraph("Never taken: " + ", ".join(never), "bad") if never else paragraph("Every action was taken.", "ok"))


def render(data: dict[str, Any]) -> str:
    """The report's HTML from summary.json's content."""
    tables = data["tables"]
    verdict = _verdict(data)
    if data.get("inconsistent"):  # first: the counts below cannot be trusted
        verdict = paragraph(data["inconsistent_message"], "bad") + verdict
    totals = {"scenario": data["scenario"], "mutant": data.get("mutant") or "-", "runs": data["runs"],
              "ok": data["ok"], "violated": data["violated"], "errors": data["errors"],
              "runs per second": data["runs_per_second"], "build": data.get("build", "-"),
              "attempts": len(data.get("attempts", []))}
    return page(
        f"sharesim campaign {data['campaign_id']}",
        verdict,
        table(list(totals), [list(totals.values())]),
        section("Violation rates",
                paragraph("Runs that violated each invariant among the runs that finished (errors excluded), "
                          "with the 95% Wilson score interval."),
                _violation_figure(tables["violations"]),
                _rows(tables["violations"], ["invariant", "runs_violated", "runs_judged", "rate", "ci_low",
                                             "ci_high"])),
        section("Distinct failures and their reproducers",
                paragraph("Grouped by invariant and the first violation's message with its numbers blanked "
                          "(errors: the traceback's last line); the first seeds of each group were re-run with "
                          "full tracing."),
                _rows(tables["failure_groups"], ["verdict", "invariant", "signature", "runs", "run_ids", "seeds"]),
                _reproducers(data)),
        section("Fault coverage",
                _coverage_figure(tables["fault_coverage"]),
                _rows(tables["fault_coverage"], ["kind", "runs_fired", "firings", "share_of_runs", "runs_violated",
                                                 "rate", "ci_low", "ci_high"]),
                paragraph("Protocol situations the runs reached (counted by the simulation's metrics):"),
                _rows(tables["situations"], ["situation", "runs_reached", "times"])),
        section("Situation coverage",
                paragraph("Per protocol situation of the catalogue (sharesim situations), the runs that reached "
                          "it among the runs that finished, with the 95% Wilson score interval of the hit rate; "
                          "the least reached first."),
                _rows(sorted(tables.get("situation_coverage", []), key=lambda r: (r["runs_reached"], r["situation"])),
                      ["situation", "runs_reached", "times", "runs_judged", "rate", "ci_low", "ci_high"], 100)),
        section("Fault mixes and the violations they preceded",
                paragraph("A run's mix is the set of fault kinds that fired in it; a run stops at its first "
                          "violation, so they are the faults that preceded it."),
                _rows(tables["fault_mixes"], ["fault_mix", "runs", "runs_violated", "rate", "ci_low", "ci_high"]),
                _rows(tables["violations_by_fault_mix"], ["invariant", "fault_mix", "runs"])),
        section("Metric distributions",
                _histogram_figure(tables["metric_histograms"]),
                _rows(tables["metric_percentiles"], ["metric", "runs", "mean", "p50", "p90", "p99", "max"], 100)),
        _validation(data),
    )


def write_report(data: dict[str, Any], out: Path) -> Path:
    """Write ``out/report.html``; returns its path."""
    path = out / "report.html"
    path.write_text(render(data))
    return path
