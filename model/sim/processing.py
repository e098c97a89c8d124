"""The application's time over one batch of records, and the ``slow_processing`` fault.

Each record takes its draw of the processing distribution plus the slow_processing
extra in force when that record starts; one timer covers the whole batch (no
event per record). A change of the extra (the fault starts or ends) re-times the
records not yet started, so a slow spell ends with its fault instead of lasting
as long as the batch it began in. Share consumers and KIP-848 consumers both
process this way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.sim.timers import Timer

CallLater = Callable[..., Timer]  # Client.call_later(delay_ms, fn, *args)


class BatchProcessing:
    """The records of one batch: their draws, and the stretch now running — records from ``index`` on,
    the first starting at ``start_ms``, each taking its draw plus ``extra_ms``. One timer calls
    ``fn(*args)`` when the last record is done; it is set here and moved by ``retime``."""

    __slots__ = ("durations", "extra_ms", "index", "start_ms", "timer")

    def __init__(self, durations: list[int], now_ms: int, extra_ms: int, call_later: CallLater,
                 fn: Callable[..., object], *args: Any) -> None:
        self.durations = durations
        self.index = 0
        self.start_ms = now_ms
        self.extra_ms = extra_ms
        self.timer: Timer = call_later(self.end_ms() - now_ms, fn, *args)

    def end_ms(self) -> int:
        """When the last record is processed, if the extra stays as it is."""
        rest = self.durations[self.index:]
        return self.start_ms + sum(rest) + len(rest) * self.extra_ms

    def retime(self, now_ms: int, extra_ms: int) -> None:
        """From the record after the one under way, each takes ``extra_ms`` more; the record under way
        ends as it began. Nothing changes when the last record is under way (or done, its timer held
        by a pause)."""
        if extra_ms == self.extra_ms:
            return
        durations, extra = self.durations, self.extra_ms
        index, start = self.index, self.start_ms
        while index < len(durations) and start + durations[index] + extra <= now_ms:
            start += durations[index] + extra
            index += 1
        if index >= len(durations) - 1:
            return
        self.index = index + 1
        self.start_ms = start + durations[index] + extra
        self.extra_ms = extra_ms
        self.timer.reschedule(self.end_ms() - now_ms)  # its callback, a fresh insertion sequence
