"""``failure_groups``: one bug is one group, however long the lists of numbers in its messages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from reports.aggregate import read_runs, summarise
from reports.rows import error_row, to_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

# The same violation of deliveries-within-failover-bound, seen with two, three and one leader tenure(s).
SAME_BUG = [
    "g:t-id:0: offsets 3-5 delivered 5 times in this life of the state, by 2 leader tenure(s) (epochs 1, 2): "
    "more than the limit 3 plus one per failover",
    "g:t-id:1: offsets 10-12 delivered 6 times in this life of the state, by 3 leader tenure(s) (epochs 1, 2, 4): "
    "more than the limit 3 plus one per failover",
    "g:t-id:0: offsets 7..7 delivered 4 times in this life of the state, by 1 leader tenure(s) (epochs 3): "
    "more than the limit 3 plus one per failover",
]
OTHER = "g:t-id:0: SPSO moved from 40 to 52 past offset 47, which is not durably terminal"


def test_a_list_or_range_of_numbers_is_blanked_whole(spark: SparkSession, tmp_path: Path) -> None:
    rows = []
    for run_id, message in enumerate([*SAME_BUG, OTHER]):
        row = error_row("s", run_id, RuntimeError("unused"), run_id=run_id)
        invariant = "deliveries-within-failover-bound" if message in SAME_BUG else "spso-monotonic"
        rows.append({**row, "verdict": "violated", "error": None,
                     "violations": [{"invariant": invariant, "time_ms": 1, "message": message}]})
    (tmp_path / "runs").mkdir()
    pq.write_table(to_table(rows), tmp_path / "runs" / "part.parquet")
    runs = read_runs(spark, tmp_path / "runs")
    assert runs is not None
    groups = summarise(spark, runs).tables["failure_groups"]
    assert [(g["invariant"], g["runs"], g["run_ids"], g["signature"]) for g in groups] == [
        ("deliveries-within-failover-bound", 3, [0, 1, 2],
         "g:t-id:#: offsets # delivered # times in this life of the state, by # leader tenure(s) (epochs #): "
         "more than the limit # plus one per failover"),
        ("spso-monotonic", 1, [3], "g:t-id:#: SPSO moved from # to # past offset #, which is not durably terminal"),
    ]
