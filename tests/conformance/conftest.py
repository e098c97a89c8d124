"""The conformance rate, printed after a run that collected tests/conformance:

    conformance: P passed, X xfail (by reason), F failed; R % of N cases
    conformance: K Kafka test methods: P passed, X xfail

A case is a pytest item (a row of a Kafka table is one); a Kafka method is what the test's
docstring names first ("SharePartitionTest.testAcquireSingleRecord"); it passes when every case
translating it passes.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter

import pytest

_HERE = "tests/conformance/"
_KAFKA_METHOD = re.compile(r"\b([A-Z][A-Za-z]+Test\.test[A-Za-z0-9_]+)")
_method_of: dict[str, str] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.nodeid and isinstance(item, pytest.Function):
            found = _KAFKA_METHOD.search(item.function.__doc__ or "")
            _method_of[item.nodeid] = found.group(1) if found else item.nodeid


def _kafka_method(nodeid: str) -> str:
    """The Kafka method a case translates. Under xdist the controller collected nothing, so the
    test function is looked up from its node id."""
    if nodeid in _method_of:
        return _method_of[nodeid]
    path, _, name = nodeid.partition("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    function = getattr(module, name.split("[", 1)[0], None)
    found = _KAFKA_METHOD.search(getattr(function, "__doc__", None) or "")
    return found.group(1) if found else nodeid


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    outcome_of: dict[str, str] = {}  # nodeid -> "passed", "failed" or the xfail reason's "kind:name"
    for outcome in ("passed", "failed", "xfailed", "xpassed"):
        for report in terminalreporter.stats.get(outcome, []):
            if _HERE not in report.nodeid or (report.when != "call" and outcome != "xfailed"):
                continue
            if outcome == "xfailed":
                outcome_of[report.nodeid] = str(getattr(report, "wasxfail", "")).split(": ", 1)[0]
            else:
                outcome_of[report.nodeid] = "passed" if outcome == "passed" else "failed"
    if not outcome_of:
        return
    cases = Counter(outcome_of.values())
    passed, failed = cases.pop("passed", 0), cases.pop("failed", 0)
    total = len(outcome_of)
    by_reason = ", ".join(f"{name} {count}" for name, count in sorted(cases.items()))
    terminalreporter.write_line(
        f"conformance: {passed} passed, {sum(cases.values())} xfail ({by_reason or 'none'}), {failed} failed; "
        f"{100.0 * passed / total:.1f} % of {total} cases"
    )
    methods: dict[str, set[str]] = {}
    for nodeid, outcome in outcome_of.items():
        methods.setdefault(_kafka_method(nodeid), set()).add(outcome)
    method_passed = sum(1 for outcomes in methods.values() if outcomes == {"passed"})
    method_failed = sum(1 for outcomes in methods.values() if "failed" in outcomes)
    terminalreporter.write_line(
        f"conformance: {len(methods)} Kafka test methods: {method_passed} passed, "
        f"{len(methods) - method_passed - method_failed} xfail, {method_failed} failed; "
        f"{100.0 * method_passed / len(methods):.1f} %"
    )
