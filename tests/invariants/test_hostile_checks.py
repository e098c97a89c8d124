"""refused-share-request-changes-nothing (invariants/hostile_checks.py): its failing and passing cases."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from invariants.hostile_checks import RefusedShareRequestMonitor
from invariants.sink import ViolationSink
from model.core.errors import Errors
from model.core.share_partition import AcknowledgementBatch
from model.core.share_state import SharePartitionKey
from model.sim.hostile import HostileShareResult

KEY = SharePartitionKey("g", "events-id", 0)


def _monitor() -> tuple[RefusedShareRequestMonitor, ViolationSink]:
    sink = ViolationSink(1)
    return RefusedShareRequestMonitor(sink), sink


def _answer(request: str, error: Errors, parts: tuple[Errors, ...] = (), expected: tuple[Errors, ...] = (),
            per_partition: tuple[Errors, ...] = (Errors.INVALID_RECORD_STATE,)) -> HostileShareResult:
    return HostileShareResult(request, "g", "hostile-1", 1, 1, error, parts, expected, per_partition, 10)


def _step(monitor: RefusedShareRequestMonitor, log_start: int) -> None:
    partition: Any = SimpleNamespace(key=KEY, log=SimpleNamespace(log_start_offset=log_start))
    monitor.on_share_partition_step(partition, 0, 10)


def test_a_refusal_the_protocol_gives_passes_and_a_served_request_fails() -> None:
    monitor, sink = _monitor()
    monitor.on_event("hostile.share_answer", 10, result=_answer("acks_on_fresh_session", Errors.INVALID_REQUEST,
                                                                expected=(Errors.INVALID_REQUEST,)))
    monitor.on_event("hostile.share_answer", 10, result=_answer("acks_never_acquired", Errors.NONE,
                                                                (Errors.INVALID_RECORD_STATE,)))
    monitor.on_event("hostile.share_answer", 10, result=_answer("stale_session_epoch", Errors.REQUEST_TIMED_OUT,
                                                                expected=(Errors.INVALID_SHARE_SESSION_EPOCH,)))
    assert sink.violations == []
    monitor.on_event("hostile.share_answer", 11, result=_answer("acks_on_fresh_session", Errors.NONE, (Errors.NONE,),
                                                                expected=(Errors.INVALID_REQUEST,)))
    assert [v.invariant for v in sink.violations] == ["refused-share-request-changes-nothing"]


def test_an_acknowledgement_of_a_hostile_member_taken_into_the_state_fails() -> None:
    monitor, sink = _monitor()
    monitor.on_acknowledge(KEY, "hostile-1", (AcknowledgementBatch(0, 9, (1,)),), 1, 10)
    _step(monitor, 0)
    assert [v.invariant for v in sink.violations] == ["refused-share-request-changes-nothing"]


def test_an_acknowledgement_wholly_below_the_log_start_is_a_no_op_and_its_none_answer_passes() -> None:
    monitor, sink = _monitor()
    monitor.on_acknowledge(KEY, "hostile-1", (AcknowledgementBatch(0, 9, (1,)),), 1, 10)
    monitor.on_acknowledge(KEY, "c1", (AcknowledgementBatch(20, 29, (1,)),), 1, 10)  # a real member: not judged
    _step(monitor, 10)
    monitor.on_event("hostile.share_answer", 10, result=_answer("acks_never_acquired", Errors.NONE, (Errors.NONE,)))
    assert sink.violations == []
    monitor.on_event("hostile.share_answer", 10, result=_answer("acks_never_acquired", Errors.NONE, (Errors.NONE,)))
    assert [v.invariant for v in sink.violations] == ["refused-share-request-changes-nothing"]


def test_a_session_accepting_a_negative_epoch_other_than_close_fails() -> None:
    monitor, sink = _monitor()
    monitor.on_share_session(1, "g", "c1", -1, 10)
    monitor.on_share_session(1, "g", "c1", 0, 10)
    assert sink.violations == []
    monitor.on_share_session(1, "g", "c1", -2, 11)
    assert [v.invariant for v in sink.violations] == ["refused-share-request-changes-nothing"]
