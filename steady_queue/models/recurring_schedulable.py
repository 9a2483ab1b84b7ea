"""Recurring tasks' schedule: when they run next, and enqueueing one run exactly once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import IntegrityError, models
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from .. import arguments, db
from ..compat import Task, task_enqueued
from ..exceptions import JobStateError
from ..task_options.recurring_task import (
    CATCH_UP_LIMIT,
    Recurrence,
    describe,
    next_time,
    recent_times,
)
from .base import QueueQuerySet

if TYPE_CHECKING:
    from .job import Job

SYNCED_FIELDS = [
    "schedule",
    "task_path",
    "arguments",
    "queue_name",
    "priority",
    "description",
    "static",
    "catch_up_window",
    "timezone",
    "updated_at",
]


class RecurringTaskQuerySet(QueueQuerySet):
    def static(self) -> RecurringTaskQuerySet:
        return self.filter(static=True)

    def enabled(self) -> RecurringTaskQuerySet:
        return self.filter(enabled=True)

    def dynamic(self) -> RecurringTaskQuerySet:
        return self.filter(static=False)

    def sync_static(self, recurrences: Iterable[Recurrence]) -> None:
        """Make the static rows match the tasks declared in code; keep ``enabled`` as is.

        A schedule made at run time keeps its row: a declaration of the same key is left
        out (the system check names it), so that a deploy never overwrites it.
        """
        rows = {r.key: self.model.from_recurrence(r) for r in recurrences}
        with db.atomic():
            rows = {k: r for k, r in rows.items() if k not in self._dynamic_keys(rows)}
            self.static().exclude(key__in=rows).delete()
            if rows:
                self.bulk_create(rows.values(), **_upsert_options())

    def _dynamic_keys(self, keys: Iterable[str]) -> set[str]:
        return set(self.dynamic().filter(key__in=list(keys)).values_list("key", flat=True))


class Schedulable:
    """Schedule arithmetic and enqueueing for a RecurringTask row."""

    @classmethod
    def from_recurrence(cls, recurrence: Recurrence):
        return cls(
            key=recurrence.key,
            schedule=recurrence.schedule,
            task_path=recurrence.task.module_path,
            arguments=arguments.serialize(recurrence.args, recurrence.kwargs),
            queue_name=recurrence.queue_name or "",
            priority=recurrence.priority,
            description=recurrence.description,
            static=True,
            catch_up_window=recurrence.catch_up,
            timezone=recurrence.timezone,
        )

    def next_run_at(self, now: datetime | None = None) -> datetime:
        """Return the first run strictly after ``now`` (default: the current time)."""
        return next_time(self.schedule, now or timezone.now(), self.timezone)

    @property
    def upcoming_run_at(self) -> datetime | None:
        """The next run after now; None when the schedule is invalid or never fires."""
        try:
            return self.next_run_at()
        except (ValueError, KeyError):  # croniter's, e.g. "0 0 30 2 *"; zoneinfo's KeyError
            return None

    def runs_between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Yield the runs after ``start`` up to and including ``end``."""
        run_at = self.next_run_at(start)
        while run_at <= end:
            yield run_at
            run_at = self.next_run_at(run_at)

    def due_runs(self, after: datetime, now: datetime) -> list[datetime]:
        """Return which of the runs due after ``after`` up to ``now`` to enqueue, oldest first.

        Without a catch-up window only the latest: the others were missed (no scheduler
        was up, or the database was down). With one, those within it, at most
        ``CATCH_UP_LIMIT`` (the latest ones).
        """
        if not self.catch_up_window:
            return recent_times(self.schedule, now, after, limit=1, zone=self.timezone)
        after = max(after, now - self.catch_up_window)
        return recent_times(self.schedule, now, after, limit=CATCH_UP_LIMIT, zone=self.timezone)

    def missed_runs(self, now: datetime) -> list[datetime]:
        """Return the runs to catch up when a scheduler starts: none without ``catch_up``.

        They follow the latest run any scheduler enqueued, which is kept on this row so
        that clearing finished jobs (and the runs' rows with them) does not repeat them.
        """
        if not self.catch_up_window:
            return []
        last = max(filter(None, [self.last_enqueued_run_at, self.created_at]))
        return self.due_runs(last, now)

    @property
    def schedule_description(self) -> str:
        """The schedule in words, e.g. "every day at 12:00"."""
        return describe(self.schedule)

    def enqueue(self, run_at: datetime) -> Job | None:
        """Enqueue the run due at ``run_at``.

        None when that run, or a later one, was enqueued already (by another scheduler,
        or before its rows were cleared): runs of a task are enqueued in order, once.
        """
        return self._enqueue_run(run_at, scheduled=True)

    def enqueue_now(self) -> Job:
        """Enqueue one run now, whatever the schedule or the enabled flag; record it.

        An extra run: scheduled runs and their catch-up go on as if it had not happened.
        """
        job = self._enqueue_run(timezone.now(), scheduled=False)
        if job is None:
            raise JobStateError(f"Recurring task {self.key!r} was enqueued at this instant.")
        return job

    def enable(self) -> None:
        """Let every scheduler enqueue this task again, from its next run on."""
        self._set_enabled(True)

    def disable(self) -> None:
        """Stop every scheduler from enqueueing this task (``enqueue_now`` still works)."""
        self._set_enabled(False)

    def task(self) -> Task:
        """Return the Task to enqueue, with this schedule's queue and priority."""
        task = import_string(self.task_path)
        return task.using(queue_name=self.queue_name or None, priority=self.priority)

    def executions(self) -> models.QuerySet:
        from .recurring import RecurringExecution

        return RecurringExecution.objects.filter(task_key=self.key)

    def _enqueue_run(self, run_at: datetime, *, scheduled: bool) -> Job | None:
        task = self.task()
        backend = task.get_backend()
        args, kwargs = arguments.deserialize(self.arguments)
        try:
            with db.atomic():  # a savepoint when called inside a transaction
                if scheduled and not self._claim_run(run_at):
                    return None
                job = self._enqueue_job(task, backend, args, kwargs)
                self.executions().create(job=job, task_key=self.key, run_at=run_at)
        except IntegrityError:  # (task_key, run_at) is taken: the run exists already
            return None
        if scheduled:
            self.last_enqueued_run_at = run_at
        task_enqueued.send(type(backend), task_result=backend._new_result(job, task))
        return job

    def _claim_run(self, run_at: datetime) -> bool:
        """Move the last enqueued run to ``run_at`` unless it is there or later already.

        The update locks this row until the transaction ends, so schedulers racing for
        one task take turns; the loser sees the winner's run and backs off.
        """
        later = Q(last_enqueued_run_at__isnull=True) | Q(last_enqueued_run_at__lt=run_at)
        rows = type(self).objects.filter(later, pk=self.pk)
        return rows.update(last_enqueued_run_at=run_at) == 1

    def _enqueue_job(self, task: Task, backend, args: list, kwargs: dict) -> Job:
        from .job import Job

        job = Job.for_task_call(task, args, kwargs, backend=backend)
        Job.enqueue_all([job])
        return job

    def _set_enabled(self, enabled: bool) -> None:
        self.enabled = enabled
        type(self).objects.filter(pk=self.pk).update(enabled=enabled, updated_at=timezone.now())


def _upsert_options() -> dict:
    options = {"update_conflicts": True, "update_fields": SYNCED_FIELDS}
    # MySQL's ON DUPLICATE KEY UPDATE takes no conflict target.
    if db.connection().features.supports_update_conflicts_with_target:
        options["unique_fields"] = ["key"]
    return options
