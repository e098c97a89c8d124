"""The situation catalogue (model/situations.py): well formed, every situation counted by a hook in the module
its ``where`` names and every hook in the catalogue, counters reset per run and invisible to the trace, and
each library swarm still reaching, within a few seeds, the situations it is declared to reach."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from model import situations
from model.sim.runner import run
from model.situations import SITUATIONS, SWARM_RUNS
from scenarios import library

ROOT = Path(__file__).resolve().parents[2]
# SPEC.md's rule ids.
_RULES = {f"{family}-{i}" for family, last in (("SP", 15), ("SC", 9), ("GC", 9), ("CG", 7), ("CL", 3), ("E", 5))
          for i in range(1, last + 1)}
_HOOK = re.compile(r'_situations\.COUNTS\["([a-z0-9-]+)"\]')
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")


def _model_sources() -> dict[Path, str]:
    return {p: p.read_text() for p in sorted((ROOT / "model").rglob("*.py")) if p.name != "situations.py"}


def test_the_catalogue_has_at_least_35_well_formed_situations() -> None:
    ids = [s.id for s in SITUATIONS]
    assert len(ids) >= 35 and len(set(ids)) == len(ids)
    for s in SITUATIONS:
        assert _ID.fullmatch(s.id), s.id
        assert s.statement and s.statement[0].islower() and not s.statement.endswith("."), s.id
        assert s.rules and set(s.rules) <= _RULES, (s.id, s.rules)
        module, _, functions = s.where.partition(": ")
        assert (ROOT / module).is_file() and functions, s.where
        assert set(s.swarms) <= set(library.names()), s.swarms
        assert s.to_json()["id"] == s.id and situations.get(s.id) is s
    assert situations.get("no-such-situation") is None


def test_every_situation_is_counted_in_the_module_its_where_names_and_every_hook_is_catalogued() -> None:
    sources = _model_sources()
    hooked = {m for text in sources.values() for m in _HOOK.findall(text)}
    assert hooked <= set(situations.COUNTS), hooked - set(situations.COUNTS)
    for s in SITUATIONS:
        text = sources[ROOT / s.where.partition(": ")[0]]
        # A hook names the id, or (an acknowledge type, a release at the limit) a table of ids next to it does.
        assert f'"{s.id}"' in text and "_situations.COUNTS[" in text, s.id
        for function in s.where.partition(": ")[2].split(", "):
            assert re.search(rf"(def|class) {re.escape(function)}\b", text), (s.id, function)


def test_counters_reset_per_run_and_a_run_reports_only_the_nonzero_ones_sorted() -> None:
    situations.COUNTS["lock-timeout"] += 5  # left over from code run outside a run
    result = run(library.get("small"), 1)
    assert result.situations and all(v > 0 for v in result.situations.values())
    assert list(result.situations) == sorted(result.situations)
    assert set(result.situations) <= set(situations.COUNTS)
    assert result.to_json()["situations"] == result.situations
    again = run(library.get("small"), 1)
    assert again.situations == result.situations and again.trace_hash == result.trace_hash
    situations.reset()
    assert situations.reached() == {} and set(situations.COUNTS) == {s.id for s in SITUATIONS}


def test_counting_leaves_the_trace_hash_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with counters that count nothing (a dict that drops every increment) has the same hash."""
    counted = run(library.get("swarm_locks"), 3)

    class Deaf(dict[str, int]):
        def __setitem__(self, key: str, value: int) -> None:
            super().__setitem__(key, 0)

    deaf = Deaf(situations.COUNTS)
    monkeypatch.setattr(situations, "COUNTS", deaf)
    quiet = run(library.get("swarm_locks"), 3)
    assert quiet.situations == {} and counted.situations
    assert quiet.trace_hash == counted.trace_hash and quiet.events == counted.events


def _declared() -> dict[str, list[str]]:
    by_swarm: dict[str, list[str]] = {}
    for s in SITUATIONS:
        for swarm in s.swarms:
            by_swarm.setdefault(swarm, []).append(s.id)
    return by_swarm


def test_every_situation_is_declared_reached_by_some_swarm_or_says_why_not() -> None:
    assert [s.id for s in SITUATIONS if bool(s.swarms) == bool(s.rare)] == []


@pytest.mark.parametrize("swarm", sorted(_declared()))
def test_the_swarm_reaches_the_situations_it_is_declared_to_reach(swarm: str) -> None:
    """Seeds 0.. of the swarm, stopping once every situation declared for it was reached (at most SWARM_RUNS)."""
    wanted = set(_declared()[swarm])
    scenario = library.get(swarm)
    for seed in range(SWARM_RUNS):
        wanted -= set(run(scenario, seed).situations)
        if not wanted:
            return
    pytest.fail(f"{swarm} no longer reaches {sorted(wanted)} within {SWARM_RUNS} seeds")
