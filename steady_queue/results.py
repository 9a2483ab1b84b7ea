"""Build Django TaskResults from jobs; announce jobs a crash failed; log each job's start and end.

The log lines (one as a job starts, one as it ends, on the ``steady_queue.jobs``
logger, with the job's fields as ``extra``: see ``log``) are written by receivers of
the task signals that Steady Queue's backends send.
"""

from __future__ import annotations

import dataclasses
import functools
from datetime import datetime
from typing import Any

from django.dispatch import receiver

import steady_queue

from . import arguments, db, encryption, ours
from .compat import (
    InvalidTask,
    Task,
    TaskError,
    TaskResult,
    TaskResultStatus,
    task_finished,
    task_started,
)
from .models import FinishedHistory, Job
from .models.attempt import Attempt
from .models.execution.claimed_lifecycle import failed_by_crash
from .models.job.editable import declared_task
from .observability import log


def task_for(job: Job) -> Task:
    """Rebuild the Task a job was enqueued with, from its import path and stored options."""
    task = declared_task(job)
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
    """Return the TaskResult of ``job``; load it with ``Job.objects.with_execution()``.

    An encrypted job's arguments, return value and errors are opened: the application
    holds the keys (``EncryptionKeyMissing`` if none opens them).
    """
    args, kwargs = arguments.display(encryption.opened(job.arguments))
    attempts = [Attempt.from_dict(attempt) for attempt in job.attempts]
    claimed = getattr(job, "claimed_execution", None)
    if claimed is not None:  # the attempt running now
        attempts.append(Attempt(worker_id=_worker_id(claimed), started_at=claimed.created_at))
    result = TaskResult(
        task=task or task_for(job),
        id=str(job.pk),
        status=status or job.status,
        enqueued_at=job.created_at,
        started_at=attempts[0].started_at if attempts else None,
        last_attempted_at=attempts[-1].started_at if attempts else None,
        finished_at=_finished_at(job),
        args=args,
        kwargs=kwargs,
        backend=job.backend,
        errors=[_error(attempt.error) for attempt in attempts if attempt.error] or _never_ran(job),
        worker_ids=[attempt.worker_id for attempt in attempts],
    )
    object.__setattr__(result, "_return_value", encryption.opened(job.return_value))
    return result


def enqueued_result(job: Job, task: Task) -> TaskResult:
    """The TaskResult of a job just enqueued: nothing to look up, it has not run yet."""
    args, kwargs = arguments.display(encryption.opened(job.arguments))
    return _made(
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


def labels_of(result: TaskResult) -> list[str]:
    """The labels of the job of ``result`` (``steady_queue.labels``), in order: one query.

    Django's TaskResult is a closed dataclass with no room for them; ``Job.labels`` is
    the same list, read with the job.
    """
    return list(_stored(result, "labels"))


def metadata_of(result: TaskResult) -> dict[str, Any]:
    """The job's metadata as stored now (``steady_queue.context.set_metadata``): one query,
    so that a result held while its job runs reads what the task has written since."""
    return _stored(result, "metadata")


def _stored(result: TaskResult, column: str) -> Any:
    """A column of the result's job, from the jobs table or, once it moved there, the
    finished history (``Job.DoesNotExist`` if neither holds it)."""
    try:
        return Job.objects.values_list(column, flat=True).get(pk=int(result.id))
    except Job.DoesNotExist:
        moved = FinishedHistory.find(int(result.id))
        if moved is None:
            raise
        return getattr(moved, column)


def _made(**values: Any) -> TaskResult:
    """``TaskResult(**values)`` without its ``__post_init__``.

    That normalizes ``args`` and ``kwargs`` into JSON types; a stored job's are JSON
    already (``arguments.display``), and normalizing them again per job was a sixth of a
    bulk enqueue's time. Fields not given take their defaults, as in ``__init__``.
    """
    result = object.__new__(TaskResult)
    for name, value in (_result_defaults() | values).items():
        object.__setattr__(result, name, value)
    return result


@functools.cache
def _result_defaults() -> dict[str, Any]:
    defaults = {}
    for field in dataclasses.fields(TaskResult):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            raise TypeError(f"TaskResult.{field.name} has a default factory: build it per result")
    return defaults


def _worker_id(claimed) -> str:
    return claimed.process.name if claimed.process_id and claimed.process else "in-process"


def _finished_at(job: Job) -> datetime | None:
    if job.finished_at:
        return job.finished_at
    failed = getattr(job, "failed_execution", None)
    return failed.created_at if failed else None


def _never_ran(job: Job) -> list[TaskError]:
    """The error of a job failed before it ever ran (cancelled, or DependencyFailed)."""
    if job.attempts or job.status != TaskResultStatus.FAILED:
        return []
    failed = getattr(job, "failed_execution", None)
    if failed is None:  # discarded meanwhile
        return []
    return [TaskError(exception_class_path=failed.exception_class, traceback=failed.backtrace)]


def _error(error: dict) -> TaskError:
    traceback = encryption.opened_text(error["traceback"])
    return TaskError(exception_class_path=error["exception_class"], traceback=traceback)


@receiver(failed_by_crash, dispatch_uid="steady_queue.results.announce_crash")
def announce_crash(sender, job: Job, **kwargs) -> None:
    """Send task_finished for a job failed by a crash, as a worker does for its jobs."""
    from .backend import SteadyQueueBackend

    try:
        result = result_for(job)
    except InvalidTask:
        return  # the task is gone from the code base: nothing to describe it with
    task_finished.send(SteadyQueueBackend, task_result=result)


def _logged_labels(task_result) -> dict[str, Any]:
    """The ``labels`` field of a start or end line: only with ``log_label_prefixes`` set,
    then read by primary key (a TaskResult has no room for them; not cached, since an
    edit may change them)."""
    if not steady_queue.log_label_prefixes:
        return {}
    from .compat import task_backends

    # Ids are per queue database: the result's backend names it.
    with db.using_alias(getattr(task_backends[task_result.backend], "database", None)):
        found = Job.objects.filter(pk=int(task_result.id)).values_list("labels", flat=True)
        return {"labels": log.logged_labels(found.first() or [])}


@receiver(task_started, dispatch_uid="steady_queue.log.started")
def log_started(sender, task_result, **kwargs) -> None:
    """Log a Steady Queue job's start on ``steady_queue.jobs``, with its fields as ``extra``."""
    if ours.is_our_class(sender):
        log.logger.info(
            "Started job %s %s (attempt %d, worker %s)",
            task_result.id,
            task_result.task.module_path,
            len(task_result.worker_ids),
            task_result.worker_ids[-1] if task_result.worker_ids else "-",
            extra=log.job_fields(task_result, **_logged_labels(task_result)),
        )


@receiver(task_finished, dispatch_uid="steady_queue.log.finished")
def log_finished(sender, task_result, **kwargs) -> None:
    """Log a Steady Queue job's end (or failed attempt) on ``steady_queue.jobs``."""
    if not ours.is_our_class(sender):
        return
    started, finished = task_result.last_attempted_at, task_result.finished_at
    duration = (finished - started).total_seconds() if started and finished else 0.0
    timed = {"duration_ms": round(duration * 1000, 3)} if started and finished else {}
    extra = log.job_fields(task_result, **timed, **_logged_labels(task_result))
    if task_result.status == TaskResultStatus.FAILED:
        error = task_result.errors[-1].exception_class_path if task_result.errors else "?"
        log.logger.warning(
            "Failed job %s %s in %.3fs: %s",
            task_result.id,
            task_result.task.module_path,
            duration,
            error,
            extra=extra,
        )
    elif task_result.status == TaskResultStatus.READY:  # its retry policy runs it again
        log.logger.warning(
            "Attempt %d of job %s %s failed: %s; retrying",
            len(task_result.worker_ids),
            task_result.id,
            task_result.task.module_path,
            task_result.errors[-1].exception_class_path if task_result.errors else "?",
            extra=extra,
        )
    else:
        log.logger.info(
            "Finished job %s %s in %.3fs (%s)",
            task_result.id,
            task_result.task.module_path,
            duration,
            task_result.status,
            extra=extra,
        )
