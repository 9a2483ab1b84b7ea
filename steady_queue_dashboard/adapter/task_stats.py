"""Per-task performance from the engine's hourly rollup rows: two queries, whatever the history.

Workers add every ended attempt to ``TaskRollup`` (one row per task, queue and hour),
so this page sums a few rows per task instead of reading job rows: it stays as fast
with a million finished jobs as with none. Percentiles are estimated from the
histogram buckets the way Prometheus' ``histogram_quantile`` does (linear inside the
bucket), and never exceed the exact maximum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Max, Min, Sum
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from steady_queue.models import TaskRollup
from steady_queue.models.task_rollup import (
    BUCKETS,
    COUNTERS,
    RUN_BUCKET_FIELDS,
    WAIT_BUCKET_FIELDS,
    hour_of,
)

SPARK_HOURS = 24
# Tasks listed at most (the busiest first): a page, not a report.
SHOWN_TASKS = 200


@dataclass(frozen=True)
class Window:
    key: str
    label: str
    hours: int


WINDOWS = {
    "hour": Window("hour", pgettext_lazy("task window", "Last hour"), 1),
    "day": Window("day", pgettext_lazy("task window", "Last 24 hours"), 24),
}
DEFAULT_WINDOW = "day"


@dataclass(frozen=True)
class Timing:
    """Seconds: estimated 50th and 95th percentiles, and the exact maximum."""

    p50: float | None
    p95: float | None
    max: float | None


@dataclass
class TaskStats:
    task_path: str
    runs: int
    succeeded: int
    failed: int
    retried: int
    # Ended with JobCancelled (before or while running): neither failed nor in the rate.
    cancelled: int
    # Pending jobs an operator discarded before they ran.
    discarded: int
    # Over the span since the top of the hour of the task's first rollup in the window
    # (when the rows say it started running); None when that span is under an hour.
    runs_per_hour: float | None
    run: Timing
    wait: Timing
    # Runs in each of the last SPARK_HOURS hours, oldest first.
    hourly: list[int] = field(default_factory=list)
    # Whole minutes (at least 1) the runs were counted over, for "8 in the last 1 min".
    observed_minutes: int = 60

    @property
    def failure_rate(self) -> float | None:
        """Failed for good / ended (succeeded + failed); None before any job ended."""
        ended = self.succeeded + self.failed
        return self.failed / ended if ended else None


def window_start(window: Window, now: datetime) -> datetime:
    """The start of the first whole hour the window reads: "last hour" is since HH:00 an
    hour ago, so that it always holds at least a full hour of runs."""
    return hour_of(now) - timedelta(hours=window.hours)


def task_stats(window: Window, queue: str | None = None) -> list[TaskStats]:
    """Each task's figures over ``window`` (only ``queue`` if given), the busiest first."""
    now = timezone.now()
    start = window_start(window, now)
    rows = TaskRollup.objects.filter(period__gte=start)
    if queue:
        rows = rows.filter(queue_name=queue)
    sums = [*COUNTERS, "runs", *RUN_BUCKET_FIELDS, *WAIT_BUCKET_FIELDS]
    totals = (
        rows.order_by()
        .values("task_path")
        .annotate(
            **{name: Sum(name) for name in sums},
            run_max=Max("run_max"),
            wait_max=Max("wait_max"),
            first_period=Min("period"),
        )
        .order_by("-runs", "task_path")[:SHOWN_TASKS]
    )
    stats = [_stats(total, now) for total in totals]
    _add_sparklines(stats, now, queue)
    return stats


def _stats(total: dict, now: datetime) -> TaskStats:
    runs = total["runs"] or 0
    # Not the whole window: a task that first ran a minute ago did 8 runs in a minute,
    # not 0.3 an hour. Under an hour, a rate would extrapolate: the count is shown instead.
    observed = max((now - total["first_period"]).total_seconds(), 60.0)
    run_buckets = [total[name] or 0 for name in RUN_BUCKET_FIELDS]
    wait_buckets = [total[name] or 0 for name in WAIT_BUCKET_FIELDS]
    return TaskStats(
        task_path=total["task_path"],
        runs=runs,
        succeeded=total["succeeded"] or 0,
        failed=total["failed"] or 0,
        retried=total["retried"] or 0,
        cancelled=total["cancelled"] or 0,
        discarded=total["discarded"] or 0,
        runs_per_hour=runs / (observed / 3600) if observed >= 3600 else None,
        observed_minutes=int(observed // 60),
        run=_timing(run_buckets, runs, total["run_max"]),
        wait=_timing(wait_buckets, runs, total["wait_max"]),
    )


def _timing(buckets: list[int], count: int, maximum: float | None) -> Timing:
    if not count:
        return Timing(None, None, None)
    return Timing(
        quantile(0.5, buckets, count, maximum), quantile(0.95, buckets, count, maximum), maximum
    )


def quantile(q: float, buckets: list[int], count: int, maximum: float | None) -> float:
    """Estimate the ``q`` quantile from per-bucket counts (over BUCKETS; the rest is +Inf)."""
    rank, cumulative, lower = q * count, 0, 0.0
    for upper, in_bucket in zip(BUCKETS, buckets, strict=True):
        if in_bucket and cumulative + in_bucket >= rank:
            estimate = lower + (upper - lower) * (rank - cumulative) / in_bucket
            return min(estimate, maximum) if maximum is not None else estimate
        cumulative += in_bucket
        lower = upper
    # In the +Inf bucket: nothing bounds it but the maximum seen.
    return maximum if maximum is not None else BUCKETS[-1]


def _add_sparklines(stats: list[TaskStats], now: datetime, queue: str | None) -> None:
    if not stats:
        return
    first = hour_of(now) - timedelta(hours=SPARK_HOURS - 1)
    hours = [first + timedelta(hours=n) for n in range(SPARK_HOURS)]
    rows = TaskRollup.objects.filter(
        period__gte=first, task_path__in=[entry.task_path for entry in stats]
    )
    if queue:
        rows = rows.filter(queue_name=queue)
    per_hour: dict[tuple[str, datetime], int] = {}
    for task_path, period, runs in (
        rows.order_by().values_list("task_path", "period").annotate(total=Sum("runs"))
    ):
        per_hour[(task_path, period)] = runs
    for entry in stats:
        entry.hourly = [per_hour.get((entry.task_path, hour), 0) for hour in hours]


WINDOW_HELP = _(
    "Figures come from counts the workers write as jobs end (successes every few "
    "seconds): runs are attempts that ended; failure rate is jobs failed for good over "
    "jobs that ended (retried attempts, cancelled and discarded jobs are counted apart); "
    "durations are estimated from histogram buckets."
)
