"""Talk to the queue from inside a running task (declare it with ``takes_context=True``).

from steady_queue.context import report_progress, reschedule, set_metadata

@task(takes_context=True)
def import_rows(context, path):
    if not source_ready(path):
        reschedule(context, timedelta(minutes=5))  # leaves the task here
    for done, row in enumerate(rows(path), 1):
        ...
        report_progress(context, done, total, "Importing")
        set_metadata(context, rows_done=done, source=path)
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from . import encryption
from .compat import TaskContext
from .exceptions import JobCancelled, RescheduleJob
from .runner import cancellation


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
    it becomes visible when that transaction commits. Raises ``JobCancelled`` once
    the job's cancellation was asked for (``Job.cancel()``): the run ends there.
    """
    from .models import Job

    if not 0 <= current <= total:
        raise ValueError(f"report_progress() needs 0 <= current <= total, not {current}/{total}.")
    if message and encryption.is_encrypted(context.task_result.task.module_path):
        message = encryption.seal_text(message)  # text of the task's: kept as its data is
    progress = {"current": current, "total": total, "message": message}
    job_id = int(context.task_result.id)
    stored = Job.objects.filter(pk=job_id, cancel_requested_at__isnull=True).update(
        progress=progress
    )
    if not stored and Job.objects.filter(pk=job_id, cancel_requested_at__isnull=False).exists():
        cancellation.mark(job_id)
        raise JobCancelled(f"Job {job_id} was cancelled")


def set_metadata(context: TaskContext, **values: Any) -> dict[str, Any]:
    """Merge ``values`` into this job's metadata (``Job.metadata``) and return the whole.

    Keys given replace those of the same name; the others stay. Each value must be JSON
    and the whole at most 64 KB as JSON (``models.job.annotated.MAX_BYTES``), else
    ``InvalidMetadata`` is raised and the metadata stays as it was. Committed at once,
    in a short transaction of its own (its row locked while it merges): other
    connections read it before the job ends. Inside a transaction you opened on the
    queue database it becomes visible when that transaction commits.
    """
    from .models import Job

    return Job.merge_metadata(int(context.task_result.id), values)


def cancelled(context: TaskContext) -> bool:
    """Whether this job's cancellation was asked for: stop, and the job ends cancelled.

    Cheap enough for a loop: the database is asked at most four times a second. Once
    it returned True, the run ends as cancelled (failed with ``JobCancelled``) however
    the task ends, by returning or raising.
    """
    from .models import Job

    job_id = int(context.task_result.id)
    # The query is built only when asked: a loop calling this mostly gets the cached answer.
    return cancellation.requested(
        job_id, lambda: Job.objects.filter(pk=job_id, cancel_requested_at__isnull=False).exists()
    )


areport_progress = sync_to_async(report_progress)
acancelled = sync_to_async(cancelled)
aset_metadata = sync_to_async(set_metadata)
