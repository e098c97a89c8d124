"""Configuration defaults and bounds are the seeds' (000_2de40ef26c3dd7ed.txt)."""

import re

import pytest

from model.core.config import (
    BROKER_SETTINGS,
    GROUP_SETTINGS,
    BrokerConfig,
    ConfigError,
    GroupConfig,
    effective_lock_duration_ms,
    load_broker_config,
    load_group_config,
)


def test_seed_defaults() -> None:
    cfg = BrokerConfig()
    assert cfg.delivery_count_limit == 5
    assert cfg.record_lock_duration_ms == 30_000
    assert cfg.partition_max_record_locks == 200
    assert cfg.share_session_timeout_ms == 45_000
    assert cfg.share_heartbeat_interval_ms == 5_000
    assert cfg.share_max_groups == 10
    assert cfg.share_max_size == 200
    assert cfg.share_state_topic_num_partitions == 50
    assert cfg.snapshot_update_records_per_snapshot == 500
    assert GroupConfig().auto_offset_reset == "latest"
    assert GroupConfig().isolation_level == "read_uncommitted"


@pytest.mark.parametrize(
    ("key", "bad", "allowed"),
    [
        ("group.share.delivery.count.limit", 1, "[2, 10]"),
        ("group.share.delivery.count.limit", 11, "[2, 10]"),
        ("group.share.record.lock.duration.ms", 999, "[1000, 60000]"),
        ("group.share.partition.max.record.locks", 10_001, "[100, 10000]"),
        ("group.share.max.size", 9, "[10, 1000]"),
        ("group.share.max.groups", 101, "[1, 100]"),
        ("group.share.delivery.count.limit", "5", "[2, 10]"),
        ("group.share.delivery.count.limit", True, "[2, 10]"),
    ],
)
def test_out_of_range_names_key_value_and_range(key: str, bad: object, allowed: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_broker_config({key: bad})
    text = str(err.value)
    assert key in text and repr(bad) in text and allowed in text


def test_every_problem_reported_at_once() -> None:
    with pytest.raises(ConfigError) as err:
        load_broker_config({"group.share.max.size": 0, "no.such.key": 1, "group.share.max.groups": 0})
    assert len(err.value.problems) == 3
    assert any("no.such.key: unknown setting" in p for p in err.value.problems)


def test_field_names_and_keys_both_accepted() -> None:
    assert load_broker_config({"delivery_count_limit": 7}).delivery_count_limit == 7
    assert load_broker_config({"group.share.delivery.count.limit": 7}).delivery_count_limit == 7


def test_cross_setting_order() -> None:
    with pytest.raises(ConfigError, match="must lie in"):
        load_broker_config({"group.share.record.lock.duration.ms": 10_000})  # below the 15 000 minimum setting


def test_group_lock_duration_bounded_by_broker() -> None:
    broker = BrokerConfig()
    assert effective_lock_duration_ms(broker, load_group_config({})) == 30_000
    assert effective_lock_duration_ms(broker, load_group_config({"record_lock_duration_ms": 20_000})) == 20_000
    with pytest.raises(ConfigError, match=re.escape("group.share.record.lock.duration.ms = 90000")):
        load_group_config({"group.share.record.lock.duration.ms": 90_000}, broker)
    with pytest.raises(ConfigError, match=re.escape("one of 'read_uncommitted', 'read_committed'")):
        load_group_config({"group.share.isolation.level": "serializable"})


def test_every_setting_default_is_within_its_range() -> None:
    for setting in BROKER_SETTINGS:
        assert setting.problem(setting.default) is None, setting.key


def test_every_setting_has_a_description_and_every_description_a_setting() -> None:
    from model.core.config import BROKER_DESCRIPTIONS, GROUP_DESCRIPTIONS

    assert sorted(BROKER_DESCRIPTIONS) == sorted(s.key for s in BROKER_SETTINGS)
    assert sorted(GROUP_DESCRIPTIONS) == sorted(s.key for s in GROUP_SETTINGS)
    assert all(text.strip() for text in (*BROKER_DESCRIPTIONS.values(), *GROUP_DESCRIPTIONS.values()))
