"""TLC model checking of tla/ShareGroup.tla and tla/ConsumerGroup.tla (tla/README.md).

One test per small clean model (TLC finds no error and explores at least the
registry's minimum of distinct states, so a spec that became vacuous fails) and
one per mutant (TLC must report the mutant's property violated). They run TLC
with one worker, serialized in one xdist group, about four minutes in all on
two cores. Skipped only when `java` is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tla import run

pytestmark = [
    pytest.mark.tlc,
    pytest.mark.xdist_group("tlc"),
    pytest.mark.skipif(run.find_java() is None, reason="java is not installed: TLC cannot run"),
]

SMALL = run.select(small=True)
MUTANTS = run.select(mutants=True)

# Generous: the slowest small model takes about two minutes with one worker on a loaded machine.
# A TLC that deadlocks (tlaplus/tlaplus#1438) is restarted by the runner long before this.
TIMEOUT_S = 600


def _run(model: run.Model, tmp_path: Path) -> run.Result:
    out = tmp_path / "tlc.out"
    result = run.run_model(model, workers=1, timeout=TIMEOUT_S, keep_output=out)
    if not result.passed:
        tail = "\n".join(out.read_text().splitlines()[-40:])
        pytest.fail(f"{model.name}: {result.message}\n--- TLC output (tail) ---\n{tail}")
    return result


@pytest.mark.parametrize("model", SMALL, ids=[m.name for m in SMALL])
def test_small_model_passes(model: run.Model, tmp_path: Path) -> None:
    result = _run(model, tmp_path)
    assert result.outcome == "ok"
    assert result.distinct is not None and result.distinct >= model.min_distinct


@pytest.mark.parametrize("model", MUTANTS, ids=[m.name for m in MUTANTS])
def test_mutant_is_caught(model: run.Model, tmp_path: Path) -> None:
    result = _run(model, tmp_path)
    assert result.outcome == "violated"
    assert result.violated == model.expect


def test_registry_matches_the_model_files() -> None:
    """Every configuration file is registered and every registry entry has its file."""
    on_disk = {p.stem for p in run.MODELS_DIR.glob("*.cfg")}
    registered = {m.name for m in run.MODELS}
    assert on_disk == registered


def test_every_mutant_names_a_property_of_its_config() -> None:
    for model in MUTANTS:
        text = (run.TLA_DIR / model.cfg).read_text()
        assert model.expect in text.split(), model.name
        assert f'Mutant = "{model.name.split("_mut_")[1].split("__")[0]}"' in text, model.name


def test_parse_output_reads_tlc_answers() -> None:
    ok = (
        "Model checking completed. No error has been found.\n"
        "40,157,596 states generated, 3,395,034 distinct states found, 0 states left on queue.\n"
        "The depth of the complete state graph search is 34.\n"
    )
    assert run.parse_output(ok, "") == ("ok", None, 3_395_034, 40_157_596, 34)
    inv = (
        "Error: Invariant SP5_DeliveryLimit is violated.\n"
        "95 states generated, 50 distinct states found, 16 states left on queue.\n"
    )
    assert run.parse_output(inv, "")[:2] == ("violated", "SP5_DeliveryLimit")
    act = "Error: Action property SP1_LegalTransitions is violated.\n"
    assert run.parse_output(act, "")[:2] == ("violated", "SP1_LegalTransitions")
    temporal = "Error: Temporal properties were violated.\n"
    cfg = "SPECIFICATION FairSpec\nPROPERTIES\n    E1_NoLoss\n"
    assert run.parse_output(temporal, cfg)[:2] == ("violated", "E1_NoLoss")
    assert run.parse_output("Error: TLC threw an unexpected exception.\n", "")[0] == "error"


def test_judge_fails_a_vacuous_model_and_an_uncaught_mutant() -> None:
    clean = run.Model("X_small", "X.tla", "small", min_distinct=1000)
    assert run.judge(clean, "ok", None, 5000)[0]
    assert not run.judge(clean, "ok", None, 999)[0]  # too few states: the spec became vacuous
    assert not run.judge(clean, "violated", "Inv", 5000)[0]
    assert not run.judge(clean, "error", None, None)[0]
    mutant = run.Model("X_mut_m__Inv", "X.tla", "small", expect="Inv")
    assert run.judge(mutant, "violated", "Inv", 10)[0]
    assert not run.judge(mutant, "ok", None, 10_000)[0]  # the mutant was not caught
    assert not run.judge(mutant, "violated", "Other", 10)[0]  # caught by the wrong property
