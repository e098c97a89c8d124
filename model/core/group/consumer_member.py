"""The client side of a KIP-848 consumer group member (004_32d84b698b32e157.txt), pure.

``ConsumerMember`` builds the member's ConsumerGroupHeartbeat requests and
applies the responses: it knows its member id, its member epoch and the
partitions it owns, nothing else about the group.

- Requests: the first heartbeat (epoch 0) and the one after an error or a
  lost response are full; otherwise a field is sent only when it changed
  since the last heartbeat that was answered (the instance id always rides
  along, the coordinator needs it to check a static member).
- Responses: the assignment, when present, is the complete set the member
  may own now. Partitions owned but not in it are revoked: the member stops
  fetching them at once, but they stay ``revoking`` until the application
  has let go of them (committed their positions) and says so with
  ``revocation_done``; until then its heartbeats, sent on the interval as
  always, still report them owned, and only the heartbeat after that, sent
  at once, reports what it really owns: the acknowledgement the coordinator
  waits for (CG-2). The Java consumer does the same: it heartbeats while it
  reconciles and sends the new assignment once the revocation callback and
  its commit are done (AbstractMembershipManager). Partitions in it but not
  owned are taken. The coordinator never does both in one
  response, except after a lost response where the member catches up on two
  steps at once; it revokes first then.
- FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID: the member loses every partition
  and rejoins with epoch 0 and the same member id (CG-4).
- UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
  UNSUPPORTED_ASSIGNOR and INVALID_REQUEST are fatal: the consumer fails.
- ``leave()`` sends epoch -1; ``leave(static=True)`` sends -2 so a restarted
  instance with the same instance id can take over the assignment (CG-5).
  Either way the member has let go of its partitions before sending. Between
  ``prepare_leaving()`` (close began: the final commit) and ``leave()`` it
  heartbeats as usual but takes no new assignment, and a fence ends it
  without a rejoin (the Java consumer's PREPARE_LEAVING).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from model import mutants as _mutants
from model.core.errors import Errors
from model.core.group.consumer_messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    REBALANCE_TIMEOUT_UNCHANGED,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
)
from model.core.metadata import TopicPartition

DEFAULT_REBALANCE_TIMEOUT_MS = 300_000  # the consumer's max.poll.interval.ms

FENCING_ERRORS = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
FATAL_ERRORS = frozenset(
    {
        Errors.UNRELEASED_INSTANCE_ID,
        Errors.FENCED_INSTANCE_ID,
        Errors.GROUP_MAX_SIZE_REACHED,
        Errors.UNSUPPORTED_ASSIGNOR,
        Errors.INVALID_REQUEST,
    }
)


class MemberStatus(Enum):
    JOINING = "joining"  # the next heartbeat joins (epoch 0)
    STABLE = "stable"  # in the group, heartbeating
    LEFT = "left"  # sent its leave; sends nothing more
    FATAL = "fatal"  # failed for good


@dataclass(frozen=True, slots=True)
class ReconcileStep:
    """What one response did to the member's partitions."""

    revoked: frozenset[TopicPartition] = frozenset()
    assigned: frozenset[TopicPartition] = frozenset()
    lost: frozenset[TopicPartition] = frozenset()  # dropped without revocation (fenced / fatal)
    error: Errors = Errors.NONE
    # The member had missed a response: it may catch up on a revoke and an assign at once.
    after_lost_response: bool = False


@dataclass(frozen=True, slots=True)
class _Sent:
    """The fields of the last heartbeat the coordinator answered, for the next delta."""

    subscribed_topic_names: tuple[str, ...] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    rack_id: str | None
    owned: frozenset[TopicPartition]


class ConsumerMember:
    def __init__(
        self,
        group_id: str,
        subscribed_topic_names: tuple[str, ...] | list[str] = (),
        *,
        subscribed_topic_regex: str | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = DEFAULT_REBALANCE_TIMEOUT_MS,
        server_assignor: str | None = None,
        client_id: str = "",
        client_host: str = "",
        member_id: str = "",
    ) -> None:
        self.group_id = group_id
        self.subscribed_topic_names = tuple(sorted(set(subscribed_topic_names)))
        self.subscribed_topic_regex = subscribed_topic_regex
        self.instance_id = instance_id
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.client_id = client_id
        self.client_host = client_host
        self.member_id = member_id
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self.owned: frozenset[TopicPartition] = frozenset()
        # Revoked, but the application has not let go of them yet: still reported owned.
        self.revoking: frozenset[TopicPartition] = frozenset()
        self.status = MemberStatus.JOINING
        self.heartbeat_interval_ms = 0
        # Heartbeat at once rather than after the interval (join, revocation to acknowledge).
        self.heartbeat_now = True
        self._leave_epoch: int | None = None
        self._preparing_leave = False  # close began: heartbeats go on, assignments are ignored
        self._last_answered: _Sent | None = None  # None: the next heartbeat is full
        self._in_flight: _Sent | None = None
        self._missed_response = False

    # --- the member's own actions -------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.status in (MemberStatus.JOINING, MemberStatus.STABLE)

    def subscribe(self, topic_names: tuple[str, ...] | list[str], regex: str | None = None) -> None:
        self.subscribed_topic_names = tuple(sorted(set(topic_names)))
        self.subscribed_topic_regex = regex
        self.heartbeat_now = True

    def prepare_leaving(self) -> None:
        """The consumer is closing (committing first): keep heartbeating, take no new assignment."""
        self._preparing_leave = True

    def leave(self, static: bool = False) -> frozenset[TopicPartition]:
        """Give up every partition (after committing) and make the next heartbeat a leave.

        Returns the partitions the member revoked."""
        if static and self.instance_id is None:
            raise ValueError("only a member with an instance id can leave temporarily (epoch -2)")
        revoked = self._let_go()
        self._leave_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH if static else LEAVE_GROUP_MEMBER_EPOCH
        self.heartbeat_now = True
        return revoked

    def revocation_done(self) -> None:
        """The application let go of the partitions revoked so far: acknowledge it at once (CG-2)."""
        if self.revoking:
            self.revoking = frozenset()
            self.heartbeat_now = True

    def _let_go(self) -> frozenset[TopicPartition]:
        """Hold nothing any more (leave, fence, fatal error); returns what it held, revoking or not."""
        held, self.owned, self.revoking = self.owned | self.revoking, frozenset(), frozenset()
        return held

    def commit_request(self, offsets: Mapping[TopicPartition, int]) -> OffsetCommitRequest:
        return OffsetCommitRequest(
            group_id=self.group_id,
            generation_id_or_member_epoch=self.member_epoch,
            member_id=self.member_id,
            partitions=tuple(
                OffsetCommitRequestPartition(tp.topic, tp.partition, offsets[tp]) for tp in sorted(offsets)
            ),
            group_instance_id=self.instance_id,
        )

    # --- heartbeats ---------------------------------------------------------------------------

    def build_heartbeat(self) -> ConsumerGroupHeartbeatRequest | None:
        """The next heartbeat, or None once the member left or failed."""
        if not self.active:
            return None
        self.heartbeat_now = False
        if self._leave_epoch is not None:
            # The consumer is closing: it does not wait for (or need) the answer.
            epoch, self._leave_epoch = self._leave_epoch, None
            self.status = MemberStatus.LEFT
            return ConsumerGroupHeartbeatRequest(
                group_id=self.group_id, member_id=self.member_id, member_epoch=epoch, instance_id=self.instance_id
            )
        reported = self.owned | self.revoking
        sent = _Sent(
            self.subscribed_topic_names,
            self.subscribed_topic_regex,
            self.server_assignor,
            self.rack_id,
            reported,
        )
        self._in_flight = sent
        last = self._last_answered
        full = last is None or self.status == MemberStatus.JOINING
        if full:
            return ConsumerGroupHeartbeatRequest(
                group_id=self.group_id,
                member_id=self.member_id,
                member_epoch=self.member_epoch,
                instance_id=self.instance_id,
                rack_id=self.rack_id,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                subscribed_topic_names=self.subscribed_topic_names,
                # "" says "no regex", so a full heartbeat also clears one the coordinator still has.
                subscribed_topic_regex=self.subscribed_topic_regex or "",
                server_assignor=self.server_assignor,
                topic_partitions=tuple(sorted(reported)),
                client_id=self.client_id,
                client_host=self.client_host,
            )
        assert last is not None
        names_changed = sent.subscribed_topic_names != last.subscribed_topic_names
        regex_changed = sent.subscribed_topic_regex != last.subscribed_topic_regex
        return ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
            rack_id=self.rack_id if sent.rack_id != last.rack_id else None,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_UNCHANGED,
            subscribed_topic_names=self.subscribed_topic_names if names_changed else None,
            # An empty regex clears a previous one.
            subscribed_topic_regex=(self.subscribed_topic_regex or "") if regex_changed else None,
            server_assignor=self.server_assignor if sent.server_assignor != last.server_assignor else None,
            topic_partitions=tuple(sorted(reported)) if sent.owned != last.owned else None,
            client_id=self.client_id,
            client_host=self.client_host,
        )

    def on_response_lost(self) -> None:
        """The heartbeat or its response was lost (a request timeout): resend everything."""
        self._in_flight = None
        self._last_answered = None
        self._missed_response = True
        self.heartbeat_now = True

    def on_response(self, response: ConsumerGroupHeartbeatResponse) -> ReconcileStep:
        if not self.active:
            return ReconcileStep(error=response.error_code)
        error = response.error_code
        if error == Errors.NONE:
            return self._on_success(response)
        self._in_flight = None
        self._last_answered = None
        self.heartbeat_now = True
        if error in FENCING_ERRORS:
            if self._preparing_leave:
                self.status = MemberStatus.LEFT  # out of the group already: no rejoin, no leave to send
                return ReconcileStep(lost=self._let_go(), error=error)
            if _mutants.ACTIVE == "keep-partitions-after-fenced":
                # mutant: it rejoins but keeps consuming what it owned
                self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
                self.status = MemberStatus.JOINING
                return ReconcileStep(error=error)
            self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
            self.status = MemberStatus.JOINING
            return ReconcileStep(lost=self._let_go(), error=error)
        if error in FATAL_ERRORS:
            self.status = MemberStatus.FATAL
            return ReconcileStep(lost=self._let_go(), error=error)
        return ReconcileStep(error=error)  # retriable: try again with a full heartbeat

    def _on_success(self, response: ConsumerGroupHeartbeatResponse) -> ReconcileStep:
        self._last_answered = self._in_flight
        self._in_flight = None
        caught_up, self._missed_response = self._missed_response, False
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        self.heartbeat_interval_ms = response.heartbeat_interval_ms
        self.status = MemberStatus.STABLE
        if response.assignment is None or self._preparing_leave:
            return ReconcileStep(after_lost_response=caught_up)
        target = response.assignment.assigned_topic_partitions
        revoked = self.owned - target
        assigned = target - self.owned
        self.owned = target
        # Acknowledged by the heartbeat after revocation_done (CG-2); one given back meanwhile is owned again.
        self.revoking = (self.revoking | revoked) - target
        return ReconcileStep(revoked=revoked, assigned=assigned, after_lost_response=caught_up)
