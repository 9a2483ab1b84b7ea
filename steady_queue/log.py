"""Turn task signals into one log line per job start, finish and failure."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from .compat import TaskResultStatus, task_finished, task_started

logger = logging.getLogger("steady_queue.jobs")


def _ours(sender) -> bool:
    from .backend import SteadyQueueBackend

    return isinstance(sender, type) and issubclass(sender, SteadyQueueBackend)


@receiver(task_started, dispatch_uid="steady_queue.log.started")
def log_started(sender, task_result, **kwargs) -> None:
    if _ours(sender):
        logger.info(
            "Started job %s %s (attempt %d, worker %s)",
            task_result.id,
            task_result.task.module_path,
            len(task_result.worker_ids),
            task_result.worker_ids[-1] if task_result.worker_ids else "-",
        )


@receiver(task_finished, dispatch_uid="steady_queue.log.finished")
def log_finished(sender, task_result, **kwargs) -> None:
    if not _ours(sender):
        return
    started, finished = task_result.last_attempted_at, task_result.finished_at
    duration = (finished - started).total_seconds() if started and finished else 0.0
    if task_result.status == TaskResultStatus.FAILED:
        error = task_result.errors[-1].exception_class_path if task_result.errors else "?"
        logger.warning(
            "Failed job %s %s in %.3fs: %s",
            task_result.id,
            task_result.task.module_path,
            duration,
            error,
        )
    elif task_result.status == TaskResultStatus.READY:  # its retry policy runs it again
        logger.warning(
            "Attempt %d of job %s %s failed: %s; retrying",
            len(task_result.worker_ids),
            task_result.id,
            task_result.task.module_path,
            task_result.errors[-1].exception_class_path if task_result.errors else "?",
        )
    else:
        logger.info(
            "Finished job %s %s in %.3fs (%s)",
            task_result.id,
            task_result.task.module_path,
            duration,
            task_result.status,
        )
