"""A violation names its catalogue id, the SPEC ids, the event, and a compact state excerpt."""

from __future__ import annotations

import json

from invariants.sink import ViolationSink
from invariants.violation import Violation


def test_the_sink_fills_in_the_spec_ids_and_the_event() -> None:
    seen: list[Violation] = []
    sink = ViolationSink(42, seen.append)
    sink.report("window-size", 1_500, "window too large", event="share-partition step", spso=0, speo=201)
    (violation,) = sink.violations
    assert seen == [violation]
    assert violation.to_json() == {
        "invariant": "window-size", "spec": ["SP-8"], "time_ms": 1_500, "seed": 42,
        "event": "share-partition step", "message": "window too large", "state": {"spso": 0, "speo": 201},
    }
    json.dumps(violation.to_json())
    assert violation.describe() == "window-size at 1500 ms: window too large"


def test_a_violation_built_by_hand_still_serialises() -> None:
    assert Violation("exclusive-acquisition", 1, 2, "m").to_json()["spec"] == []
