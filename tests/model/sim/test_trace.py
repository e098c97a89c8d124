"""The trace hash: canonical, stable, sensitive to every field; NDJSON when kept."""

import enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model.sim.trace import DELIVER, Trace, TraceEvent, TraceKind, TraceValueError, read_ndjson


def _hash(events: list[tuple[int, str, str, dict[str, Any]]], keep: bool = False) -> str:
    trace = Trace(keep=keep)
    for time_ms, node, kind, fields in events:
        trace.record(time_ms, node, kind, **fields)
    return trace.trace_hash


BASE = [
    (0, "b1", "deliver", {"id": 1, "msg_kind": "ShareFetchRequest", "src": "c1"}),
    (5, "c1", "acquired", {"first_offset": 0, "last_offset": 9, "delivery_count": 1, "member": "m1"}),
    (9, "faults", "heal", {}),
]


def test_hash_is_pinned() -> None:
    # Stability across releases and processes (test_determinism checks other PYTHONHASHSEEDs).
    assert _hash(BASE) == "e24dec43a7edf006919d3cf59949bec4"
    assert Trace().trace_hash == "79a440297632e20d0d2f05be6af65f30"


def test_keep_does_not_change_the_hash() -> None:
    assert _hash(BASE, keep=True) == _hash(BASE, keep=False)


def test_field_order_does_not_matter() -> None:
    a, b = Trace(), Trace()
    a.record(1, "n", "k", x=1, y="two", z=None)
    b.record(1, "n", "k", z=None, y="two", x=1)
    assert a.trace_hash == b.trace_hash


MUTATIONS = [
    ("time", lambda e: [(1, *e[0][1:]), *e[1:]]),
    ("node", lambda e: [(0, "b2", *e[0][2:]), *e[1:]]),
    ("kind", lambda e: [(0, "b1", "drop", e[0][3]), *e[1:]]),
    ("field value", lambda e: [(0, "b1", "deliver", {**e[0][3], "id": 2}), *e[1:]]),
    ("field name", lambda e: [(0, "b1", "deliver", {"ids": 1, "msg_kind": "ShareFetchRequest", "src": "c1"}), *e[1:]]),
    ("int vs str", lambda e: [(0, "b1", "deliver", {**e[0][3], "id": "1"}), *e[1:]]),
    ("int vs bool", lambda e: [(0, "b1", "deliver", {**e[0][3], "id": True}), *e[1:]]),
    ("None vs 0", lambda e: [e[0], e[1], (9, "faults", "heal", {"x": None})]),
    ("extra field", lambda e: [e[0], e[1], (9, "faults", "heal", {"x": 0})]),
    ("order", lambda e: [e[1], e[0], e[2]]),
    ("missing event", lambda e: e[:2]),
    ("tuple vs flat", lambda e: [e[0], e[1], (9, "faults", "heal", {"x": (1, 2)})]),
]


@pytest.mark.parametrize(("name", "mutate"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_any_change_changes_the_hash(name: str, mutate: Any) -> None:
    assert _hash(mutate(BASE)) != _hash(BASE)


def test_hash_does_not_depend_on_batch_boundaries_or_peeking() -> None:
    peeked, straight = Trace(), Trace()
    for i in range(5000):
        peeked.record(i, "n", "k", i=i, s=str(i))
        straight.record(i, "n", "k", s=str(i), i=i)
        if i % 777 == 0:
            _ = peeked.trace_hash
    assert peeked.trace_hash == straight.trace_hash
    assert peeked.count == len(straight) == 5000


atoms = st.one_of(st.integers(-(2**70), 2**70), st.text(max_size=5), st.booleans(), st.none())
values = st.recursive(atoms, lambda inner: st.lists(inner, max_size=3).map(tuple), max_leaves=6)
event = st.tuples(
    st.integers(0, 10**9),
    st.text(min_size=1, max_size=4),
    st.text(min_size=1, max_size=6),
    st.dictionaries(st.from_regex(r"[a-z_]{1,6}", fullmatch=True), values, max_size=4),
)


@settings(max_examples=200, deadline=None)
@given(events=st.lists(event, min_size=1, max_size=6), data=st.data())
def test_property_a_changed_event_changes_the_hash(
    events: list[tuple[int, str, str, dict[str, Any]]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, len(events) - 1), label="index")
    time_ms, node, kind, fields = events[index]
    part = data.draw(st.sampled_from(["time", "node", "kind", "value", "name", "add", "remove", "event"]), label="part")
    fields = dict(fields)
    if part == "time":
        time_ms = data.draw(st.integers(0, 10**9))
    elif part == "node":
        node = data.draw(st.text(min_size=1, max_size=4))
    elif part == "kind":
        kind = data.draw(st.text(min_size=1, max_size=6))
    elif part in ("value", "name", "remove") and fields:
        name = data.draw(st.sampled_from(sorted(fields)))
        if part == "value":
            fields[name] = data.draw(values)
        elif part == "name":
            fields[data.draw(st.from_regex(r"[a-z_]{1,6}", fullmatch=True))] = fields.pop(name)
        else:
            del fields[name]
    elif part == "add":
        fields[data.draw(st.from_regex(r"[a-z_]{1,6}", fullmatch=True))] = data.draw(values)
    elif part == "event":
        time_ms, node, kind, fields = data.draw(event)
    changed = list(events)
    changed[index] = (time_ms, node, kind, fields)
    same = (time_ms, node, kind) == events[index][:3] and _canonical(fields) == _canonical(events[index][3])
    assert (_hash(changed) == _hash(events)) == same


def _canonical(value: Any) -> Any:
    """Equality the way the trace sees it: bool is not int, tuples and lists are the same."""
    if isinstance(value, dict):
        return sorted((k, _canonical(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return ("seq", tuple(_canonical(v) for v in value))
    return (type(value).__name__, value)


class Code(enum.IntEnum):
    NONE = 0
    INVALID_RECORD_STATE = 121


class Word(enum.StrEnum):
    ACCEPT = "accept"


def test_enums_are_coerced_to_their_values() -> None:
    a, b = Trace(keep=True), Trace()
    a.record(1, "n", "k", error=Code.INVALID_RECORD_STATE, ack=Word.ACCEPT, codes=[Code.NONE])
    b.record(1, "n", "k", error=121, ack="accept", codes=(0,))
    assert a.trace_hash == b.trace_hash
    assert type(a.events[0].fields["error"]) is int


def test_lists_are_frozen_at_record_time() -> None:
    a, b = Trace(keep=True), Trace()
    offsets = [1, 2]
    a.record(1, "n", "k", offsets=offsets)
    offsets.append(3)
    b.record(1, "n", "k", offsets=(1, 2))
    assert a.trace_hash == b.trace_hash
    assert a.events[0].fields["offsets"] == (1, 2)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (1.5, "k.x"),
        ({"a"}, "k.x"),
        ({"a": 1}, "k.x"),
        (object(), "k.x"),
        ((1, 2.0), r"k.x\[1\]"),
        (b"raw", "k.x"),
    ],
)
def test_unstable_values_are_rejected_naming_the_field(value: Any, where: str) -> None:
    with pytest.raises(TraceValueError, match=where):
        Trace().record(1, "n", "k", x=value)


@pytest.mark.parametrize(("time_ms", "node", "kind"), [(1.0, "n", "k"), (True, "n", "k"), (1, 2, "k"), (1, "n", None)])
def test_head_types_are_checked(time_ms: Any, node: Any, kind: Any) -> None:
    with pytest.raises(TraceValueError):
        Trace().record(time_ms, node, kind)


def test_ndjson_round_trip(tmp_path: Path) -> None:
    trace = Trace(keep=True)
    for time_ms, node, kind, fields in BASE:
        trace.record(time_ms, node, kind, **fields)
    trace.record(10, "b1", "batch", offsets=(1, 2), none=None, ok=True)
    path = tmp_path / "trace.ndjson"
    assert trace.write_ndjson(path) == 4
    lines = path.read_text().splitlines()
    first = '{"fields":{"id":1,"msg_kind":"ShareFetchRequest","src":"c1"},"kind":"deliver","node":"b1","time_ms":0}'
    assert lines[0] == first
    events = read_ndjson(path)
    assert [(e.time_ms, e.node, e.kind) for e in events] == [(e.time_ms, e.node, e.kind) for e in trace.events]
    assert events[-1].fields == {"offsets": [1, 2], "none": None, "ok": True}


def test_ndjson_needs_keep(tmp_path: Path) -> None:
    trace = Trace()
    trace.record(1, "n", "k")
    assert trace.events == []
    with pytest.raises(ValueError, match="keep=False"):
        trace.write_ndjson(tmp_path / "x.ndjson")


# -- declared kinds: emit ------------------------------------------------------------------------

HOT = TraceKind("test.hot", ("count", "key", "ok"))


def test_emit_is_pinned() -> None:
    trace = Trace()
    trace.emit(HOT, 3, "b1", 7, "g:t:0", True)
    assert trace.trace_hash == "62707ebbbe3667179ed5491df9a4ef3d"


def test_emit_and_record_of_the_same_event_hash_the_same() -> None:
    emitted, recorded, reordered = Trace(keep=True), Trace(), Trace()
    emitted.emit(HOT, 3, "b1", 7, "g:t:0", True)
    recorded.record(3, "b1", "test.hot", count=7, key="g:t:0", ok=True)
    reordered.record(3, "b1", "test.hot", ok=True, key="g:t:0", count=7)
    assert emitted.trace_hash == recorded.trace_hash == reordered.trace_hash
    assert emitted.events == [TraceEvent(3, "b1", "test.hot", {"count": 7, "key": "g:t:0", "ok": True})]


def test_a_declared_kind_with_other_fields_is_recorded_by_name() -> None:
    # Only the declared names are implied by the kind; any other set is hashed with its names.
    a, b = Trace(), Trace()
    a.record(3, "b1", "test.hot", count=7, key="g:t:0")
    b.record(3, "b1", "test.hot", count=7, keys="g:t:0")
    assert a.trace_hash != b.trace_hash


@pytest.mark.parametrize(("values", "message"), [
    ((7, "k"), "2 values for the fields count, key, ok"),
    ((7, "k", 1.5), r"test.hot.ok = 1.5"),
    ((7, {"k"}, True), "test.hot.key"),
])
def test_emit_checks_its_values(values: tuple[Any, ...], message: str) -> None:
    with pytest.raises(TraceValueError, match=message):
        Trace().emit(HOT, 1, "n", *values)


@pytest.mark.parametrize(("time_ms", "node"), [(1.0, "n"), (True, "n"), (1, None)])
def test_emit_checks_its_head(time_ms: Any, node: Any) -> None:
    with pytest.raises(TraceValueError):
        Trace().emit(HOT, time_ms, node, 1, "k", True)


def test_the_per_message_kinds_are_declared_with_the_trace() -> None:
    # Declared in model/sim/trace.py itself: record() hashes them as emit() does in any process.
    emitted, recorded = Trace(), Trace()
    emitted.emit(DELIVER, 5, "b1", False, 7, "Produce", "p1")
    recorded.record(5, "b1", "deliver", src="p1", msg_kind="Produce", id=7, dup=False)
    assert emitted.trace_hash == recorded.trace_hash


def test_emit_coerces_enums() -> None:
    a, b = Trace(), Trace()
    a.emit(HOT, 1, "n", Code.INVALID_RECORD_STATE, Word.ACCEPT, False)
    b.emit(HOT, 1, "n", 121, "accept", False)
    assert a.trace_hash == b.trace_hash


def test_a_kind_has_sorted_names_and_one_list_of_them() -> None:
    assert TraceKind("test.hot", ("count", "key", "ok")).names == HOT.names  # the same again is harmless
    with pytest.raises(ValueError, match="already declared"):
        TraceKind("test.hot", ("count", "key"))
    with pytest.raises(ValueError, match="sorted"):
        TraceKind("test.unsorted", ("b", "a"))
