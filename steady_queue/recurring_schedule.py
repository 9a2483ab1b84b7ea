"""What one scheduler waits for: the next run of every enabled recurring task.

Several schedulers may run at once: each enqueues every due run, and the unique
(task_key, run_at) of recurring executions lets exactly one of them record it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from . import db
from .arguments import DeserializationError
from .compat import InvalidTask
from .recurring_task import discover

logger = logging.getLogger("steady_queue.scheduler")

# A task that was removed, renamed or given arguments it can no longer load. Database
# errors are not here: they leave the run due, to be tried again at the next poll.
BROKEN_TASK_ERRORS = (ImportError, InvalidTask, DeserializationError)


class RecurringSchedule:
    def __init__(self, clock: Callable[[], datetime] = timezone.now):
        self.clock = clock
        self.tasks: dict = {}
        self.next_runs: dict[str, datetime] = {}

    def boot(self) -> None:
        """Store the tasks declared in code, then catch up runs missed while none ran."""
        from .models import RecurringTask

        RecurringTask.objects.sync_static(discover())
        self.reload()
        now = self.clock()
        for task in self.tasks.values():
            for run_at in task.missed_runs(now):
                self._enqueue(task, run_at)

    def reload(self) -> None:
        """Re-read the enabled tasks; a new or changed task waits for its next run from now."""
        from .models import RecurringTask

        now = self.clock()
        fresh = {task.key: task for task in RecurringTask.objects.using(db.alias()).enabled()}
        self.next_runs = {
            key: self._kept_next_run(task) or task.next_run_at(now) for key, task in fresh.items()
        }
        self.tasks = fresh

    def enqueue_due(self) -> int:
        """Enqueue every run that is due by now; return how many this scheduler recorded."""
        now, enqueued = self.clock(), 0
        for key, task in self.tasks.items():
            while (run_at := self.next_runs[key]) <= now:
                enqueued += self._enqueue(task, run_at)
                self.next_runs[key] = task.next_run_at(run_at)
        return enqueued

    def seconds_until_next_run(self) -> float | None:
        """How long until the earliest next run; None when no task is enabled."""
        if not self.next_runs:
            return None
        return max((min(self.next_runs.values()) - self.clock()).total_seconds(), 0.0)

    def _kept_next_run(self, task) -> datetime | None:
        known = self.tasks.get(task.key)
        if known is not None and known.schedule == task.schedule:
            return self.next_runs.get(task.key)
        return None

    def _enqueue(self, task, run_at: datetime) -> bool:
        try:
            job = task.enqueue(run_at)
        except BROKEN_TASK_ERRORS:  # one broken task must not stop the others
            logger.exception("Could not enqueue recurring task %s at %s", task.key, run_at)
            return False
        if job is None:
            logger.debug("Recurring task %s at %s was enqueued elsewhere", task.key, run_at)
        return job is not None
