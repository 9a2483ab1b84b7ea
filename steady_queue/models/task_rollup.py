"""Per-task counts and timings, kept by the processes that end jobs.

One row per task, queue and hour, plus one all-time row per task and queue
(``period == ALL_TIME``). Successes, the bulk, are added in batches
(``steady_queue.metrics_flush_interval``); failures, retries and cancellations, which
alerts watch and which are rare, are written in the transaction that ends the job
(``count_now``), so a killed process cannot lose them. The metrics endpoint and the
dashboard's Tasks page read a few rows per task instead of counting job rows, and
the counters survive restarts, pruning of finished jobs and add up across processes
and machines.

Durations are kept as Prometheus-style histograms: one column per bucket
(``run_le_N`` / ``wait_le_N`` count the observations in ``(BUCKETS[N-1], BUCKETS[N]]``),
beyond the last bound the rest of ``runs``. ``run`` is how long an attempt ran (its
claim to its outcome); ``wait`` is how long it waited to start once due (its
enqueue or scheduled time to its claim).
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections import defaultdict
from datetime import UTC, datetime

from django.db import IntegrityError, models
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from .. import db
from .base import QueueModel

logger = logging.getLogger("steady_queue.metrics")

#: Upper bounds of the histogram buckets, in seconds (the last bucket is +Inf).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
#: The period of the rows that hold the totals since the first job.
ALL_TIME = datetime(1970, 1, 1, tzinfo=UTC)

COUNTERS = ("succeeded", "failed", "retried", "cancelled", "discarded")
#: The counters written in the transaction that ends the job, never by the tally.
WRITTEN_AT_ONCE = frozenset(COUNTERS) - {"succeeded"}
RUN_BUCKET_FIELDS = tuple(f"run_le_{n}" for n in range(len(BUCKETS)))
WAIT_BUCKET_FIELDS = tuple(f"wait_le_{n}" for n in range(len(BUCKETS)))


class TaskRollup(QueueModel):
    task_path = models.CharField(max_length=255)
    queue_name = models.CharField(max_length=255)
    #: The start of the hour the row counts, or ALL_TIME.
    period = models.DateTimeField()
    #: Attempts that ended: succeeded + failed + retried + those cancelled while running.
    runs = models.PositiveBigIntegerField(default=0)
    succeeded = models.PositiveBigIntegerField(default=0)
    #: Failed for good (no retry left, or failed by a crash); cancelled jobs are apart.
    failed = models.PositiveBigIntegerField(default=0)
    #: Attempts that failed and were scheduled to run again.
    retried = models.PositiveBigIntegerField(default=0)
    #: Jobs cancelled (ended with JobCancelled): before they started, or while running.
    cancelled = models.PositiveBigIntegerField(default=0)
    #: Pending jobs an operator discarded (deleted) before they ran.
    discarded = models.PositiveBigIntegerField(default=0)
    run_seconds = models.FloatField(default=0.0)
    run_max = models.FloatField(default=0.0)
    wait_seconds = models.FloatField(default=0.0)
    wait_max = models.FloatField(default=0.0)

    class Meta:
        db_table = "steady_queue_task_rollups"
        constraints = [
            models.UniqueConstraint(
                fields=["task_path", "queue_name", "period"], name="sq_task_rollups_unique"
            )
        ]
        indexes = [models.Index(fields=["period"], name="sq_task_rollups_period")]

    def __str__(self) -> str:
        return f"{self.task_path} on {self.queue_name} at {self.period:%Y-%m-%d %H:00}"

    @classmethod
    def all_time(cls) -> datetime:
        """ALL_TIME as this project stores datetimes (naive under ``USE_TZ = False``)."""
        return ALL_TIME if timezone.is_aware(timezone.now()) else ALL_TIME.replace(tzinfo=None)

    def run_buckets(self) -> list[int]:
        """The observations of each run bucket, the +Inf bucket last."""
        counts = [getattr(self, name) for name in RUN_BUCKET_FIELDS]
        return [*counts, self.runs - sum(counts)]

    def wait_buckets(self) -> list[int]:
        counts = [getattr(self, name) for name in WAIT_BUCKET_FIELDS]
        return [*counts, self.runs - sum(counts)]


# Thirty bucket columns written out one by one would hide the model; they are fields
# like any other (migrations, F() updates), added with Django's own API.
for _name in (*RUN_BUCKET_FIELDS, *WAIT_BUCKET_FIELDS):
    TaskRollup.add_to_class(_name, models.PositiveBigIntegerField(default=0))


def hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


class Tally:
    """What this process observed and has not written yet: increments per row key.

    ``observe`` is called once per success, on the hot path, so it only adds to a
    dict under a lock; ``flush`` writes everything in one transaction (the heartbeat
    does, every few seconds, and a process does when it stops). A flush that fails puts
    its increments back, to be written by the next one: nothing is counted twice, and
    what a killed process had not flushed yet is lost (at most one flush interval of
    successes: the other endings are written at once, by ``count_now``).
    """

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget what was not written (a forked child: its parent writes it)."""
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str, datetime], dict[str, float]] = {}

    def observe(
        self,
        task_path: str,
        queue_name: str,
        counter: str,
        *,
        at: datetime,
        run: float | None = None,
        wait: float | None = None,
    ) -> None:
        """Count one ``counter`` (``COUNTERS``) at ``at``.

        ``run`` and ``wait`` (seconds) are given for an attempt, which counts as a run.
        """
        increments = _increments(counter, run, wait)
        with self._lock:
            for period in _periods(at):
                row = self._pending.setdefault((task_path, queue_name, period), defaultdict(int))
                _merge(row, increments)

    def flush(self) -> int:
        """Write what was observed; return how many rows it touched. Raises if it failed."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return 0
        try:
            db.retry_deadlocks(lambda: _write(pending))
        except BaseException:
            with self._lock:
                for key, increments in pending.items():
                    _merge(self._pending.setdefault(key, defaultdict(int)), increments)
            raise
        return len(pending)


def _increments(counter: str, run: float | None, wait: float | None) -> dict[str, float]:
    """What one ``counter`` adds to its rows; with ``run``, an attempt's run and wait too."""
    increments: dict[str, float] = {counter: 1}
    if run is not None:
        run, wait = max(run, 0.0), max(wait or 0.0, 0.0)
        increments.update(runs=1, run_seconds=run, wait_seconds=wait, run_max=run, wait_max=wait)
        for fields, seconds in ((RUN_BUCKET_FIELDS, run), (WAIT_BUCKET_FIELDS, wait)):
            bucket = bisect.bisect_left(BUCKETS, seconds)
            if bucket < len(BUCKETS):  # beyond the last bound: +Inf, kept as runs - sum
                increments[fields[bucket]] = 1
    return increments


def count_now(
    task_path: str,
    queue_name: str,
    counter: str,
    *,
    at: datetime,
    run: float | None = None,
    wait: float | None = None,
) -> None:
    """Count as ``Tally.observe`` does, but written now, in the caller's transaction.

    For the endings that alerts watch (``WRITTEN_AT_ONCE``): they commit or roll back
    with the job's end, so a crash after the commit loses none and a retried
    transaction counts once.
    """
    increments = _increments(counter, run, wait)
    _write({(task_path, queue_name, period): increments for period in _periods(at)})


def _periods(at: datetime) -> tuple[datetime, datetime]:
    return hour_of(at), TaskRollup.all_time()


def _merge(row: dict[str, float], increments: dict[str, float]) -> None:
    for name, value in increments.items():
        row[name] = max(row[name], value) if name in MAXIMA else row[name] + value


# Columns that keep the largest value written, where the others add.
MAXIMA = ("run_max", "wait_max")


def _write(pending: dict[tuple[str, str, datetime], dict[str, float]]) -> None:
    """Add ``pending`` to its rows, creating missing ones; one transaction, keys in order.

    The same order in every process keeps two flushes of the same rows from deadlocking.
    """
    rows = TaskRollup.objects
    with db.atomic():
        for (task_path, queue_name, period), increments in sorted(pending.items()):
            key = {"task_path": task_path, "queue_name": queue_name, "period": period}
            changes = {
                name: Greatest(F(name), value) if name in MAXIMA else F(name) + value
                for name, value in increments.items()
            }
            if rows.filter(**key).update(**changes):
                continue
            try:
                with db.atomic():  # a savepoint: another process may create it first
                    TaskRollup(**key, **increments).save(force_insert=True)
            except IntegrityError:
                rows.filter(**key).update(**changes)


def count_jobs(jobs: models.QuerySet, counter: str) -> None:
    """Count ``jobs`` (not started, about to end) as ``counter``, in the caller's transaction."""
    now = timezone.now()
    pending: dict[tuple[str, str, datetime], dict[str, float]] = {}
    groups = jobs.order_by().values_list("task_path", "queue_name").annotate(n=models.Count("pk"))
    for task_path, queue_name, count in groups:
        for period in _periods(now):
            pending[(task_path, queue_name, period)] = {counter: count}
    _write(pending)


#: The tally of this process: the processes flush it, the metrics read what was flushed.
tally = Tally()
# A child forked while the supervisor held counts would write them a second time (and
# could inherit the lock held by another thread).
os.register_at_fork(after_in_child=tally.reset)
