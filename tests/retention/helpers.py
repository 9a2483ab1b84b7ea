"""Jobs in each end state, made old on purpose, for the retention tests."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from steady_queue.models import FailedExecution, Job
from steady_queue.testing import run_ready_jobs
from tests import tasks


def finished(age: timedelta, task=None, queue: str | None = None, **kwargs) -> int:
    """A job of ``task`` (default tasks.noop) that succeeded ``age`` ago; its id."""
    task = task or tasks.noop
    if queue is not None:
        task = task.using(queue_name=queue)
    result = task.enqueue(**kwargs)
    run_ready_jobs()
    Job.objects.filter(pk=result.id).update(finished_at=timezone.now() - age)
    return int(result.id)


def failed(age: timedelta, queue: str | None = None, message: str = "boom") -> int:
    """A job of tasks.explode that failed for good ``age`` ago; its id."""
    task = tasks.explode if queue is None else tasks.explode.using(queue_name=queue)
    result = task.enqueue(message)
    run_ready_jobs()
    FailedExecution.objects.filter(job_id=result.id).update(created_at=timezone.now() - age)
    return int(result.id)


def cancelled(age: timedelta) -> int:
    """A job cancelled before it ran, ``age`` ago; its id."""
    result = tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    Job.objects.get(pk=result.id).cancel()
    FailedExecution.objects.filter(job_id=result.id).update(created_at=timezone.now() - age)
    return int(result.id)


def alive(*ids: int) -> set[int]:
    """Which of ``ids`` are still in the jobs table."""
    return set(Job.objects.filter(pk__in=ids).values_list("pk", flat=True))
