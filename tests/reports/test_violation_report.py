"""The violation report: a mutant's run gives the invariant in words, the reproducer and a swimlane diagram."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from invariants.monitors import Monitor
from model.core.share_partition import SharePartition
from model.sim.trace import TraceEvent, read_ndjson
from reports.run_dir import run_to_dir
from reports.violation_report import LAST_EVENTS, last_events, message_lanes
from scenarios import library

MUTANT = "spso-before-durable"  # caught by spso-monotonic (SP-6) in `small` (model/mutants.py)


@pytest.fixture(scope="module")
def violated_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("violated")
    result = run_to_dir(library.get("small"), 1, out, mutant=MUTANT)
    assert result.verdict == "violated"
    return out


def test_a_violated_run_keeps_its_trace_up_to_the_violation(violated_dir: Path) -> None:
    result = json.loads((violated_dir / "result.json").read_text())
    events = read_ndjson(violated_dir / "trace.ndjson")
    assert events[-1].kind == "run.end"
    assert any(e.kind == "violation" and e.fields["invariant"] == result["violations"][0]["invariant"]
               for e in events)


def test_the_violation_report_states_the_invariant_and_the_reproducer(
        violated_dir: Path, assert_renders: Callable[[Path, int], None]) -> None:
    page = (violated_dir / "report.html").read_text()
    result = json.loads((violated_dir / "result.json").read_text())
    violation = result["violations"][0]
    assert violation["invariant"] == "spso-monotonic"
    assert "Violated: <b>spso-monotonic</b> (SPEC SP-6): the SPSO never decreases" in page
    assert f"sharesim run small --seed 1 --mutant {MUTANT}" in page
    assert "State excerpt" in page and "durable_start" in page
    assert "swimlane diagram" in page and "VIOLATED (1x)" in page
    assert_renders(violated_dir / "report.html", 6)  # the swimlane, then the run's five


def test_a_hand_made_broken_check_gives_a_violation_report_too(tmp_path: Path) -> None:
    class PastHundred(Monitor):
        def on_share_partition_step(self, partition: SharePartition, bound: int, now_ms: int) -> None:
            if partition.ready and partition.spso > 100:
                self.sink.report("window-bounds", now_ms, f"SPSO {partition.spso} > 100 (a check broken on purpose)")

    result = run_to_dir(library.get("small"), 3, tmp_path, extra_monitors=lambda: [PastHundred(None)])  # type: ignore[arg-type]
    assert [v.invariant for v in result.violations] == ["window-bounds"]
    assert "a check broken on purpose" in (tmp_path / "report.html").read_text()


def _event(node: str, kind: str, **fields: object) -> TraceEvent:
    return TraceEvent(0, node, kind, dict(fields))


@pytest.mark.parametrize(("event", "lanes"), [
    (_event("b2", "deliver", src="c1", msg_kind="ShareGroupHeartbeat"), ("c1", "b2 group coord")),
    (_event("c1", "deliver", src="b2", msg_kind="ShareGroupHeartbeatResponse"), ("b2 group coord", "c1")),
    (_event("b3", "deliver", src="b1", msg_kind="WriteShareGroupState"), ("b1", "b3 share coord")),
    (_event("b1", "deliver", src="b3", msg_kind="WriteShareGroupStateResponse"), ("b3 share coord", "b1")),
    (_event("b3", "deliver", src="b2", msg_kind="InitializeShareGroupState"), ("b2 group coord", "b3 share coord")),
    (_event("b1", "drop", src="c2", msg_kind="ShareFetch", reason="loss"), ("c2", "b1")),
])
def test_messages_land_on_the_lane_of_the_role_that_sends_or_serves_them(event: TraceEvent,
                                                                         lanes: tuple[str, str]) -> None:
    assert message_lanes(event) == lanes


def test_the_window_ends_at_the_violation_and_leaves_producers_out() -> None:
    events = [_event("p1", "producer.ack"), _event("b1", "deliver", src="p1", msg_kind="Produce")] * 40
    events += [_event("b1", "deliver", src="c1", msg_kind="ShareFetch")] * 5
    events += [_event("cluster", "violation", invariant="spso-monotonic"), _event("c1", "after")]
    window = last_events(events)
    assert len(window) == 6 and window[-1].kind == "violation"
    everything = last_events(events, skip=lambda e: False)
    assert len(everything) == LAST_EVENTS and everything[-1].kind == "violation"
