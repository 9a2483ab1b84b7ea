"""Talk to the queue from inside a running task (declare it with ``takes_context=True``).

from steady_queue.context import report_progress, reschedule

@task(takes_context=True)
def import_rows(context, path):
    if not source_ready(path):
        reschedule(context, timedelta(minutes=5))  # leaves the task here
    for done, row in enumerate(rows(path), 1):
        ...
        report_progress(context, done, total, "Importing")
"""

from __future__ import annotations

from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.utils import timezone

from .compat import TaskContext
from .exceptions import RescheduleJob


def reschedule(context: TaskContext, delay: timedelta | datetime) -> None:
    """Stop this run and run the job again after ``delay`` (or at an aware datetime).

    The run does not count as an attempt: no error, no worker id, same
    ``context.attempt`` next time. Nothing after this call runs.
    """
    run_at = timezone.now() + delay if isinstance(delay, timedelta) else delay
    if timezone.is_naive(run_at):
        raise ValueError("reschedule() needs a timedelta or an aware datetime.")
    raise RescheduleJob(run_at)


def report_progress(context: TaskContext, current: int, total: int, message: str = "") -> None:
    """Store how far the job has come; other connections can read it at once.

    Written in autocommit: inside a transaction you opened on the queue database
    it becomes visible when that transaction commits.
    """
    from .models import Job

    if not 0 <= current <= total:
        raise ValueError(f"report_progress() needs 0 <= current <= total, not {current}/{total}.")
    progress = {"current": current, "total": total, "message": message}
    Job.objects.filter(pk=int(context.task_result.id)).update(progress=progress)


areport_progress = sync_to_async(report_progress)
