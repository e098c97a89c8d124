"""Issue 25's client behaviours: consumer close() and restart (consumer_close), fence and rejoin
(FENCED_MEMBER_EPOCH after lost heartbeat answers), subscription changes (consumer_subscribe), a group on
latest, producers that learn of added partitions; each reached in its library scenario and in a swarm."""

from __future__ import annotations

import collections
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.core.errors import Errors
from model.core.group.share_messages import LEAVE_GROUP_MEMBER_EPOCH
from model.core.share_session import FINAL_EPOCH
from model.sim.faults import FaultEvent, FaultPlanError, swarm_plan
from model.sim.runner import run, run_cluster
from model.sim.share_consumer import ShareConsumer
from scenarios import library


def _sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Any]]:
    """Every request a consumer sends: (client, kind, body)."""
    sent: list[tuple[str, str, Any]] = []
    from model.sim.client import Client

    original = Client.send_request

    def spy(self: Client, broker: int, kind: str, body: Any, *args: Any) -> int:
        sent.append((self.name, kind, body))
        return original(self, broker, kind, body, *args)

    monkeypatch.setattr(Client, "send_request", spy)
    return sent


def _heartbeat_errors(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[Errors]:
    errors: collections.Counter[Errors] = collections.Counter()
    original = ShareConsumer._on_heartbeat_response

    def spy(self: ShareConsumer, response: Any) -> None:
        errors[response.error_code] += 1
        original(self, response)

    monkeypatch.setattr(ShareConsumer, "_on_heartbeat_response", spy)
    return errors


# -- consumer_close ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_close_acknowledges_closes_its_sessions_leaves_and_restarts(seed: int,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    sent = _sent(monkeypatch)
    result, cluster = run_cluster(library.get("consumer_close"), seed, trace=True)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"consumer_close": 4}
    # c1 (share): ShareAcknowledge with the final epoch on its sessions, then the leave heartbeat (-1).
    c1 = [(kind, body) for name, kind, body in sent if name == "c1"]
    finals = [i for i, (kind, body) in enumerate(c1)
              if kind == "ShareAcknowledge" and body.share_session_epoch == FINAL_EPOCH]
    leaves = [i for i, (kind, body) in enumerate(c1)
              if kind == "ShareGroupHeartbeat" and body.member_epoch == LEAVE_GROUP_MEMBER_EPOCH]
    assert finals and leaves and max(finals) < leaves[0]
    # ... and after the restart it joins again as a new member (epoch 0, a new member id).
    joins = [body for kind, body in c1[leaves[0]:] if kind == "ShareGroupHeartbeat" and body.member_epoch == 0]
    assert joins and joins[0].member_id == ""
    # c4, a static KIP-848 member, leaves with -2 and comes back as the same instance.
    c4 = [body for name, kind, body in sent if name == "c4" and kind == "ConsumerGroupHeartbeat"]
    assert any(body.member_epoch == -2 for body in c4)
    assert {body.instance_id for body in c4} == {"c4"}
    # c3 closed without a restart; the others are back.
    assert not cluster.consumers["c3"].alive and cluster.consumers["c3"].closed
    assert all(cluster.consumers[name].alive for name in ("c1", "c2", "c4", "c5"))


def test_a_closing_share_consumer_heartbeats_until_its_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's heartbeat manager runs beside the close's acknowledgements: a close whose batch takes
    longer than the session timeout to finish is not fenced for it."""
    from dataclasses import replace

    from model.core.group.share_member import MemberState
    scenario = library.get("consumer_close")
    scenario = replace(scenario, faults=replace(scenario.faults, plan=(
        FaultEvent(1000, "slow_processing", "c1", duration_ms=5000, extra_ms=400),
        FaultEvent(1500, "consumer_close", "c1", duration_ms=500),
    )))
    errors = _heartbeat_errors(monkeypatch)
    sent = _sent(monkeypatch)
    result, cluster = run_cluster(scenario, 1)
    assert result.ok, [v.describe() for v in result.violations]
    assert errors[Errors.UNKNOWN_MEMBER_ID] == errors[Errors.FENCED_MEMBER_EPOCH] == 0
    c1 = [(kind, body) for name, kind, body in sent if name == "c1"]
    leave = next(i for i, (kind, body) in enumerate(c1)
                 if kind == "ShareGroupHeartbeat" and body.member_epoch == LEAVE_GROUP_MEMBER_EPOCH)
    assert any(kind == "ShareGroupHeartbeat" and body.member_epoch > 0 for kind, body in c1[:leave])
    assert cluster.share_consumers["c1"].member.state is MemberState.STABLE


def test_consumer_close_params_are_checked() -> None:
    with pytest.raises(FaultPlanError, match=r"params.restart = 'maybe': must be 'yes' or 'no'"):
        FaultEvent(0, "consumer_close", "c1", duration_ms=10, params=(("restart", "maybe"),))
    with pytest.raises(FaultPlanError, match="duration_ms = 0: must be an integer >= 1 for consumer_close"):
        FaultEvent(0, "consumer_close", "c1")


# -- fence and rejoin ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_member_fenced_with_its_old_epoch_rejoins_with_epoch_0(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    errors = _heartbeat_errors(monkeypatch)
    sent = _sent(monkeypatch)
    result = run(library.get("member_fenced"), seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert errors[Errors.FENCED_MEMBER_EPOCH] >= 1 and result.metrics["members_fenced"] >= 1
    c1 = [body for name, kind, body in sent if name == "c1" and kind == "ShareGroupHeartbeat"]
    # After the fencing c1 heartbeats with epoch 0 and the member id it had (KIP-848's rejoin).
    assert c1[0].member_epoch == 0 and c1[0].member_id == ""
    rejoins = [body for body in c1 if body.member_epoch == 0 and body.member_id]
    assert rejoins and rejoins[0].member_id == next(body.member_id for body in c1 if body.member_id)


# -- consumer_subscribe ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_subscription_changes_move_the_assignment(seed: int) -> None:
    result, cluster = run_cluster(library.get("consumer_subscribe"), seed)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.faults_fired == {"consumer_subscribe": 2}
    assert result.metrics["records_accepted_by_leader"] == result.metrics["records_produced"] == 400
    c1, c2 = cluster.share_consumers["c1"], cluster.share_consumers["c2"]
    assert c2.topics == ("orders",) and {tp.topic for tp in c2.assignment} == {"orders"}
    assert {tp.topic for tp in c1.assignment} == {"events", "orders"}


def test_consumer_subscribe_params_are_checked() -> None:
    with pytest.raises(FaultPlanError, match=r"params\.topics = 'a,,b': must be topic names separated by commas"):
        FaultEvent(0, "consumer_subscribe", "c1", params=(("topics", "a,,b"),))
    scenario = library.get("consumer_subscribe")
    from dataclasses import replace
    bad = replace(scenario, faults=replace(scenario.faults, plan=(
        FaultEvent(10, "consumer_subscribe", "c1", params=(("topics", "events,nope"),)),)))
    assert any("params.topics = 'nope': not a topic of this scenario" in p for p in bad.problems())


# -- the swarms -----------------------------------------------------------------------------------------


def test_swarm_clients_reaches_every_behaviour_and_runs_clean(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = _heartbeat_errors(monkeypatch)
    fired: collections.Counter[str] = collections.Counter()
    wrote_added = 0
    latest_starts = 0
    for seed in range(60):
        result, cluster = run_cluster(library.get("swarm_clients"), seed)
        assert result.ok, (seed, [v.describe() for v in result.violations])
        fired.update(result.faults_fired)
        for topic in ("events", "orders"):
            wrote_added += sum(cluster.controller.data(topic, p).log.log_end_offset > 0
                               for p in range(2, cluster.controller.partition_count(topic)))
        latest_starts += sum(1 for key, spso in cluster.tracker.first_spso.items()
                             if key.group_id == "g2" and spso > 0)
    for kind in ("consumer_close", "consumer_subscribe", "consumer_pause", "message_loss", "admin_add_partitions"):
        assert fired[kind] >= 5, (kind, dict(fired))
    assert errors[Errors.FENCED_MEMBER_EPOCH] >= 1 and errors[Errors.UNKNOWN_MEMBER_ID] >= 1
    assert wrote_added >= 3  # producers learned of partitions added during the run and wrote to them
    assert latest_starts >= 10  # the group on latest started past records written before it read


@pytest.mark.parametrize("name", ["swarm", "swarm_lifecycle", "swarm_standard"])
def test_the_swarms_draw_consumer_close(name: str) -> None:
    scenario = library.get(name)
    swarm = scenario.faults.swarm
    assert swarm is not None and "consumer_close" in swarm.kinds
    targets = scenario.fault_targets()
    plans = [swarm_plan(seed, scenario.duration_ms, swarm.kinds, targets, swarm.intensity, swarm.rates)
             for seed in range(40)]
    assert sum("consumer_close" in plan.kinds() for plan in plans) >= 2


# -- groups on latest: a swarm draws group.share.auto.offset.reset per group ----------------------------


def test_swarm_config_draws_latest_for_its_group_and_runs_clean() -> None:
    drawn = []
    for seed in range(12):
        result, cluster = run_cluster(library.get("swarm_config"), seed)
        assert result.ok, (seed, [v.describe() for v in result.violations])
        value = result.swarm_config["group.share.auto.offset.reset@g"]
        assert cluster.group_configs["g"].auto_offset_reset == value
        drawn.append(value)
    assert {"earliest", "latest"} <= set(drawn)


def test_a_groups_own_setting_is_not_drawn_over() -> None:
    result, cluster = run_cluster(library.get("swarm_lifecycle"), 1)
    assert "group.share.auto.offset.reset@g1" not in result.swarm_config  # g1 sets earliest itself
    assert cluster.group_configs["g1"].auto_offset_reset == "earliest"
    assert cluster.group_configs["g2"].auto_offset_reset == result.swarm_config["group.share.auto.offset.reset@g2"]


def test_group_draws_are_checked_and_written_out_by_the_shrinker() -> None:
    from dataclasses import replace

    from scenarios.shrink import written_out
    scenario = library.get("swarm_config")
    swarm = scenario.faults.swarm
    assert swarm is not None
    bad = replace(scenario, faults=replace(scenario.faults, swarm=replace(swarm, config={
        **swarm.config, "group.share.auto.offset.reset": ["earliest", "never"],
        "errors.deadletterqueue.topic.name": ["x"]})))
    problems = "\n".join(bad.problems())
    assert "faults.swarm.config.\"group.share.auto.offset.reset\" = ['earliest', 'never']: must be" in problems
    assert ('faults.swarm.config."errors.deadletterqueue.topic.name": a group setting a swarm draws must be'
            in problems)
    result = run(scenario, 3)
    scripted = written_out(scenario, result)
    group = next(g for g in scripted.groups if g.name == "g")
    assert group.config["group.share.auto.offset.reset"] == result.swarm_config["group.share.auto.offset.reset@g"]
    assert not any("@" in key for key in scripted.cluster.config)
    assert run(scripted, 3).trace_hash == result.trace_hash  # the same run, event for event


# -- partitions added to a topic a group knows start at offset 0 ------------------------------------------


def test_added_partitions_of_a_known_topic_start_at_0_even_on_latest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka trunk's buildInitializeShareGroupStateRequest: new partitions of an already-known topic are
    initialized at offset 0 (records a producer wrote to them before the initialization completed are
    owed), a brand-new topic at -1 (share.auto.offset.reset applies)."""
    from dataclasses import replace

    from model.core.group.share_group import ShareGroupManager
    starts: dict[tuple[str, int], int] = {}
    original = ShareGroupManager._send_initialize

    def spy(self: ShareGroupManager, group: Any, tp: Any, batch: Any, now_ms: int) -> None:
        starts.setdefault((tp.topic, tp.partition), group.initializing[tp])
        original(self, group, tp, batch, now_ms)

    monkeypatch.setattr(ShareGroupManager, "_send_initialize", spy)
    scenario = library.get("partitions_added")
    groups = tuple(replace(g, config={**g.config, "group.share.auto.offset.reset": "latest"}) for g in scenario.groups)
    producers = tuple(replace(p, metadata_max_age_ms=200) for p in scenario.producers)
    result, cluster = run_cluster(replace(scenario, groups=groups, producers=producers), 1)
    assert result.ok, [v.describe() for v in result.violations]
    count = cluster.controller.partition_count("events")
    assert count > 2 and starts[("events", 0)] == starts[("events", 1)] == -1
    assert all(starts[("events", p)] == 0 for p in range(2, count))
    # The producer wrote to the added partitions, and each of their records was accepted: none written
    # before the partition's initialization was skipped, though the group reads from latest.
    written = [p for p in range(2, count) if cluster.controller.data("events", p).log.high_watermark > 0]
    assert written
    for p in written:
        key = next(k for k in cluster.tracker.latest if k.group_id == "g" and k.partition == p)
        assert cluster.tracker.first_spso[key] == 0


@settings(max_examples=200, deadline=None)
@given(names=st.lists(st.text(alphabet="ab ,", max_size=4), min_size=1, max_size=4))
def test_subscribe_topics_are_valid_exactly_when_every_name_is_non_blank(names: list[str]) -> None:
    from model.sim.faults import subscribed_topics

    text = ",".join(names)
    parts = [part.strip() for part in text.split(",")]
    valid = all(parts)
    assert bool(subscribed_topics(text)) == valid
    if valid:
        assert subscribed_topics(text) == tuple(sorted(set(parts)))
        FaultEvent(0, "consumer_subscribe", "c1", params=(("topics", text),))
    else:
        with pytest.raises(FaultPlanError, match="must be topic names separated by commas"):
            FaultEvent(0, "consumer_subscribe", "c1", params=(("topics", text),))
