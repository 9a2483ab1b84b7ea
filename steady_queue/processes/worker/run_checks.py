"""What a worker checks of its running jobs between polls: the cancelled ones whose
grace is over, and threads left stuck in a job past its timeout."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from django.utils import timezone

import steady_queue

from ...configuration import seconds
from ...models import Job
from ...runner import deadlines

# While jobs run, how often to ask which of them were cancelled (one query).
CANCEL_CHECK_INTERVAL = 2.0
# While a thread is stuck in a job past its timeout, how often to see if it is free.
STUCK_CHECK_INTERVAL = 1.0


class Cancellations:
    """Have the runs of cancelled jobs interrupted once their grace is over.

    A task that looks (``cancelled()``) stops by itself; this is for one that does not.
    """

    def __init__(self) -> None:
        # Not at once: the jobs a worker's first poll hands out have only just started.
        self._next_check = time.monotonic() + CANCEL_CHECK_INTERVAL

    def check(self, running_job_ids: Iterable[int]) -> float:
        """Ask every CANCEL_CHECK_INTERVAL; return how long until the next time."""
        now = time.monotonic()
        if now < self._next_check:
            return self._next_check - now
        self._next_check = now + CANCEL_CHECK_INTERVAL
        running = Job.objects.filter(
            pk__in=list(running_job_ids), cancel_requested_at__isnull=False
        )
        grace = seconds(steady_queue.cancel_grace)
        wall = timezone.now()
        for job_id, asked_at in running.values_list("pk", "cancel_requested_at"):
            deadlines.watchdog().cancel_after(job_id, grace - (wall - asked_at).total_seconds())
        return CANCEL_CHECK_INTERVAL


class StuckThreads:
    """Threads the pool gave up on (stuck in a job past its timeout), and since when."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[int, float] = {}

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._since)

    def add(self, thread: int) -> None:
        with self._lock:
            self._since.setdefault(thread, time.monotonic())

    def past_grace(self, alive: set[int]) -> bool:
        """Whether one of them (``alive``: those still running) is stuck past timeout_grace."""
        grace = seconds(steady_queue.timeout_grace)
        with self._lock:
            for ident in [i for i in self._since if i not in alive]:
                del self._since[ident]
            return any(time.monotonic() - t >= grace for t in self._since.values())
