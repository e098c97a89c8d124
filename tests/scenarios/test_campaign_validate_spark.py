"""``--validate K`` in a Spark campaign (``local[2]``) with TLC: the first K runs validated on the executors
into ``DIR/validations/``, summarised (acceptance, coverage) and reported; and a campaign whose
validations were interrupted resumes to exactly its planned validations, each once, with the rows of
the uninterrupted campaign. Kept short: 3 runs of kip932_example (about 3 s of TLC each)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from scenarios import library
from scenarios.campaign import Campaign, Options, run_campaign, spark_session
from scenarios.campaign.execute import run_batches
from scenarios.campaign.identity import read_meta, write_meta
from scenarios.campaign.validation import VALIDATIONS, ValidationWorkload, dataset, read_validations
from tla import run as tlc_run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.tlc, pytest.mark.xdist_group("spark"),
              pytest.mark.skipif(tlc_run.find_java() is None, reason="java is not installed: TLC cannot run")]

RUNS, VALIDATE = 3, 2


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    session = spark_session("local[2]", app_name="sharesim tests")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    return Campaign(library.load("kip932_example"), RUNS, campaign_seed=5)


def _stable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("tlc_seconds", "wall_time_s")} for r in rows]


@pytest.fixture(scope="module")
def validated(spark: SparkSession, campaign: Campaign, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("validated")
    run_campaign(spark, campaign, out, options=Options(partitions=2, batch_runs=RUNS, validate=VALIDATE))
    return out


def test_the_first_k_runs_are_validated_summarised_and_reported(validated: Path, campaign: Campaign) -> None:
    rows = read_validations(validated)
    assert [r["run_id"] for r in rows] == [0, 1]
    assert [r["seed"] for r in rows] == [campaign.task(i).seed for i in range(VALIDATE)]
    assert all(r["outcome"] == "accepted" and r["events"] > 5 for r in rows), rows
    data = json.loads((validated / "summary.json").read_text())
    v = data["validation"]
    assert (v["planned"], v["validated"], v["accepted"], v["rejected"], v["errors"]) == (2, 2, 2, 0, 0)
    assert v["acceptance_rate"] == 1.0 and v["groups"] == []
    by = {c["action"]: c for c in v["coverage"]}
    assert by["Acquire"]["runs"] == 2 and by["CoordWrite"]["times"] > 0
    assert "AdminReset" in v["never"] and "Acquire" not in v["never"]
    html = (validated / "report.html").read_text()
    assert "Trace validation against tla/ShareGroup.tla" in html and "Never taken" in html
    meta = read_meta(validated)
    assert meta is not None and meta["validate"] == VALIDATE


def test_interrupted_validations_resume_to_exactly_the_planned_ones(spark: SparkSession, campaign: Campaign,
                                                                    validated: Path, tmp_path: Path) -> None:
    out = tmp_path / "resumed"
    run_campaign(spark, campaign, out, options=Options(partitions=2, batch_runs=RUNS))  # no validation yet
    meta = read_meta(out)
    assert meta is not None and "validate" not in meta and not (out / VALIDATIONS).exists()
    # Killed after the first batch of validations (one validation a batch) ...
    meta["validate"] = VALIDATE
    write_meta(out, meta)
    run_batches(spark, ValidationWorkload(campaign, VALIDATE), out / VALIDATIONS, batch_runs=1, stop_after_batches=1,
                dataset=dataset())
    assert [r["run_id"] for r in read_validations(out)] == [0]
    # ... and resumed without --validate: the planned validations are done, each once.
    data = run_campaign(spark, campaign, out, options=Options(partitions=2, resume=True))
    assert _stable(read_validations(out)) == _stable(read_validations(validated))
    assert data["validation"]["validated"] == VALIDATE and data["runs"] == RUNS
