"""Golden test: the KIP-932 worked example of share-group state.

Seed 002_6b3a98b13b89437f.txt, section "Examples with share-group state"
(lines ~330-550): operations on one share-partition of group G1 with three
consumers, and for every operation the SPSO, SPEO, cumulative state and the
WriteShareGroupState request. Every value printed in the table is asserted,
after every step, against the real ``SharePartition``.

The table's text is copied verbatim below. It writes "record 110-112" (singular)
for a range in two rows; the parser accepts both forms.
"""

from __future__ import annotations

import re

import pytest

from model.core.kip932_example import KEY, ExampleRow, format_write, replay_kip932_example
from model.core.share_partition import OffsetState, SharePartition
from model.core.share_state import UNKNOWN_OFFSET, RecordState, StateBatch

# (operation, cumulative state, WriteShareGroupState code block or None) — verbatim from 002.
TABLE: list[tuple[str, str, str | None]] = [
    (
        "Starting state of topic-partition with latest offset 100",
        "SPSO=100, SPEO=100",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": 100,
  "StateBatches": []
}""",
    ),
    (
        "Fetch records 100-109",
        "SPSO=100, SPEO=110, records 100-109 (acquired, delivery count 1)",
        None,
    ),
    (
        "Acknowledge 100-109",
        "SPSO=110, SPEO=110",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": 110,
  "StateBatches": []
}""",
    ),
    (
        "Fetch records 110-119",
        "SPSO=110, SPEO=120, records 110-119 (acquired, delivery count 1)",
        None,
    ),
    (
        "Release 110 (consumer 1)",
        "SPSO=110, SPEO=120, record 110 (available, delivery count 1), records 111-119 (acquired, delivery count 1)",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": -1,
  "StateBatches": [
    {
      "BaseOffset": 110,
      "LastOffset": 110,
      "StateDeliveryState": 0 (Available),
      "DeliveryCount": 1
    }
  ]
}""",
    ),
    (
        "Acknowledge 119 (consumer 3)",
        "SPSO=110, SPEO=120, record 110 (available, delivery count 1), records 111-118 (acquired, delivery count 1), "
        "record 119 acknowledged",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": -1,
  "StateBatches": [
    {
      "BaseOffset": 119,
      "LastOffset": 119,
      "StateDeliveryState": 2 (Acknowledged),
      "DeliveryCount": 1
    }
  ]
}""",
    ),
    (
        "Fetch records 110, 120 (consumer 1)",
        "SPSO=110, SPEO=121, record 110 (acquired, delivery count 2), records 111-118 (acquired, delivery count 1), "
        "record 119 acknowledged, record 120 (acquired, delivery count 1)",
        None,
    ),
    (
        "Lock timeout elapsed 111, 112 (consumer 1's records)",
        "SPSO=110, SPEO=121, record 110 (acquired, delivery count 2), records 111-112 (available, delivery count 1), "
        "records 113-118 (acquired, delivery count 1), record 119 acknowledged, "
        "record 120 (acquired, delivery count 1)",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": -1,
  "StateBatches": [
    {
      "BaseOffset": 111,
      "LastOffset": 112,
      "StateDeliveryState": 0 (Available),
      "DeliveryCount": 1
    }
  ]
}""",
    ),
    (
        "Acknowledge 113-118 (consumer 2)",
        "SPSO=110, SPEO=121, record 110 (acquired, delivery count 2), records 111-112 (available, delivery count 1), "
        "records 113-119 acknowledged, record 120 (acquired, delivery count 1)",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": -1,
  "StateBatches": [
    {
      "BaseOffset": 113,
      "LastOffset": 118,
      "StateDeliveryState": 2 (Acknowledged),
      "DeliveryCount": 1
    }
  ]
}""",
    ),
    (
        "Fetch records 111, 112 (consumer 3)",
        "SPSO=110, SPEO=121, record 110-112 (acquired, delivery count 2), records 113-119 acknowledged, "
        "record 120 (acquired, delivery count 1)",
        None,
    ),
    (
        "Acknowledge 110 (consumer 1)",
        "SPSO=111, SPEO=121, record 111-112 (acquired, delivery count 2), records 113-119 acknowledged, "
        "record 120 (acquired, delivery count 1)",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": -1,
  "StateBatches": [
    {
      "BaseOffset": 110,
      "LastOffset": 110,
      "StateDeliveryState": 2 (Acknowledged),
      "DeliveryCount": 2
    }
  ]
}""",
    ),
    (
        "Acknowledge 111, 112 (consumer 3)",
        "SPSO=120, SPEO=121, record 120 (acquired, delivery count 1)",
        """{
  "GroupId": "G1",
  "TopicId": topic_uuid,
  "Partition": 0,
  "StartOffset": 120,
  "StateBatches": []
}""",
    ),
]

_WORDS = {w: s for s, w in [(RecordState.AVAILABLE, "available"), (RecordState.ACQUIRED, "acquired"),
                            (RecordState.ACKNOWLEDGED, "acknowledged"), (RecordState.ARCHIVED, "archived")]}
_PHRASE = re.compile(
    r"records? (?P<first>\d+)(?:-(?P<last>\d+))? "
    r"(?:\((?P<state>\w+), delivery count (?P<count>\d+)\)|(?P<terminal>acknowledged|archived))"
)


def parse_state(text: str) -> tuple[int, int, dict[int, tuple[RecordState, int | None]]]:
    """The table's cumulative state as (spso, speo, {offset: (state, count or None)})."""
    head = re.match(r"SPSO=(\d+), SPEO=(\d+)", text)
    assert head, text
    records: dict[int, tuple[RecordState, int | None]] = {}
    for m in _PHRASE.finditer(text):
        first = int(m["first"])
        last = int(m["last"] or first)
        if m["terminal"]:
            state, count = _WORDS[m["terminal"]], None
        else:
            state, count = _WORDS[m["state"]], int(m["count"])
        for offset in range(first, last + 1):
            records[offset] = (state, count)
    return int(head[1]), int(head[2]), records


def parse_write(block: str) -> tuple[int, tuple[StateBatch, ...]]:
    start = re.search(r'"StartOffset": (-?\d+)', block)
    assert start
    batches = tuple(
        StateBatch(int(m[1]), int(m[2]), RecordState(int(m[3])), int(m[4]))
        for m in re.finditer(
            r'"BaseOffset": (\d+),\s*"LastOffset": (\d+),\s*"StateDeliveryState": (\d) \(\w+\),\s*'
            r'"DeliveryCount": (\d+)', block)
    )
    return int(start[1]), batches


def _normalized(text: str) -> str:
    # The table's "record 110-112" is "records 110-112" everywhere else.
    return re.sub(r"\brecord (\d+-\d+)", r"records \1", text)


Observed = tuple[ExampleRow, dict[int, OffsetState | None], list[tuple[int, int]]]
seen: list[Observed] = []


def _observe(row: ExampleRow, sp: SharePartition) -> None:
    window = {o: sp.state_of(o) for o in range(sp.spso - 2, sp.speo + 2)}
    seen.append((row, window, [(b.first_offset, b.last_offset) for b in sp.batches()]))


@pytest.fixture(scope="module")
def replay() -> list[Observed]:
    seen.clear()
    replay_kip932_example(_observe)
    return list(seen)


def test_the_table_has_every_row(replay: list[Observed]) -> None:
    assert [r.operation for r, _, _ in replay] == [op for op, _, _ in TABLE]


@pytest.mark.parametrize("step", range(len(TABLE)), ids=[op for op, _, _ in TABLE])
def test_step(step: int, replay: list[Observed]) -> None:
    row, window, _ = replay[step]
    operation, state_text, write_block = TABLE[step]
    spso, speo, records = parse_state(state_text)

    # SPSO, SPEO, and the cumulative state text as the table prints it.
    assert (row.spso, row.speo) == (spso, speo)
    assert row.state == _normalized(state_text)

    # Every in-flight record: state and delivery count (terminal ones print no count).
    assert set(records) == set(range(spso, speo))
    for offset in range(spso - 2, speo + 2):
        got = window[offset]
        if not spso <= offset < speo:
            assert got is None, (operation, offset)
            continue
        expected_state, expected_count = records[offset]
        assert got is not None
        state, count, owner, in_transition = got.state, got.delivery_count, got.owner, got.in_transition
        assert state == expected_state, (operation, offset)
        if expected_count is not None:
            assert count == expected_count, (operation, offset)
        assert not in_transition  # every write of the example has been answered
        assert (owner is not None) == (state == RecordState.ACQUIRED)

    # The WriteShareGroupState request of the step, field by field and as printed.
    if write_block is None:
        assert row.write is None, operation
    else:
        assert row.write is not None, operation
        start, batches = parse_write(write_block)
        assert row.write.key == KEY
        assert row.write.start_offset == start
        assert row.write.state_batches == batches
        assert (row.write.state_epoch, row.write.leader_epoch) == (0, 0)
        assert format_write(row.write) == write_block


def test_the_quirky_rows(replay: list[Observed]) -> None:
    """The SPSO moves 110→111 with StartOffset -1, but 100-109 and 111-112 write only the start offset."""
    by_op = {r.operation: r for r, _, _ in replay}
    ack_110 = by_op["Acknowledge 110 (consumer 1)"]
    assert ack_110.spso == 111 and ack_110.write is not None and ack_110.write.start_offset == UNKNOWN_OFFSET
    for op, start in (("Acknowledge 100-109", 110), ("Acknowledge 111, 112 (consumer 3)", 120)):
        w = by_op[op].write
        assert w is not None and w.start_offset == start and w.state_batches == ()


def test_ranges_split_only_where_records_differ(
    replay: list[Observed],
) -> None:
    # After "Fetch records 110-119" the three consumers' acquisitions are three ranges, not ten.
    _, _, ranges = replay[3]
    assert ranges == [(110, 112), (113, 118), (119, 119)]
    # After the last step only record 120 is in flight: one range.
    assert replay[-1][2] == [(120, 120)]
