"""``sharesim describe``: every group and broker setting in effect, with its default and allowed range from
``model/core/config.py``, the ones the scenario sets marked; the auto-offset-reset trap named; and the
output still a scenario file. ``sharesim run`` says when a run delivered nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from model.core.config import BROKER_SETTINGS, GROUP_SETTINGS, Setting
from scenarios import library
from scenarios.cli import main

# A first scenario as a new user writes it: the group's settings left to Kafka's defaults, and the records
# produced at once, before the consumer's first fetch. It holds every invariant and delivers nothing.
FIRST = """\
name = "first"
duration_ms = 6000

[cluster.config]
"group.share.delivery.count.limit" = 3

[[topics]]
name = "events"

[[groups]]
name = "g"
topics = ["events"]

[[consumers]]
group = "g"

[[producers]]
topic = "events"
records = 100
rate_per_s = 100000
"""


def describe(ref: str) -> str:
    result = CliRunner().invoke(main, ["describe", ref])
    assert result.exit_code == 0, result.output
    return result.stdout


def setting_line(text: str, section: str, setting: Setting) -> str:
    """The line of ``setting`` under the heading that starts with ``section``."""
    block = text.split(f"# {section}", 1)[1]
    lines = [line for line in block.splitlines() if re.match(rf"#  [ *~] {re.escape(setting.key)}\s", line)]
    assert lines, (section, setting.key)
    return lines[0]


def test_every_setting_is_shown_with_its_value_default_and_range(tmp_path: Path) -> None:
    path = tmp_path / "first.toml"
    path.write_text(FIRST)
    text = describe(str(path))
    for setting in BROKER_SETTINGS:
        line = setting_line(text, "broker", setting)
        assert f"default {json.dumps(setting.default)}" in line and line.endswith(setting.allowed()), line
    for setting in GROUP_SETTINGS:
        if setting.key.startswith("group.share."):
            line = setting_line(text, "groups[0] g (share group)", setting)
            assert f"default {json.dumps(setting.default)}" in line and line.endswith(setting.allowed()), line
    changed = setting_line(text, "broker", next(s for s in BROKER_SETTINGS if s.key.endswith("delivery.count.limit")))
    assert changed.startswith("#  * ") and re.search(r"count\.limit\s+3\s+default 5\s", changed), changed
    untouched = setting_line(text, "broker", next(s for s in BROKER_SETTINGS if s.key.endswith("max.groups")))
    assert untouched.startswith("#    ") and re.search(r"max\.groups\s+10\s+default 10\s", untouched)


def test_the_latest_offset_trap_is_named_with_its_fix(tmp_path: Path) -> None:
    path = tmp_path / "first.toml"
    path.write_text(FIRST)
    text = describe(str(path))
    notes = [line for line in text.splitlines() if line.startswith("# note:")]
    assert len(notes) == 1 and "share group g starts at the latest offset" in notes[0]
    assert 'groups[0].config."group.share.auto.offset.reset" = "earliest"' in notes[0]
    reset = setting_line(text, "groups[0] g (share group)",
                         next(s for s in GROUP_SETTINGS if s.key == "group.share.auto.offset.reset"))
    assert reset.startswith("#    ") and '"latest"' in reset  # Kafka's default, not the scenario's choice
    fixed = tmp_path / "fixed.toml"
    fixed.write_text(FIRST.replace('topics = ["events"]\n', 'topics = ["events"]\n'
                                   'config = { "group.share.auto.offset.reset" = "earliest" }\n'))
    text = describe(str(fixed))
    assert "# note:" not in text
    reset = setting_line(text, "groups[0] g (share group)",
                         next(s for s in GROUP_SETTINGS if s.key == "group.share.auto.offset.reset"))
    assert reset.startswith("#  * ") and '"earliest"' in reset


def test_a_group_setting_left_null_shows_the_broker_value_and_a_drawn_one_is_marked() -> None:
    text = describe("swarm_config")
    lock = next(s for s in GROUP_SETTINGS if s.key == "group.share.record.lock.duration.ms")
    assert "null (the broker's: drawn from [1000, 4000])" in setting_line(text, "groups[0]", lock)
    drawn = setting_line(text, "broker", next(s for s in BROKER_SETTINGS if s.key == lock.key))
    assert drawn.startswith("#  ~ ") and "drawn from [1000, 4000]" in drawn
    consumer = describe("consumer_group")
    heading = next(line for line in consumer.splitlines() if line.startswith("# groups[0]"))
    assert "(consumer group)" in heading
    block = consumer.split(heading, 1)[1].split("# broker", 1)[0]
    assert "group.consumer.session.timeout.ms" in block and "group.share." not in block


def test_the_output_is_still_a_scenario_file(tmp_path: Path) -> None:
    for name in ("small", "swarm_config", "consumer_group"):
        saved = tmp_path / f"{name}.toml"
        saved.write_text(describe(name))
        assert library.load(str(saved)) == library.get(name)


def test_a_run_that_delivered_nothing_says_so(tmp_path: Path) -> None:
    path = tmp_path / "first.toml"
    path.write_text(FIRST)
    result = CliRunner().invoke(main, ["run", str(path)])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "note: 100 record(s) produced to events, none delivered to share group g" in flat
    assert "group.share.auto.offset.reset is latest" in flat
    delivered = CliRunner().invoke(main, ["run", "small"])
    assert "none delivered" not in delivered.stdout
