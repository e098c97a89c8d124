"""``sharesim validate SCENARIO --seed N --consumer-group GROUP``: one KIP-848 consumer group of a run
checked against ``tla/ConsumerGroup.tla`` by TLC (``tla/consumer_trace_validate.py``).

Exit 0: the whole trace was accepted; 1: rejected (the first unmatched event is printed, the
simulator's observed state beside the spec's); 2: bad input or environment, and also a run that
leaves the spec's abstraction (static membership's temporary leave, partitions added, a paused
member's session expiring while it owns partitions, ...): the events before that step are validated
and the result printed as "trace accepted up to event K of N: <reason>", which is not an acceptance
of the run; 3: the run raised.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from scenarios.exits import BadInput, Exit


def validate_consumer_group(spec: Any, scenario: str, seed: int, group: str, mutant: str | None,
                            max_events: int | None) -> None:
    """Validate, print the verdict and exit (never returns)."""
    from scenarios.validate import note_run_violation, timed
    from tla.consumer_trace_validate import NoConsumerGroup, validate

    kinds = {g.name: g.kind for g in spec.groups}
    if kinds.get(group) != "consumer":
        consumers = sorted(name for name, kind in kinds.items() if kind == "consumer")
        raise BadInput(f"{scenario}: has no KIP-848 consumer group {group!r}"
                       + (f" (its consumer groups: {', '.join(consumers)})" if consumers else " (it has none)"))
    v, wall = timed(lambda: validate(spec, seed, group, mutant=mutant, max_events=max_events), (NoConsumerGroup,))
    where = f"consumer group {group}, {scenario} seed {seed}" + (f", mutant {mutant}" if mutant else "")
    note_run_violation(v.run)
    for note in v.notes:
        click.echo(f"note: {note}")
    if v.partial and not v.accepted:
        click.echo(f"note: the projection stopped at {v.gap_ms} ms, after the events checked: {v.gap}")
    k = len(v.events)
    if v.accepted and not v.partial:
        click.echo(f"trace accepted ({k} events, {v.seconds:.1f} s) [{where}; {wall:.1f} s in all]")
        sys.exit(Exit.OK)
    if v.accepted:
        click.echo(f"trace accepted up to event {k} of {k + v.not_projected}: {v.gap} [{where}; {v.seconds:.1f} s "
                   "TLC]")
        raise BadInput(f"only a prefix was validated, NOT the whole run: the run leaves ConsumerGroup.tla's "
                       f"abstraction at {v.gap_ms} ms ({v.not_projected} later steps of the group not projected)")
    click.echo(f"trace REJECTED ({k} events{' validated of the prefix' if v.partial else ''}, {v.seconds:.1f} s) "
               f"[{where}]: {v.message}")
    if v.first_unmatched is not None and v.first_unmatched < k:
        ev = v.events[v.first_unmatched]
        step = (f"its action {v.action + 1} of {len(ev.acts)}, {_show(ev.acts[v.action])}, is not enabled"
                if v.action is not None and v.action < len(ev.acts)
                else "all its actions taken, the observed state differs")
        click.echo(f"first unmatched event: #{v.first_unmatched + 1} at {ev.time_ms} ms: {ev.what} ({step})")
        click.echo(f"  simulator: {ev.observed()}")
        click.echo(f"  spec:      {v.spec_state}")
    sys.exit(Exit.VIOLATED)


def _show(action: dict[str, Any]) -> str:
    f = action.get("f")
    target = f" target {dict(sorted(f))}" if f else ""
    return f"{action['a']}({action['m']}){target}"
