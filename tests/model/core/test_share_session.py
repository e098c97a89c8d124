"""CL-1: share session epochs, limits, idle eviction, and the connections sessions end with."""

from types import MappingProxyType
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from model.core.errors import ApiError, Errors
from model.core.share_session import FINAL_EPOCH, ShareSessionCache, next_epoch

KEY = ("g1", "m1")


def _code(fn: object, *args: object) -> Errors:
    with pytest.raises(ApiError) as err:
        fn(*args)  # type: ignore[operator]
    return err.value.error


def test_open_continue_close() -> None:
    cache = ShareSessionCache(max_sessions=10)
    ctx = cache.share_fetch(KEY, 0, now_ms=0, partitions=[("t", 0)])
    assert ctx.session is not None and ctx.session.epoch == 1 and not ctx.closing and not ctx.evicted
    session = cache.share_fetch(KEY, 1, now_ms=1, partitions=[("t", 1)]).session
    assert session is not None and session.partitions == {("t", 0), ("t", 1)}
    assert cache.share_acknowledge(KEY, 2, now_ms=2).session.epoch == 3  # type: ignore[union-attr]
    closing = cache.share_fetch(KEY, FINAL_EPOCH, now_ms=3)
    # The closed session comes back whole: the broker releases the member's records on its partitions.
    assert closing.closing and closing.session is session and session.partitions == {("t", 0), ("t", 1)}
    assert cache.get(KEY) is None


def test_wrong_epoch_and_missing_session() -> None:
    cache = ShareSessionCache(max_sessions=10)
    assert _code(cache.share_fetch, KEY, 1, 0) == Errors.SHARE_SESSION_NOT_FOUND
    assert _code(cache.share_acknowledge, KEY, FINAL_EPOCH, 0) == Errors.SHARE_SESSION_NOT_FOUND
    cache.share_fetch(KEY, 0, 0)
    assert _code(cache.share_fetch, KEY, 5, 0) == Errors.INVALID_SHARE_SESSION_EPOCH
    assert _code(cache.share_acknowledge, KEY, 0, 0) == Errors.INVALID_SHARE_SESSION_EPOCH
    assert cache.get(KEY).epoch == 1  # type: ignore[union-attr]  # a rejected request changes nothing


def test_reopen_replaces_the_old_session_without_ending_it() -> None:
    """Kafka's newContext: an epoch-0 ShareFetch removes the old session and opens a new one; nothing
    is released (the member keeps its records), and the new session belongs to the new connection."""
    cache = ShareSessionCache(max_sessions=10)
    cache.share_fetch(KEY, 0, 0, partitions=[("t", 0)], connection=("c1", 0))
    ctx = cache.share_fetch(KEY, 0, 1, partitions=[("t", 1)], connection=("c1", 1))
    assert not ctx.closing and not ctx.evicted
    assert ctx.session is not None and ctx.session is cache.get(KEY) and ctx.session.partitions == {("t", 1)}
    assert cache.remove_connection("c1", 0) == []  # the old connection's close ends nothing now
    assert [s.key for s in cache.remove_connection("c1", 1)] == [KEY]


def test_a_connection_closing_ends_the_sessions_opened_on_it_or_before_it() -> None:
    """A client's connection k closing ends its sessions opened on connection k or an earlier one (reset
    by a partition without the broker hearing, the session went on over the next); other clients' and
    newer connections' sessions stay."""
    cache = ShareSessionCache(max_sessions=10)
    cache.share_fetch(("g", "a"), 0, 0, connection=("c1", 0))
    cache.share_fetch(("g", "b"), 0, 0, connection=("c1", 2))
    cache.share_fetch(("g", "c"), 0, 0, connection=("c1", 3))
    cache.share_fetch(("g", "d"), 0, 0, connection=("c2", 1))
    assert [s.key for s in cache.remove_connection("c1", 2)] == [("g", "a"), ("g", "b")]
    assert cache.keys() == [("g", "c"), ("g", "d")]


def test_acknowledgements_cannot_open_a_session() -> None:
    cache = ShareSessionCache(max_sessions=10)
    cache.share_fetch(KEY, 0, 0)
    assert _code(lambda: cache.share_fetch(KEY, 0, 1, acknowledging=True)) == Errors.INVALID_REQUEST
    assert cache.get(KEY).epoch == 1  # type: ignore[union-attr]  # the open session is untouched


def test_limit_and_idle_eviction() -> None:
    cache = ShareSessionCache(max_sessions=2, idle_eviction_ms=100)
    cache.share_fetch(("g", "a"), 0, 0)
    cache.share_fetch(("g", "b"), 0, 50)
    assert _code(cache.share_fetch, ("g", "c"), 0, 100) == Errors.SHARE_SESSION_LIMIT_REACHED
    # "a" has been idle > 100 ms: evicted to make room, and named so its records are released (SP-15).
    assert [s.key for s in cache.share_fetch(("g", "c"), 0, 101).evicted] == [("g", "a")]
    assert cache.keys() == [("g", "b"), ("g", "c")]
    assert [s.key for s in cache.evict_idle(now_ms=251)] == [("g", "b"), ("g", "c")]


def test_a_deleted_group_loses_its_sessions_only() -> None:
    cache = ShareSessionCache(max_sessions=10)
    for key in (("g2", "b"), ("g1", "m1"), ("g2", "a")):
        cache.share_fetch(key, 0, 0)
    assert [s.key for s in cache.remove_group("g2")] == [("g2", "a"), ("g2", "b")]
    assert cache.keys() == [KEY]
    assert _code(cache.share_fetch, ("g2", "a"), 1, 1) == Errors.SHARE_SESSION_NOT_FOUND


@given(st.lists(st.integers(min_value=-1, max_value=6), max_size=40))
def test_epoch_follows_cl1(epochs: list[int]) -> None:
    """Model check against a reference: only 0, -1 and the expected next epoch are accepted."""
    cache = ShareSessionCache(max_sessions=1)
    expected: int | None = None
    for now, epoch in enumerate(epochs):
        try:
            cache.share_fetch(KEY, epoch, now)
            accepted = True
        except ApiError:
            accepted = False
        if epoch == 0:
            assert accepted
            expected = 1
        elif expected is None:
            assert not accepted
        elif epoch == -1:
            assert accepted
            expected = None
        else:
            assert accepted == (epoch == expected)
            if accepted:
                expected = next_epoch(epoch)


def test_epoch_wraps_to_one() -> None:
    assert next_epoch(2**31 - 1) == 1


class SessionConnectionsMachine(RuleBasedStateMachine):
    """Members of two clients open, continue and close sessions over numbered connections, which
    close, sometimes unheard of: the cache holds exactly the sessions a reference keeps, where a
    connection's close ends the sessions its client opened on it or an earlier one, a re-open
    replaces a session (keeping nothing of the old one), and a continue needs the expected epoch."""

    MEMBERS: Final = MappingProxyType({"a": "c1", "b": "c1", "c": "c2"})  # member -> its client

    def __init__(self) -> None:
        super().__init__()
        self.cache = ShareSessionCache(max_sessions=10)
        self.now = 0
        self.connection = {"c1": 0, "c2": 0}  # each client's current connection number
        self.expected: dict[str, tuple[int, int]] = {}  # member -> (next epoch, connection it opened on)

    def _key(self, member: str) -> tuple[str, str]:
        return ("g", member)

    @rule(member=st.sampled_from(sorted(MEMBERS)))
    def open(self, member: str) -> None:
        self.now += 1
        client = self.MEMBERS[member]
        ctx = self.cache.share_fetch(self._key(member), 0, self.now, connection=(client, self.connection[client]))
        assert not ctx.closing
        self.expected[member] = (1, self.connection[client])

    @rule(member=st.sampled_from(sorted(MEMBERS)), right=st.booleans())
    def continue_(self, member: str, right: bool) -> None:
        self.now += 1
        expected = self.expected.get(member)
        epoch = expected[0] if expected is not None and right else 7
        try:
            self.cache.share_fetch(self._key(member), epoch, self.now)
            accepted = True
        except ApiError:
            accepted = False
        assert accepted == (expected is not None and epoch == expected[0])
        if accepted and expected is not None:
            self.expected[member] = (next_epoch(epoch), expected[1])

    @rule(member=st.sampled_from(sorted(MEMBERS)))
    def close(self, member: str) -> None:
        self.now += 1
        try:
            ctx = self.cache.share_fetch(self._key(member), FINAL_EPOCH, self.now)
        except ApiError as err:
            assert member not in self.expected and err.error == Errors.SHARE_SESSION_NOT_FOUND
            return
        assert ctx.closing and ctx.session is not None and ctx.session.key == self._key(member)
        del self.expected[member]

    @rule(client=st.sampled_from(["c1", "c2"]), heard=st.booleans())
    def connection_closes(self, client: str, heard: bool) -> None:
        ended = self.connection[client]
        self.connection[client] += 1
        if not heard:  # a partition ate the close (or reset the connection): the broker never learns
            return
        gone = [s.key[1] for s in self.cache.remove_connection(client, ended)]
        want = sorted(m for m, (_, opened) in self.expected.items() if self.MEMBERS[m] == client and opened <= ended)
        assert gone == want
        for member in gone:
            del self.expected[member]

    @invariant()
    def holds_exactly_the_reference_sessions(self) -> None:
        assert self.cache.keys() == [self._key(m) for m in sorted(self.expected)]


SessionConnectionsMachine.TestCase.settings = settings(max_examples=80, stateful_step_count=30, deadline=None)
TestSessionConnections = SessionConnectionsMachine.TestCase
