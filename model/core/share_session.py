"""Share sessions (CL-1): the share-partition leader's cache of consumer sessions.

A ShareFetch opens a session with epoch 0, continues it with the epoch the
broker expects next (each request increments it), and closes it with -1. The
cache is keyed by (group id, member id), bounded by
``group.share.max.groups × group.share.max.size`` (003_cf42721e0e7b2a9a.txt),
and a session idle for ``share.session.idle.eviction.ms`` (120 000) may be
evicted. A session belongs to the client connection that opened it: when
that connection closes (the client closed it after a request timeout, or the
client process died and its host reset it), the broker ends the session
(Kafka: ShareSessionCache's connection-disconnect listener, then
ShareGroupListener.onMemberLeave). A client's connections are numbered in
order; the end of connection k ends the sessions opened on k or earlier (an
earlier one may have been reset without the broker hearing of it, by a
partition, while the client went on with the session), not those opened
since (Kafka marks the old connection stale).

Closing, evicting or disconnecting a session releases the member's acquired
records on the session's partitions (SP-15); the broker does that with the
sessions returned here. Opening a session again with epoch 0 replaces the old
one without releasing anything (as Kafka's newContext does): the member keeps
its records until it acknowledges them or their locks time out. An epoch-0
ShareFetch carrying acknowledgements is an INVALID_REQUEST (Kafka's newContext
again): acknowledgements belong to an open session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

from model import mutants as _mutants
from model.core.errors import ApiError, Errors
from model.core.message import Message

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

SessionKey = tuple[str, str]  # (group id, member id)
Connection = tuple[str, int]  # (client, the number of its connection to this broker)
SessionPartition = tuple[str, int]  # (topic id, partition)


def next_epoch(epoch: int) -> int:
    """Epochs increment per request and wrap to 1 (0 is reserved for opening)."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


@dataclass
class ShareSession:
    key: SessionKey
    epoch: int  # the epoch the next request must carry
    partitions: set[SessionPartition] = field(default_factory=set)
    last_used_ms: int = 0
    connection: Connection = ("", 0)  # the connection that opened it (client "" unknown): ends with it


class SessionContext(Message):
    """What a ShareFetch / ShareAcknowledge may do after the session check."""

    FIELDS = ("session", "closing", "evicted")
    __slots__ = FIELDS

    def __init__(self, session: ShareSession, closing: bool, evicted: tuple[ShareSession, ...] = ()) -> None:
        self.session: Final = session
        # The request closes the session (epoch -1): its records are released after its acknowledgements.
        self.closing: Final = closing
        # Idle sessions evicted to make room for this one; their records are released (SP-15).
        self.evicted: Final = evicted


class ShareSessionCache:
    def __init__(self, max_sessions: int, idle_eviction_ms: int = 120_000) -> None:
        self.max_sessions = max_sessions
        self.idle_eviction_ms = idle_eviction_ms
        self._sessions: dict[SessionKey, ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> ShareSession | None:
        return self._sessions.get(key)

    def keys(self) -> list[SessionKey]:
        return sorted(self._sessions)

    def share_fetch(
        self,
        key: SessionKey,
        epoch: int,
        now_ms: int,
        partitions: Iterable[SessionPartition] = (),
        forgotten: Iterable[SessionPartition] = (),
        connection: Connection = ("", 0),
        acknowledging: bool = False,
    ) -> SessionContext:
        """Validate a ShareFetch's session epoch and update the session; ``connection``: the connection
        the request came on (an opened session belongs to it); ``acknowledging``: the request carries
        acknowledgements. Raises ApiError."""
        if epoch == INITIAL_EPOCH:
            if acknowledging and _mutants.ACTIVE != "fresh-session-acks-accepted":
                raise ApiError(Errors.INVALID_REQUEST, "acknowledgements in a ShareFetch that opens a share session")
            self._sessions.pop(key, None)  # replaced, its records kept (see the module docstring)
            evicted: tuple[ShareSession, ...] = ()
            if len(self._sessions) >= self.max_sessions:
                victim = self._evict_one_idle(now_ms)
                if victim is None:
                    raise ApiError(Errors.SHARE_SESSION_LIMIT_REACHED, f"{self.max_sessions} sessions open")
                evicted = (victim,)
            session = ShareSession(key, next_epoch(INITIAL_EPOCH), set(partitions), now_ms, connection)
            self._sessions[key] = session
            return SessionContext(session, closing=False, evicted=evicted)
        session = self._continue(key, epoch, now_ms)
        if epoch == FINAL_EPOCH:
            return SessionContext(session, closing=True)
        session.partitions.update(partitions)
        session.partitions.difference_update(forgotten)
        return SessionContext(session, closing=False)

    def share_acknowledge(self, key: SessionKey, epoch: int, now_ms: int) -> SessionContext:
        """ShareAcknowledge can continue or close a session, never open one."""
        if epoch == INITIAL_EPOCH:
            raise ApiError(Errors.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        session = self._continue(key, epoch, now_ms)
        return SessionContext(session, closing=epoch == FINAL_EPOCH)

    def has_group(self, group_id: str) -> bool:
        """Whether any member of ``group_id`` has a session here."""
        return any(key[0] == group_id for key in self._sessions)

    def remove_group(self, group_id: str) -> list[ShareSession]:
        """Forget every session of a deleted group (GC-8); they are returned in key order."""
        return self._remove_where(lambda s: s.key[0] == group_id)

    def remove_connection(self, client: str, connection: int) -> list[ShareSession]:
        """``client``'s connection number ``connection`` closed: forget every session opened on it or on
        an earlier one of the client's (not those it opened since); they are returned in key order."""
        return self._remove_where(lambda s: s.connection[0] == client and s.connection[1] <= connection)

    def evict_idle(self, now_ms: int) -> list[ShareSession]:
        """Every session idle past the eviction time; their records are released."""
        return self._remove_where(lambda s: self._is_idle(s, now_ms))

    def _remove_where(self, gone: Callable[[ShareSession], bool]) -> list[ShareSession]:
        sessions = [s for _, s in sorted(self._sessions.items()) if gone(s)]
        for s in sessions:
            del self._sessions[s.key]
        return sessions

    def _continue(self, key: SessionKey, epoch: int, now_ms: int) -> ShareSession:
        session = self._sessions.get(key)
        if session is None and _mutants.ACTIVE == "continue-unknown-session" and epoch != FINAL_EPOCH:
            session = self._sessions[key] = ShareSession(key, epoch, set(), now_ms)  # mutant: made up on the fly
        if session is None:
            raise ApiError(Errors.SHARE_SESSION_NOT_FOUND, f"no share session for member {key[1]}")
        if epoch == FINAL_EPOCH:
            del self._sessions[key]
            return session
        if epoch != session.epoch:
            raise ApiError(
                Errors.INVALID_SHARE_SESSION_EPOCH, f"expected epoch {session.epoch}, got {epoch}"
            )
        session.epoch = next_epoch(epoch)
        session.last_used_ms = now_ms
        return session

    def _is_idle(self, session: ShareSession, now_ms: int) -> bool:
        return now_ms - session.last_used_ms > self.idle_eviction_ms

    def _evict_one_idle(self, now_ms: int) -> ShareSession | None:
        """Make room for a new session by evicting the longest-idle one, if any is idle."""
        idle = [s for _, s in sorted(self._sessions.items()) if self._is_idle(s, now_ms)]
        if not idle:
            return None
        victim = min(idle, key=lambda s: (s.last_used_ms, s.key))
        del self._sessions[victim.key]
        return victim
