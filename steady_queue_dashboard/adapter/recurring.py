"""Recurring tasks, their runs, and running or switching them."""

from __future__ import annotations

import logging

from django.db.models import OuterRef, QuerySet, Subquery
from django.utils.translation import gettext_lazy as _

from steady_queue.arguments import DeserializationError
from steady_queue.compat import InvalidTask
from steady_queue.exceptions import JobStateError
from steady_queue.models import RecurringExecution, RecurringTask, states

from .actions import Outcome

logger = logging.getLogger(__name__)


def recurring_tasks() -> QuerySet:
    """Return recurring tasks with the job id and time of their latest run."""
    runs = RecurringExecution.objects.filter(task_key=OuterRef("key"))
    latest = runs.order_by("-run_at")
    return RecurringTask.objects.annotate(
        last_run_at=Subquery(latest.values("run_at")[:1]),
        last_job_id=Subquery(latest.values("job_id")[:1]),
    ).order_by("key")


def find_recurring_task(key: str) -> RecurringTask | None:
    return RecurringTask.objects.filter(key=key).first()


def recurring_runs(task: RecurringTask, limit: int = 25) -> list[RecurringExecution]:
    """Return the latest runs of ``task`` with their jobs' current state loaded."""
    runs = RecurringExecution.objects.filter(task_key=task.key)
    related = [f"job__{relation}" for relation in states.relations()]
    return list(runs.select_related("job", *related).order_by("-run_at")[:limit])


def run_recurring_task(key: str) -> Outcome:
    """Enqueue one run of the recurring task ``key`` now, recorded like a scheduled run."""
    task = find_recurring_task(key)
    if task is None:
        return Outcome(False, _("Recurring task %(key)s no longer exists.") % {"key": key})
    try:
        job = task.enqueue_now()
    except (JobStateError, ImportError, DeserializationError, InvalidTask) as exc:
        return Outcome(False, _("Could not run %(key)s: %(error)s") % {"key": key, "error": exc})
    except Exception as exc:  # the task's own code (e.g. its concurrency key) raised
        logger.exception("Could not enqueue recurring task %s from the dashboard", key)
        error = f"{type(exc).__name__}: {exc}"
        return Outcome(False, _("Could not run %(key)s: %(error)s") % {"key": key, "error": error})
    return Outcome(
        True,
        _("Recurring task %(key)s was enqueued as job %(id)s.") % {"key": key, "id": job.pk},
        1,
    )


def set_recurring_enabled(key: str, enabled: bool) -> Outcome:
    task = find_recurring_task(key)
    if task is None:
        return Outcome(False, _("Recurring task %(key)s no longer exists.") % {"key": key})
    if enabled:
        task.enable()
    else:
        task.disable()
    done = (
        _("Recurring task %(key)s is enabled.")
        if enabled
        else _("Recurring task %(key)s is disabled.")
    )
    return Outcome(True, done % {"key": key}, 1)
