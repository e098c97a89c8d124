"""A run is a pure function of (scenario, seed) (DESIGN.md principle 2): the same trace hash in two
separate processes with different PYTHONHASHSEED values; a different seed gives a different run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# A faulted small scenario and the swarm (its fault plan is drawn from the seed too).
CASES = (("broker_crash", 5), ("swarm", 5), ("swarm", 6), ("swarm_wide", 5))

_SCRIPT = """
import json, sys
from model.sim.runner import run
from scenarios import library
out = {}
for name, seed in json.loads(sys.argv[1]):
    result = run(library.get(name), seed)
    out[f"{name}/{seed}"] = [result.trace_hash, result.events, result.sim_time_ms, result.faults_fired]
print(json.dumps(out, sort_keys=True))
"""


def _hashes(hash_seed: str) -> dict[str, list[object]]:
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(CASES)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_same_seed_same_trace_hash_across_processes_and_hash_seeds() -> None:
    first = _hashes("0")
    second = _hashes("4242")
    assert first == second
    assert first["swarm/5"][0] != first["swarm/6"][0]  # another seed, another run
    assert first["broker_crash/5"][3] == {"broker_crash": 1}


def test_a_different_seed_gives_a_different_trace_in_process() -> None:
    from model.sim.runner import run
    from scenarios import library

    a = run(library.get("consumer_pause"), 1)
    b = run(library.get("consumer_pause"), 2)
    again = run(library.get("consumer_pause"), 1)
    assert a.trace_hash == again.trace_hash and a.events == again.events
    assert a.trace_hash != b.trace_hash
