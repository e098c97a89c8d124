"""Triage of a campaign's violated runs: is each one of the open findings (docs/explanation/findings.md) that
a run's own steps can show? Not a benchmark (``python -m bench`` skips it).

Each violated run is run again with one more monitor, which records what the share coordinators and the
share-partition leaders did with share-state requests and what the KIP-848 consumers and their coordinator
did with heartbeats; the run is then put in a class by what it did, not only by its violation's message.
Three findings are told this way:

- **a late duplicate initialize** (the first violation ``stored-start-offset-monotonic``): an
  InitializeShareGroupState of the violated key, at its current state epoch, reset the stored state to the
  start offset the violation names (trunk's share coordinator takes it as a re-initialize). Its two paths:

  - an initialize identical to one handled before (the persister's resend of a request whose answer was
    lost, or the group coordinator's heartbeat retry a second time);
  - a first retry at start offset 0, not identical to one handled before (the group coordinator's
    heartbeat retry).

- **a share-state write that failed but landed** (the first violation ``record-state-transition``, durably
  terminal offsets written back to AVAILABLE or acquired again): a WriteShareGroupState of the same leader
  (its leader epoch) made offsets of the violated range terminal; a share coordinator appended it and its
  record committed on ``__share_group_state``; the leader never took an answer to it as success, so it
  rolled the acknowledgement back (SP-9) and wrote or delivered over what was durable.

- **a held consumer-group heartbeat moves the assignment in an answer nobody takes** (the first violation
  ``member-convergence`` or ``no-assign-and-revoke``): a group coordinator handled a ConsumerGroupHeartbeat
  of a KIP-848 consumer the violation names after one the consumer sent later (the request was held), and
  answered it with an assignment other than what the consumer owned; the consumer never took that answer,
  and took no later answer carrying an assignment before the violation (nothing caught it up; for
  ``no-assign-and-revoke``, the answer it is violated at is the first that does); at the violation the
  coordinator still held what it said (for ``no-assign-and-revoke``: the consumer took as new what it said).
  The same with a heartbeat that was not held (its answer lost or late) is a class of its own: the finding
  names the held path.

Every other run is "no longer violated" (the model changed since the campaign), "now first violates" another
invariant (the same), "not triaged here" (its first violation is another invariant's), or "unexplained" (read
that run). A run stops at its first violation, so what a run never did, it never did before that. The runs
are run again with the campaign's own scenario and mutant, as its ``campaign.json`` holds them.

    python bench/_triage.py CAMPAIGN_DIR
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from invariants.ledger import TERMINAL_STATES
from invariants.sink import Monitor, ViolationSink
from invariants.violation import Violation
from model.core.group.consumer_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.core.metadata import TopicPartition
from model.core.share_coordinator import ShareGroupState
from model.core.share_state import InitializeShareGroupStateRequest, WriteShareGroupStateRequest
from model.sim.cluster import Cluster
from model.sim.runner import run_cluster
from reports.aggregate import read_run_table
from scenarios.campaign.identity import read_meta
from scenarios.spec import Scenario
from scenarios.toml_format import loads

# The invariants whose first violation each finding shows ...
LATE_INITIALIZE_INVARIANT = "stored-start-offset-monotonic"
WRITE_LANDED_INVARIANT = "record-state-transition"
HELD_HEARTBEAT_INVARIANTS = ("member-convergence", "no-assign-and-revoke")
TRIAGED = (LATE_INITIALIZE_INVARIANT, WRITE_LANDED_INVARIANT, *HELD_HEARTBEAT_INVARIANTS)

# ... and the classes a run is put in.

IDENTICAL_INITIALIZE = "a late initialize identical to one handled before"
FIRST_RETRY_AT_ZERO = "a late initialize, a first retry at start offset 0"
WRITE_LANDED = "a write that failed but landed"
ANSWER_NOT_TAKEN = "a held consumer-group heartbeat's assignment, in an answer the consumer never took"
LOST_ANSWER = "an assignment in an answer the consumer never took, its heartbeat not held (the answer lost or late)"
UNEXPLAINED = "unexplained"
NO_LONGER = "no longer violated"


class _History(Monitor):
    """What happened to a run's share-state requests and KIP-848 heartbeats, in the order it happened."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        # (when, key, request, the key's state before) of each initialize a coordinator handled
        self.initializes: list[tuple[int, str, InitializeShareGroupStateRequest, ShareGroupState | None]] = []
        self._appended: dict[object, WriteShareGroupStateRequest] = {}  # a record a coordinator appended -> its write
        self.landed: list[tuple[int, WriteShareGroupStateRequest]] = []  # (when its record committed, the write)
        self.taken: list[tuple[int, WriteShareGroupStateRequest]] = []  # (when a leader took it as done, the write)
        # KIP-848 heartbeats, by identity (the coordinator handles the object the consumer sent, and the
        # consumer applies the object the coordinator answered): each one sent, with when and its client ...
        self.heartbeats_sent: list[tuple[int, str, ConsumerGroupHeartbeatRequest]] = []
        # ... answered at once by a coordinator (an answer deferred to a later step is not seen) ...
        self.answers: list[tuple[int, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse]] = []
        self.answers_taken: list[tuple[int, str, ConsumerGroupHeartbeatResponse]] = []  # ... applied by its client
        self.owned: list[tuple[int, str, frozenset[TopicPartition]]] = []  # (when, client, what it owns since)

    def on_share_state_handled(self, shard: object, request: object, previous: ShareGroupState | None,
                               sent_ms: int, now_ms: int) -> None:
        if isinstance(request, InitializeShareGroupStateRequest):
            self.initializes.append((now_ms, str(request.key), request, previous))

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        if isinstance(request, WriteShareGroupStateRequest):
            for record in records:
                self._appended[record] = request  # by value: a resend's ShareUpdate equals the first one's

    def on_share_state_committed(self, partition: int, records: Sequence[object], now_ms: int) -> None:
        for record in records:
            write = self._appended.get(record)
            if write is not None:
                self.landed.append((now_ms, write))

    def on_write_completed(self, request: WriteShareGroupStateRequest, now_ms: int) -> None:
        self.taken.append((now_ms, request))

    def on_consumer_heartbeat(self, client: str, group_id: str, kind: str, member: object, request: object,
                              response: object, now_ms: int) -> None:
        if kind == "sent" and isinstance(request, ConsumerGroupHeartbeatRequest):
            self.heartbeats_sent.append((now_ms, client, request))
        elif kind == "answered" and isinstance(response, ConsumerGroupHeartbeatResponse):
            self.answers_taken.append((now_ms, client, response))

    def on_consumer_reconciled(self, client: str, group_id: str, revoked: frozenset[TopicPartition],
                               assigned: frozenset[TopicPartition], owned: frozenset[TopicPartition],
                               fenced: bool, now_ms: int) -> None:
        self.owned.append((now_ms, client, owned))

    def on_group_request(self, partition: int, leader_epoch: int, shard: object, request: object,
                         response: object, now_ms: int) -> None:
        if isinstance(request, ConsumerGroupHeartbeatRequest) and isinstance(response, ConsumerGroupHeartbeatResponse):
            self.answers.append((now_ms, request, response))


def violated_runs(campaign: Path) -> dict[int, str]:
    """Seed -> the first violated invariant, of the campaign's violated runs."""
    rows = read_run_table(campaign / "runs").select(["seed", "verdict", "violations"]).to_pylist()
    # A dict: a resumed batch may have left a run's row twice.
    return {row["seed"]: row["violations"][0]["invariant"] for row in sorted(rows, key=lambda r: r["seed"])
            if row["verdict"] == "violated"}


def classify(scenario: Scenario, seed: int, invariant: str, mutant: str | None = None) -> str:
    """The class of ``seed``'s run of ``scenario``, whose campaign row's first violation is ``invariant``."""
    history = _History()
    result, cluster = run_cluster(scenario, seed, extra_monitors=[history], mutant=mutant)
    if not result.violations:
        return NO_LONGER
    violation = result.violations[0]
    if violation.invariant != invariant:
        return f"now first violates {violation.invariant}"
    if invariant not in TRIAGED:
        return f"not triaged here ({invariant})"
    if invariant == LATE_INITIALIZE_INVARIANT:
        return _late_initialize(violation, history)
    if invariant == WRITE_LANDED_INVARIANT:
        return _failed_write_landed(violation, history)
    return _answer_not_taken(violation, history, coordinator_holds(cluster, _clients(violation)))


def _clients(violation: Violation) -> list[str]:
    """The consumers a ``member-convergence`` or ``no-assign-and-revoke`` violation names."""
    return list(violation.state.get("members") or [violation.state.get("member")])


def coordinator_holds(cluster: Cluster, clients: list[str]) -> dict[str, frozenset[TopicPartition] | None]:
    """What the group coordinator holds assigned to each KIP-848 consumer of ``clients`` now (None: no member)."""
    holds: dict[str, frozenset[TopicPartition] | None] = dict.fromkeys(clients)
    for client in clients:
        consumer = cluster.consumers.get(client)
        shard = None if consumer is None else cluster.group_coordinator(consumer.group_id)
        group = None if shard is None or consumer is None else shard.consumer.group(consumer.group_id)
        if group is not None and consumer is not None and consumer.member.member_id in group.members:
            holds[client] = group.members[consumer.member.member_id].assigned_partitions
    return holds


def _owned_at(history: _History, client: str, until_ms: int) -> frozenset[TopicPartition]:
    """What ``client`` owned, as it last reconciled, at ``until_ms``."""
    owned = [what for owned_ms, owner, what in history.owned if owner == client and owned_ms <= until_ms]
    return owned[-1] if owned else frozenset()


def _late_initialize(violation: Violation, history: _History) -> str:
    key, start_offset = violation.state["key"], violation.state["start_offset"]
    if violation.state["record"] != "ShareSnapshot":
        return UNEXPLAINED
    for now_ms, handled_key, request, previous in reversed(history.initializes):
        if (now_ms <= violation.time_ms and handled_key == key and previous is not None
                and request.state_epoch == previous.state_epoch and request.start_offset == start_offset
                and previous.start_offset > start_offset):
            if any(earlier_key == key and earlier == request and earlier_ms < now_ms
                   for earlier_ms, earlier_key, earlier, _ in history.initializes):
                return IDENTICAL_INITIALIZE
            return FIRST_RETRY_AT_ZERO if start_offset == 0 else UNEXPLAINED
    return UNEXPLAINED


def _failed_write_landed(violation: Violation, history: _History) -> str:
    # The invariant's shape this finding has (its message says which): durably terminal offsets written back
    # to AVAILABLE or acquired, not a state that is never persisted or ARCHIVING left.
    if not violation.message.split(": ", 1)[-1].startswith("durably terminal offsets"):
        return UNEXPLAINED
    key, first, last = violation.state["key"], violation.state["first"], violation.state["last"]
    leader_epoch = violation.state["leader_epoch"]
    taken = {write for _, write in history.taken}
    for landed_ms, write in history.landed:
        if (landed_ms <= violation.time_ms and str(write.key) == key and write.leader_epoch == leader_epoch
                and write not in taken
                and any(batch.delivery_state in TERMINAL_STATES and batch.first_offset <= last
                        and first <= batch.last_offset for batch in write.state_batches)):
            return WRITE_LANDED
    return UNEXPLAINED


def _answer_not_taken(violation: Violation, history: _History,
                      holds: dict[str, frozenset[TopicPartition] | None]) -> str:
    """``holds``: what the coordinator holds assigned to each consumer the violation names, at the violation."""
    clients = set(_clients(violation))
    sent = {id(request): (sent_ms, client) for sent_ms, client, request in history.heartbeats_sent}
    taken_at = {id(response): taken_ms for taken_ms, _, response in history.answers_taken}
    # (when handled, when sent, the client, the answer) of each heartbeat of a named client answered at once
    answered = [(handled_ms, *sent[id(request)], answer) for handled_ms, request, answer in history.answers
                if sent.get(id(request), (0, ""))[1] in clients]
    lost = False
    for handled_ms, sent_ms, client, answer in answered:
        if answer.assignment is None or id(answer) in taken_at:
            continue
        given = answer.assignment.assigned_topic_partitions
        # Held: handled after a heartbeat the client sent later (the coordinator saw them out of order).
        held = any(other == client and other_sent_ms > sent_ms and other_handled_ms < handled_ms
                   for other_handled_ms, other_sent_ms, other, _ in answered)
        moved = given != _owned_at(history, client, handled_ms)
        # Nothing caught the client up: no answer the coordinator gave it after this one carried an assignment
        # the client took before the violation.
        caught_up = any(other == client and other_handled_ms > handled_ms and later.assignment is not None
                        and taken_at.get(id(later), violation.time_ms) < violation.time_ms
                        for other_handled_ms, _, other, later in answered)
        if not moved or caught_up:
            continue
        if violation.invariant == "no-assign-and-revoke":
            # The client took as new what that answer had given it.
            parted = set(violation.state["assigned"]) <= {str(tp) for tp in given}
        else:
            # The coordinator holds what it said in the answer nobody took; the client owns something else.
            parted = holds.get(client) == given and _owned_at(history, client, violation.time_ms) != given
        if parted and held:
            return ANSWER_NOT_TAKEN
        lost = lost or parted
    return LOST_ANSWER if lost else UNEXPLAINED  # the finding's own, held path first


def main(argv: list[str]) -> int:
    meta = read_meta(Path(argv[0])) if len(argv) == 1 else None
    if meta is None:
        print(__doc__)
        return 2
    campaign = Path(argv[0])
    scenario = loads(meta["scenario_toml"], source=str(campaign / "campaign.json"))
    runs = violated_runs(campaign)
    classes: Counter[str] = Counter()
    example: dict[str, int] = {}  # class -> its first seed
    for seed, invariant in runs.items():
        kind = classify(scenario, seed, invariant, meta["mutant"])
        classes[kind] += 1
        example.setdefault(kind, seed)
    print(f"{len(runs)} violated runs of {campaign}")
    for kind, count in classes.most_common():
        print(f"{count:6d}  {kind}, e.g. --seed {example[kind]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
