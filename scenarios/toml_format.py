"""Scenario files: TOML text ⇄ ``Scenario`` (``scenarios/spec.py``), a thin layer over the Python API.

A file's tables and keys are the dataclasses' own fields, with the same names
(``[cluster]`` is ``ClusterSpec``, ``[[topics]]`` a ``TopicSpec``,
``[[faults.plan]]`` a ``FaultEvent``, a distribution an inline table such as
``{ kind = "lognormal", median_ms = 2, sigma = 0.5 }``). README.md "Scenario
files" shows a complete file.

``scenario_from_data`` checks the shape (unknown keys, with a did-you-mean;
missing keys; wrong types), builds the ``Scenario`` from what is usable and
adds ``Scenario.problems()``: one ``ScenarioError`` lists every problem, each
with its key path (``groups[0].config."group.share.record.lock.duration.ms"``),
the value and what is allowed. ``dumps`` writes every field but empty tables
and absent options, so file → Scenario → ``dumps`` → Scenario is the identity.
"""

from __future__ import annotations

import math
import re
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from pathlib import Path
from typing import Any, Final, Union

from model.sim.faults import FAULT_KINDS, FaultEvent, FaultPlanError
from model.sim.rng import Distribution, DistributionError
from scenarios.spec import Scenario, ScenarioError, did_you_mean

# -- reading -------------------------------------------------------------------------------------


def loads(text: str, *, source: str = "<string>", default_name: str | None = None) -> Scenario:
    """The scenario in TOML ``text``; ``ScenarioError`` lists every problem (``source`` names the file)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ScenarioError([f"not valid TOML: {err}"], source) from None
    try:
        return scenario_from_data(data, default_name=default_name)
    except ScenarioError as err:
        raise ScenarioError(err.problems, source) from None


def load_file(path: str | Path) -> Scenario:
    """The scenario in a ``.toml`` file; its name defaults to the file's stem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise ScenarioError([f"cannot read the scenario file: {err.strerror or err}"], str(path)) from None
    except UnicodeDecodeError as err:  # a binary file, or text in another encoding
        raise ScenarioError([f"not UTF-8 text (byte 0x{err.object[err.start]:02x} at offset {err.start}); "
                             "a scenario file is a UTF-8 TOML file"], str(path)) from None
    return loads(text, source=str(path), default_name=path.stem)


def scenario_from_data(data: Mapping[str, Any], *, default_name: str | None = None) -> Scenario:
    """A ``Scenario`` from parsed TOML (plain dicts, lists, scalars), validated."""
    values = dict(data)
    if "name" not in values and default_name is not None:
        values["name"] = default_name
    reader = _Reader()
    built = reader.build(Scenario, values, "")
    problems = reader.problems + [p for p in built.problems() if not reader.covers(p)]
    if problems:
        raise ScenarioError(problems)
    assert isinstance(built, Scenario)
    return built


_WHAT: Final[dict[Any, str]] = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}
_UNUSABLE: Final = object()  # a value that could not be read; a problem says why


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _placeholder(hint: Any) -> Any:
    """A stand-in for an unusable required value: its item keeps its place (and index) in the scenario,
    and the validation problems about it are dropped (``_Reader.covers``), since one is already reported."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return None
    if hint in _WHAT:
        return hint()
    if hint is Distribution:
        return Distribution.constant(0)
    if hint is FaultEvent:
        return FaultEvent(0, "consumer_crash", "?")
    if origin is tuple:
        return ()
    if origin is Mapping:
        return {}
    hints = typing.get_type_hints(hint)
    return hint(**{f.name: _placeholder(hints[f.name]) for f in fields(hint)
                   if f.default is MISSING and f.default_factory is MISSING})


class _Reader:
    """Turns parsed TOML into spec values, collecting every problem with its key path."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.paths: list[str] = []

    def problem(self, path: str, text: str) -> None:
        self.paths.append(path)
        self.problems.append(f"{path}{text}")

    def covers(self, problem: str) -> bool:
        """Whether a validation problem is about a key already reported (e.g. a placeholder's)."""
        path = re.split(r"[ :]", problem, maxsplit=1)[0]
        return any(path == p or path.startswith((f"{p}.", f"{p}[")) for p in self.paths)

    def unknown(self, path: str, table: Mapping[str, Any], allowed: list[str]) -> bool:
        extra = sorted(set(table) - set(allowed))
        for key in extra:
            where = _join(path, key if _BARE.fullmatch(key) else f'"{key}"')
            self.problem(where, f": unknown key{did_you_mean(key, allowed)}; allowed: {', '.join(allowed)}")
        return bool(extra)

    def build(self, cls: Any, table: Any, path: str) -> Any:
        """An instance of dataclass ``cls`` from ``table``; unusable required fields get placeholders."""
        hints = typing.get_type_hints(cls)
        if not isinstance(table, Mapping):
            self.problem(path or "the file", f" = {table!r}: must be a table")
            return _placeholder(cls)
        self.unknown(path, table, [f.name for f in fields(cls)])
        values: dict[str, Any] = {}
        for f in fields(cls):
            where = _join(path, f.name)
            required = f.default is MISSING and f.default_factory is MISSING
            value = self.convert(hints[f.name], table[f.name], where) if f.name in table else _UNUSABLE
            if value is not _UNUSABLE:
                values[f.name] = value
            elif required:
                if f.name not in table:
                    self.problem(where, f": missing ({_WHAT.get(hints[f.name], 'a value')})")
                values[f.name] = _placeholder(hints[f.name])
        return cls(**values)

    def convert(self, hint: Any, value: Any, path: str) -> Any:
        """The field's value for one key, or ``_UNUSABLE`` (with a problem reported)."""
        origin = typing.get_origin(hint)
        if origin in (Union, types.UnionType):  # X | None: absent means None, so a present value is an X
            (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            return self.convert(inner, value, path)
        if hint in _WHAT:
            fits = isinstance(value, hint) and not (hint is int and isinstance(value, bool))
            if hint is float:
                fits = isinstance(value, int | float) and not isinstance(value, bool)
            if not fits:
                self.problem(path, f" = {value!r}: must be {_WHAT[hint]}")
            return value if fits else _UNUSABLE
        if hint is Distribution:
            return self.distribution(value, path)
        if hint is FaultEvent:
            return self.fault_event(value, path)
        if is_dataclass(hint):
            return self.build(hint, value, path)
        if origin is tuple:
            if not isinstance(value, list):
                self.problem(path, f" = {value!r}: must be an array")
                return _UNUSABLE
            (item,) = typing.get_args(hint)[:1]
            out = [self.convert(item, element, f"{path}[{i}]") for i, element in enumerate(value)]
            return tuple(_placeholder(item) if v is _UNUSABLE else v for v in out)
        if origin is Mapping:
            if not isinstance(value, Mapping):
                self.problem(path, f" = {value!r}: must be a table")
                return _UNUSABLE
            return dict(value)
        raise TypeError(f"{path}: no TOML form for {hint!r}")  # a new spec field needs a case here

    def distribution(self, value: Any, path: str) -> Any:
        if not isinstance(value, Mapping):
            self.problem(path, f' = {value!r}: must be a distribution, e.g. {{ kind = "constant", value_ms = 2 }}')
            return _UNUSABLE
        if self.unknown(path, value, [f.name for f in fields(Distribution)]):
            return _UNUSABLE
        try:
            return Distribution.from_mapping(value)
        except (DistributionError, TypeError) as err:
            self.problem(path, f": {err}")
            return _UNUSABLE

    def fault_event(self, value: Any, path: str) -> Any:
        if not isinstance(value, Mapping):
            self.problem(path, f" = {value!r}: must be a table (a fault event)")
            return _UNUSABLE
        bad = self.unknown(path, value, [f.name for f in fields(FaultEvent)])
        for required in ("at_ms", "kind"):
            if required not in value:
                self.problem(_join(path, required), ": missing")
                bad = True
        kind = value.get("kind")
        if "kind" in value and (not isinstance(kind, str) or kind not in FAULT_KINDS):
            self.problem(f"{path}.kind", f" = {kind!r}: unknown fault kind{did_you_mean(str(kind), FAULT_KINDS)}; "
                                         f"allowed: {', '.join(FAULT_KINDS)}")
            bad = True
        if bad:
            self.paths.append(path)  # the placeholder standing in for it has no problems of its own
            return _UNUSABLE
        try:
            return FaultEvent.from_record(value)
        except (FaultPlanError, TypeError, ValueError) as err:
            self.paths.append(path)
            for problem in getattr(err, "problems", [str(err)]):
                # "broker_crash at 10 ms: duration_ms = 0: ..." -> "faults.plan[0].duration_ms = 0: ..."
                _, _, detail = problem.partition(" ms: ")
                field_name = re.split(r"[ :]", detail, maxsplit=1)[0]
                if detail:
                    self.problem(f"{path}.{field_name}", detail[len(field_name):])
                else:
                    self.problem(path, f": {problem}")
            return _UNUSABLE


# -- writing -------------------------------------------------------------------------------------

# The order a file lists the top-level keys in: what it is, how long it runs, then the tables.
_SCENARIO_ORDER: Final = ("name", "description", "seed", "duration_ms", "heal_ms", "cluster", "topics", "groups",
                          "consumers", "producers", "faults")
_BARE: Final = re.compile(r"[A-Za-z0-9_-]+")
_INLINE_WIDTH: Final = 100


def scenario_to_data(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain TOML data (what ``scenario_from_data`` reads back)."""
    data = _to_data(scenario)
    return {key: data[key] for key in _SCENARIO_ORDER if key in data}


def _to_data(value: Any) -> Any:
    if isinstance(value, Distribution):
        return value.to_mapping()
    if isinstance(value, FaultEvent):
        return value.to_record()
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in fields(value):
            item = getattr(value, f.name)
            if item is None or (isinstance(item, Mapping | tuple) and not item and item == _default(f)):
                continue  # an absent option, or an empty table or list that is the default anyway
            data = _to_data(item)
            if data != {} or not is_dataclass(item):  # e.g. no faults: no [faults] table
                out[f.name] = data
        return out
    if isinstance(value, Mapping):
        # TOML has no null: a null configuration override is the same as none.
        return {key: _to_data(value[key]) for key in sorted(value) if value[key] is not None}
    if isinstance(value, tuple | list):
        return [_to_data(item) for item in value]
    return value


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


def dumps(scenario: Scenario) -> str:
    """The scenario as a TOML file."""
    lines: list[str] = []
    _emit_table(scenario_to_data(scenario), "", lines)
    return "\n".join(lines).strip() + "\n"


def _emit_table(table: Mapping[str, Any], path: str, lines: list[str]) -> None:
    sections: list[tuple[str, Any]] = []
    for key, value in table.items():
        if _is_section(key, value):
            sections.append((key, value))
        else:
            lines.append(_assignment(key, value))
    for key, value in sections:
        where = f"{path}.{_key(key)}" if path else _key(key)
        if isinstance(value, Mapping):
            if any(not _is_section(key, item) for key, item in value.items()):
                lines += ["", f"[{where}]"]  # a table of tables only needs no header of its own
            _emit_table(value, where, lines)
        else:
            for item in value:
                lines += ["", f"[[{where}]]"]
                _emit_table(item, where, lines)


def _is_section(key: str, value: Any) -> bool:
    return _is_array_of_tables(value) or (isinstance(value, Mapping) and not _inline_fits(key, value))


def _assignment(key: str, value: Any) -> str:
    line = f"{_key(key)} = {_value(value)}"
    if len(line) <= _INLINE_WIDTH or not isinstance(value, list | tuple) or not value:
        return line
    items = "".join(f"    {_value(item)},\n" for item in value)  # a long array, one item a line
    return f"{_key(key)} = [\n{items}]"


def _is_array_of_tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, Mapping) for item in value)


def _inline_fits(key: str, value: Mapping[str, Any]) -> bool:
    return len(f"{_key(key)} = {_value(value)}") <= _INLINE_WIDTH and not any(
        _is_array_of_tables(item) for item in value.values())


def _key(key: str) -> str:
    return key if _BARE.fullmatch(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


_ESCAPES: Final = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _string(text: str) -> str:
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:  # TOML forbids raw control characters
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
