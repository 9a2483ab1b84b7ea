"""Build Django TaskResults from jobs."""

from __future__ import annotations

from datetime import datetime

from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from . import arguments
from .compat import InvalidTask, Task, TaskError, TaskResult, TaskResultStatus
from .models import Job


def task_for(job: Job) -> Task:
    """Rebuild the Task a job was enqueued with, from its import path and stored options."""
    try:
        task = import_string(job.task_path)
    except ImportError as exc:
        raise InvalidTask(f"Task {job.task_path!r} of job {job.pk} cannot be imported.") from exc
    if not isinstance(task, Task):
        raise InvalidTask(f"{job.task_path!r} of job {job.pk} is not a Task.")
    options = (job.priority, job.queue_name, job.backend, job.scheduled_at)
    if options == (task.priority, task.queue_name, task.backend, task.run_after):
        return task  # enqueued as declared: using() would only copy and validate it again
    return task.using(
        priority=job.priority,
        queue_name=job.queue_name,
        backend=job.backend,
        run_after=job.scheduled_at,
    )


def result_for(
    job: Job, task: Task | None = None, *, status: TaskResultStatus | None = None
) -> TaskResult:
    """Return the TaskResult of ``job``; load it with ``Job.objects.with_execution()``."""
    args, kwargs = arguments.display(job.arguments)
    attempts = list(job.attempts)
    claimed = getattr(job, "claimed_execution", None)
    if claimed is not None:
        attempts.append({"worker_id": _worker_id(claimed), "started_at": claimed.created_at})
    result = TaskResult(
        task=task or task_for(job),
        id=str(job.pk),
        status=status or job.status,
        enqueued_at=job.created_at,
        started_at=_time(attempts[0]["started_at"]) if attempts else None,
        last_attempted_at=_time(attempts[-1]["started_at"]) if attempts else None,
        finished_at=_finished_at(job),
        args=args,
        kwargs=kwargs,
        backend=job.backend,
        errors=[_error(attempt["error"]) for attempt in attempts if attempt.get("error")],
        worker_ids=[attempt["worker_id"] for attempt in attempts],
    )
    object.__setattr__(result, "_return_value", job.return_value)
    return result


def enqueued_result(job: Job, task: Task) -> TaskResult:
    """The TaskResult of a job just enqueued: nothing to look up, it has not run yet."""
    args, kwargs = arguments.display(job.arguments)
    return TaskResult(
        task=task,
        id=str(job.pk),
        status=TaskResultStatus.READY,
        enqueued_at=job.created_at,
        started_at=None,
        last_attempted_at=None,
        finished_at=None,
        args=args,
        kwargs=kwargs,
        backend=job.backend,
        errors=[],
        worker_ids=[],
    )


def _worker_id(claimed) -> str:
    return claimed.process.name if claimed.process_id and claimed.process else "in-process"


def _finished_at(job: Job) -> datetime | None:
    if job.finished_at:
        return job.finished_at
    failed = getattr(job, "failed_execution", None)
    return failed.created_at if failed else None


def _error(error: dict) -> TaskError:
    return TaskError(exception_class_path=error["exception_class"], traceback=error["traceback"])


def _time(value: datetime | str) -> datetime:
    return value if isinstance(value, datetime) else parse_datetime(value)
