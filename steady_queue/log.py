"""Turn task signals into one log line per job start, finish and failure.

Every record about a job carries the job's fields as ``extra`` attributes (see
``job_fields``), so that a JSON formatter (python-json-logger, structlog) emits them
as fields: ``job_id``, ``task_path``, ``queue_name``, ``attempt``, ``process_name``
(the worker) and, once a run has ended, ``duration_ms``. (``process`` itself is the
LogRecord's pid.)
"""

from __future__ import annotations

import logging
from typing import Any

from django.dispatch import receiver

from .compat import TaskResultStatus, task_finished, task_started

logger = logging.getLogger("steady_queue.jobs")


def _ours(sender) -> bool:
    from .backend import SteadyQueueBackend

    return isinstance(sender, type) and issubclass(sender, SteadyQueueBackend)


def job_fields(job, **more: Any) -> dict[str, Any]:
    """The ``extra`` of a log record about ``job`` (a Job, or a TaskResult of one)."""
    if hasattr(job, "task"):  # a TaskResult: its attempts name the workers
        fields = {
            "job_id": str(job.id),
            "task_path": job.task.module_path,
            "queue_name": job.task.queue_name,
            "attempt": len(job.worker_ids),
            "process_name": job.worker_ids[-1] if job.worker_ids else None,
        }
    else:
        fields = {
            "job_id": str(job.pk),
            "task_path": job.task_path,
            "queue_name": job.queue_name,
            "attempt": len(job.attempts) + 1,
        }
    return {**fields, **more}


def claim_fields(claimed, **more: Any) -> dict[str, Any]:
    """``job_fields`` of a claim's job, without a query: safe while the database is down.

    Logging runs in error paths (an outage, a failed record) where a lazy load of the
    job would raise out of the handler and skip what it does next.
    """
    job = claimed._state.fields_cache.get("job")
    if job is None:
        return {"job_id": str(claimed.job_id), **more}
    return job_fields(job, **more)


@receiver(task_started, dispatch_uid="steady_queue.log.started")
def log_started(sender, task_result, **kwargs) -> None:
    if _ours(sender):
        logger.info(
            "Started job %s %s (attempt %d, worker %s)",
            task_result.id,
            task_result.task.module_path,
            len(task_result.worker_ids),
            task_result.worker_ids[-1] if task_result.worker_ids else "-",
            extra=job_fields(task_result),
        )


@receiver(task_finished, dispatch_uid="steady_queue.log.finished")
def log_finished(sender, task_result, **kwargs) -> None:
    if not _ours(sender):
        return
    started, finished = task_result.last_attempted_at, task_result.finished_at
    duration = (finished - started).total_seconds() if started and finished else 0.0
    timed = {"duration_ms": round(duration * 1000, 3)} if started and finished else {}
    extra = job_fields(task_result, **timed)
    if task_result.status == TaskResultStatus.FAILED:
        error = task_result.errors[-1].exception_class_path if task_result.errors else "?"
        logger.warning(
            "Failed job %s %s in %.3fs: %s",
            task_result.id,
            task_result.task.module_path,
            duration,
            error,
            extra=extra,
        )
    elif task_result.status == TaskResultStatus.READY:  # its retry policy runs it again
        logger.warning(
            "Attempt %d of job %s %s failed: %s; retrying",
            len(task_result.worker_ids),
            task_result.id,
            task_result.task.module_path,
            task_result.errors[-1].exception_class_path if task_result.errors else "?",
            extra=extra,
        )
    else:
        logger.info(
            "Finished job %s %s in %.3fs (%s)",
            task_result.id,
            task_result.task.module_path,
            duration,
            task_result.status,
            extra=extra,
        )
