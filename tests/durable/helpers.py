"""What the durable tests share: run a job's queued work, read where it is."""

from __future__ import annotations

from steady_queue.models import Job, JobStep
from steady_queue.testing import run_ready_jobs


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
