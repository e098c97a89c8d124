"""The late-initialize triage (bench/_triage_late_initialize.py) tells the finding's two paths apart, and says
so when a run no longer violates. Seeds from swarm_lifecycle's 100 000-run campaign on 0cdc61b (findings.md)."""

from __future__ import annotations

import importlib

triage = importlib.import_module("bench._triage_late_initialize")


def test_a_persister_resend_is_an_initialize_identical_to_one_handled_before() -> None:
    assert triage.classify("swarm_lifecycle", 162754987593251843) == "an initialize identical to one handled before"


def test_a_heartbeat_retry_at_zero_is_a_first_retry_at_zero() -> None:
    assert triage.classify("swarm_lifecycle", 1942925957540923770) == "a first retry at start offset 0"


def test_a_clean_run_is_no_longer_violated() -> None:
    assert triage.classify("swarm_lifecycle", 0) == "no longer violated"
