"""Run one claimed job and record how it ended, exactly once."""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Callable
from datetime import datetime
from functools import partial

from django.db import DatabaseError, InterfaceError, OperationalError
from django.utils import timezone

import steady_queue

from . import arguments, db, postgres
from .compat import TaskContext, TaskResult, normalize_json, task_finished, task_started
from .exceptions import RescheduleJob
from .models import ClaimedExecution, Job
from .results import result_for, task_for

logger = logging.getLogger("steady_queue.perform")


def perform(claimed: ClaimedExecution) -> TaskResult | None:
    """Run the claimed job's task; return its final TaskResult, or None if it lost its claim."""
    from .backend import SteadyQueueBackend

    job = claimed.job
    try:
        task = task_for(job)
        result = result_for(job, task)
    except Exception as exc:  # the task cannot even be loaded: fail the job with why
        _finalize(claimed, partial(_record_failure, claimed, exc))
        return None
    task_started.send(SteadyQueueBackend, task_result=result)
    try:
        return_value = _call(task, result, job)
    except RescheduleJob as request:
        # Not an attempt: nothing is recorded but the new time, and no task_finished.
        _finalize(claimed, partial(_record_reschedule, claimed, request.run_at))
        return None
    except (Exception, SystemExit) as exc:
        if _finalize(claimed, partial(_record_failure, claimed, exc)):
            result = result_for(job, task)
            # Sent inside the handler so that receivers can read sys.exc_info().
            task_finished.send(SteadyQueueBackend, task_result=result)
            return result
        return None
    if _finalize(claimed, partial(_record_success, claimed, return_value)):
        result = result_for(job, task)
        task_finished.send(SteadyQueueBackend, task_result=result)
        return result
    return None


def _call(task, result: TaskResult, job: Job):
    args, kwargs = arguments.deserialize(job.arguments)
    if task.takes_context:
        args = [TaskContext(task_result=result), *args]
    return_value = normalize_json(task.call(*args, **kwargs))
    # NaN and infinities pass normalize_json but no database stores them as JSON:
    # refuse them here so the job fails instead of staying claimed.
    json.dumps(return_value, allow_nan=False)
    return return_value


def _record_success(claimed: ClaimedExecution, return_value) -> bool:
    job, attempt, now = claimed.job, _attempt(claimed), timezone.now()
    if steady_queue.preserve_finished_jobs and postgres.in_use():
        # One statement, atomic by itself: no transaction around it.
        if not postgres.finish(claimed, attempt, return_value, now):
            return False
    elif not _store_success(claimed, attempt, return_value, now):
        return False
    job.attempts = [*job.attempts, attempt]
    job.finished_at, job.return_value = now, return_value
    job._state.fields_cache["claimed_execution"] = None
    return True


def _store_success(claimed: ClaimedExecution, attempt: dict, return_value, now) -> bool:
    job = claimed.job
    with db.atomic():
        if not _take_claim(claimed):
            return False
        if steady_queue.preserve_finished_jobs:
            Job.objects.using(db.alias()).filter(pk=job.pk).update(
                attempts=[*job.attempts, attempt],
                finished_at=now,
                return_value=return_value,
                updated_at=now,
            )
        else:
            Job.objects.using(db.alias()).filter(pk=job.pk).delete()
    return True


def _record_failure(claimed: ClaimedExecution, exc: BaseException) -> bool:
    job = claimed.job
    with db.atomic():
        if not _take_claim(claimed):
            return False
        error = error_details(exc)
        job.attempts = [*job.attempts, _attempt(claimed, error)]
        job.save(update_fields=["attempts", "updated_at"])
        job.fail_or_retry(exc, error)
    job._state.fields_cache["claimed_execution"] = None
    return True


def _record_reschedule(claimed: ClaimedExecution, run_at: datetime) -> bool:
    with db.atomic():
        if not _take_claim(claimed):
            return False
        claimed.job.reschedule(run_at)
    claimed.job._state.fields_cache["claimed_execution"] = None
    logger.info("Rescheduled job %s for %s", claimed.job_id, run_at.isoformat())
    return True


def _take_claim(claimed: ClaimedExecution) -> bool:
    """Delete the claim if it is still ours; the deleted row stays locked until commit.

    A pruned or released job has lost its claim: finishing it late must change nothing.
    Whoever deletes the row first records the outcome; a concurrent deleter (or locker)
    waits for that commit and then finds no row. A queryset delete leaves the instance
    (and its job_id) intact for a retry.
    """
    return _claim_of(claimed).delete()[0] > 0


def _claim_of(claimed: ClaimedExecution):
    return ClaimedExecution.objects.filter(job_id=claimed.job_id, process_id=claimed.process_id)


def _finalize(claimed: ClaimedExecution, record: Callable[[], bool]) -> bool:
    """Record the outcome in one transaction, retrying transient database errors."""
    job = claimed.job
    recorded = _record_with_retries(claimed, record)
    if recorded:
        # Outside the transaction, as Solid Queue does: a failure to unblock the
        # next job must not undo this job's outcome; maintenance catches up.
        try:
            job.unblock_next_blocked_job()
        except DatabaseError as exc:
            logger.warning("Could not unblock the job after job %s: %s", job.pk, exc)
    return recorded


def _record_with_retries(claimed: ClaimedExecution, record: Callable[[], bool]) -> bool:
    # Retry while the claim may still be ours: past the alive threshold a process that
    # cannot reach the database has been pruned and its claim failed by a supervisor.
    job = claimed.job
    deadline = time.monotonic() + steady_queue.process_alive_threshold.total_seconds()
    attempts, retries = job.attempts, 0
    while True:
        try:
            return record()  # in one transaction (or one statement)
        except (OperationalError, InterfaceError) as exc:
            job.attempts = attempts  # undo the rolled back append before trying again
            if time.monotonic() >= deadline:
                raise DatabaseError(f"Could not record the outcome of job {job.pk}") from exc
            logger.warning("Finalizing job %s failed (%s); retrying", job.pk, exc)
            db.connection().close()
            time.sleep(min(0.1 * 2**retries, 5))
            retries += 1


def _attempt(claimed: ClaimedExecution, error: dict | None = None) -> dict:
    return {
        "worker_id": claimed.process.name if claimed.process else "in-process",
        "started_at": _iso(claimed.created_at),
        "finished_at": _iso(timezone.now()),
        "error": error,
    }


def error_details(exc: BaseException) -> dict:
    """Describe ``exc`` for storage: class path, message and the full traceback."""
    kind = type(exc)
    return {
        "exception_class": f"{kind.__module__}.{kind.__qualname__}",
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc)),
    }


def _iso(value: datetime) -> str:
    return value.isoformat()
