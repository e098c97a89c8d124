"""The value every group-coordinator handler returns (GC-1, GC-6).

A handler never mutates the log or talks to other services itself: it returns
the response for the caller, the records to append to the coordinator's log
(replayed in order on failover, GC-6) and the requests to other services
(e.g. InitializeShareGroupState to the share coordinator).
"""

from __future__ import annotations

from typing import Final

from model.core.message import Message


class CoordinatorResult(Message):
    FIELDS = ("response", "records", "outputs")
    __slots__ = FIELDS

    def __init__(self, response: object | None = None, records: tuple[object, ...] = (),
                 outputs: tuple[object, ...] = ()) -> None:
        self.response: Final = response
        self.records: Final = records
        self.outputs: Final = outputs
