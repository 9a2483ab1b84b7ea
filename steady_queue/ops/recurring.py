"""Recurring tasks for the command line: list them, run one now, enable or disable one.

The same calls the dashboard's recurring page makes (``enqueue_now``, ``enable``,
``disable``); what went wrong comes back as a sentence, never as a traceback.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import OuterRef, QuerySet, Subquery

from ..arguments import DeserializationError
from ..compat import InvalidTask
from ..exceptions import JobStateError
from ..models import RecurringExecution, RecurringTask

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
