"""sharesim: scenarios. ``scenarios.load(NAME or FILE.toml)`` gives a ``Scenario`` (``scenarios/spec.py``)."""

from __future__ import annotations

from os import PathLike
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scenarios.spec import Scenario


def load(name_or_path: str | PathLike[str]) -> Scenario:
    """A named scenario (``sharesim list``) or a scenario file (``.toml``), validated."""
    from scenarios.library import load as load_scenario

    return load_scenario(name_or_path)
