"""The worked example of KIP-932, replayed on ``SharePartition``.

Source: 002_6b3a98b13b89437f.txt, "Examples with share-group state": a
share-partition of group G1 on a topic whose latest offset is 100, three
consumers, and for each operation the SPSO, SPEO, the cumulative state of the
in-flight records and the WriteShareGroupState request it causes.

``replay_kip932_example()`` runs the operations against the real leader (no
share coordinator: every write is answered with success) and returns one
``ExampleRow`` per table row; ``describe_state`` and ``format_write`` render a
row in the table's own words, so ``sharesim demo`` can print the table and the
golden test can compare it with the document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from model.core.config import PROTOCOL_KIP, BrokerConfig
from model.core.log import PartitionLog
from model.core.share_partition import AcknowledgementBatch, SharePartition
from model.core.share_state import (
    ReadShareGroupStateResponse,
    RecordState,
    SharePartitionKey,
    WriteShareGroupStateRequest,
    WriteShareGroupStateResponse,
)

KEY = SharePartitionKey("G1", "topic_uuid", 0)
CONSUMER_1, CONSUMER_2, CONSUMER_3 = "consumer-1", "consumer-2", "consumer-3"
ACCEPT, RELEASE = (1,), (2,)
_STATE_WORDS = {
    RecordState.AVAILABLE: "available",
    RecordState.ACQUIRED: "acquired",
    RecordState.ACKNOWLEDGED: "acknowledged",
    RecordState.ARCHIVED: "archived",
}
_PERSISTED_NAMES = {0: "Available", 2: "Acknowledged", 4: "Archived"}


@dataclass(frozen=True)
class ExampleRow:
    operation: str
    spso: int
    speo: int
    state: str  # the "Cumulative state" column
    write: WriteShareGroupStateRequest | None  # the "WriteShareGroupState request" column


def describe_state(sp: SharePartition) -> str:
    """The cumulative state as the table words it: neighbouring offsets with the same
    state (and, unless terminal, the same delivery count) are one phrase."""
    groups: list[tuple[int, int, str]] = []  # first, last, phrase
    for b in sp.batches():
        words = _STATE_WORDS[b.state]
        phrase = words if b.state.terminal else f"({words}, delivery count {b.delivery_count})"
        if groups and groups[-1][2] == phrase and groups[-1][1] == b.first_offset - 1:
            groups[-1] = (groups[-1][0], b.last_offset, phrase)
        else:
            groups.append((b.first_offset, b.last_offset, phrase))
    parts = [f"SPSO={sp.spso}", f"SPEO={sp.speo}"]
    for first, last, phrase in groups:
        offsets = f"record {first}" if first == last else f"records {first}-{last}"
        parts.append(f"{offsets} {phrase}")
    return ", ".join(parts)


def format_write(req: WriteShareGroupStateRequest) -> str:
    """The request as the table prints it (a JSON-like code block)."""
    lines = [
        "{",
        f'  "GroupId": "{req.key.group_id}",',
        f'  "TopicId": {req.key.topic_id},',
        f'  "Partition": {req.key.partition},',
        f'  "StartOffset": {req.start_offset},',
    ]
    if not req.state_batches:
        lines.append('  "StateBatches": []')
    else:
        lines.append('  "StateBatches": [')
        for k, b in enumerate(req.state_batches):
            state = int(b.delivery_state)
            lines += [
                "    {",
                f'      "BaseOffset": {b.first_offset},',
                f'      "LastOffset": {b.last_offset},',
                f'      "StateDeliveryState": {state} ({_PERSISTED_NAMES[state]}),',
                f'      "DeliveryCount": {b.delivery_count}',
                "    }," if k < len(req.state_batches) - 1 else "    }",
            ]
        lines.append("  ]")
    lines.append("}")
    return "\n".join(lines)


def replay_kip932_example(
    on_row: Callable[[ExampleRow, SharePartition], None] | None = None,
) -> list[ExampleRow]:
    """Run the 002 example; one row per operation of the table, in order.

    ``on_row`` (optional) sees each row with the leader as it is right then.
    """
    log = PartitionLog()
    log.append(100)
    log.advance_high_watermark()
    # The KIP's table, so the KIP's writes (protocol "kip": StartOffset -1 while a start offset is in
    # flight, LOG_START writes); Kafka trunk's leader writes its SPSO with every write.
    # The KIP's table takes max records as a hard limit: the KIP's reading, not Kafka's batches.
    sp = SharePartition(KEY, log, leader_epoch=0, broker=BrokerConfig(protocol=PROTOCOL_KIP))
    rows: list[ExampleRow] = []

    def row(operation: str, now_ms: int) -> None:
        writes = sp.take_writes()
        assert len(writes) <= 1, writes
        for w in writes:
            sp.complete_write(w.write_id, WriteShareGroupStateResponse(KEY), now_ms)
        rows.append(ExampleRow(operation, sp.spso, sp.speo, describe_state(sp),
                               writes[0].request if writes else None))
        if on_row is not None:
            on_row(rows[-1], sp)

    def produce(count: int) -> None:
        log.append(count)
        log.advance_high_watermark()

    def ack(member: str, first: int, last: int, types: tuple[int, ...], now_ms: int) -> None:
        result = sp.acknowledge(member, [AcknowledgementBatch(first, last, types)], now_ms)
        assert result.write_id is not None, result

    # The state was initialized with start offset -1: auto.offset.reset=latest picks 100.
    sp.read_request()
    sp.recover(ReadShareGroupStateResponse(KEY, state_epoch=0), now_ms=0)
    row("Starting state of topic-partition with latest offset 100", 0)

    produce(10)
    sp.acquire(CONSUMER_1, 500, now_ms=0)
    row("Fetch records 100-109", 0)
    ack(CONSUMER_1, 100, 109, ACCEPT, now_ms=0)
    row("Acknowledge 100-109", 0)

    # Locks last 30 000 ms; the consumers fetch a second apart so that only
    # consumer 1's records time out in the lock-timeout step.
    produce(10)
    sp.acquire(CONSUMER_1, 3, now_ms=1_000)  # 110-112, lock until 31 000
    sp.acquire(CONSUMER_2, 6, now_ms=2_000)  # 113-118, lock until 32 000
    sp.acquire(CONSUMER_3, 1, now_ms=3_000)  # 119, lock until 33 000
    row("Fetch records 110-119", 3_000)
    ack(CONSUMER_1, 110, 110, RELEASE, now_ms=4_000)
    row("Release 110 (consumer 1)", 4_000)
    ack(CONSUMER_3, 119, 119, ACCEPT, now_ms=5_000)
    row("Acknowledge 119 (consumer 3)", 5_000)

    produce(1)
    sp.acquire(CONSUMER_1, 2, now_ms=6_000)  # 110 (count 2) and 120, lock until 36 000
    row("Fetch records 110, 120 (consumer 1)", 6_000)
    sp.expire_locks(now_ms=31_000)  # 111-112
    row("Lock timeout elapsed 111, 112 (consumer 1's records)", 31_000)
    ack(CONSUMER_2, 113, 118, ACCEPT, now_ms=31_500)
    row("Acknowledge 113-118 (consumer 2)", 31_500)
    sp.acquire(CONSUMER_3, 2, now_ms=32_000)  # 111-112, count 2
    row("Fetch records 111, 112 (consumer 3)", 32_000)
    ack(CONSUMER_1, 110, 110, ACCEPT, now_ms=33_000)
    row("Acknowledge 110 (consumer 1)", 33_000)
    ack(CONSUMER_3, 111, 112, ACCEPT, now_ms=34_000)
    row("Acknowledge 111, 112 (consumer 3)", 34_000)
    return rows
