"""A campaign's identity (``scenarios/campaign/identity.py``): ``--resume`` refuses a different campaign
with one ``error:`` line per difference and exit 2, before Spark starts; ``--runs`` may grow, never shrink.

The campaign directory is made as ``run_campaign`` makes it before its first run (``open_campaign``, then
campaign.json written); that campaign.json exists before the first batch commits, in a real campaign, is
checked by test_campaign_crash.py. Where a resume is accepted, Spark is replaced by a stub that stops the
command (exit 130) once it is reached.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from scenarios import library
from scenarios.campaign import Campaign, identity
from scenarios.campaign.driver import open_campaign
from scenarios.cli import main
from scenarios.toml_format import dumps

RUNS = 40


def small_file(tmp_path: Path, records: int = 100) -> Path:
    small = library.get("small")
    scenario = replace(small, producers=(replace(small.producers[0], records=records),)).validate()
    path = tmp_path / "scenario.toml"
    path.write_text(dumps(scenario))
    return path


@pytest.fixture
def campaign_dir(tmp_path: Path) -> tuple[Path, Path]:
    """A campaign of ``scenario.toml`` (seed 3, mutant spso-before-durable) as it is before its first run."""
    scenario = small_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    workload = Campaign(library.load(str(scenario)), RUNS, campaign_seed=3, mutant="spso-before-durable")
    identity.write_meta(out, open_campaign(out, workload, str(scenario), resume=False))
    return scenario, out


def campaign(scenario: Path | str, out: Path, *extra: str, runs: int = RUNS) -> Result:
    return CliRunner().invoke(main, ["campaign", str(scenario), "--runs", str(runs), "--out", str(out), *extra])


def resume(scenario: Path | str, out: Path, *extra: str, runs: int = RUNS) -> Result:
    return campaign(scenario, out, "--campaign-seed", "3", "--mutant", "spso-before-durable", "--resume", *extra,
                    runs=runs)


def refused(result: Result) -> list[str]:
    """The ``error:`` lines of a refusal: exit 2, nothing else said, no traceback."""
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert all(line.startswith("error: ") for line in lines), result.output
    return lines


@pytest.fixture
def spark_reached(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The planned runs of each campaign that got past the checks to Spark (stopped there, exit 130)."""
    import scenarios.campaign.cli as campaign_cli
    import scenarios.campaign.session as session

    reached: list[int] = []

    def stop(_: object, workload: Campaign, *__: object, **___: object) -> None:
        reached.append(workload.runs)
        raise KeyboardInterrupt

    class FakeSpark:
        class sparkContext:  # pyspark's name
            @staticmethod
            def cancelAllJobs() -> None:
                pass

    monkeypatch.setattr(session, "spark_session", lambda master: FakeSpark())
    monkeypatch.setattr(campaign_cli, "run_campaign", stop)
    return reached


def test_campaign_json_records_the_identity(campaign_dir: tuple[Path, Path]) -> None:
    scenario, out = campaign_dir
    meta: dict[str, Any] = json.loads((out / "campaign.json").read_text())
    assert meta["scenario"] == str(scenario) and meta["scenario_name"] == "small"
    assert meta["scenario_sha256"] == identity.scenario_sha256(library.load(str(scenario)))
    assert (meta["mutant"], meta["campaign_seed"], meta["runs"], meta["attempts"]) == ("spso-before-durable", 3,
                                                                                         RUNS, [])
    assert len(meta["code_fingerprint"]) == 64 and meta["sharesim_version"]


def test_the_same_campaign_resumes(campaign_dir: tuple[Path, Path], spark_reached: list[int]) -> None:
    scenario, out = campaign_dir
    assert resume(scenario, out).exit_code == 130 and spark_reached == [RUNS]


def test_a_library_name_and_a_file_of_the_same_content_are_the_same_scenario(tmp_path: Path,
                                                                             spark_reached: list[int]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    identity.write_meta(out, open_campaign(out, Campaign(library.get("small"), RUNS), "small", resume=False))
    copy = tmp_path / "small.toml"
    copy.write_text(dumps(library.get("small")))
    assert campaign(copy, out, "--resume").exit_code == 130 and spark_reached == [RUNS]


def test_a_scenario_file_edited_since_is_refused(campaign_dir: tuple[Path, Path], spark_reached: list[int]) -> None:
    scenario, out = campaign_dir
    small_file(scenario.parent, records=50)
    (line,) = refused(resume(scenario, out))
    assert line.startswith("error: --resume: scenario_sha256 differs: campaign has ")
    assert line.endswith("; first change: 'records = 100' -> 'records = 50'"), line  # what changed, not only that
    assert spark_reached == []


@pytest.mark.parametrize(("flags", "expected"), [
    (["--campaign-seed", "9", "--mutant", "spso-before-durable"], ["campaign_seed differs: campaign has 3, now 9"]),
    (["--campaign-seed", "3"], ["mutant differs: campaign has spso-before-durable, now none"]),
    (["--campaign-seed", "9"], ["mutant differs: campaign has spso-before-durable, now none",
                                "campaign_seed differs: campaign has 3, now 9"]),
])
def test_another_seed_or_mutant_is_refused_one_line_per_difference(campaign_dir: tuple[Path, Path],
                                                                   spark_reached: list[int], flags: list[str],
                                                                   expected: list[str]) -> None:
    scenario, out = campaign_dir
    lines = refused(campaign(scenario, out, *flags, "--resume"))
    assert lines == [f"error: --resume: {e}" for e in expected] and spark_reached == []


def test_other_code_is_refused(campaign_dir: tuple[Path, Path], spark_reached: list[int],
                               monkeypatch: pytest.MonkeyPatch) -> None:
    scenario, out = campaign_dir
    recorded = json.loads((out / "campaign.json").read_text())["code_fingerprint"]
    monkeypatch.setattr(identity, "code_fingerprint", lambda: "f" * 64)
    (line,) = refused(resume(scenario, out))
    assert line == f"error: --resume: code_fingerprint differs: campaign has {recorded}, now {'f' * 64}"


def _copy_sources(to: Path) -> None:
    """The fingerprinted sources of this checkout, copied under ``to`` with the same relative paths."""
    import model

    root = Path(model.__file__).resolve().parent.parent
    for name in identity.FINGERPRINTED:
        source = root / name
        for path in sorted(source.rglob("*.py")) if source.is_dir() else [source]:
            target = to / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())


def _fingerprint_of(monkeypatch: pytest.MonkeyPatch, package_root: Callable[[str], Any]) -> str:
    monkeypatch.setattr(identity, "files", package_root)
    identity.code_fingerprint.cache_clear()
    try:
        return identity.code_fingerprint()
    finally:
        identity.code_fingerprint.cache_clear()


def test_the_code_fingerprint_changes_with_any_fingerprinted_source(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _copy_sources(tmp_path)
    copied = _fingerprint_of(monkeypatch, lambda package: tmp_path / package)
    identity.code_fingerprint.cache_clear()
    monkeypatch.undo()
    assert copied == identity.code_fingerprint()  # the same bytes, the same fingerprint (paths are relative)
    edited = tmp_path / "model" / "core" / "log.py"
    edited.write_bytes(edited.read_bytes() + b"\n")
    assert _fingerprint_of(monkeypatch, lambda package: tmp_path / package) != copied


def test_code_shipped_as_a_zip_has_the_checkouts_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What executors run with ``spark-submit --py-files sharesim.zip``: the sources read through zipimport."""
    _copy_sources(tmp_path / "tree")
    archive = tmp_path / "sharesim.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        for path in sorted((tmp_path / "tree").rglob("*.py")):
            zipped.write(path, path.relative_to(tmp_path / "tree").as_posix())
    identity.code_fingerprint.cache_clear()
    expected = identity.code_fingerprint()
    assert _fingerprint_of(monkeypatch, lambda package: zipfile.Path(archive, f"{package}/")) == expected


def test_fewer_runs_are_refused_more_are_planned(campaign_dir: tuple[Path, Path], spark_reached: list[int]) -> None:
    scenario, out = campaign_dir
    (line,) = refused(resume(scenario, out, runs=RUNS - 1))
    assert line == f"error: --resume: --runs {RUNS - 1} is fewer than the {RUNS} runs the campaign planned: " \
                   f"pass --runs {RUNS} or more"
    assert resume(scenario, out, runs=RUNS + 10).exit_code == 130 and spark_reached == [RUNS + 10]


def test_nothing_to_resume_is_refused(tmp_path: Path, spark_reached: list[int]) -> None:
    for out in (tmp_path / "missing", tmp_path):
        (line,) = refused(campaign("small", out, "--resume"))
        assert line == f"error: --resume: nothing to resume in {out} (no campaign.json): run without --resume"
    assert not (tmp_path / "missing").exists() and spark_reached == []


def test_runs_without_an_identity_are_refused_on_resume(tmp_path: Path, spark_reached: list[int]) -> None:
    batch = tmp_path / "runs" / "scenario=small"  # an older sharesim's layout
    batch.mkdir(parents=True)
    (batch / "part-0.parquet").write_bytes(b"")
    (line,) = refused(campaign("small", tmp_path, "--resume"))
    assert "runs was not written by sharesim" in line and spark_reached == []


def test_a_campaign_directory_is_refused_without_resume(campaign_dir: tuple[Path, Path],
                                                        spark_reached: list[int]) -> None:
    scenario, out = campaign_dir
    (line,) = refused(campaign(scenario, out))
    assert "already holds the output of an earlier `sharesim campaign`" in line and spark_reached == []


def test_executors_running_other_code_are_refused(campaign_dir: tuple[Path, Path],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    import scenarios.campaign.cli as campaign_cli
    import scenarios.campaign.session as session
    from scenarios.campaign import execute

    spark = SimpleNamespace(sparkContext=SimpleNamespace(master="spark://elsewhere:7077"))
    monkeypatch.setattr(execute, "worker_code", lambda _: ("compiled", identity.code_fingerprint()))
    assert execute.check_workers(spark) == "compiled"  # type: ignore[arg-type]
    monkeypatch.setattr(execute, "worker_code", lambda _: ("compiled", "0" * 64))
    with pytest.raises(execute.StaleWorkers, match="the executors run other sharesim code than this driver"):
        execute.check_workers(spark)  # type: ignore[arg-type]

    # In the command (after "starting Spark"): one error line, exit 2.
    def stale(*_: object, **__: object) -> None:
        execute.check_workers(spark)  # type: ignore[arg-type]

    monkeypatch.setattr(session, "spark_session", lambda master: spark)
    monkeypatch.setattr(campaign_cli, "run_campaign", stale)
    scenario, out = campaign_dir
    result = resume(scenario, out)
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert line.startswith("error: --master spark://elsewhere:7077: the executors run other sharesim code")
