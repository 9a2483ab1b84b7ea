"""What one scheduler waits for: the next run of every enabled recurring task.

Several schedulers may run at once: each enqueues every due run, and the task row's
last enqueued run (with the unique (task_key, run_at) of recurring executions) lets
exactly one of them record it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from django.db import InterfaceError, OperationalError
from django.utils import timezone

from ..task_options.recurring_task import discover
from . import recurring_findings

logger = logging.getLogger("steady_queue.scheduler")

# The database could not be reached: the run stays due and the poll is retried.
UNREACHABLE_ERRORS = (OperationalError, InterfaceError)


class RecurringSchedule:
    def __init__(self, clock: Callable[[], datetime] = timezone.now):
        self.clock = clock
        self.tasks: dict = {}
        # Per task: the instant up to which its runs are dealt with, and its next run.
        self.checked: dict[str, datetime] = {}
        self.next_runs: dict[str, datetime] = {}
        # Schedules that never fire (or no longer parse), by key: logged once, left out.
        self.unschedulable: dict[str, str] = {}

    def boot(self) -> None:
        """Store the tasks declared in code, then catch up runs missed while none ran."""
        from ..models import RecurringTask

        declared = discover()
        recurring_findings.warn_unfound(declared, RecurringTask.objects.all())
        RecurringTask.objects.sync_static(declared)
        self.reload()
        recurring_findings.log_loaded(self.tasks)
        now = self.clock()
        for task in self.tasks.values():
            for run_at in task.missed_runs(now):
                self._enqueue(task, run_at)

    def reload(self) -> None:
        """Re-read the enabled tasks; a new or changed task waits for its next run from now."""
        from ..models import RecurringTask

        now = self.clock()
        fresh = {task.key: task for task in RecurringTask.objects.enabled()}
        tasks, checked, next_runs = {}, {}, {}
        for key, task in fresh.items():
            known = self.tasks.get(key)
            if known is not None and _same_times(known, task):
                checked[key], next_runs[key] = self.checked[key], self.next_runs[key]
            elif (next_run := self._first_run(task, now)) is not None:
                checked[key], next_runs[key] = now, next_run
            else:
                continue
            tasks[key] = task
        self.tasks, self.checked, self.next_runs = tasks, checked, next_runs

    def enqueue_due(self) -> int:
        """Enqueue the runs that are due by now; return how many this scheduler recorded.

        Each task on its own: one whose enqueue raises is logged and the others go on.
        A database that cannot be reached leaves that task's runs due and fails the poll
        once every task was tried, so that it is retried.
        """
        now, enqueued, unreachable = self.clock(), 0, None
        for key, task in self.tasks.items():
            if self.next_runs[key] > now:
                continue
            try:
                enqueued += self._enqueue_due_runs(task, now)
            except UNREACHABLE_ERRORS as exc:
                unreachable = exc
                continue
            self.checked[key], self.next_runs[key] = now, task.next_run_at(now)
        if unreachable is not None:
            raise unreachable
        return enqueued

    def seconds_until_next_run(self) -> float | None:
        """How long until the earliest next run; None when no task is enabled."""
        if not self.next_runs:
            return None
        return max((min(self.next_runs.values()) - self.clock()).total_seconds(), 0.0)

    def _first_run(self, task, now: datetime) -> datetime | None:
        try:
            return task.next_run_at(now)
        except (ValueError, KeyError):  # croniter's errors, or zoneinfo's (a KeyError)
            if self.unschedulable.get(task.key) != task.schedule:
                self.unschedulable[task.key] = task.schedule
                logger.exception(
                    "Recurring task %s is not scheduled: its schedule %r%s never fires",
                    task.key,
                    task.schedule,
                    f" in time zone {task.timezone!r}" if task.timezone else "",
                )
            return None

    def _enqueue_due_runs(self, task, now: datetime) -> int:
        runs = task.due_runs(self.checked[task.key], now)
        if runs and runs[0] > self.next_runs[task.key]:
            logger.warning(
                "Recurring task %s: its runs due from %s to before %s were missed and are "
                "skipped (see catch_up)",
                task.key,
                self.next_runs[task.key],
                runs[0],
            )
        return sum(self._enqueue(task, run_at) for run_at in runs)

    def _enqueue(self, task, run_at: datetime) -> bool:
        try:
            job = task.enqueue(run_at)
        except UNREACHABLE_ERRORS:
            raise
        except Exception:  # one broken task must not stop the others
            logger.exception("Could not enqueue recurring task %s at %s", task.key, run_at)
            return False
        if job is None:
            logger.debug("Recurring task %s at %s was enqueued elsewhere", task.key, run_at)
        return job is not None


def _same_times(known, fresh) -> bool:
    """Whether a re-read task fires when it did: a changed cron or zone starts afresh."""
    return (known.schedule, known.timezone) == (fresh.schedule, fresh.timezone)
