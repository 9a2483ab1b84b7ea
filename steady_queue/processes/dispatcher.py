"""Dispatchers make due scheduled jobs ready, release throttled jobs when their rate
limit window has room, wake signal waits past their deadline, and run the concurrency
maintenance."""

from __future__ import annotations

import time
from datetime import timedelta

from django.utils import timezone

from .. import configuration
from ..configuration import seconds
from ..models import (
    BlockedExecution,
    Process,
    RateLimitBucket,
    ScheduledExecution,
    Semaphore,
    ThrottledExecution,
    WaitingExecution,
)
from ..models.execution.paused import PausedExecution
from ..models.execution.throttled import repair_forgotten
from . import listener
from .poller import Poller


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

    def poll(self) -> float:
        dispatched = ScheduledExecution.dispatch_next_batch(self.batch_size)
        _, next_release = ThrottledExecution.release_due(self.batch_size)
        WaitingExecution.release_expired(self.batch_size)  # signal waits past their deadline
        if self.concurrency_maintenance:
            self._maintain_concurrency_when_due()
        if dispatched >= self.batch_size:
            return 0
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


def run_concurrency_maintenance(batch_size: int = 500) -> int:
    """Expire semaphores past their duration and release jobs blocked for too long.

    A dispatcher runs it every ``concurrency_maintenance_interval``: it is the failsafe
    for a job that never signalled its semaphore (its worker was killed). Return how
    many blocked jobs were released.
    """
    Semaphore.expire_in_batches(batch_size)
    return BlockedExecution.unblock(batch_size)
