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

Call sites that pass their fields in alphabetical order skip a per-event sort.
"""

from __future__ import annotations

import hashlib
import json
import marshal
from operator import itemgetter
from pathlib import Path
from typing import Any, Final, NamedTuple

from mypy_extensions import mypyc_attr

_PERSON: Final = b"sharesim-trace"
_BATCH: Final = 2048
_ATOMS: Final = frozenset({int, str, bool, type(None)})
_fields_of: Final = itemgetter(3)
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


class Trace:
    """``record(time_ms, node, kind, **fields)``; ``trace_hash``; ``events`` when ``keep``."""

    __slots__ = ("_buffer", "_count", "_digest", "_sorted_keys", "events", "keep")

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self.events: list[TraceEvent] = []
        self._digest = hashlib.blake2b(digest_size=16, person=_PERSON)
        self._buffer: list[tuple[int, str, str, dict[str, Any]]] = []
        self._count = 0
        # key tuple -> whether it is already sorted; a run has few distinct ones.
        self._sorted_keys: dict[tuple[str, ...], bool] = {}

    def record(self, time_ms: int, node: str, kind: str, **fields: Any) -> None:
        """Log one event. Cheap: validation and a buffer append; hashing is batched."""
        if type(time_ms) is not int or type(node) is not str or type(kind) is not str:
            _check_head(time_ms, node, kind)
        for value in fields.values():
            if type(value) not in _ATOMS:
                _freeze_fields(kind, fields)
                break
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
        # Which field-name orders occur in this batch (in C: map/set), then sort
        # only the events whose order is not alphabetical; usually none.
        sorted_keys = self._sorted_keys
        unsorted = []
        for keys in set(map(tuple, map(_fields_of, buffer))):
            in_order = sorted_keys.get(keys)
            if in_order is None:
                in_order = sorted_keys[keys] = list(keys) == sorted(keys)
            if not in_order:
                unsorted.append(keys)
        if unsorted:
            rewrite = frozenset(unsorted)
            for index, (time_ms, node, kind, fields) in enumerate(buffer):
                if tuple(fields) in rewrite:
                    buffer[index] = (time_ms, node, kind, dict(sorted(fields.items())))
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
