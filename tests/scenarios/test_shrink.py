"""``sharesim shrink``: a failing run becomes a small scenario file that fails the same way."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from model.sim.runner import run
from scenarios import library, toml_format
from scenarios.check import run_until
from scenarios.cli import main
from scenarios.shrink import NothingToShrink, Shrunk, _Shrinker, shrink_run, with_plan, written_out

# (scenario, seed, mutant, invariant): seeds from the swarm tables of docs/explanation/benchmarks.md.
# 204: the first swarm seed from 160 that catches no-limit-on-lock-timeout since the swarm draws consumer_close
# (issue 25; 168 before it, 320 before batch-wise acquisition,
# 111 before trunk's assignor).
NO_LIMIT = ("swarm", 204, "no-limit-on-lock-timeout", "delivery-count-limit")
LOCK_TIMEOUT = ("swarm_locks", 34, "lock-timeout-before-write", "deliveries-within-failover-bound")


def _shrunk(case: tuple[str, int, str, str]) -> Shrunk:
    name, seed, mutant, invariant = case
    return shrink_run(library.get(name), seed, mutant=mutant, invariant=invariant)


def _violates(result_violations: list, invariant: str) -> bool:
    return any(v.invariant == invariant for v in result_violations)


# -- step 1: the plan, written out, is the same run -------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(["swarm", "swarm_small", "swarm_locks", "swarm_wide", "swarm_failovers", "swarm_config"]),
       seed=st.integers(0, 2**31 - 1))
def test_a_swarm_run_written_out_is_the_same_run(name: str, seed: int) -> None:
    scenario = library.get(name)
    swarm = run(scenario, seed, stop_on_first_violation=False)
    scripted_scenario = written_out(scenario, swarm)
    assert scripted_scenario.faults.swarm is None
    scripted = run(scripted_scenario, seed, stop_on_first_violation=False)
    assert scripted.swarm_config == {}
    event(f"{name}: {'no faults' if not swarm.fault_plan else 'faults'}")
    assert (scripted.trace_hash, scripted.faults_fired, scripted.events) == (
        swarm.trace_hash, swarm.faults_fired, swarm.events)


# -- the shrinking ----------------------------------------------------------------------------------


def test_shrinking_keeps_the_violation_and_drops_what_it_does_not_need() -> None:
    shrunk = _shrunk(NO_LIMIT)
    assert shrunk.invariant == "delivery-count-limit"
    assert shrunk.scenario.faults.swarm is None and shrunk.scenario.seed == 204
    assert 1 <= len(shrunk.plan) < shrunk.original_faults == len(run(library.get("swarm"), 204).fault_plan)
    assert shrunk.scenario.duration_ms <= shrunk.original.duration_ms
    assert _violates(shrunk.result.violations, "delivery-count-limit")
    # The result is the shrunk scenario's own run, and it is deterministic.
    again = run_until(shrunk.scenario, 204, "delivery-count-limit", "no-limit-on-lock-timeout")
    assert again.trace_hash == shrunk.result.trace_hash
    assert _shrunk(NO_LIMIT).scenario == shrunk.scenario


def test_each_fault_left_is_needed() -> None:
    shrunk = _shrunk(LOCK_TIMEOUT)
    _, seed, mutant, invariant = LOCK_TIMEOUT
    assert len(shrunk.plan) < shrunk.original_faults
    for index in range(len(shrunk.plan)):
        fewer = with_plan(shrunk.scenario, shrunk.plan.without([index]))
        result = run(fewer, seed, mutant=mutant, stop_on_first_violation=False)
        assert not _violates(result.violations, invariant), f"fault {index} is not needed"


def test_the_correct_model_does_not_fail_the_shrunk_scenario() -> None:
    shrunk = _shrunk(LOCK_TIMEOUT)
    assert run(shrunk.scenario, shrunk.seed).ok  # the failure is the mutant's, not the scenario's


def test_the_file_replays_the_shrunk_run(tmp_path: Path) -> None:
    shrunk = _shrunk(NO_LIMIT)
    path = tmp_path / "min.toml"
    path.write_text(shrunk.to_toml(str(path)))
    text = path.read_text()
    assert text.startswith("# Written by `sharesim shrink swarm --seed 204 --mutant no-limit-on-lock-timeout`")
    assert f"sharesim run {path} --seed 204 --mutant no-limit-on-lock-timeout" in text
    loaded = toml_format.load_file(path)
    assert loaded == shrunk.scenario
    replayed = run(loaded, mutant="no-limit-on-lock-timeout")  # its own seed; it stops at the violation kept
    assert replayed.seed == 204 and replayed.violations[0].invariant == "delivery-count-limit"
    assert replayed.trace_hash == shrunk.result.trace_hash


def test_shrinking_keeps_only_the_drawn_settings_the_failure_needs() -> None:
    # snapshot-after-limit-plus-one on swarm_config seed 0: the seed drew a snapshot every 0 updates,
    # a corner swarm's fixed 20 never visits, and the mutant fails there with one record and no fault.
    scenario = library.get("swarm_config")
    drawn = {k: v for k, v in run(scenario, 0).swarm_config.items() if "@" not in k}  # broker settings
    assert len(drawn) == 12 and drawn["share.coordinator.snapshot.update.records.per.snapshot"] == 0
    shrunk = shrink_run(scenario, 0, mutant="snapshot-after-limit-plus-one")
    assert shrunk.invariant == "snapshot-update-limit"
    assert {k: v for k, v in shrunk.scenario.cluster.config.items() if k in drawn} == {
        "share.coordinator.snapshot.update.records.per.snapshot": 0}
    assert "settings drawn 12 -> 1 (share.coordinator.snapshot.update.records.per.snapshot)" in shrunk.changes()
    assert len(shrunk.plan) == 0 and shrunk.scenario.producers[0].records == 1
    text = shrunk.to_toml("x.toml")
    assert '"share.coordinator.snapshot.update.records.per.snapshot" = 0' in text
    assert "[faults.swarm" not in text


def test_a_liveness_failure_keeps_every_drawn_setting() -> None:
    # Put back to the broker's defaults (a 45 s session timeout among them), the settings of this
    # swarm_config seed would make eventual-resolution fail on their own, another failure than its own.
    seed, mutant = 132323115412941918, "delete-unfenced"
    shrunk = shrink_run(library.get("swarm_config"), seed, mutant=mutant, invariant="eventual-resolution")
    drawn = {k: v for k, v in run(library.get("swarm_config"), seed).swarm_config.items() if "@" not in k}
    assert len(drawn) == 12 and {k: shrunk.scenario.cluster.config[k] for k in shrunk.drawn} == drawn
    assert "settings drawn 12 -> 12" in "; ".join(shrunk.changes())
    assert shrunk.scenario.producers[0].records < 240


def test_a_budget_of_two_runs_writes_the_plan_out_and_stops() -> None:
    name, seed, mutant, invariant = NO_LIMIT
    shrunk = shrink_run(library.get(name), seed, mutant=mutant, max_runs=2)
    assert shrunk.runs == 2 and len(shrunk.plan) == shrunk.original_faults
    assert _violates(shrunk.result.violations, invariant)
    with pytest.raises(ValueError, match="max_runs = 1"):
        shrink_run(library.get(name), seed, mutant=mutant, max_runs=1)


def test_a_run_that_violates_nothing_is_nothing_to_shrink() -> None:
    with pytest.raises(NothingToShrink, match="violates no invariant"):
        shrink_run(library.get("swarm"), 204)
    with pytest.raises(NothingToShrink, match="does not violate window-size"):
        shrink_run(library.get("swarm"), 204, mutant="no-limit-on-lock-timeout", invariant="window-size")


def test_a_candidate_that_raises_is_counted_and_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    import scenarios.shrink as shrink_module

    def boom(*_: object) -> None:
        raise ZeroDivisionError("a bug of the model")

    shrinker = _Shrinker(1, None, "spso-monotonic", max_runs=10)
    monkeypatch.setattr(shrink_module, "run_until", boom)
    assert not shrinker.fails(library.get("happy"))
    assert (shrinker.raised, shrinker.runs) == (1, 2)
    invalid = replace(library.get("happy"), duration_ms=0)
    assert not shrinker.fails(invalid) and shrinker.runs == 2  # an invalid candidate costs no run


# -- the command ------------------------------------------------------------------------------------


def test_shrink_writes_a_file_that_sharesim_run_fails_on(tmp_path: Path) -> None:
    name, seed, mutant, invariant = NO_LIMIT
    out = tmp_path / "repro.toml"
    result = CliRunner().invoke(main, ["shrink", name, "--seed", str(seed), "--mutant", mutant, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"{invariant}: faults ")
    assert f"run it with: sharesim run {out} --seed {seed} --mutant {mutant}" in result.output
    replay = CliRunner().invoke(main, ["run", str(out), "--mutant", mutant, "--all-violations", "--json"])
    assert replay.exit_code == 1 and invariant in replay.output


def test_shrink_refuses_bad_input_with_exit_2(tmp_path: Path) -> None:
    cases = [
        (["shrink", "swarm", "--seed", "204"], "violates no invariant: nothing to shrink"),
        (["shrink", "swarm", "--invariant", "spso-monotonik"], "--invariant"),
        (["shrink", "swarm", "--mutant", "no-such-bug"], "--mutant"),
        (["shrink", "no-such-scenario"], "no-such-scenario"),
        (["shrink", "swarm", "--max-runs", "1"], "--max-runs"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "x.toml")])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "x.toml").exists()
