"""What the durable tests share: run a job's queued work, read where it is."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from steady_queue.models import Job, JobStep, ScheduledExecution, WaitingExecution
from steady_queue.testing import dispatch_scheduled, release_expired_waits, run_ready_jobs


def run() -> None:
    """Run every ready job (a woken sleep or wait included) until none is left."""
    run_ready_jobs(max_jobs=100)


def job(result) -> Job:
    return Job.objects.with_execution().get(pk=result.id)


def state(result) -> str:
    return job(result).state


def records(result, kind: str | None = None) -> list[tuple[str, str]]:
    rows = JobStep.objects.filter(job_id=result.id)
    if kind:
        rows = rows.filter(kind=kind)
    return list(rows.values_list("kind", "name"))


def error_class(result) -> str:
    return job(result).failed_execution.exception_class


def wake(result) -> None:
    """Let the job's sleep end now, as its time coming would (then the dispatcher's turn)."""
    now = timezone.now()
    Job.objects.filter(pk=result.id).update(scheduled_at=now)
    ScheduledExecution.objects.filter(job_id=result.id).update(scheduled_at=now)
    JobStep.objects.filter(job_id=result.id, kind="sleep", until__gt=now).update(until=now)
    dispatch_scheduled()


def expire(result) -> None:
    """Let the job's signal wait pass its deadline now (then the dispatcher's turn)."""
    past = timezone.now() - timedelta(seconds=1)
    WaitingExecution.objects.filter(job_id=result.id).exclude(signal_name="").update(
        signal_deadline=past
    )
    JobStep.objects.filter(job_id=result.id, kind="wait", completed_at__isnull=True).update(
        until=past
    )
    release_expired_waits()
