"""The durable calls of a running task (``steady_queue.durable``, their public face).

Each call reads the job's records once per run (``durable_run``) and writes its own in
autocommit, or ends the run with a ``SuspendRun`` the runner turns into its outcome
(``Sleep``, ``WaitForSignal``). The records and every change of a job's state are the
models' (``models.durable``, the outcomes); ``send_signal`` is only their caller.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from .. import arguments
from ..compat import TaskContext, TaskResult
from ..exceptions import AwaitSignal, DurableSleep, DurableStepError, SignalTimeout
from . import durable_run

__all__ = ["send_signal", "sleep", "step", "wait_for_signal"]


def step[T](context: TaskContext, name: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` once for this job and return its value; later runs return the stored value.

    The value is stored as task arguments are (``steady_queue.arguments``), right after
    ``fn`` returns, in autocommit (inside a transaction you opened on the queue
    database, when it commits). A value that cannot be stored raises DurableStepError
    (the run fails with it, nothing recorded); so does a name used twice in one run. A
    crash after ``fn`` returned and before its record was written runs ``fn`` again on
    the next run: the body is at least once, the record exactly once.
    """
    from ..models.attempt import refused_text
    from ..models.durable import STEP, JobStep, checked_name

    job_id, name = _job_id(context), checked_name(name, "step")
    run = durable_run.of(job_id)
    run.use(STEP, name, "The step")
    record = run.record(STEP, name)
    if record is not None:
        return arguments.deserialize({"args": [record.result]})[0][0]
    value = fn()
    try:
        stored = arguments.serialize([value], {})["args"][0]
    except arguments.SerializationError as exc:
        raise DurableStepError(
            f"The step {name!r} returned a value it cannot store: {exc}"
        ) from exc
    if refused := refused_text(stored):
        raise DurableStepError(f"The step {name!r} returned a value with {refused}.")
    now = timezone.now()
    run.remember(
        JobStep.objects.create(
            job_id=job_id, kind=STEP, name=name, result=stored, created_at=now, completed_at=now
        )
    )
    return value


def sleep(context: TaskContext, delay: timedelta | datetime) -> None:
    """End this run and resume the job after ``delay`` (or at an aware datetime).

    The job is scheduled for then, holding no worker, claim or concurrency slot; its
    next run skips the recorded steps and this sleep returns at once (as it does once
    the job was woken early, by an operator's "run now"). A delay of 0 or less goes on
    at once and records nothing. Not an attempt. Nothing after this call runs.
    """
    from ..models.durable import SLEEP

    job_id = _job_id(context)
    if isinstance(delay, timedelta):
        wake = timezone.now() + delay
    elif isinstance(delay, datetime) and timezone.is_aware(delay):
        wake = delay
    else:
        raise TypeError("sleep() needs a timedelta or an aware datetime.")
    run = durable_run.of(job_id)
    run.sleeps += 1
    if run.record(SLEEP, str(run.sleeps)) is not None or wake <= timezone.now():
        return
    raise DurableSleep(wake, run.sleeps)


def wait_for_signal(context: TaskContext, name: str, timeout: timedelta | None = None) -> Any:
    """The payload of the signal ``name``: at once if it came, else after this run ends.

    Not sent yet: the run ends (not an attempt) and the job waits, in the ``waiting``
    state, without a worker, claim or concurrency slot, until ``send_signal`` or
    ``timeout`` after this wait first began; then it runs again and this call returns
    the payload, or raises ``SignalTimeout`` (which the task may catch). Every later
    run of the job returns (or raises) the same here. A name waited for twice in one
    run raises DurableStepError.
    """
    from ..models.durable import WAIT, JobSignal, checked_name, end_wait

    job_id, name = _job_id(context), checked_name(name, "signal")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError("wait_for_signal() needs a timedelta timeout, or None.")
    run = durable_run.of(job_id)
    run.use(WAIT, name, "The signal")
    record = run.record(WAIT, name)
    if record is None or record.completed_at is None:
        deadline = record.until if record is not None else None
        if record is None and timeout is not None:
            deadline = timezone.now() + timeout
        sent = JobSignal.objects.filter(job_id=job_id, name=name).exists()
        if not sent and (deadline is None or deadline > timezone.now()):
            raise AwaitSignal(name, deadline, new=record is None)
        record = end_wait(job_id, name, deadline, record)
        if record is None:  # cannot be: the signal stays and the deadline passed
            raise AwaitSignal(name, deadline, new=False)
        run.remember(record)
    if record.timed_out:
        raise SignalTimeout(f"The signal {name!r} did not come in time.", name=name)
    return record.result["payload"]


def send_signal(result_or_job_id: TaskResult | int | str, name: str, payload: Any = None) -> None:
    """Send the signal ``name`` with ``payload`` to a job (a TaskResult, or a job's id).

    Kept for the job's ``wait_for_signal(context, name)``, which it wakes if it waits
    now. ``payload`` is JSON, at most 64 KB (else DurableStepError, nothing written).
    Raises SignalNotDeliverable, nothing written, if the job does not exist or has
    ended (finished, failed, cancelled), already got a signal of this name, or its
    wait for it is over (delivered or timed out). Any job that has not ended may get
    a signal: it is kept until the job waits for it.
    """
    from ..models.durable import checked_name, checked_payload, send

    job_id = _signalled_job_id(result_or_job_id)
    send(job_id, checked_name(name, "signal"), checked_payload(payload))


def _job_id(context: TaskContext) -> int:
    return int(context.task_result.id)


def _signalled_job_id(target: TaskResult | int | str) -> int:
    if isinstance(target, TaskResult):
        target = target.id
    if isinstance(target, bool) or not isinstance(target, int | str):
        raise TypeError(f"send_signal() needs a TaskResult or a job id, not {target!r}.")
    try:
        return int(target)
    except ValueError:
        raise TypeError(f"send_signal() needs a TaskResult or a job id, not {target!r}.") from None
