"""Run one claimed job: ask the models whether it may start, call it, finish it once.

A run is a generator (``performing``) that yields once, the task's ``Call``, and is sent
what the call returned (or thrown what it raised). ``perform`` drives it on one thread;
a worker's event loop (``processes.async_slots``) drives it for ``async def`` tasks:
the steps before and after the call on a helper thread, the call awaited on the loop.

Whether it starts is the models' answer (``Job.cancelled_run``, ``paused_run``,
``admit_or_throttle``, ``ClaimedExecution.start_unless_lost``); how it ends is one ``Outcome``,
recorded once by the claim (``ClaimedExecution.record``) the storage's way (``storage.finish``,
which may claim the thread's next job in the same statement). Whatever is raised from
anywhere in a run, the job ends with it as its error: a run never leaves its claim.
"""

from __future__ import annotations

from functools import partial

from .. import storage
from ..compat import TaskResult, task_started
from ..models import ClaimedExecution
from ..models.attempt import error_details
from ..models.execution.claimed_finish import Failure, Outcome, Success
from ..observability import tracing
from ..results import result_for, task_for
from . import calling, cancellation, durable_run, ending
from .calling import Call, Run

__all__ = ["Call", "error_details", "perform", "perform_then_claim", "performing"]

Ended = tuple[TaskResult | None, storage.Finished]


def perform(claimed: ClaimedExecution) -> TaskResult | None:
    """Run the claimed job's task; return its final TaskResult, or None if it lost its claim."""
    return calling.drive(performing(claimed))[0]


def perform_then_claim(
    claimed: ClaimedExecution, then_claim: storage.ClaimNext | None
) -> storage.Finished:
    """Run the claimed job's task; its finish claims as ``then_claim`` asks (a worker's loop)."""
    return calling.drive(performing(claimed, then_claim))[1]


def performing(claimed: ClaimedExecution, then_claim: storage.ClaimNext | None = None) -> Run:
    """The steps of one run, under its span; see the module's docstring."""
    job, task, outcome = claimed.job, None, None
    with tracing.run_span(job) as span:
        cancellation.forget(job.pk)
        try:
            # Cancelled while it waited (a cancel that landed as its last run failed
            # leaves it due for a retry): a cancelled job never runs again.
            if (outcome := job.cancelled_run()) is not None:
                task = ending.task_or_none(job)
            else:
                task = task_for(job)
                outcome = job.paused_run() or job.admit_or_throttle()  # paused: takes no room
            if outcome is None:
                started = result_for(job, task)
                # Asked as it starts: a worker pruned while stopped before starts nothing.
                start = partial(task_started.send, ending.backend(), task_result=started)
                if not claimed.start_unless_lost(start):
                    return _end(claimed, task, None, then_claim, span)
                value = yield from calling.call(task, started, claimed)
                # The task saw its cancellation, and returned: it ends cancelled.
                outcome = job.cancelled_run(seen=cancellation.seen(job.pk)) or Success(value)
        except BaseException as exc:
            error = None if isinstance(exc, ending.RUN_AGAIN) else exc  # asked to run again
            # Ended inside the handler so that task_finished's receivers see sys.exc_info().
            return _end(claimed, task, ending.outcome_of(job, exc), then_claim, span, error)
        return _end(claimed, task, outcome, then_claim, span)


def _end(
    claimed: ClaimedExecution,
    task,
    outcome: Outcome | None,
    then_claim: storage.ClaimNext | None,
    span: tracing.Run,
    error: BaseException | None = None,
) -> Ended:
    """Have the storage record ``outcome`` (None: the claim was lost), then tell who listens.

    ``error``: what the task raised. Only an attempt sends task_finished, once recorded.
    """
    if isinstance(outcome, Failure):
        span.failed(outcome.exc if error is None else error)
    durable_run.forget(claimed.job_id)  # every run ends here: its durable calls are over
    if outcome is None:
        finished = storage.Finished(False)
    else:
        finished = storage.for_alias().finish(claimed, outcome, then_claim=then_claim)
    span.ended(ending.label(outcome, claimed.job) if finished.recorded else "lost")
    if not (finished.recorded and outcome.is_attempt and task is not None):
        return None, finished
    result = ending.finished(claimed.job, task)
    if ending.stops_the_caller(error):
        raise error  # Ctrl-C in run_ready_jobs: recorded, and the caller stops
    return result, finished
