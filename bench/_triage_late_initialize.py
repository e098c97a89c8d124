"""Triage of a campaign's ``stored-start-offset-monotonic`` runs: is each the open finding "a late
duplicate initialize" (docs/explanation/findings.md)? Not a benchmark (``python -m bench`` skips it).

Each run whose first violation is ``stored-start-offset-monotonic`` is run again with one more monitor,
which records every share-state request a share coordinator handled, with the key's state before it. The
finding's signature: an InitializeShareGroupState of the violated key, at its current state epoch, reset
the stored state to the start offset the violation names (trunk's share coordinator takes it as a
re-initialize). Each
run is then put in one class:

- an initialize identical to one handled before (the persister's resend of a request whose answer was
  lost, or the group coordinator's heartbeat retry a second time);
- a first retry at start offset 0, not identical to one handled before (the group coordinator's
  heartbeat retry);
- unexplained: no such initialize of the violated key to the start offset it was moved back to, or one
  neither identical to an earlier one nor at 0 (read that run);
- no longer violated (the model changed since the campaign).

    python bench/_triage_late_initialize.py CAMPAIGN_DIR SCENARIO
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

from invariants.sink import Monitor, ViolationSink
from model.core.share_coordinator import ShareGroupState
from model.core.share_state import InitializeShareGroupStateRequest
from model.sim.runner import run_cluster
from reports.aggregate import read_run_table
from scenarios import library

INVARIANT = "stored-start-offset-monotonic"


class _Handled(Monitor):
    """Every share-state request a coordinator handled: (when, key, request, the key's state before)."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        self.initializes: list[tuple[int, str, InitializeShareGroupStateRequest, ShareGroupState | None]] = []

    def on_share_state_handled(self, shard: object, request: object, previous: ShareGroupState | None,
                               sent_ms: int, now_ms: int) -> None:
        if isinstance(request, InitializeShareGroupStateRequest):
            self.initializes.append((now_ms, str(request.key), request, previous))


def violated_seeds(campaign: Path) -> list[int]:
    """The seeds of the campaign's runs whose first violation is ``INVARIANT``."""
    rows = read_run_table(campaign / "runs").select(["seed", "verdict", "violations"]).to_pylist()
    return sorted({row["seed"] for row in rows  # a set: a resumed batch may have left a run's row twice
                   if row["verdict"] == "violated" and row["violations"][0]["invariant"] == INVARIANT})


def classify(scenario: str, seed: int) -> str:
    handled = _Handled()
    result, _ = run_cluster(library.get(scenario), seed, extra_monitors=[handled])
    violation = next((v for v in result.violations if v.invariant == INVARIANT), None)
    if violation is None:
        return "no longer violated"
    key, start_offset = violation.state["key"], violation.state["start_offset"]
    if violation.state["record"] != "ShareSnapshot":
        return "unexplained"
    for now_ms, handled_key, request, previous in reversed(handled.initializes):
        if (now_ms <= violation.time_ms and handled_key == key and previous is not None
                and request.state_epoch == previous.state_epoch and request.start_offset == start_offset
                and previous.start_offset > start_offset):
            if any(earlier_key == key and earlier == request and earlier_ms < now_ms
                   for earlier_ms, earlier_key, earlier, _ in handled.initializes):
                return "an initialize identical to one handled before"
            return "a first retry at start offset 0" if start_offset == 0 else "unexplained"
    return "unexplained"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__)
        return 2
    campaign, scenario = Path(argv[0]), argv[1]
    seeds = violated_seeds(campaign)
    classes: Counter[str] = Counter()
    examples: dict[str, list[int]] = defaultdict(list)
    for seed in seeds:
        kind = classify(scenario, seed)
        classes[kind] += 1
        examples[kind].append(seed)
    print(f"{len(seeds)} runs of {campaign} whose first violation is {INVARIANT}")
    for kind, count in classes.most_common():
        print(f"{count:6d}  {kind}, e.g. --seed {examples[kind][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
