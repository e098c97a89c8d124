"""A broker's request-handler threads (Kafka: ``num.io.threads``, KafkaRequestHandlerPool).

Kafka's broker hands each request to one of ``num.io.threads`` handler
threads; several requests are handled at once, and timers (the acquisition
lock timeout's), the persister's answers (on its own network thread) and the
purgatory's expiry (its reaper thread) run beside them. The model makes that
concurrency explicit: a request's handling is a *job*, a generator whose
``yield``s split it into steps. The code between two ``yield``s runs in one
simulator event (atomically); each ``yield`` lets a step's simulated time pass
(drawn from the broker's seeded ``RandomStreams`` stream ``("handlers",
node)``, uniform in ``[step_min_ms, step_max_ms]``), during which other jobs'
steps, timers and answers on the same share-partition run. With
``step_max_ms = 0`` (the default) steps take no time and a job runs to its
end in one event, as before this model had threads; the swarms draw the
range, so their runs explore the interleavings. A job holds its
thread until it ends; jobs beyond ``threads`` wait in FIFO order. Jobs never
block on each other: a fetch that finds a share-partition's fetch lock taken
goes without it, as Kafka's does.

``crash`` drops every job, running or queued. Counters (``stats``) say how
often jobs queued for a thread and how many steps ran while another job was
mid-way (an interleaving), for tests that show the swarms reach them.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterator

from model.sim.timers import Scheduler

Job = Iterator[None]


class RequestHandlerPool:
    __slots__ = ("_busy", "_generation", "_high", "_low", "_queue", "_rng", "_scheduler", "stats", "threads")

    def __init__(self, scheduler: Scheduler, threads: int, rng: random.Random, step_min_ms: int,
                 step_max_ms: int, stats: dict[str, int] | None = None) -> None:
        if threads < 1:
            raise ValueError(f"threads = {threads}: must be >= 1")
        if not 0 <= step_min_ms <= step_max_ms:
            raise ValueError(f"step range [{step_min_ms}, {step_max_ms}] ms: must be 0 <= min <= max")
        self._scheduler = scheduler
        self.threads = threads
        self._rng = rng
        self._low = step_min_ms
        self._high = step_max_ms
        self._busy = 0
        self._queue: deque[Job] = deque()
        self._generation = 0  # a crash ends every job of the old generation
        self.stats = stats if stats is not None else {}
        for name in ("jobs", "queued", "interleaved_steps"):
            self.stats.setdefault(name, 0)

    def submit(self, job: Job) -> None:
        """Run ``job`` on a free handler thread, at once (its first step runs now), or when one frees."""
        self.stats["jobs"] += 1
        if self._busy < self.threads:
            self._busy += 1
            self._step(job, self._generation)
        else:
            self.stats["queued"] += 1
            self._queue.append(job)

    def _step(self, job: Job, generation: int) -> None:
        if generation != self._generation:
            return
        while True:
            if self._busy > 1:
                self.stats["interleaved_steps"] += 1
            try:
                next(job)
            except StopIteration:
                # The thread is free: it takes the next job waiting, if any.
                if self._queue:
                    job = self._queue.popleft()
                    continue
                self._busy -= 1
                return
            low, high = self._low, self._high
            if high == 0:
                continue  # steps take no time: the job runs to its end in this event
            delay = low if low == high else self._rng.randint(low, high)
            self._scheduler.post(delay, self._step, job, generation)
            return

    def crash(self) -> None:
        """Every job, running or waiting, is gone."""
        self._generation += 1
        self._queue.clear()
        self._busy = 0
