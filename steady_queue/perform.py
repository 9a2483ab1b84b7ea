"""Run one claimed job: load its task, send the signals, call it, have the storage finish it.

A run is a generator (``performing``) that yields once, the task's ``Call``, and is sent
what the call returned (or thrown what it raised). ``perform`` drives it on one thread;
a worker's event loop (``processes.async_slots``) drives it for ``async def`` tasks:
the steps before and after the call on a helper thread, the call awaited on the loop.

How the outcome is stored (once, with the slot hand-off and a last-resort path) is the
claim's business (``ClaimedExecution.record``), written the storage's way
(``steady_queue.storage``), which may claim the thread's next job in the same
statement. Whatever is raised from anywhere in a run, the job ends with it as its
error: a run never leaves its claim behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import threading
from collections.abc import Generator
from typing import Any

from asgiref.sync import async_to_sync, iscoroutinefunction
from django.utils import timezone

import steady_queue

from . import cancellation, deadlines, storage
from .compat import TaskContext, TaskResult, normalize_json, task_finished, task_started
from .exceptions import JobCancelled, JobTimeout, RescheduleJob
from .models import ClaimedExecution, Job
from .models.attempt import error_details
from .models.claimed_finish import Failure, Reschedule, Success, Throttle
from .observability import tracing
from .observability.log import job_fields
from .results import result_for, task_for
from .task_options import timeouts

__all__ = ["Call", "error_details", "perform", "perform_then_claim", "performing"]

logger = logging.getLogger("steady_queue.perform")


def perform(claimed: ClaimedExecution) -> TaskResult | None:
    """Run the claimed job's task; return its final TaskResult, or None if it lost its claim."""
    return _perform(claimed, None)[0]


def perform_then_claim(
    claimed: ClaimedExecution, then_claim: storage.ClaimNext | None
) -> storage.Finished:
    """Run the claimed job's task; its finish claims as ``then_claim`` asks (a worker's loop)."""
    return _perform(claimed, then_claim)[1]


def _perform(
    claimed: ClaimedExecution, then_claim: storage.ClaimNext | None
) -> tuple[TaskResult | None, storage.Finished]:
    steps = performing(claimed, then_claim)
    try:
        call = next(steps)
        while True:  # once: a run yields one call
            try:
                value = call.run()
            except BaseException as exc:
                call = steps.throw(exc)
            else:
                call = steps.send(value)
    except StopIteration as ended:
        return ended.value


#: A run's steps: it yields its Call, is sent the call's return value, returns its end.
Run = Generator["Call", Any, tuple[TaskResult | None, storage.Finished]]


def performing(claimed: ClaimedExecution, then_claim: storage.ClaimNext | None = None) -> Run:
    """The steps of one run, under its span; see the module's docstring."""
    with tracing.run_span(claimed.job) as run:
        return (yield from _run(claimed, then_claim, run))


def _run(claimed: ClaimedExecution, then_claim: storage.ClaimNext | None, run: tracing.Run) -> Run:
    job, task, store = claimed.job, None, storage.for_alias()
    cancellation.forget(job.pk)
    if job.cancel_requested():
        # Cancelled while it waited: a cancel that landed as its last run failed leaves
        # it due for a retry. A cancelled job never runs again: it ends without running.
        return _end_cancelled(claimed, _task_or_none(job), run, then_claim)
    try:
        task = task_for(job)
        if (room_at := job.admit_run()) is not None:
            # Over its rate limit: not an attempt, no signals; it waits as throttled.
            finished = store.finish(claimed, Throttle(room_at), then_claim=then_claim)
            run.ended("throttled" if finished.recorded else "lost")
            return None, finished
        started = result_for(job, task)
        # Asked last, just before the start: a worker stopped anywhere before this point
        # and pruned meanwhile finds its claim gone (the earlier ends record nothing then).
        if _lost_while_waiting(claimed):
            run.ended("lost")
            return None, storage.Finished(False)
        task_started.send(_backend(), task_result=started)
        return_value = yield from _call(task, started, claimed)
    except RescheduleJob as request:
        if cancellation.seen(job.pk) or job.cancel_requested(refresh=True):
            return _end_cancelled(claimed, task, run, then_claim, request)
        # Not an attempt: nothing is recorded but the new time, and no task_finished.
        finished = store.finish(claimed, Reschedule(request.run_at), then_claim=then_claim)
        run.ended("rescheduled" if finished.recorded else "lost")
        return None, finished
    except BaseException as exc:
        run.failed(exc)
        finished = store.finish(claimed, _failure(job, exc), then_claim=then_claim)
        run.ended(_failure_outcome(job) if finished.recorded else "lost")
        if not finished.recorded or task is None:
            return None, finished  # lost the claim, or no task to describe it with
        # Sent inside the handler so that receivers can read sys.exc_info().
        result = _finished(job, task)
        if (
            isinstance(exc, KeyboardInterrupt)
            and threading.current_thread() is threading.main_thread()
        ):
            raise  # Ctrl-C in run_ready_jobs: recorded, and the caller stops
        return result, finished
    if cancellation.seen(job.pk):  # the task saw its cancellation, and returned
        return _end_cancelled(claimed, task, run, then_claim)
    finished = store.finish(claimed, Success(return_value), then_claim=then_claim)
    run.ended("succeeded" if finished.recorded else "lost")
    return (_finished(job, task) if finished.recorded else None), finished


def _lost_while_waiting(claimed: ClaimedExecution) -> bool:
    """Whether a claim that waited long to start was taken from its process meanwhile.

    A worker process stopped (SIGSTOP, a VM paused) between its claim and the run's
    start for longer than the alive threshold is pruned and its jobs failed; resumed, it
    must not run them after all. Only a claim older than half the threshold costs the
    query that asks; the others cannot have been pruned yet.
    """
    if claimed.process_id is None:
        return False  # an in-process run: nothing prunes it
    waited = timezone.now() - claimed.created_at
    if waited < steady_queue.process_alive_threshold / 2:
        return False
    mine = ClaimedExecution.objects.filter(job_id=claimed.job_id, process_id=claimed.process_id)
    return not mine.exists()


def _end_cancelled(
    claimed: ClaimedExecution,
    task,
    run: tracing.Run,
    then_claim: storage.ClaimNext | None,
    cause: BaseException | None = None,
) -> tuple[TaskResult | None, storage.Finished]:
    """End a run that returned (or asked to be rescheduled) after its job was cancelled."""
    exc = JobCancelled(f"Job {claimed.job_id} was cancelled")
    exc.__cause__ = cause
    run.failed(exc)
    failure = Failure(exc, final=True)
    finished = storage.for_alias().finish(claimed, failure, then_claim=then_claim)
    run.ended("failed" if finished.recorded else "lost")
    recorded = finished.recorded and task is not None
    return (_finished(claimed.job, task) if recorded else None), finished


def _task_or_none(job: Job):
    try:
        return task_for(job)
    except Exception:  # a task that cannot be loaded: the job ends all the same
        return None


def _failure(job: Job, exc: BaseException) -> Failure:
    """The failure a run ends with: a cancelled job's is ``JobCancelled``, for good.

    Only a failing run asks the database whether its job was cancelled (a success
    costs nothing more); what the task raised becomes the cause, with its traceback.
    """
    if isinstance(exc, JobCancelled):
        return Failure(exc, final=True)
    if cancellation.seen(job.pk) or job.cancel_requested(refresh=True):
        cancelled = JobCancelled(f"Job {job.pk} was cancelled")
        cancelled.__cause__ = exc
        return Failure(cancelled, final=True)
    return Failure(exc)


def _failure_outcome(job: Job) -> str:
    # A failure that is final leaves the job its failed execution; a retry, none.
    return "failed" if job._state.fields_cache.get("failed_execution") else "retried"


@dataclasses.dataclass
class Call:
    """The call of a run's task: what a driver of ``performing`` calls, or awaits."""

    claimed: ClaimedExecution
    task: Any  # the Task
    args: list
    kwargs: dict
    seconds: float | None  # its timeout

    @property
    def is_async(self) -> bool:
        return iscoroutinefunction(self.task.func)

    def coroutine(self):
        """The task's coroutine (an ``async def`` task), to await on a loop."""
        return self.task.func(*self.args, **self.kwargs)

    def run(self):
        """Call the task on this thread, under its deadline (an async task on a loop of its own)."""
        if self.is_async:
            if self.seconds is None:
                call = functools.partial(self.task.call, *self.args, **self.kwargs)
            else:
                bounded = async_to_sync(with_timeout)
                job_id = self.claimed.job_id
                call = functools.partial(bounded, self.coroutine(), self.seconds, job_id)
            return deadlines.call_with_deadline(
                self.claimed, self.seconds, call, end_job=end_stuck, interruptible=False
            )
        call = functools.partial(self.task.call, *self.args, **self.kwargs)
        return deadlines.call_with_deadline(self.claimed, self.seconds, call, end_job=end_stuck)


def end_stuck(claimed: ClaimedExecution, error: BaseException, final: bool) -> bool:
    """End the job of a run that did not stop when interrupted (``deadlines.EndJob``)."""
    return storage.for_alias().finish(claimed, Failure(error, final=final)).recorded


def _call(task, result: TaskResult, claimed: ClaimedExecution) -> Generator[Call, Any, Any]:
    from . import arguments

    job = claimed.job
    args, kwargs = arguments.deserialize(job.arguments)
    if task.takes_context:
        args = [TaskContext(task_result=result), *args]
    seconds = timeouts.seconds_for(job.task_path)
    return_value = yield Call(claimed, task, list(args), kwargs, seconds)
    return_value = normalize_json(return_value)
    # NaN and infinities pass normalize_json but no database stores them as JSON:
    # refuse them here so the job fails (under its retry policy) like any task error.
    json.dumps(return_value, allow_nan=False)
    return return_value


async def with_timeout(coroutine, seconds: float, job_id: int):
    """Await an async task's ``coroutine``, cancelled (JobTimeout) once ``seconds`` have passed."""
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            return await coroutine
    except TimeoutError as exc:
        if not scope.expired():
            raise  # the task's own TimeoutError, not its timeout
        raise JobTimeout(f"Job {job_id} ran past its timeout of {seconds:g} s") from exc


def _finished(job: Job, task) -> TaskResult | None:
    """Send task_finished; the outcome is recorded already, so a failure here changes nothing."""
    try:
        result = result_for(job, task)
    except Exception:
        logger.exception("Could not build the result of job %s", job.pk, extra=job_fields(job))
        return None
    try:
        task_finished.send(_backend(), task_result=result)
    except Exception:
        logger.exception(
            "A task_finished receiver failed for job %s", job.pk, extra=job_fields(job)
        )
    return result


def _backend():
    from .backend import SteadyQueueBackend

    return SteadyQueueBackend
