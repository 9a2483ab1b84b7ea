"""A thread that keeps a child process's row fresh while its main thread works."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import steady_queue

from ..configuration import seconds
from ..models.task_rollup import tally
from .outages import OutageLog, close_connections

if TYPE_CHECKING:
    from .base import Base

logger = logging.getLogger("steady_queue.processes")


def _clock() -> float:
    """Seconds that also pass while the machine is suspended (Linux), unlike monotonic()."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.monotonic() if boottime is None else time.clock_gettime(boottime)


def flush_tally(outage: OutageLog) -> None:
    """Write the counts this process observed; kept for the next flush if that fails."""
    try:
        tally.flush()
    except Exception as exc:
        outage.failed(exc)
    else:
        outage.succeeded()


class Heartbeat(threading.Thread):
    """Record every ``interval`` seconds that ``owner`` is alive; stop it if it was pruned.

    Between beats it writes the process's per-task counts, every
    ``steady_queue.metrics_flush_interval``.
    """

    def __init__(self, owner: Base, interval: float):
        super().__init__(name=f"{owner.name}-heartbeat", daemon=True)
        self.owner = owner
        self.interval = interval
        self._stopped = threading.Event()
        self._outage = OutageLog(logger, f"Heartbeat of {owner}")
        self._flush_outage = OutageLog(logger, f"Writing the task counts of {owner}")
        # When the last beat that found the row was sent (the row was registered just now).
        self._last_beat = _clock()

    def run(self) -> None:
        tick = min(self.interval, seconds(steady_queue.metrics_flush_interval))
        next_beat = _clock() + self.interval
        try:
            while not self._stopped.wait(tick):
                if _clock() >= next_beat:
                    self.beat()
                    next_beat = _clock() + self.interval
                flush_tally(self._flush_outage)
        finally:
            close_connections()

    def beat(self) -> bool | None:
        """Refresh the row; False (and the owner stops) if it is gone, None if unknown."""
        sent = _clock()
        try:
            alive = self.owner.process.heartbeat(self.owner.live_metadata())
        except Exception as exc:
            self._outage.failed(exc)
            return None
        self._outage.succeeded()
        if alive:
            self._last_beat = max(self._last_beat, sent)
        else:
            logger.warning("%s was pruned (its heartbeat expired); stopping", self.owner)
            self.owner.stop()
        return alive

    def confirm(self) -> bool:
        """False once the owner is known to be pruned; cheap while heartbeats succeed.

        A prune needs no heartbeat for ``process_alive_threshold``: with a beat younger
        than half of it (margin for clocks), the row is there. Older, say after the
        process was frozen, the database is asked at once rather than at the next beat.
        """
        stale_after = seconds(steady_queue.process_alive_threshold) / 2
        if _clock() - self._last_beat < stale_after:
            return True
        return self.beat() is not False

    def stop(self, timeout: float = 2.0) -> None:
        self._stopped.set()
        self.join(timeout)
