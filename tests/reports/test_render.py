"""``reports.render(DIR)``: which report a directory gets, and clear errors for the rest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import reports
from reports.render import ReportError, directory_kind
from reports.run_dir import run_to_dir
from scenarios import library


def test_a_run_directory_renders_its_run_report(tmp_path: Path) -> None:
    run_to_dir(library.get("small"), 1, tmp_path)
    (tmp_path / "report.html").unlink()
    assert reports.render(tmp_path) == tmp_path / "report.html"
    assert "sharesim run small --seed 1" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize(("files", "message"), [
    ({}, "neither result.json"),
    ({"summary.json": '{"kind": "nonsense"}'}, "kind = 'nonsense'"),
    ({"result.json": "[1, 2]"}, "expected a JSON object"),
    ({"result.json": "{oops"}, "not readable JSON"),
])
def test_what_is_not_a_report_directory_is_named(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ReportError, match=message):
        reports.render(tmp_path)


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no-such: no such directory"):
        reports.render(tmp_path / "no-such")


def test_the_kind_is_read_from_the_directory(tmp_path: Path) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "sweep"}))
    assert directory_kind(tmp_path)[0] == "sweep"
    (tmp_path / "summary.json").write_text(json.dumps({"campaign_id": "c1"}))
    assert directory_kind(tmp_path)[0] == "campaign"
