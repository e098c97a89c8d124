"""Share sessions (CL-1): the share-partition leader's cache of consumer sessions.

A ShareFetch opens a session with epoch 0, continues it with the epoch the
broker expects next (each request increments it), and closes it with -1. The
cache is keyed by (group id, member id), bounded by
``group.share.max.groups × group.share.max.size`` (003_cf42721e0e7b2a9a.txt),
and a session idle for ``share.session.idle.eviction.ms`` (120 000) may be
evicted. A session belongs to the client connection that opened it: when
that connection closes (the client process died and its host reset the
connection), the broker ends the session (Kafka: ShareSessionCache's
connection-disconnect listener, then ShareGroupListener.onMemberLeave).
Closing, replacing, evicting or disconnecting a session releases the
member's acquired records (SP-15); the broker does that with the keys
returned here.
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
    connection: str = ""  # the client's end of the connection that opened it ("" unknown)
    opened_ms: int = 0


class SessionContext(Message):
    """What a ShareFetch / ShareAcknowledge may do after the session check."""

    FIELDS = ("session", "closing", "released", "evicted")
    __slots__ = FIELDS

    def __init__(self, session: ShareSession | None, closing: bool, released: tuple[SessionKey, ...] = (),
                 evicted: tuple[SessionKey, ...] = ()) -> None:
        self.session: Final = session
        self.closing: Final = closing
        # Keys whose sessions ended here (replaced); their acquired records must be released.
        self.released: Final = released
        # Keys of idle sessions evicted to make room for this one; released too (SP-15).
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
        connection: str = "",
    ) -> SessionContext:
        """Validate a ShareFetch's session epoch and update the session; ``connection``: the client's end
        of the connection the request came on (an opened session belongs to it). Raises ApiError."""
        if epoch == INITIAL_EPOCH:
            released = (key,) if self._sessions.pop(key, None) is not None else ()
            evicted: tuple[SessionKey, ...] = ()
            if len(self._sessions) >= self.max_sessions:
                victim = self._evict_one_idle(now_ms)
                if victim is None:
                    raise ApiError(Errors.SHARE_SESSION_LIMIT_REACHED, f"{self.max_sessions} sessions open")
                evicted = (victim,)
            session = ShareSession(key, next_epoch(INITIAL_EPOCH), set(partitions), now_ms, connection, now_ms)
            self._sessions[key] = session
            return SessionContext(session, closing=False, released=released, evicted=evicted)
        session = self._continue(key, epoch, now_ms)
        if epoch == FINAL_EPOCH:
            return SessionContext(session, closing=True, released=(key,))
        session.partitions.update(partitions)
        session.partitions.difference_update(forgotten)
        return SessionContext(session, closing=False)

    def share_acknowledge(self, key: SessionKey, epoch: int, now_ms: int) -> SessionContext:
        """ShareAcknowledge can continue or close a session, never open one."""
        if epoch == INITIAL_EPOCH:
            raise ApiError(Errors.INVALID_SHARE_SESSION_EPOCH, "ShareAcknowledge cannot open a share session")
        session = self._continue(key, epoch, now_ms)
        if epoch == FINAL_EPOCH:
            return SessionContext(session, closing=True, released=(key,))
        return SessionContext(session, closing=False)

    def remove(self, key: SessionKey) -> bool:
        return self._sessions.pop(key, None) is not None

    def remove_group(self, group_id: str) -> list[SessionKey]:
        """Forget every session of a deleted group (GC-8); their keys, in order."""
        return self._remove_where(lambda s: s.key[0] == group_id)

    def remove_connection(self, connection: str, cutoff_ms: int) -> list[SessionKey]:
        """The client's connection closed at ``cutoff_ms``: forget every session it had opened by then (a
        session opened later came on a new connection); their keys, in order."""
        return self._remove_where(lambda s: s.connection == connection and s.opened_ms <= cutoff_ms)

    def evict_idle(self, now_ms: int) -> list[SessionKey]:
        """Every session idle past the eviction time; their records are released."""
        return self._remove_where(lambda s: self._is_idle(s, now_ms))

    def _remove_where(self, gone: Callable[[ShareSession], bool]) -> list[SessionKey]:
        keys = [k for k, s in sorted(self._sessions.items()) if gone(s)]
        for k in keys:
            del self._sessions[k]
        return keys

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

    def _idle(self, now_ms: int) -> list[SessionKey]:
        return [k for k, s in sorted(self._sessions.items()) if self._is_idle(s, now_ms)]

    def _evict_one_idle(self, now_ms: int) -> SessionKey | None:
        """Make room for a new session by evicting the longest-idle one, if any is idle; its key."""
        idle = self._idle(now_ms)
        if not idle:
            return None
        victim = min(idle, key=lambda k: (self._sessions[k].last_used_ms, k))
        del self._sessions[victim]
        return victim
