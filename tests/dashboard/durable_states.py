"""Put jobs in the durable states as the engine records them (``steady_queue.durable``):
a step's result, a sleep (scheduled at its wake time), a wait for a signal (waiting, the
signal's name and deadline on its row). The console's tests read these states; the
engine's own tests (tests/durable/) check that running a task writes exactly these."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from steady_queue import arguments
from steady_queue.models import (
    Job,
    JobSignal,
    JobStep,
    ReadyExecution,
    ScheduledExecution,
    WaitingExecution,
)
from steady_queue.models.durable import SLEEP, STEP, WAIT

NO_DEADLINE = None


def job_of(result) -> Job:
    return Job.objects.get(pk=result.id)


def record_step(job: Job, name: str, value: Any) -> JobStep:
    stored = arguments.serialize([value], {})["args"][0]
    return JobStep.objects.create(
        job=job, kind=STEP, name=name, result=stored, completed_at=timezone.now()
    )


def waiting_for_signal(job: Job, name: str, deadline: timedelta | None = timedelta(days=7)) -> Job:
    """Move a ready job to waiting for the signal ``name`` (None: no deadline)."""
    until = timezone.now() + deadline if deadline is not None else None
    ReadyExecution.objects.filter(job=job).delete()
    WaitingExecution.objects.create(
        job=job,
        queue_name=job.queue_name,
        priority=job.priority,
        signal_name=name,
        signal_deadline=until,
    )
    JobStep.objects.create(job=job, kind=WAIT, name=name, until=until)
    return Job.objects.with_execution().get(pk=job.pk)


def sleeping(job: Job, delay: timedelta = timedelta(hours=2), number: int = 1) -> Job:
    """Move a ready job to sleeping until ``now + delay``."""
    until = timezone.now() + delay
    ReadyExecution.objects.filter(job=job).delete()
    ScheduledExecution.objects.create(
        job=job, queue_name=job.queue_name, priority=job.priority, scheduled_at=until
    )
    JobStep.objects.create(
        job=job, kind=SLEEP, name=str(number), until=until, completed_at=timezone.now()
    )
    return Job.objects.with_execution().get(pk=job.pk)


def signalled(job: Job, name: str, payload: Any) -> JobSignal:
    """A signal sent before the job waits for it (kept for its wait)."""
    return JobSignal.objects.create(job=job, name=name, payload=payload)
