"""``sharesim validate SCENARIO --seed N [--mutant M] [--partition P]``: one run checked against
``tla/ShareGroup.tla`` by TLC (trace validation, issue 27; ``tla/trace_validate.py``).

Exit 0: the trace was accepted; 1: rejected (the first unmatched event is printed, the simulator's
observed state beside the spec's); 2: bad input or environment (no share group, Java missing, a
step the projection cannot map, TLC without a verdict); 3: the run raised.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from scenarios.exits import BadInput, Exit
from scenarios.spec import MAX_SEED


@click.command("validate")
@click.argument("scenario")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=None, help="The run seed (default: the scenario's).")
@click.option("--mutant", default=None, metavar="NAME", help="Inject the named bug (see `sharesim mutants`).")
@click.option("--partition", type=click.IntRange(0, None), default=None,
              help="The share-partition to validate (default: the busiest, by events).")
@click.option("--max-events", type=click.IntRange(1, None), default=None,
              help="Validate only the first N events of the share-partition (a prefix of a trace is a trace).")
@click.option("--consumer-group", default=None, metavar="GROUP",
              help="Validate the KIP-848 consumer group GROUP against ConsumerGroup.tla instead (exit 2 when the "
                   "run leaves the spec's abstraction: only the events before it are checked).")
def validate_command(scenario: str, seed: int | None, mutant: str | None, partition: int | None,
                     max_events: int | None, consumer_group: str | None) -> None:
    """Run SCENARIO with --seed N, project one share-partition's behaviour onto ShareGroup.tla's
    actions, and have TLC match it: print "trace accepted (K events, T s)" and exit 0, or the first
    event the spec cannot match with the simulator's and the spec's states and exit 1."""
    from scenarios.check import require_mutant
    from scenarios.commands import load_or_exit
    from tla.trace_project import UnprojectedStep
    from tla.trace_validate import NoSharePartition, validate

    spec = load_or_exit(scenario)
    require_mutant(mutant)
    if consumer_group is not None:
        from scenarios.validate_consumer import validate_consumer_group

        if partition is not None:
            raise BadInput("--partition names a share-partition; it does not go with --consumer-group")
        validate_consumer_group(spec, scenario, spec.seed if seed is None else seed, consumer_group, mutant,
                                max_events)
    if not any(g.kind == "share" for g in spec.groups):
        consumers = sorted(g.name for g in spec.groups if g.kind == "consumer")
        raise BadInput(f"{scenario}: has no share group; validate checks a share-partition against ShareGroup.tla"
                       + (f" (--consumer-group {consumers[0]} checks a KIP-848 consumer group against "
                          "ConsumerGroup.tla)" if consumers else ""))
    run_seed = spec.seed if seed is None else seed
    v, wall = timed(lambda: validate(spec, run_seed, mutant=mutant, partition=partition,
                                     corrupt=(lambda evs: evs[:max_events]) if max_events else None),
                    (NoSharePartition, UnprojectedStep))
    where = f"{v.key}, {scenario} seed {run_seed}" + (f", mutant {mutant}" if mutant else "")
    note_run_violation(v.run)
    for key, gap in sorted(v.gaps.items()):
        click.echo(f"note: {key}: {gap}")
    lives = f" in {v.lives} lives of the state" if v.lives > 1 else ""
    if v.accepted:
        click.echo(f"trace accepted ({len(v.events)} events{lives}, {v.seconds:.1f} s) [{where}; {wall:.1f} s in all]")
        sys.exit(Exit.OK)
    click.echo(f"trace REJECTED ({len(v.events)} events{lives}, {v.seconds:.1f} s) [{where}]: {v.message}")
    if v.first_unmatched is not None and v.first_unmatched < len(v.events):
        ev = v.events[v.first_unmatched]
        step = (f"its action {v.action + 1} of {len(ev.acts)}, {ev.acts[v.action]}, is not enabled"
                if v.action is not None and v.action < len(ev.acts)
                else "all its actions taken, the observed state differs")
        life = f" (life {v.life} of {v.lives})" if v.lives > 1 else ""
        click.echo(f"first unmatched event: #{v.first_unmatched + 1}{life} at {ev.time_ms} ms: {ev.what} ({step})")
        click.echo(f"  simulator: {ev.observed()}")
        click.echo(f"  spec:      {v.spec_state}")
    sys.exit(Exit.VIOLATED)


T = TypeVar("T")


def timed(call: Callable[[], T], refused: tuple[type[Exception], ...]) -> tuple[T, float]:
    """``call()`` and its wall seconds; ``refused`` (the trace cannot be had) and a TLC without a verdict are
    bad input, one line (exit 2). Shared by the share-partition and the consumer-group validation."""
    from tla.run import ToolMissing

    started = time.perf_counter()
    try:
        result = call()
    except refused as exc:
        raise BadInput(str(exc)) from None
    except ToolMissing as exc:
        raise BadInput(f"TLC: {exc}") from None
    return result, time.perf_counter() - started


def note_run_violation(run: Any) -> None:
    """Says when the run stopped at a violation, so its trace is the run's up to that point."""
    if run is not None and run.violations:
        first = run.violations[0]
        click.echo(f"note: the run violated {first.invariant} at {first.time_ms} ms (it stopped there: the trace "
                   "is the run's up to that point)")
