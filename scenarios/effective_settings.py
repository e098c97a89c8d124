"""The broker and group settings a scenario runs with, for ``sharesim describe``.

Every setting, its default and its bounds come from ``model/core/config.py``
(``BROKER_SETTINGS``, ``GROUP_SETTINGS``); this module only says which value is
in effect for a scenario and whether the scenario chose it. ``notes`` names
the settings that make a first scenario quietly do nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from model.core.config import (
    BROKER_SETTINGS,
    GROUP_SETTINGS,
    Setting,
    load_broker_config,
    load_group_config,
)
from scenarios.spec import GroupSpec, Scenario

AUTO_OFFSET_RESET: Final = "group.share.auto.offset.reset"


@dataclass(frozen=True)
class Effective:
    """One setting as a scenario runs it."""

    setting: Setting
    value: Any  # in effect (a group's None: the broker's setting of the same key applies)
    changed: bool  # the scenario's file sets it
    drawn: Any = None  # a swarm draws it per run: [low, high] or the choices
    fallback: Effective | None = None  # a group's None: the broker's setting that applies instead

    @property
    def mark(self) -> str:
        return "~" if self.drawn is not None else "*" if self.changed else " "

    @property
    def shown(self) -> str:
        """The value in effect as a TOML file writes it."""
        if self.drawn is not None:
            return f"drawn from {json.dumps(self.drawn)}"
        if self.value is None:
            return "null" if self.fallback is None else f"null (the broker's: {self.fallback.shown})"
        return json.dumps(self.value)


def _set_by(values: Mapping[str, Any], setting: Setting) -> str | None:
    """The name the scenario's file sets ``setting`` under (its Kafka key or field name), or None."""
    return next((name for name in (setting.key, setting.field) if name in values), None)


def broker_settings(scenario: Scenario) -> list[Effective]:
    """Every broker setting, in ``BROKER_SETTINGS`` order (the scenario is valid: ``Scenario.validate``)."""
    config = load_broker_config(scenario.cluster.config)
    drawn = scenario.faults.swarm.config if scenario.faults.swarm is not None else {}
    out = []
    for setting in BROKER_SETTINGS:
        draw = _set_by(drawn, setting)
        out.append(Effective(setting, getattr(config, setting.field), _set_by(scenario.cluster.config, setting)
                             is not None, drawn=None if draw is None else drawn[draw]))
    return out


def group_settings(scenario: Scenario, group: GroupSpec) -> list[Effective]:
    """The settings of ``group``'s kind (``group.share.*`` for a share group, ``group.consumer.*`` for a
    consumer group), in ``GROUP_SETTINGS`` order."""
    config = load_group_config(group.config, load_broker_config(scenario.cluster.config))
    brokers = {e.setting.key: e for e in broker_settings(scenario)}
    out = []
    for setting in GROUP_SETTINGS:
        if not setting.key.startswith(f"group.{group.kind}."):
            continue
        value = getattr(config, setting.field)
        fallback = brokers.get(setting.key) if value is None else None
        out.append(Effective(setting, value, _set_by(group.config, setting) is not None, fallback=fallback))
    return out


def notes(scenario: Scenario) -> list[str]:
    """Settings in effect that quietly change what a run does: a share group that starts at the latest offset
    (Kafka's default) never sees the records produced before its first fetch."""
    out = []
    for index, group in enumerate(scenario.groups):
        if group.kind != "share" or load_group_config(group.config).auto_offset_reset != "latest":
            continue
        out.append(f'share group {group.name} starts at the latest offset ({AUTO_OFFSET_RESET} = "latest", '
                   f"Kafka's default): records produced before its first fetch are never delivered to it. To read "
                   f'from the start of the log: groups[{index}].config."{AUTO_OFFSET_RESET}" = "earliest"')
    return out


def describe_lines(scenario: Scenario) -> list[str]:
    """The settings section of ``sharesim describe``: one aligned line per setting, a heading per group."""
    sections: list[tuple[str, list[Effective]]] = [
        (f"groups[{i}] {group.name} ({group.kind} group), groups[{i}].config", group_settings(scenario, group))
        for i, group in enumerate(scenario.groups)
    ]
    sections.append(("broker, cluster.config", broker_settings(scenario)))
    every = [e for _, section in sections for e in section]
    key_width = max(len(e.setting.key) for e in every)
    value_width = max(len(e.shown) for e in every)
    default_width = max(len(_default(e.setting)) for e in every)
    lines = ["settings in effect (* set by this scenario, ~ drawn per run by the swarm; "
             "defaults and bounds: model/core/config.py):"]
    for title, section in sections:
        lines.append(f"{title}:")
        for e in section:
            lines.append(f" {e.mark} {e.setting.key:<{key_width}}  {e.shown:<{value_width}}  "
                         f"default {_default(e.setting):<{default_width}}  {e.setting.allowed()}")
    return lines


def _default(setting: Setting) -> str:
    return json.dumps(setting.default)
