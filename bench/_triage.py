"""Triage of a campaign's violated runs: is each one of the open findings (docs/explanation/findings.md) that
a run's own steps can show? Not a benchmark (``python -m bench`` skips it).

Each violated run is run again with one more monitor, which records what the share coordinators and the
share-partition leaders did with share-state requests; the run is then put in a class by what it did, not
by its violation's message. Two findings are told this way:

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
  ``member-convergence`` or ``no-assign-and-revoke``): a group coordinator answered a ConsumerGroupHeartbeat
  of a KIP-848 consumer the violation names with an assignment; the consumer never took that answer, and had
  moved on (it took the answer to a heartbeat it sent later), so its view and the coordinator's parted.

Every other run is "no longer violated" (the model changed since the campaign), "not triaged here" (its
first violation is another invariant's), or "unexplained" (read that run). The runs are run again with
the campaign's own scenario and mutant, as its ``campaign.json`` holds them.

    python bench/_triage.py CAMPAIGN_DIR
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from invariants.sink import Monitor, ViolationSink
from invariants.violation import Violation
from model.core.group.consumer_messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from model.core.share_coordinator import ShareGroupState
from model.core.share_state import InitializeShareGroupStateRequest, RecordState, WriteShareGroupStateRequest
from model.sim.runner import run_cluster
from reports.aggregate import read_run_table
from scenarios.campaign.identity import read_meta
from scenarios.spec import Scenario
from scenarios.toml_format import loads

LATE_INITIALIZE = "stored-start-offset-monotonic"
FAILED_WRITE_LANDED = "record-state-transition"
HELD_HEARTBEAT = ("member-convergence", "no-assign-and-revoke")
TRIAGED = (LATE_INITIALIZE, FAILED_WRITE_LANDED, *HELD_HEARTBEAT)

IDENTICAL_INITIALIZE = "a late initialize identical to one handled before"
FIRST_RETRY_AT_ZERO = "a late initialize, a first retry at start offset 0"
WRITE_LANDED = "a write that failed but landed"
ANSWER_NOT_TAKEN = "a held consumer-group heartbeat's assignment, in an answer the consumer never took"
UNEXPLAINED = "unexplained"
NO_LONGER = "no longer violated"

_TERMINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class _Requests(Monitor):
    """What happened to a run's share-state requests and KIP-848 heartbeats, in the order it happened."""

    def __init__(self) -> None:
        super().__init__(ViolationSink(0))
        # (when, key, request, the key's state before) of each initialize a coordinator handled
        self.initializes: list[tuple[int, str, InitializeShareGroupStateRequest, ShareGroupState | None]] = []
        self._appended: dict[object, WriteShareGroupStateRequest] = {}  # a record a coordinator appended -> its write
        self.landed: list[tuple[int, WriteShareGroupStateRequest]] = []  # (when its record committed, the write)
        self.taken: list[tuple[int, WriteShareGroupStateRequest]] = []  # (when a leader took it as done, the write)
        # KIP-848 heartbeats, by identity (the coordinator handles the object the consumer sent, and the
        # consumer applies the object the coordinator answered): each one sent, with its client and when ...
        self.heartbeats_sent: list[tuple[int, str, ConsumerGroupHeartbeatRequest]] = []
        self.answers: list[tuple[ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse]] = []  # ... answered
        self.answers_taken: list[tuple[int, ConsumerGroupHeartbeatResponse]] = []  # ... and applied by its consumer

    def on_share_state_handled(self, shard: object, request: object, previous: ShareGroupState | None,
                               sent_ms: int, now_ms: int) -> None:
        if isinstance(request, InitializeShareGroupStateRequest):
            self.initializes.append((now_ms, str(request.key), request, previous))

    def on_share_state_request(self, partition: int, request: object, response: object,
                               records: Sequence[object], sent_ms: int, now_ms: int) -> None:
        if isinstance(request, WriteShareGroupStateRequest):
            for record in records:
                self._appended[record] = request  # records compare by value: a resend's record is the same

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
            self.answers_taken.append((now_ms, response))

    def on_group_request(self, partition: int, leader_epoch: int, shard: object, request: object,
                         response: object, now_ms: int) -> None:
        if isinstance(request, ConsumerGroupHeartbeatRequest) and isinstance(response, ConsumerGroupHeartbeatResponse):
            self.answers.append((request, response))


def violated_runs(campaign: Path) -> dict[int, str]:
    """Seed -> the first violated invariant, of the campaign's violated runs."""
    rows = read_run_table(campaign / "runs").select(["seed", "verdict", "violations"]).to_pylist()
    # A dict: a resumed batch may have left a run's row twice.
    return {row["seed"]: row["violations"][0]["invariant"] for row in sorted(rows, key=lambda r: r["seed"])
            if row["verdict"] == "violated"}


def classify(scenario: Scenario, seed: int, invariant: str, mutant: str | None = None) -> str:
    """The class of ``seed``'s run of ``scenario``, whose campaign row's first violation is ``invariant``."""
    requests = _Requests()
    result, _ = run_cluster(scenario, seed, extra_monitors=[requests], mutant=mutant)
    violation = next((v for v in result.violations if v.invariant == invariant), None)
    if violation is None:
        return NO_LONGER
    if invariant not in TRIAGED:
        return f"not triaged here ({invariant})"
    if invariant == LATE_INITIALIZE:
        return _late_initialize(violation, requests)
    if invariant == FAILED_WRITE_LANDED:
        return _failed_write_landed(violation, requests)
    return _answer_not_taken(violation, requests)


def _late_initialize(violation: Violation, requests: _Requests) -> str:
    key, start_offset = violation.state["key"], violation.state["start_offset"]
    if violation.state["record"] != "ShareSnapshot":
        return UNEXPLAINED
    for now_ms, handled_key, request, previous in reversed(requests.initializes):
        if (now_ms <= violation.time_ms and handled_key == key and previous is not None
                and request.state_epoch == previous.state_epoch and request.start_offset == start_offset
                and previous.start_offset > start_offset):
            if any(earlier_key == key and earlier == request and earlier_ms < now_ms
                   for earlier_ms, earlier_key, earlier, _ in requests.initializes):
                return IDENTICAL_INITIALIZE
            return FIRST_RETRY_AT_ZERO if start_offset == 0 else UNEXPLAINED
    return UNEXPLAINED


def _failed_write_landed(violation: Violation, requests: _Requests) -> str:
    if not violation.message.split(": ", 1)[-1].startswith("durably terminal offsets"):
        return UNEXPLAINED  # a state never persisted, or ARCHIVING left: not this finding's shape
    key, first, last = violation.state["key"], violation.state["first"], violation.state["last"]
    leader_epoch = violation.state["leader_epoch"]
    taken = {write for taken_ms, write in requests.taken if taken_ms <= violation.time_ms}
    for landed_ms, write in requests.landed:
        if (landed_ms <= violation.time_ms and str(write.key) == key and write.leader_epoch == leader_epoch
                and write not in taken
                and any(batch.delivery_state in _TERMINAL and batch.first_offset <= last
                        and first <= batch.last_offset for batch in write.state_batches)):
            return WRITE_LANDED
    return UNEXPLAINED


def _answer_not_taken(violation: Violation, requests: _Requests) -> str:
    clients = set(violation.state.get("members") or [violation.state.get("member")])
    sent = [(client, request) for sent_ms, client, request in requests.heartbeats_sent
            if sent_ms <= violation.time_ms and client in clients]
    taken = [response for taken_ms, response in requests.answers_taken if taken_ms <= violation.time_ms]
    answer_to = {id(request): response for request, response in requests.answers}
    for index, (client, request) in enumerate(sent):
        answer = answer_to.get(id(request))
        if answer is None or answer.assignment is None or any(answer is t for t in taken):
            continue
        later = (answer_to.get(id(r)) for c, r in sent[index + 1:] if c == client)
        if any(any(a is t for t in taken) for a in later if a is not None):
            return ANSWER_NOT_TAKEN
    return UNEXPLAINED


def main(argv: list[str]) -> int:
    meta = read_meta(Path(argv[0])) if len(argv) == 1 else None
    if meta is None:
        print(__doc__)
        return 2
    campaign = Path(argv[0])
    scenario = loads(meta["scenario_toml"], source=str(campaign / "campaign.json"))
    runs = violated_runs(campaign)
    classes: Counter[str] = Counter()
    examples: dict[str, list[int]] = defaultdict(list)
    for seed, invariant in runs.items():
        kind = classify(scenario, seed, invariant, meta["mutant"])
        classes[kind] += 1
        examples[kind].append(seed)
    print(f"{len(runs)} violated runs of {campaign}")
    for kind, count in classes.most_common():
        print(f"{count:6d}  {kind}, e.g. --seed {examples[kind][0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
