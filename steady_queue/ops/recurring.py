"""Recurring tasks for the command line: list them, run one now, enable or disable one,
and create, edit or delete a schedule made at run time (previewed first).

The same calls the dashboard's recurring page makes (``enqueue_now``, ``enable``,
``disable``, ``preview``, ``save``, ``delete``); what went wrong comes back as a
sentence, never as a traceback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils import timezone

from ..arguments import DeserializationError
from ..compat import InvalidTask, Task
from ..exceptions import JobStateError, ScheduleError
from ..models import RecurringExecution, RecurringTask
from ..models.recurring_dynamic import refuse_declared, remove, store
from ..task_options.recurring_runtime import build
from ..task_options.recurring_task import Recurrence, in_words, next_times, zone_for

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What an action did, in a sentence, and how many tasks or jobs it changed."""

    succeeded: bool
    message: str
    affected: int = 0


def tasks() -> QuerySet:
    """Every recurring task by key, with the time and job id of its latest run (one query)."""
    latest = RecurringExecution.objects.filter(task_key=OuterRef("key")).order_by("-run_at")
    return RecurringTask.objects.annotate(
        last_run_at=Subquery(latest.values("run_at")[:1]),
        last_job_id=Subquery(latest.values("job_id")[:1]),
    ).order_by("key")


def find(key: str) -> RecurringTask | None:
    return RecurringTask.objects.filter(key=key).first()


def run_now(task: RecurringTask) -> Outcome:
    """Enqueue one extra run of ``task`` now (its schedule goes on as before)."""
    try:
        job = task.enqueue_now()
    except (JobStateError, ImportError, DeserializationError, InvalidTask) as exc:
        return Outcome(False, f"Could not run recurring task {task.key}: {exc}")
    except Exception as exc:  # the task's own code (e.g. its concurrency key) raised
        logger.exception("Could not enqueue recurring task %s from the command line", task.key)
        return Outcome(
            False, f"Could not run recurring task {task.key}: {type(exc).__name__}: {exc}"
        )
    return Outcome(True, f"Recurring task {task.key} was enqueued as job {job.pk}.", 1)


def set_enabled(task: RecurringTask, enabled: bool) -> Outcome:
    """Let the schedulers enqueue ``task`` again, or stop them."""
    if task.enabled == enabled:
        state = "enabled" if enabled else "disabled"
        return Outcome(True, f"Recurring task {task.key} is already {state}.")
    if enabled:
        task.enable()
        return Outcome(True, f"Recurring task {task.key} is enabled.", 1)
    task.disable()
    return Outcome(True, f"Recurring task {task.key} is disabled.", 1)


# Schedules made at run time -------------------------------------------------------------
# What ``manage.py steady_queue_recurring schedule`` and the console's form show before
# they save (the schedule in words, its next fire times), and the save itself.

PREVIEWED_RUNS = 5


@dataclass(frozen=True)
class Preview:
    """A checked schedule, not written yet: what saving it would store, and when it fires."""

    recurrence: Recurrence
    exists: bool
    words: str
    next_runs: list[datetime]


def preview(key: str, task: Task | str, **fields: Any) -> Preview:
    """Check a schedule as ``recurring_task.schedule`` would; raise ``ScheduleError``."""
    recurrence = build(key, task, **fields)
    refuse_declared(key)
    return Preview(
        recurrence=recurrence,
        exists=RecurringTask.objects.filter(key=key).exists(),
        words=in_words(recurrence.schedule),
        next_runs=[
            moment.astimezone(zone_for(recurrence.timezone))
            for moment in next_times(
                recurrence.schedule, timezone.now(), PREVIEWED_RUNS, recurrence.timezone
            )
        ],
    )


def save(recurrence: Recurrence) -> Outcome:
    """Store a previewed schedule (create or update by key)."""
    try:
        task, created = store(recurrence)
    except ScheduleError as exc:
        return Outcome(False, f"Could not save schedule {recurrence.key}: {exc}")
    done = "created" if created else "updated"
    return Outcome(True, f"Recurring schedule {task.key} was {done}.", 1)


def delete(key: str) -> Outcome:
    """Delete the dynamic schedule ``key``; a declared one is refused."""
    try:
        deleted = remove(key)
    except ScheduleError as exc:
        return Outcome(False, str(exc))
    if not deleted:
        return Outcome(False, f"No dynamic recurring schedule {key!r}.")
    return Outcome(True, f"Recurring schedule {key} was deleted.", 1)
