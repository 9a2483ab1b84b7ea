"""How a worker with async slots sizes its claims, and sorts what it claimed.

A claim takes the best ready jobs of the worker's queues whatever their tasks: it cannot
ask for async jobs only. So the worker claims for its free slots as many jobs as its
last claims suggest it will find async ones (``ClaimRoom``), and ``sort_claims`` sends
each job where it can run now: an async job to a free slot, else to an idle thread; a
sync job to an idle thread, else back to the queue at once.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from asgiref.sync import iscoroutinefunction

from ...models import ClaimedExecution
from ...results import task_for

if TYPE_CHECKING:
    from .async_slots import AsyncSlots

# Once claims for the slots found only sync jobs, how long until a claim of one job looks
# again (an async job behind busy threads would otherwise wait for one of them).
REPROBE_INTERVAL = 1.0


def is_async_job(claimed: ClaimedExecution) -> bool:
    """Whether the claimed job's task is an ``async def`` (False if it cannot be loaded)."""
    try:
        return iscoroutinefunction(task_for(claimed.job).func)
    except Exception:
        return False  # its run fails on a thread, and says why


def sort_claims(
    claimed: list[ClaimedExecution], idle_threads: int, slots: AsyncSlots | None
) -> tuple[list[ClaimedExecution], list[ClaimedExecution], list[ClaimedExecution]]:
    """Split a worker's claim: (for the loop, for the threads, for neither: to give back).

    An async job goes to a free slot, else to an idle thread (which runs it on an event
    loop of its own); a sync job to an idle thread, else back to the queue.
    """
    free = slots.free_slots if slots is not None else 0
    to_loop, to_threads, surplus = [], [], []
    found_async = 0
    for execution in claimed:
        is_async = slots is not None and is_async_job(execution)
        found_async += is_async
        if is_async and len(to_loop) < free:
            to_loop.append(execution)
        elif len(to_threads) < idle_threads:
            to_threads.append(execution)
        else:
            surplus.append(execution)
    if slots is not None:
        slots.claims.found(found_async, gave_back=len(surplus))
    return to_loop, to_threads, surplus


class ClaimRoom:
    """How many jobs a poll claims for ``size`` slots, beyond the idle threads.

    Twice as many as the last claim found async jobs (so a backlog of them fills the
    slots within a few polls); halved by every claim that found only sync jobs and gave
    some back, down to none: then async jobs reach the loop through the threads' claims
    (a thread hands an async job it claimed to the loop), and a claim of one job looks
    again every REPROBE_INTERVAL.
    """

    def __init__(self, size: int):
        self.size = size
        self._lock = threading.Lock()
        self._hint = 1  # a first look
        self._reprobe_at = 0.0

    def room(self, free: int) -> int:
        """How many to claim now, with ``free`` slots free."""
        with self._lock:
            if self._hint == 0 and time.monotonic() >= self._reprobe_at:
                self._hint = 1
            return min(free, self._hint)

    def probe_delay(self, free: int, otherwise: float) -> float:
        """How long a worker with nothing to claim may wait: until the next look."""
        with self._lock:
            if self._hint or not free:
                return otherwise
            return min(otherwise, max(self._reprobe_at - time.monotonic(), 0.0))

    def found(self, async_jobs: int, *, gave_back: int = 0) -> None:
        """What a claim found: ``async_jobs`` async jobs, ``gave_back`` sync jobs in excess."""
        with self._lock:
            if async_jobs:
                self._hint = max(self._hint, min(2 * async_jobs, self.size))
            elif gave_back:
                self._hint //= 2
                self._reprobe_at = time.monotonic() + REPROBE_INTERVAL
