"""The client side of ShareGroupHeartbeat: one share-group member (GC-1, GC-4, CL-3).

``ShareMember`` builds the heartbeats a ShareConsumer sends and applies the
responses. It joins with epoch 0 and its full subscription; afterwards a
heartbeat carries only the fields the coordinator has not confirmed yet (the
seed: "only fill in the fields which have changed since the last
heartbeat"). A share member has no revocation barrier: it takes each
assignment as it arrives (GC-4). After UNKNOWN_MEMBER_ID or
FENCED_MEMBER_EPOCH it drops its assignment and rejoins with epoch 0 and the
same member id (KIP-848); GROUP_ID_NOT_FOUND (the group is gone) is treated
the same way. ``leave`` sends epoch -1.

One heartbeat is in flight at a time: a response answers the last request
built. Timing (the heartbeat interval) is the caller's; ``heartbeat_interval_ms``
holds what the coordinator asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import Enum

from model import mutants as _mutants
from model.core.errors import Errors
from model.core.group.share_messages import (
    JOIN_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_MEMBER_EPOCH,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from model.core.metadata import TopicPartition

# Errors after which the member starts over with epoch 0.
REJOIN_ERRORS = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH, Errors.GROUP_ID_NOT_FOUND})
# Errors that end the member: retrying cannot help.
FATAL_ERRORS = frozenset({Errors.GROUP_MAX_SIZE_REACHED, Errors.INVALID_REQUEST})


class MemberState(Enum):
    JOINING = "joining"  # next heartbeat has epoch 0
    STABLE = "stable"  # has a member id and epoch
    LEAVING = "leaving"  # sent epoch -1, waiting for the answer
    LEFT = "left"
    FAILED = "failed"  # a fatal error; see ``error``


class ShareMember:
    def __init__(
        self,
        group_id: str,
        subscribed_topic_names: Iterable[str],
        *,
        rack_id: str | None = None,
        client_id: str = "",
        client_host: str = "",
    ) -> None:
        self.group_id = group_id
        self.member_id = ""
        self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.subscribed_topic_names = tuple(sorted(set(subscribed_topic_names)))
        self.rack_id = rack_id
        self.client_id = client_id
        self.client_host = client_host
        self.heartbeat_interval_ms: int | None = None
        self.state = MemberState.JOINING
        self.error: Errors | None = None
        # What the coordinator has confirmed it knows; None = must be sent again.
        self._acked_subscription: tuple[str, ...] | None = None
        self._acked_rack_id: str | None = None
        self._inflight: ShareGroupHeartbeatRequest | None = None

    @property
    def active(self) -> bool:
        """Joined or joining: the member should keep heartbeating."""
        return self.state in (MemberState.JOINING, MemberState.STABLE)

    def subscribe(self, topics: Iterable[str]) -> None:
        """Change the subscription; the next heartbeat carries it (the group epoch will bump, GC-2)."""
        self.subscribed_topic_names = tuple(sorted(set(topics)))

    def heartbeat(self) -> ShareGroupHeartbeatRequest:
        """The next heartbeat: a join with every field, or only what changed."""
        if self.state in (MemberState.LEFT, MemberState.FAILED):
            # Starting again after a leave or a failure is a fresh join.
            self.state = MemberState.JOINING
            self.error = None
            self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        joining = self.state is MemberState.JOINING
        if joining:
            self._acked_subscription = None
            self._acked_rack_id = None
        send_subscription = joining or self.subscribed_topic_names != self._acked_subscription
        send_rack = self.rack_id is not None and (joining or self.rack_id != self._acked_rack_id)
        req = ShareGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=JOIN_GROUP_MEMBER_EPOCH if joining and _mutants.ACTIVE != "rejoin-with-old-epoch"
            else self.member_epoch,
            rack_id=self.rack_id if send_rack else None,
            subscribed_topic_names=self.subscribed_topic_names if send_subscription else None,
            client_id=self.client_id,
            client_host=self.client_host,
        )
        self._inflight = req
        return req

    def leave(self) -> ShareGroupHeartbeatRequest:
        """Epoch -1: leave the group (ShareConsumer.close, CL-3); the assignment is dropped now."""
        req = ShareGroupHeartbeatRequest(self.group_id, self.member_id, LEAVE_GROUP_MEMBER_EPOCH)
        self.state = MemberState.LEAVING
        self.assignment = frozenset()
        self._inflight = req
        return req

    def on_response(self, resp: ShareGroupHeartbeatResponse) -> None:
        """Apply the answer to the last request built."""
        req, self._inflight = self._inflight, None
        if req is None:
            return  # nothing in flight: a duplicate or late answer
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            # Left, or the coordinator no longer knew the member: gone either way.
            self.state = MemberState.LEFT
            self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
            return
        if resp.error_code == Errors.FENCED_MEMBER_EPOCH and _mutants.ACTIVE == "fenced-member-gives-up":
            self.state = MemberState.FAILED  # mutant: taken for a fatal error; the member never rejoins
            self.error = resp.error_code
            self.assignment = frozenset()
            return
        if resp.error_code in REJOIN_ERRORS:
            self._start_over()
            return
        if resp.error_code in FATAL_ERRORS:
            self.state = MemberState.FAILED
            self.error = resp.error_code
            self.assignment = frozenset()
            return
        if resp.error_code != Errors.NONE:
            self.on_request_lost()  # retriable (coordinator moving or loading): resend everything
            return
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        self.heartbeat_interval_ms = resp.heartbeat_interval_ms
        if resp.assignment is not None:
            self.assignment = resp.assignment.partitions()
        if req.subscribed_topic_names is not None:
            self._acked_subscription = req.subscribed_topic_names
        if req.rack_id is not None:
            self._acked_rack_id = req.rack_id
        self.state = MemberState.STABLE

    def on_request_lost(self) -> None:
        """No answer came: the next heartbeat repeats every field not yet confirmed."""
        self._inflight = None
        if self.state is MemberState.LEAVING:
            self.state = MemberState.LEFT
            self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
            return
        self._acked_subscription = None
        self._acked_rack_id = None

    def _start_over(self) -> None:
        """Abandon the assignment and rejoin with epoch 0 and the same member id (KIP-848)."""
        self.state = MemberState.JOINING
        if _mutants.ACTIVE != "rejoin-with-old-epoch":
            self.member_epoch = JOIN_GROUP_MEMBER_EPOCH
        self.assignment = frozenset()
