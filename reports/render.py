"""``render(DIR) -> DIR/report.html``: the report of a run, sweep or campaign directory.

The kind comes from the directory's own JSON: ``result.json`` with ``kind:
"run"`` (``sharesim run --out``), or ``summary.json`` with ``kind: "sweep"``
(``sharesim sweep``) or ``kind: "campaign"`` (a campaign's summary, which also
names its ``campaign_id``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

KINDS: Final = ("run", "sweep", "campaign")


class ReportError(ValueError):
    """The directory holds no report input, or input of an unknown kind; the message names the path."""


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def directory_kind(directory: Path) -> tuple[str, dict[str, Any]]:
    """("run" | "sweep" | "campaign", the JSON that says so)."""
    if not directory.is_dir():
        raise ReportError(f"{directory}: no such directory")
    for name in ("result.json", "summary.json"):
        data = _read(directory / name)
        if data is None:
            continue
        kind = data.get("kind", "campaign" if "campaign_id" in data else None)
        if kind not in KINDS:
            raise ReportError(f"{directory / name}: kind = {kind!r}; a report is made for kind "
                              f"{', '.join(map(repr, KINDS))}")
        return str(kind), data
    raise ReportError(f"{directory}: neither result.json (a run: `sharesim run SCENARIO --out DIR`) nor "
                      "summary.json (a sweep or campaign) is here")


def render(directory: str | Path, metrics: Sequence[str] = ()) -> Path:
    """Write the report of ``directory`` as ``directory/report.html`` and return its path.

    ``metrics`` choose the metrics a sweep report plots (default: ``sweep_report.DEFAULT_METRICS``).
    """
    path = Path(directory)
    kind, data = directory_kind(path)
    if metrics and kind != "sweep":
        raise ReportError(f"--metric {', '.join(metrics)}: {path} holds a {kind}; only a sweep report plots "
                          "chosen metrics (a run or campaign report shows every metric)")
    from scenarios.outdir import record

    record(path, "report.html")  # the directory's own file (scenarios/outdir.py), listed before it is written
    if kind == "run":
        from reports.run_report import render_run

        return render_run(path)
    if kind == "sweep":
        from reports.sweep_report import render_sweep

        return render_sweep(path, metrics)
    from reports.campaign_report import write_report

    return write_report(data, path)
