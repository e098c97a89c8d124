"""The named scenarios: ``sharesim run NAME``, ``sharesim list``, ``scenarios.load(NAME or FILE)``.

Each named scenario is a TOML file in ``scenarios/library/`` (shipped as
package data; the files double as examples of the format): ``standard`` (3
brokers, 6 partitions, 6 share consumers, 20 000 records, a few failovers),
``swarm`` (each seed draws its own fault plan), ``happy`` (no faults), the
``small`` cluster (3 brokers, a 2-partition topic, 2 share consumers, a few
hundred records, short timeouts) and, on it, one scenario per fault kind
(named after the kind) and one per situation of the protocol worth a run of
its own (``gc_pause``, ``rolling_restart``, ``kip932_example``, ...). README.md
"Scenario files" has the table.

Every group reads from the earliest offset (``share.auto.offset.reset =
earliest``) so a record produced before the group's state exists is still
delivered: "every produced record" is then what a run is judged against.

A scenario may also be a Python builder in ``LIBRARY`` (``small()`` makes
variants of the small cluster for tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Final

from model.sim.faults import FaultEvent
from model.unknown_name import UnknownName
from scenarios.spec import FaultsSpec, Scenario, ScenarioError
from scenarios.toml_format import load_file, loads

LIBRARY_PACKAGE: Final = "scenarios"
LIBRARY_FOLDER: Final = "library"


def _from_package(filename: str) -> Scenario:
    text = resources.files(LIBRARY_PACKAGE).joinpath(LIBRARY_FOLDER, filename).read_text(encoding="utf-8")
    return loads(text, source=f"{LIBRARY_FOLDER}/{filename}", default_name=filename.removesuffix(".toml"))


def _library_files() -> dict[str, Callable[[], Scenario]]:
    folder = resources.files(LIBRARY_PACKAGE).joinpath(LIBRARY_FOLDER)
    names = sorted(entry.name for entry in folder.iterdir() if entry.name.endswith(".toml"))
    return {name.removesuffix(".toml"): partial(_from_package, name) for name in names}


LIBRARY: Final[dict[str, Callable[[], Scenario]]] = _library_files()


class UnknownScenario(UnknownName):
    """An unknown scenario name; the message lists the known ones."""

    kind = "scenario"


def names() -> list[str]:
    return sorted(LIBRARY)


def get(name: str) -> Scenario:
    """The named scenario (validated); ``UnknownScenario`` lists the known names."""
    build = LIBRARY.get(name)
    if build is None:
        raise UnknownScenario(name, names())
    return build().validate()


def load(name_or_path: str | PathLike[str]) -> Scenario:
    """A scenario from a library name or a ``.toml`` file (``ScenarioError`` / ``UnknownScenario`` if bad)."""
    text = str(name_or_path)
    if isinstance(name_or_path, PathLike) or text.endswith(".toml"):
        path = Path(text)
        if not path.is_file():
            raise ScenarioError(["no such scenario file"], str(path))
        return load_file(path)
    return get(text)


def small(name: str, description: str = "", *, faults: tuple[FaultEvent, ...] = (), records: int = 400,
          poison_rate: float = 0.0, consumers: int = 2, duration_ms: int = 6_000) -> Scenario:
    """The ``small`` cluster (3 brokers, topic "events" x2, share group "g") with these changes."""
    base = get("small")
    return replace(
        base,
        name=name,
        description=description,
        consumers=(replace(base.consumers[0], count=consumers, poison_rate=poison_rate),),
        producers=(replace(base.producers[0], records=records),),
        faults=FaultsSpec(plan=faults),
        duration_ms=duration_ms,
    )
