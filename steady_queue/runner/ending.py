"""What a run ends with, and who is told: the outcome of an error, the span, task_finished."""

from __future__ import annotations

import logging
import threading

from ..compat import TaskResult, task_finished
from ..exceptions import AwaitSignal, DurableSleep, RescheduleJob, SuspendRun
from ..models import Job
from ..models.execution.claimed_finish import (
    Failure,
    Outcome,
    Paused,
    Reschedule,
    Sleep,
    Success,
    Throttle,
    WaitForSignal,
)
from ..observability.log import job_fields
from ..results import result_for, task_for
from . import cancellation

logger = logging.getLogger("steady_queue.perform")

#: What a task raises to run again later, not as an error: ``reschedule``, a durable
#: ``sleep`` or ``wait_for_signal``.
RUN_AGAIN = (RescheduleJob, SuspendRun)

#: The span's word for a recorded outcome (a Failure's: ``failure_label``).
LABELS = {
    Success: "succeeded",
    Reschedule: "rescheduled",
    Throttle: "throttled",
    Paused: "paused",
    Sleep: "sleeping",
    WaitForSignal: "waiting for signal",
}


def outcome_of(job: Job, exc: BaseException) -> Outcome:
    """What a run that raised ``exc`` ends with: ``JobCancelled`` for good if its job was
    cancelled, a new time if it asked to run again or slept, a signal wait (neither is an
    attempt), else its failure.

    Only a run that raised asks the database whether its job was cancelled (a success
    costs nothing more); what the task raised becomes the cause, with its traceback.
    """
    cancelled = job.cancelled_run(exc, seen=cancellation.seen(job.pk), ask=True)
    if cancelled is not None:
        return cancelled
    if isinstance(exc, DurableSleep):
        return Sleep(exc.run_at, number=exc.number)
    if isinstance(exc, AwaitSignal):
        return WaitForSignal(exc.name, exc.deadline, new=exc.new)
    return Reschedule(exc.run_at) if isinstance(exc, RescheduleJob) else Failure(exc)


def label(outcome: Outcome, job: Job) -> str:
    """How the run's span says a recorded ``outcome`` ended it."""
    if isinstance(outcome, Failure):
        # A failure that is final leaves the job its failed execution; a retry, none.
        return "failed" if job._state.fields_cache.get("failed_execution") else "retried"
    return LABELS[type(outcome)]


def task_or_none(job: Job):
    """The job's task, to describe a run that ends before it starts; None if it won't load."""
    try:
        return task_for(job)
    except Exception:  # a task that cannot be loaded: the job ends all the same
        return None


def finished(job: Job, task) -> TaskResult | None:
    """Send task_finished; the outcome is recorded already, so a failure here changes nothing."""
    try:
        result = result_for(job, task)
    except Exception:
        logger.exception("Could not build the result of job %s", job.pk, extra=job_fields(job))
        return None
    try:
        task_finished.send(backend(), task_result=result)
    except Exception:
        logger.exception(
            "A task_finished receiver failed for job %s", job.pk, extra=job_fields(job)
        )
    return result


def stops_the_caller(error: BaseException | None) -> bool:
    """Whether a recorded failure is raised again: Ctrl-C in ``run_ready_jobs``."""
    is_main = threading.current_thread() is threading.main_thread()
    return isinstance(error, KeyboardInterrupt) and is_main


def backend():
    """The sender of the task signals (imported late: the backend sits beside the runner)."""
    from ..backend import SteadyQueueBackend

    return SteadyQueueBackend
