"""Dispatchers make due scheduled jobs ready, release throttled jobs when their rate
limit window has room, run the concurrency maintenance and prune by the retention rules."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

import steady_queue

from .. import configuration
from ..configuration import seconds
from ..models import (
    BlockedExecution,
    Process,
    RateLimitBucket,
    ScheduledExecution,
    Semaphore,
    ThrottledExecution,
)
from ..models.execution.paused import PausedExecution
from ..models.execution.throttled import repair_forgotten
from ..retention.pruning import Pruning
from . import listener
from .poller import Poller

logger = logging.getLogger("steady_queue.retention")


class Dispatcher(Poller):
    """Move due scheduled jobs to ready, ``batch_size`` at a time, at once while a backlog lasts."""

    kind = Process.Kind.DISPATCHER

    def __init__(
        self,
        *,
        polling_interval: float | timedelta = 1.0,
        batch_size: int = 500,
        concurrency_maintenance: bool = True,
        concurrency_maintenance_interval: float | timedelta = 600.0,
    ):
        super().__init__(polling_interval=polling_interval)
        self.batch_size = batch_size
        self.concurrency_maintenance = concurrency_maintenance
        self.concurrency_maintenance_interval = seconds(concurrency_maintenance_interval)
        self._next_maintenance = 0.0
        # Pruning (steady_queue.retention): a pass under way, one batch a poll, and when
        # the next starts (the first one at the first poll).
        self.pruning: Pruning | None = None
        self._next_pruning = time.monotonic()
        self.listener: listener.Listener | None = None

    @classmethod
    def from_configuration(cls, config: configuration.Dispatcher) -> Dispatcher:
        return cls(
            polling_interval=config.polling_interval,
            batch_size=config.batch_size,
            concurrency_maintenance=config.concurrency_maintenance,
            concurrency_maintenance_interval=config.concurrency_maintenance_interval,
        )

    def metadata(self) -> dict:
        return {
            **super().metadata(),
            "batch_size": self.batch_size,
            "concurrency_maintenance": self.concurrency_maintenance,
            "concurrency_maintenance_interval": self.concurrency_maintenance_interval,
        }

    def on_boot(self) -> None:
        self.listener = listener.start_for_dispatcher(self)

    def on_shutdown(self) -> None:
        listener.stop(self.listener)
        if self.pruning is not None:
            try:
                self.pruning.close()  # what the pass removed so far is recorded
            except Exception:
                logger.exception("Could not record what the interrupted pruning removed")

    def poll(self) -> float:
        dispatched = ScheduledExecution.dispatch_next_batch(self.batch_size)
        _, next_release = ThrottledExecution.release_due(self.batch_size)
        if self.concurrency_maintenance:
            self._maintain_concurrency_when_due()
        if dispatched >= self.batch_size:
            return 0
        if self._prune_when_due():
            # A pass is under way: its next batch after the pause, not a poll later.
            return min(seconds(steady_queue.prune_pause), self.polling_interval)
        if next_release is not None:
            # Wake when a rate limit window has room, not a polling interval later.
            until = (next_release - timezone.now()).total_seconds()
            return min(max(until, 0), self.polling_interval)
        return self.polling_interval

    def _maintain_concurrency_when_due(self) -> None:
        if time.monotonic() < self._next_maintenance:
            return
        run_concurrency_maintenance(self.batch_size)
        RateLimitBucket.prune(self.batch_size)
        repair_forgotten(self.batch_size)
        PausedExecution.repair_forgotten(self.batch_size)
        self._next_maintenance = time.monotonic() + self.concurrency_maintenance_interval

    def _prune_when_due(self) -> bool:
        """Prune one batch if a pass is under way or due; True while the pass lasts.

        One batch a poll keeps the dispatcher's own work (due scheduled jobs, throttled
        releases) going between the batches of a long pass.
        """
        if self.pruning is None:
            interval = _prune_interval()
            if not interval or time.monotonic() < self._next_pruning:
                return False
            self._next_pruning = time.monotonic() + interval
            try:
                self.pruning = Pruning()
            except ImproperlyConfigured as exc:
                logger.error("%s", exc)  # manage.py check names each bad rule
                return False
        try:
            if self.pruning.step():
                return True
        except Exception:
            # The pass ends here; the next one starts an interval later. The dispatching
            # of this poll was done already, and goes on.
            logger.exception("Pruning failed")
        self.pruning = None
        return False


def run_concurrency_maintenance(batch_size: int = 500) -> int:
    """Expire semaphores past their duration and release jobs blocked for too long.

    A dispatcher runs it every ``concurrency_maintenance_interval``: it is the failsafe
    for a job that never signalled its semaphore (its worker was killed). Return how
    many blocked jobs were released.
    """
    Semaphore.expire_in_batches(batch_size)
    return BlockedExecution.unblock(batch_size)


def _prune_interval() -> float:
    """``steady_queue.prune_interval`` in seconds; 0 for never."""
    interval = steady_queue.prune_interval
    return seconds(interval) if interval is not None else 0.0
