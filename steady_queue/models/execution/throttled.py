"""Jobs waiting for room in their rate limit window: ``ThrottledExecution``.

Out of the ready table, so that a backlog of throttled jobs holds up no other job
(no head-of-line blocking) and costs the workers nothing. Dispatchers look at a
window only when its ``next_release_at`` comes (``release_due``), and make ready as
many of its jobs as it has room for, best priority first.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

from ... import db
from ...compat import TaskResultStatus
from .. import states
from ..rate_limit import RateLimitBucket
from . import Execution

if TYPE_CHECKING:
    from ..job import Job


class ThrottledExecution(
    Execution,
    state=states.THROTTLED,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A job over its task's rate limit, waiting for room in its window."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="throttled_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    # RateLimitBucket.key of the job's window.
    bucket_key = models.CharField(max_length=64)

    class Meta:
        db_table = "steady_queue_throttled_executions"
        indexes = [
            models.Index(fields=["bucket_key", "-priority", "job"], name="sq_throttled_release"),
        ]

    @classmethod
    def create_all_from_jobs(cls, jobs: Iterable[Job]) -> None:
        rows = [
            cls(
                job=job,
                queue_name=job.queue_name,
                priority=job.priority,
                bucket_key=job.rate_limit_bucket_key,
            )
            for job in jobs
        ]
        if rows:
            cls.objects.bulk_create(rows)

    @classmethod
    def release_due(cls, batch_size: int) -> tuple[int, datetime | None]:
        """Release the waiting jobs of every window whose turn has come.

        Returns how many jobs became ready, and when the next window's turn comes
        (None: no job waits): one indexed query when nothing is due.
        """
        turns = RateLimitBucket.objects.filter(next_release_at__isnull=False)
        upcoming = list(
            turns.order_by("next_release_at").values_list("key", "next_release_at")[:batch_size]
        )
        now = timezone.now()
        done = [cls._release(key, batch_size) for key, at in upcoming if at <= now]
        if len(upcoming) == batch_size and upcoming[-1][1] <= now:
            return sum(count for count, _ in done), now  # more may be due: at once
        turns = [at for _, at in upcoming if at > now] + [at for _, at in done if at]
        return sum(count for count, _ in done), min(turns, default=None)

    @classmethod
    def release(cls, bucket_key: str, batch_size: int = 500) -> int:
        """Make ready as many jobs waiting on ``bucket_key`` as its window has room for."""
        return cls._release(bucket_key, batch_size)[0]

    @classmethod
    def _release(cls, bucket_key: str, batch_size: int) -> tuple[int, datetime | None]:
        """How many jobs became ready, and the window's next turn (None: none wait)."""
        from ..job import Job

        def release() -> tuple[int, datetime | None]:
            with db.atomic():
                due = RateLimitBucket.objects.filter(
                    key=bucket_key, next_release_at__lte=timezone.now()
                )
                # Waits for a worker admitting a run of it (a few statements): skipping
                # the locked row would have the dispatcher poll again and again meanwhile.
                bucket = due.locked(skip_locked=False).first()
                if bucket is None:
                    return 0, None  # another dispatcher released it: not due any more
                window = bucket.window(timezone.now())
                room = min(window.room(), batch_size)
                waiting = cls.objects.filter(bucket_key=bucket_key).order_by("-priority", "job")
                job_ids = list(waiting.values_list("job_id", flat=True)[: room + 1])
                chosen = job_ids[:room]
                for job_id in chosen:
                    window.take(job_id, reserve=True)
                window.save(waiting=len(job_ids) > room)
                if chosen:
                    cls.objects.filter(job_id__in=chosen).delete()
                    Job.dispatch_admitted(list(Job.objects.filter(pk__in=chosen).order_by("pk")))
                return len(chosen), bucket.next_release_at

        return db.retry_deadlocks(release)


def throttle(job: Job, until: datetime) -> None:
    """Make ``job`` (its claim just taken) wait for room in its window, from ``until``."""
    ThrottledExecution.create_all_from_jobs([job])
    # Locked (and inserted again if it was pruned since the admission found no room):
    # a throttled job always has a window that a dispatcher will look at.
    RateLimitBucket.locked_for([job], timezone.now())
    RateLimitBucket.wait_for(job.rate_limit_bucket_key, until)


def repair_forgotten(batch_size: int = 500) -> int:
    """Give a turn to windows whose jobs wait without one (a failsafe; none should).

    Run by the dispatchers' maintenance; returns how many windows it woke.
    """
    from ..job import Job

    turns = RateLimitBucket.objects.filter(next_release_at__isnull=False).values("key")
    forgotten = ThrottledExecution.objects.exclude(bucket_key__in=turns).order_by()
    job_ids = forgotten.values_list("bucket_key", "job_id")
    first_jobs = dict(reversed(list(job_ids[:batch_size])))
    if not first_jobs:
        return 0
    with db.atomic():
        jobs = Job.objects.in_bulk(list(first_jobs.values()))
        RateLimitBucket.locked_for(jobs.values(), timezone.now())
        keys = list(first_jobs)
        RateLimitBucket.objects.filter(key__in=keys, next_release_at__isnull=True).update(
            next_release_at=timezone.now()
        )
    return len(keys)
