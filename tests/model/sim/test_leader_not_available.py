"""LEADER_NOT_AVAILABLE end to end: a share-partition leader that is reading its state (or fenced) answers
an acknowledgement with it, as trunk's SharePartition.initializedOrThrowException does, and the share
consumer sends the acknowledgement again, as the Java consumer retries a RetriableException
(ShareConsumeRequestManager.handlePartitionError)."""

from __future__ import annotations

from model.core.errors import Errors
from model.sim.client import RETRIABLE_ERRORS, STALE_METADATA_ERRORS
from model.sim.runner import run
from scenarios import library


def test_clients_take_leader_not_available_as_retriable_and_stale_metadata() -> None:
    assert Errors.LEADER_NOT_AVAILABLE == 5  # Kafka's code
    assert Errors.LEADER_NOT_AVAILABLE in RETRIABLE_ERRORS and Errors.LEADER_NOT_AVAILABLE in STALE_METADATA_ERRORS


def test_a_swarm_failover_answers_acks_with_it_and_the_consumer_retries_them() -> None:
    """swarm_locks seed 2: a leadership move lands acknowledgements on a leader still reading the state."""
    result = run(library.get("swarm_locks"), 2, trace=True)
    assert result.ok, [v.describe() for v in result.violations]
    assert result.trace is not None
    retries = [e for e in result.trace.events if e.kind == "consumer.ack_retry"]
    assert retries and {e.fields["error"] for e in retries} == {int(Errors.LEADER_NOT_AVAILABLE)}
    assert result.metrics["records_unresolved"] == 0


def test_serving_while_loading_hands_out_accepted_records_again() -> None:
    """What the answer protects: a leader that serves while its state is still being read (mutant
    ``serve-while-loading``) acquires from an empty window, so records an earlier leader had seen
    accepted are delivered again (E-2). lost_state_reads keeps reads in flight long enough; the correct
    model answers LEADER_NOT_AVAILABLE there and holds."""
    scenario = library.get("lost_state_reads")
    caught = run(scenario, 1, mutant="serve-while-loading")
    assert "no-redelivery-after-accept" in {v.invariant for v in caught.violations}
    assert run(scenario, 1).ok
