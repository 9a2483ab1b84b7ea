"""The scheduler enqueues recurring tasks when they are due."""

from __future__ import annotations

from datetime import timedelta

from ..models import Process
from .poller import Poller
from .recurring_schedule import RecurringSchedule


class Scheduler(Poller):
    """Wake at each task's next run and enqueue it; re-read the tasks table at every poll.

    The poll sleeps until the earliest next run, never longer than ``polling_interval``,
    so that a task enabled, disabled or changed at run time is seen within that time.
    """

    kind = Process.Kind.SCHEDULER

    def __init__(self, *, polling_interval: float | timedelta = 1.0):
        super().__init__(polling_interval=polling_interval)
        self.schedule = RecurringSchedule()
        self.booted = False

    def poll(self) -> float:
        # Booting in the poll means a database error at boot is retried like any other.
        if not self.booted:
            self.schedule.boot()
            self.booted = True
        self.schedule.reload()
        self.schedule.enqueue_due()
        until_next = self.schedule.seconds_until_next_run()
        if until_next is None:
            return self.polling_interval
        return min(until_next, self.polling_interval)
