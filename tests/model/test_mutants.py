"""The mutant registry and its injection: every mutant documented and hooked, selectable per
run, and never leaking from one run into the next (``model/mutants.py``)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invariants import catalogue
from model import mutants
from model.sim import runner
from scenarios import library

MODEL = Path(__file__).resolve().parents[2] / "model"
_HOOK = re.compile(r"""(?:_mutants\.ACTIVE|\bmutant)\s*[!=]=\s*"([a-z0-9-]+)\"""")


def _hooked_names() -> dict[str, set[str]]:
    """Mutant name -> the model files whose hooks test for it."""
    found: dict[str, set[str]] = {}
    for path in sorted(MODEL.rglob("*.py")):
        if path.name == "mutants.py":
            continue
        for name in _HOOK.findall(path.read_text()):
            found.setdefault(name, set()).add(str(path.relative_to(MODEL.parent)))
    return found


def test_at_least_fifteen_mutants_with_unique_kebab_case_names() -> None:
    names = [m.name for m in mutants.MUTANTS]
    assert len(names) >= 15
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", n) for n in names)
    assert mutants.names() == sorted(names)


@pytest.mark.parametrize("mutant", mutants.MUTANTS, ids=lambda m: m.name)
def test_mutant_is_documented_with_a_catalogue_id_and_a_library_scenario(mutant: mutants.Mutant) -> None:
    assert mutant.expected_invariant in catalogue.ids()
    assert mutant.scenario == "swarm" or mutant.scenario in library.names()
    assert len(mutant.description) > 40
    assert set(mutant.to_json()) == {"name", "description", "expected_invariant", "scenario"}


def test_every_mutant_has_a_hook_where_it_says_and_every_hook_a_mutant() -> None:
    hooked = _hooked_names()
    known = sorted(mutants.injectable_names())
    assert sorted(hooked) == known, "a hook names an unknown mutant, or a mutant or variant has no hook"
    injections: list[mutants.Mutant | mutants.Variant] = [*mutants.MUTANTS, *mutants.VARIANTS]
    for m in injections:
        documented = m.where.split(":")[0]
        assert documented in hooked[m.name], f"{m.name}: hooked in {sorted(hooked[m.name])}, documented {documented}"


def test_a_variant_keeps_its_mutants_hooks_and_is_injected_like_one() -> None:
    """A variant is its base mutant's behaviour plus a change: every hook of the base tests for it too."""
    for v in mutants.VARIANTS:
        assert v.base in mutants.names() and v.name not in mutants.names()
        assert v.name.startswith(v.base) and len(v.description) > 40
        for path in sorted(MODEL.rglob("*.py")):
            if path.name != "mutants.py" and f'"{v.base}"' in path.read_text():
                assert f'"{v.name}"' in path.read_text(), f"{path}: tests for {v.base} but not for {v.name}"
        with mutants.injected(v.name) as chosen:
            assert chosen is v
            assert v.name == mutants.ACTIVE
        assert mutants.ACTIVE is None
    with pytest.raises(mutants.UnknownMutant):
        mutants.get(mutants.VARIANTS[0].name)  # not a mutant: nothing to detect


def test_the_hook_scan_would_see_a_typo() -> None:
    assert _HOOK.findall('if _mutants.ACTIVE == "spso-befor-durable":') == ["spso-befor-durable"]


def test_unknown_mutant_lists_the_known_names() -> None:
    with pytest.raises(mutants.UnknownMutant) as info:
        mutants.get("no-such-bug")
    message = str(info.value)
    assert "no-such-bug" in message and all(n in message for n in mutants.names())
    with pytest.raises(mutants.UnknownMutant) as info:
        mutants.injectable("no-such-bug")
    assert all(n in str(info.value) for n in mutants.injectable_names())


def test_injected_sets_the_mutant_and_resets_it_even_when_the_body_raises() -> None:
    assert mutants.ACTIVE is None
    with mutants.injected("spso-before-durable") as chosen:
        assert mutants.ACTIVE == "spso-before-durable"
        assert chosen is mutants.get("spso-before-durable")
    assert mutants.ACTIVE is None
    with pytest.raises(ZeroDivisionError), mutants.injected("read-past-lso"):
        1 // 0  # noqa: B018
    assert mutants.ACTIVE is None
    with pytest.raises(mutants.UnknownMutant), mutants.injected("no-such-bug"):
        pass
    assert mutants.ACTIVE is None


def test_injections_do_not_nest() -> None:
    with mutants.injected("read-past-lso"), pytest.raises(RuntimeError, match="already injected"), \
            mutants.injected("spso-before-durable"):
        pass
    assert mutants.ACTIVE is None


@given(st.lists(st.one_of(st.sampled_from(mutants.names()), st.none(), st.text(max_size=8)), max_size=6))
def test_any_sequence_of_injections_leaves_no_mutant_behind(names: list[str | None]) -> None:
    for name in names:
        try:
            with mutants.injected(name):
                assert name == mutants.ACTIVE
        except mutants.UnknownMutant:
            assert name not in mutants.names()
        assert mutants.ACTIVE is None


def test_a_run_that_raises_still_resets_the_mutant() -> None:
    def explode(_cluster: object) -> None:
        assert mutants.ACTIVE == "read-past-lso"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        runner.run_cluster(library.get("small"), 1, before_run=explode, mutant="read-past-lso")
    assert mutants.ACTIVE is None


def test_a_run_names_its_mutant_and_is_a_pure_function_of_scenario_seed_and_mutant() -> None:
    spec = library.get("small")
    first = runner.run(spec, 2, mutant="spso-before-durable")
    again = runner.run(spec, 2, mutant="spso-before-durable")
    clean = runner.run(spec, 2)
    assert first.mutant == "spso-before-durable" and first.to_json()["mutant"] == "spso-before-durable"
    assert clean.mutant is None and clean.to_json()["mutant"] is None
    assert first.trace_hash == again.trace_hash and first.violations == again.violations
    assert clean.ok and not first.ok
    assert mutants.ACTIVE is None


def test_an_unknown_mutant_is_refused_before_the_run() -> None:
    with pytest.raises(mutants.UnknownMutant):
        runner.run(library.get("small"), 1, mutant="no-such-bug")


def test_the_registry_imports_neither_simpy_nor_the_model() -> None:
    allowed = "('model.mutants', 'model.unknown_name')"
    code = ("import sys, model.mutants; "
            f"print(sorted(m for m in sys.modules if m == 'simpy' or m.startswith('model.') and m not in {allowed}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
