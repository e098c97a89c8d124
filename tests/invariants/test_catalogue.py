"""The catalogue: the fixed ids, their SPEC ids and kinds, a checker for each, a failing-case test for
each, and the two liveness properties judged by the cluster at its deadline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from invariants import catalogue
from invariants.catalogue import CATALOGUE, KINDS, UnknownInvariant, get
from invariants.ids import TABLE, spec_of
from invariants.monitors import INVARIANTS, standard_monitors
from invariants.sink import Monitor
from model.core.group.share_member import MemberState
from model.sim.cluster import Cluster
from scenarios import library

# The table every engineer works from (the brief's catalogue ids), in catalogue order.
IDS = {
    "record-state-transition": ("SP-1",),
    "delivery-count-limit": ("SP-5", "E-4"),
    "spso-monotonic": ("SP-6",),
    "window-bounds": ("SP-7",),
    "window-size": ("SP-8",),
    "ack-after-durable-write": ("SP-9",),
    "counts-not-below-durable": ("SP-11",),
    "deliveries-within-failover-bound": ("SP-11",),  # not in the brief: SP-11's bound across tenures
    "no-aborted-delivery": ("SP-13",),
    "coordinator-replay-equal": ("SC-6",),
    "zombie-write-fenced": ("SC-5",),
    "earlier-life-write-fenced": ("SC-5", "GC-8"),
    "earlier-life-delete-fenced": ("SC-8", "GC-8"),
    "stored-epoch-sources": ("SC-5",),
    "stored-start-offset-monotonic": ("SP-6", "SC-4"),  # issue 24: the coordinator's side of SP-6
    "negative-epoch-changes-nothing": ("SC-5",),  # issue 24: KAFKA-20743
    "snapshot-update-limit": ("SC-3",),
    "group-epoch-order": ("GC-2", "GC-3", "GC-4", "CG-1"),
    "assign-initialized-only": ("GC-5",),
    "exclusive-ownership": ("CG-3",),
    "no-assign-and-revoke": ("CG-2",),
    "eventual-resolution": ("E-1",),
    "no-redelivery-after-accept": ("E-2",),
    "exclusive-acquisition": ("E-3",),
    "member-convergence": ("E-5",),
    "share-session-epoch": ("CL-1",),
    "stored-delivery-complete-count": ("SC-4",),
    "delivery-complete-count": ("SP-1",),
    "target-assignment-balanced": ("GC-5",),  # issue 24: trunk's SimpleAssignor balance
    "last-delivery-alone": ("SP-5",),  # issue 24: Kafka's delivery-count throttling
    "dead-letter-queue": ("SP-1", "SP-3"),  # issue 24: KIP-1191, checked from the DLQ topic
    "gap-only-without-record": ("SP-3", "SP-14"),  # issue 24: GAP acknowledgements of compacted offsets
    "refused-share-request-changes-nothing": ("CL-1", "CL-2", "SP-3"),  # issue 25: hostile share requests
    # issue 25: session release, archiving reasons, acknowledgement discipline, delivery after subscription
    "release-on-session-end": ("SP-15", "CL-1"),
    "archive-only-for-reason": ("SP-1", "SP-3", "SP-5", "SP-13", "SP-14"),
    "ack-own-session-only": ("CL-2", "SP-3", "E-3"),
    "subscribed-records-delivered": ("E-1", "SP-10"),
    "fetch-woken-when-acquirable": ("SP-2", "SP-4"),  # issue 25: the share-fetch purgatory's wake-ups
}
LIVENESS = {"eventual-resolution", "member-convergence"}


def test_the_catalogue_ids_and_specs_are_the_table() -> None:
    assert [(i.id, i.spec) for i in CATALOGUE] == list(IDS.items())
    assert catalogue.ids() == list(IDS) == list(TABLE) == list(INVARIANTS)
    assert {i.id for i in CATALOGUE if i.kind == "liveness"} == LIVENESS
    assert all(i.kind in KINDS and i.statement and "\n" not in i.statement for i in CATALOGUE)
    assert spec_of("window-size") == ("SP-8",) and spec_of("nonsense") == ()


@pytest.mark.parametrize("invariant", list(IDS))
def test_every_invariant_has_a_checker_class(invariant: str) -> None:
    checker = get(invariant).load()
    assert isinstance(checker, type)
    assert issubclass(checker, Cluster if invariant in LIVENESS else Monitor)


def test_every_step_checker_runs_in_the_standard_monitors() -> None:
    running = {type(m) for m in standard_monitors(1).monitors}
    assert [i for i in IDS if i not in LIVENESS and get(i).load() not in running] == []


def test_get_an_unknown_id_names_the_known_ones() -> None:
    with pytest.raises(UnknownInvariant) as info:
        get("SP-6")
    assert "unknown invariant 'SP-6'" in str(info.value) and "spso-monotonic" in str(info.value)


def test_every_invariant_has_a_test_that_shows_it_failing() -> None:
    # A failing case asserts the id among the violations a checker reported: `== ["<id>"]`, `("<id>", ...)`.
    here = Path(__file__).parent
    text = "\n".join(p.read_text() for p in sorted(here.glob("test_*.py")) if p.name != Path(__file__).name)
    failing = set(re.findall(r'[\[(]\s*"([a-z-]+)"', text)) | set(re.findall(r'== \["([a-z-]+)"\]', text))
    assert [i for i in IDS if i not in failing and i not in LIVENESS] == []


# -- the liveness properties: the cluster judges them at its deadline ------------------------------------------


def _judge_at_deadline(cluster: Cluster) -> list[str]:
    cluster._stopped = False
    cluster._stop_event = cluster.scheduler.event()
    cluster._deadline()
    return [v.invariant for v in cluster.violations]


def test_eventual_resolution_is_violated_by_a_cluster_that_never_ran() -> None:
    # Nothing produced: the producer is not finished, so the run is not resolved; the message says that, and
    # no count of records or share-partitions that contradicts it (it used to say "0 record(s) on 1 ...").
    cluster = Cluster(library.get("small"), 1)
    assert _judge_at_deadline(cluster) == ["eventual-resolution"]
    violation = cluster.violations[0]
    assert violation.event == "liveness deadline" and violation.spec == ("E-1",)
    assert (violation.state["partitions"], violation.state["records"], violation.state["producers"]) == (0, 0, ["p1"])
    assert violation.message == ("1 producer(s) not finished 45000 ms after the faults stopped: "
                                 "producer p1: 0 of 400 record(s) produced so far")


def test_liveness_holds_at_quiescence_and_member_convergence_needs_stable_members() -> None:
    cluster = Cluster(library.get("small"), 1)
    cluster.run()
    assert cluster.quiescent_at_ms is not None and cluster.violations == []
    assert _judge_at_deadline(cluster) == []
    cluster.share_consumers["c1"].member.state = MemberState.JOINING  # hand-built: a member that never rejoined
    assert _judge_at_deadline(cluster) == ["member-convergence"]
    assert cluster.violations[0].spec == ("E-5",) and cluster.violations[0].state["members"] == ["c1"]


def test_member_convergence_judges_members_against_their_group_coordinator() -> None:
    cluster = Cluster(library.get("small"), 1)
    cluster.run()
    assert _judge_at_deadline(cluster) == []
    # Hand-built: the coordinator removed c1 (its session expired) while c1 still believes it is stable.
    shard = cluster.group_coordinator(cluster.share_consumers["c1"].group_id)
    assert shard is not None
    group = shard.share.group(cluster.share_consumers["c1"].group_id)
    assert group is not None
    del group.members[cluster.share_consumers["c1"].member.member_id]
    assert cluster.share_consumers["c1"].member.state is MemberState.STABLE
    assert _judge_at_deadline(cluster) == ["member-convergence"]
    assert cluster.violations[0].state["members"] == ["c1"]


def test_member_convergence_covers_kip848_members() -> None:
    cluster = Cluster(library.get("consumer_group"), 0)
    cluster.run()
    assert cluster.quiescent_at_ms is not None and _judge_at_deadline(cluster) == []
    name = sorted(n for n in cluster.consumers if n not in cluster.share_consumers)[0]
    consumer = cluster.consumers[name]
    consumer.member.owned = frozenset()  # hand-built: a member that revoked everything and took nothing back
    assert consumer.member.member_epoch > 0
    assert _judge_at_deadline(cluster) == ["member-convergence"]
    assert cluster.violations[0].state["members"] == [name]


# Phrases that would say an oracle takes its expectation from the code it checks.
_MODEL_BOOKKEEPING = ("bookkeeping", "in-memory", "in memory", "its own count", "updates_since_snapshot",
                      "updates since its snapshot as", "the same apply", "replayed with apply", "current spso")


@pytest.mark.parametrize("invariant", list(IDS))
def test_every_invariant_names_its_source_of_truth(invariant: str) -> None:
    """Issue 25: every oracle says where its expectation comes from, in one sentence, and none reads the
    model's own bookkeeping."""
    source = get(invariant).source
    assert source and "\n" not in source and source.endswith("."), invariant
    assert not [p for p in _MODEL_BOOKKEEPING if p in source.lower()], (invariant, source)
    assert get(invariant).to_json()["source"] == source


def test_the_source_table_covers_exactly_the_catalogue() -> None:
    assert sorted(catalogue._SOURCES) == sorted(TABLE)
