"""The event log of a run and its hash.

Every run folds every recorded event into a running blake2b hash (the *trace
hash*, DESIGN.md principle 2: same seed, same hash, in any process). With
``keep=True`` the events are also kept and can be written as NDJSON, for the
re-run of a failing seed (principle 5).

The encoding is canonical and cheap:

* an event is ``(time_ms, node, kind, fields)``; field names are sorted;
* values may be ``int``, ``str``, ``bool``, ``None`` and (nested) ``tuple`` /
  ``list``; int and str subclasses (``IntEnum`` error codes, ``StrEnum``) are
  coerced to the plain value; anything else (floats, sets, dicts, objects
  whose repr holds an address) is rejected with ``TraceValueError`` naming the
  field, because its encoding is not stable across processes or platforms;
* lists are frozen to tuples at record time, so mutating them later does not
  change the log.

Events are buffered and encoded in batches with ``marshal`` format 0 (no
references, no interning: the bytes depend only on the values). The bytes of a
batch are the concatenation of the bytes of its events, so the hash does not
depend on where batches end, and reading ``trace_hash`` mid-run is harmless.

The kinds recorded on every message (a delivery, a produce acknowledged, an
acquisition...) are declared once as a ``TraceKind`` with their field names,
and recorded with ``emit(kind, time_ms, node, *values)``: no keyword dict is
built, and the event is hashed as ``(time_ms, node, kind, values)``, its names
implied by the kind. ``record`` hashes an event whose kind and field names
match a declared ``TraceKind`` the same way, so the hash is a function of the
events alone, whichever call recorded them; any other event is hashed as
``(time_ms, node, kind, fields)`` with its fields sorted by name.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from pathlib import Path
from typing import Any, Final, NamedTuple

from mypy_extensions import mypyc_attr

_PERSON: Final = b"sharesim-trace"
_BATCH: Final = 2048
_ATOMS: Final = frozenset({int, str, bool, type(None)})
_LIST_HEADER: Final = 5  # marshal: type byte + 4-byte length, stripped so batch bounds don't show


@mypyc_attr(native_class=False)  # mypyc: a builtin exception base
class TraceValueError(TypeError):
    """A trace field holds a value without a stable encoding; the message names the field."""


class TraceEvent(NamedTuple):
    time_ms: int
    node: str
    kind: str
    fields: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps(
            {"time_ms": self.time_ms, "node": self.node, "kind": self.kind, "fields": self.fields},
            sort_keys=True,
            separators=(",", ":"),
        )


class TraceKind:
    """An event kind recorded on a hot path, with its field names, declared once at import.

    The names must be sorted (the canonical order of the fields), and a kind has one list of
    names (in the hash the names are implied by the kind).
    """

    __slots__ = ("kind", "names")

    def __init__(self, kind: str, names: tuple[str, ...]) -> None:
        if list(names) != sorted(set(names)):
            raise ValueError(f"TraceKind {kind!r}: names {names!r} must be distinct and sorted")
        self.kind: Final = kind
        self.names: Final = names
        if _DECLARED.setdefault(kind, self).names != names:
            raise ValueError(f"TraceKind {kind!r} is already declared with the names {_DECLARED[kind].names!r}")


_DECLARED: Final[dict[str, TraceKind]] = {}

# The kinds recorded on every message, declared here rather than where they are emitted, so that
# every Trace knows them from its first event whatever has been imported: how ``record`` hashes an
# event must not depend on that.
DELIVER: Final = TraceKind("deliver", ("dup", "id", "msg_kind", "src"))
DROP: Final = TraceKind("drop", ("id", "msg_kind", "reason", "src"))
PRODUCER_ACK: Final = TraceKind("producer.ack", ("offset", "partition", "records"))
SHARE_ACQUIRE: Final = TraceKind("share.acquire", ("count", "first", "key", "member"))
COORDINATOR_WRITE: Final = TraceKind(
    "coordinator.write", ("batches", "key", "leader_epoch", "start_offset", "state_epoch"))
CONSUMER_DELIVERED: Final = TraceKind("consumer.delivered", ("broker", "records"))
CONSUMER_PROCESSED: Final = TraceKind("consumer.processed", ("broker", "current", "records"))


class Trace:
    """``emit(kind, time_ms, node, *values)``, ``record(time_ms, node, kind, **fields)``;
    ``trace_hash``; ``events`` when ``keep``."""

    __slots__ = ("_buffer", "_count", "_digest", "events", "keep")

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self.events: list[TraceEvent] = []
        self._digest = hashlib.blake2b(digest_size=16, person=_PERSON)
        # (time_ms, node, kind, values tuple | sorted fields dict), in the order recorded
        self._buffer: list[tuple[int, str, str, Any]] = []
        self._count = 0

    def emit(self, kind: TraceKind, time_ms: int, node: str, *values: Any) -> None:
        """Log one event of a declared kind, its values in the order of ``kind.names``. The hot path."""
        if type(time_ms) is not int or type(node) is not str:
            _check_head(time_ms, node, kind.kind)
        if len(values) != len(kind.names):
            raise TraceValueError(f"{kind.kind}: {len(values)} values for the fields {', '.join(kind.names)}")
        for value in values:
            if type(value) not in _ATOMS:
                values = _freeze_values(kind, values)
                break
        buffer = self._buffer
        buffer.append((time_ms, node, kind.kind, values))
        if self.keep:
            self.events.append(TraceEvent(time_ms, node, kind.kind, dict(zip(kind.names, values, strict=True))))
        if len(buffer) >= _BATCH:
            self._flush()

    def record(self, time_ms: int, node: str, kind: str, **fields: Any) -> None:
        """Log one event of any kind. Validates, sorts the fields by name, and appends to the buffer."""
        if type(time_ms) is not int or type(node) is not str or type(kind) is not str:
            _check_head(time_ms, node, kind)
        for value in fields.values():
            if type(value) not in _ATOMS:
                _freeze_fields(kind, fields)
                break
        names = sorted(fields)
        declared = _DECLARED.get(kind)
        if declared is not None and names == list(declared.names):
            self.emit(declared, time_ms, node, *[fields[name] for name in declared.names])
            return
        if names != list(fields):
            fields = dict(sorted(fields.items()))
        buffer = self._buffer
        buffer.append((time_ms, node, kind, fields))
        if self.keep:
            self.events.append(TraceEvent(time_ms, node, kind, fields))
        if len(buffer) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        buffer = self._buffer
        if not buffer:
            return
        self._digest.update(marshal.dumps(buffer, 0)[_LIST_HEADER:])
        self._count += len(buffer)
        buffer.clear()

    @property
    def trace_hash(self) -> str:
        """Hex digest over every event recorded so far, in order."""
        self._flush()
        return self._digest.hexdigest()

    @property
    def count(self) -> int:
        """How many events have been recorded."""
        return self._count + len(self._buffer)

    def __len__(self) -> int:
        return self.count

    def write_ndjson(self, path: str | Path) -> int:
        """Write the kept events, one JSON object a line; returns how many."""
        if not self.keep:
            raise ValueError("this trace was made with keep=False; re-run with keep=True to write its events")
        with Path(path).open("w", encoding="utf-8") as out:
            for event in self.events:
                out.write(event.to_json())
                out.write("\n")
        return len(self.events)


def read_ndjson(path: str | Path) -> list[TraceEvent]:
    """Read events written by ``write_ndjson`` (lists come back as lists)."""
    events = []
    with Path(path).open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                data = json.loads(line)
                events.append(TraceEvent(data["time_ms"], data["node"], data["kind"], data["fields"]))
    return events


def _check_head(time_ms: object, node: object, kind: object) -> None:
    if isinstance(time_ms, bool) or not isinstance(time_ms, int):
        raise TraceValueError(f"time_ms = {time_ms!r}: must be an int (integer milliseconds)")
    if not isinstance(node, str) or not isinstance(kind, str):
        raise TraceValueError(f"node = {node!r}, kind = {kind!r}: must be str")
    raise TraceValueError(f"time_ms, node and kind must be exactly int, str, str (not subclasses): {time_ms!r}")


def _freeze_values(kind: TraceKind, values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_freeze(value, f"{kind.kind}.{name}") for name, value in zip(kind.names, values, strict=True))


def _freeze_fields(kind: str, fields: dict[str, Any]) -> None:
    for name, value in fields.items():
        if type(value) not in _ATOMS:
            fields[name] = _freeze(value, f"{kind}.{name}")


def _freeze(value: object, where: str) -> object:
    """The canonical form of ``value``, or TraceValueError naming ``where``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if isinstance(value, tuple | list):
        return tuple(_freeze(item, f"{where}[{i}]") for i, item in enumerate(value))
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)  # IntEnum and friends: the code, not the name
    if isinstance(value, str):
        return str.__str__(value)  # StrEnum and friends: the plain string
    raise TraceValueError(
        f"trace field {where} = {value!r}: a {kind.__name__} has no stable encoding; "
        "use int, str, bool, None, tuple or list (time in integer milliseconds)"
    )
