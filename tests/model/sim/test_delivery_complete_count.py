"""The leader's deliveryCompleteCount (KIP-1226) is a running counter, moved by each transition as
trunk's SharePartition moves its own; this checks it against a count of the window after every call
that changes a share-partition, over whole simulations: the dead-letter queue's two phases, compacted
topics, failovers, RENEW and the log start included (the stateful test covers the rest, without a DLQ)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from model.core.share_partition import SharePartition
from model.core.share_state import RecordState
from model.sim.runner import run
from scenarios import library

TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
CHANGING = ("acquire", "acknowledge", "complete_write", "complete_dlq", "expire_locks", "release_member",
            "advance_log_start", "recover", "check_state_epoch")


def _window_count(sp: SharePartition) -> int:
    return sum(b.last_offset - b.first_offset + 1 for b in sp.batches()
               if (b.target_state if b.in_transition else b.state) in TERMINAL)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    seen: dict[str, int] = {}

    def checked(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(self: SharePartition, *args: Any, **kwargs: Any) -> Any:
            out = method(self, *args, **kwargs)
            assert self.delivery_complete_count == _window_count(self), f"after {name}"
            seen[name] = seen.get(name, 0) + 1
            return out
        return call

    for name in CHANGING:
        monkeypatch.setattr(SharePartition, name, checked(name, getattr(SharePartition, name)))
    yield seen


@pytest.mark.parametrize(("scenario", "seeds"), [
    ("dead_letter_queue", range(1, 4)),
    ("swarm_compacted", range(1, 3)),
    ("swarm_failovers", range(1, 3)),
    ("swarm_renew", range(1, 2)),
    ("delete_records", range(1, 2)),
])
def test_the_counter_is_the_window_count(calls: dict[str, int], scenario: str, seeds: range) -> None:
    for seed in seeds:
        result = run(library.get(scenario), seed)
        assert result.verdict == "ok", (scenario, seed, result.violations)
    assert calls.get("acknowledge", 0) > 0 and calls.get("complete_write", 0) > 0
    if scenario == "dead_letter_queue":
        assert calls.get("complete_dlq", 0) > 0, "the DLQ's phase 2 ran"
    if scenario == "delete_records":
        assert calls.get("advance_log_start", 0) > 0
