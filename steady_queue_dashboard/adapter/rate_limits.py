"""Rate limit windows: their use, the jobs throttled in each, and when each next has room."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import (
    Count,
    DateTimeField,
    ExpressionWrapper,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from steady_queue.models import Job, RateLimitBucket, RateLimitSlot, ThrottledExecution
from steady_queue.task_options import rate_limits

from .job_queries import Tally, capped_count


@dataclass(frozen=True)
class RateLimitWindow:
    """One window (a task's, or a task and key's): its limit, its use now, its waiting jobs."""

    task_path: str
    key: str
    to: int
    per: timedelta
    #: Starts (and ready jobs' reservations) within the last ``per``.
    in_use: int
    throttled: int
    #: When a dispatcher next looks at the window (None: no job waits).
    next_release_at: datetime | None
    #: Whether the task still declares a limit (the numbers are the window's last).
    declared: bool

    @property
    def task_wide(self) -> bool:
        return self.key == rate_limits.WHOLE_TASK

    @property
    def full(self) -> bool:
        return self.in_use >= self.to


@dataclass(frozen=True)
class RateLimitWindows:
    rows: list[RateLimitWindow]
    total: Tally


@dataclass(frozen=True)
class JobRateLimit:
    """What a job's page says about its rate limit window."""

    key: str
    task_path: str
    #: The limit its task declares now (None: no longer declared).
    limit: rate_limits.RateLimit | None
    throttled: bool
    #: For a throttled job: when its window next has room, as the dispatchers see it.
    next_release_at: datetime | None

    @property
    def task_wide(self) -> bool:
        return self.key == rate_limits.WHOLE_TASK


def rate_limit_windows(limit: int = 200) -> RateLimitWindows:
    """The first ``limit`` windows: those where jobs wait (next due first), then by last use.

    Each part walks an index of the windows table (sq_rate_limit_release, then
    sq_rate_limit_expiry); four queries in all, however many windows are shown.
    """
    buckets = RateLimitBucket.objects.annotate(in_use=_slots_in_use(timezone.now()))
    waiting = buckets.filter(next_release_at__isnull=False).order_by("next_release_at", "key")
    rows = list(waiting[:limit])
    if len(rows) < limit:
        idle = buckets.filter(next_release_at__isnull=True).order_by("-expires_at", "key")
        rows += idle[: limit - len(rows)]
    counts = _throttled_counts([bucket.key for bucket in rows])
    return RateLimitWindows(
        rows=[_window(bucket, counts.get(bucket.key, 0)) for bucket in rows],
        total=capped_count(RateLimitBucket.objects.all()),
    )


def rate_limit_of(job: Job) -> JobRateLimit | None:
    """The rate limit window of ``job`` (loaded by ``find_job``); None if its task has none.

    One query, for a throttled job: when its window next has room.
    """
    if not job.rate_limit_key:
        return None
    throttled = job.state == ThrottledExecution.state_name
    next_release_at = None
    if throttled:
        window = RateLimitBucket.objects.filter(key=job.throttled_execution.bucket_key)
        next_release_at = window.values_list("next_release_at", flat=True).first()
    return JobRateLimit(
        key=job.rate_limit_key,
        task_path=job.task_path,
        limit=rate_limits.rate_limit_for(job.task_path),
        throttled=throttled,
        next_release_at=next_release_at,
    )


def window_keys(limit_key: str) -> QuerySet:
    """The windows (their primary keys) of every task with jobs keyed ``limit_key``."""
    return RateLimitBucket.objects.filter(limit_key=limit_key).values("key")


def _slots_in_use(now: datetime) -> Coalesce:
    # Per window, as its per differs: the slots stamped within it, from the slots index.
    since = ExpressionWrapper(Value(now) - OuterRef("per"), output_field=DateTimeField())
    slots = RateLimitSlot.objects.filter(bucket=OuterRef("pk"), started_at__gt=since)
    counted = slots.order_by().values("bucket").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted), 0)


def _throttled_counts(keys: list[str]) -> dict[str, int]:
    waiting = ThrottledExecution.objects.filter(bucket_key__in=keys).order_by()
    return dict(waiting.values("bucket_key").annotate(n=Count("pk")).values_list("bucket_key", "n"))


def _window(bucket: RateLimitBucket, throttled: int) -> RateLimitWindow:
    return RateLimitWindow(
        task_path=bucket.task_path,
        key=bucket.limit_key,
        to=bucket.to,
        per=bucket.per,
        in_use=bucket.in_use,
        throttled=throttled,
        next_release_at=bucket.next_release_at,
        declared=rate_limits.rate_limit_for(bucket.task_path) is not None,
    )
