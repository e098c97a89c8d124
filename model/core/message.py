"""``Message``: value semantics for the messages built on every simulated event.

Most of sharesim's messages are frozen dataclasses. The few built on every event
(a Produce, a ShareFetch and their answers, a client's in-flight request) are
plain classes instead: under mypyc a dataclass's generated ``__init__`` stays
interpreted and costs about ten times a compiled one (265 ns against 24 ns for
two fields), which showed as several percent of a swarm run. Their ``__init__``
sets ``Final`` attributes, so mypy holds them immutable; this base gives them
the dataclass's equality, hash and repr over the attributes each lists in
``FIELDS``, in ``__init__``'s order (``tests/model/core/test_message.py``
checks the two agree).
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

_M = TypeVar("_M", bound="Message")


class Message:
    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Message)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def replace(self: _M, **changes: Any) -> _M:
        """A copy with ``changes`` (``dataclasses.replace`` for these classes)."""
        values = dict(zip(self.FIELDS, self._values(), strict=True))
        values.update(changes)
        return type(self)(**values)

    def __reduce__(self) -> tuple[type[Message], tuple[Any, ...]]:
        # Pickle and copy by the constructor: a compiled class has no __dict__ to restore.
        return type(self), self._values()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self.FIELDS, self._values(), strict=True))
        return f"{type(self).__name__}({fields})"
