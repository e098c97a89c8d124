"""Every mutant is caught by its expected invariant, and the correct model is not (issue 5).

For each mutant of ``model.mutants`` the test searches seeds 0.. of the mutant's
scenario (``scenarios.check.first_detection``: a run keeps going past other
violations and stops at the first of the expected invariant) and asserts that
the expected invariant is violated within ``DETECTION_SEEDS`` seeds: far below
the issue's bound of 2,000 (``python -m bench mutants`` searches that far and
reports runs-to-first-detection). The seed that caught it is recorded as the
test's ``first_seed`` property (``--junitxml``). Then the correct model runs the
same scenario with the same seeds (and at least seeds 0..2) and must hold every
invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

from model import mutants
from model.sim.runner import run
from scenarios import library
from scenarios.check import Detection, first_detection

DETECTION_SEEDS = 10  # every mutant is caught by seed 3 today; a regression shows as a failure here
CLEAN_SEEDS_AT_LEAST = 3  # the correct model runs the seeds the search tried, and at least 0..2

# Mutants whose expected invariant cannot see them yet: mutant -> why (strict: the test fails once it does).
PENDING: dict[str, str] = {}


@cache
def _detection(name: str) -> Detection:
    return first_detection(name, DETECTION_SEEDS)


def _pending(mutant: mutants.Mutant) -> list[pytest.MarkDecorator]:
    marks = [pytest.mark.xdist_group(f"mutant-{mutant.name}")]
    reason = PENDING.get(mutant.name)
    if reason is not None:
        marks.append(pytest.mark.xfail(strict=True, reason=reason))
    return marks


def _params(marks: Callable[[mutants.Mutant], list[pytest.MarkDecorator]]) -> list[object]:
    return [pytest.param(m, id=m.name, marks=marks(m)) for m in mutants.MUTANTS]


@pytest.mark.parametrize("mutant", _params(_pending))
def test_mutant_is_caught_by_its_expected_invariant(mutant: mutants.Mutant,
                                                   record_property: Callable[[str, object], None]) -> None:
    detection = _detection(mutant.name)
    record_property("first_seed", detection.seed)
    record_property("runs", detection.runs)
    assert detection.detected, (
        f"{mutant.name}: no violation of {mutant.expected_invariant} in seeds 0..{DETECTION_SEEDS - 1} of "
        f"{mutant.scenario}; the last run violated {list(detection.first_seen) or 'nothing'}"
    )
    assert detection.expected_invariant == mutant.expected_invariant and detection.scenario == mutant.scenario


@pytest.mark.parametrize("mutant", _params(lambda m: [pytest.mark.xdist_group(f"mutant-{m.name}")]))
def test_the_correct_model_holds_with_the_same_seeds(mutant: mutants.Mutant) -> None:
    detection = _detection(mutant.name)
    last = DETECTION_SEEDS - 1 if detection.seed is None else max(detection.seed, CLEAN_SEEDS_AT_LEAST - 1)
    for seed in range(last + 1):
        violated = _clean_run(mutant.scenario, seed)
        assert violated == [], f"the correct model: {violated} in `sharesim run {mutant.scenario} --seed {seed}`"


@cache
def _clean_run(scenario: str, seed: int) -> list[str]:
    return [v.describe() for v in run(library.get(scenario), seed).violations]


def test_the_search_reports_a_miss_when_the_mutant_does_not_show() -> None:
    # No transactions in `small`: reading aborted records has nothing to read.
    detection = first_detection("deliver-aborted", 2, scenario="small")
    assert not detection.detected and detection.seed is None and detection.runs == 2
    assert detection.first_seen == ()


def test_a_detection_is_a_pure_function_of_the_seeds() -> None:
    assert first_detection("inflight-limit-per-fetch", 3).seed == _detection("inflight-limit-per-fetch").seed


def test_a_search_over_a_scenario_file_is_the_search_over_its_scenario(tmp_path: Path) -> None:
    # bench swarm_power measures variants of a swarm's knobs as files: the file must be what is searched.
    path = tmp_path / "swarm_copy.toml"
    original = Path(library.__file__).parent / "library" / "swarm.toml"
    path.write_text(original.read_text(encoding="utf-8"), encoding="utf-8")
    by_name = first_detection("spso-before-durable", 3, scenario="swarm")
    by_file = first_detection("spso-before-durable", 3, scenario=str(path))
    assert by_file.detected and (by_file.seed, by_file.first_seen) == (by_name.seed, by_name.first_seen)
    assert by_file.scenario == str(path)
    # The yardstick is what a core paid: every search is charged its CPU time.
    assert by_file.cpu_time_s > 0 and by_name.cpu_time_s > 0
