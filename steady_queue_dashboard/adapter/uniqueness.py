"""What a job's page says about its unique key: the key, the period, who holds it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from steady_queue.models import Job, UniqueLock
from steady_queue.task_options import uniqueness


@dataclass(frozen=True)
class Uniqueness:
    key: str
    #: The key as stored is a digest: of every argument (the default key), or of a long key.
    digest: bool
    by_arguments: bool
    #: The period the task declares now; None: one job until it ends (or not declared).
    period: timedelta | None
    #: Whether this job holds the key, and until when (None: until it ends).
    held: bool
    expires_at: datetime | None
    #: The job that holds the key instead, if another one does.
    holder_id: int | None


def uniqueness_of(job: Job) -> Uniqueness | None:
    """The unique key of ``job`` (loaded by ``find_job``), or None for a task that has none.

    One query, for a job that does not hold its key: which job does.
    """
    if not job.unique_key:
        return None
    declared = uniqueness.unique_for(job.task_path)
    lock = _own_lock(job)
    holder_id = None
    if lock is None:
        holder = UniqueLock.objects.filter(key=job.unique_lock_key).values_list("job_id")
        holder_id = next(iter(holder), (None,))[0]
    return Uniqueness(
        key=job.unique_key,
        digest=uniqueness.is_digest(job.unique_key),
        by_arguments=declared is not None and declared.key is None,
        period=declared.period if declared else None,
        held=lock is not None,
        expires_at=lock.expires_at if lock else None,
        holder_id=holder_id,
    )


def _own_lock(job: Job) -> UniqueLock | None:
    try:
        return job.unique_lock  # loaded with the job by find_job
    except UniqueLock.DoesNotExist:
        return None
