"""Per-task counts and timings, kept by the processes that end jobs.

One row per task, queue and hour, plus one all-time row per task and queue
(``period == ALL_TIME``). Processes add to them in batches (``steady_queue.rollup``),
so the metrics endpoint and the dashboard's Tasks page read a few rows per task
instead of counting job rows, and the counters survive restarts, pruning of
finished jobs and add up across processes and machines.

Durations are kept as Prometheus-style histograms: one column per bucket
(``run_le_N`` / ``wait_le_N`` count the observations in ``(BUCKETS[N-1], BUCKETS[N]]``),
beyond the last bound the rest of ``runs``. ``run`` is how long an attempt ran (its
claim to its outcome); ``wait`` is how long it waited to start once due (its
enqueue or scheduled time to its claim).
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.db import models

from .base import QueueModel

#: Upper bounds of the histogram buckets, in seconds (the last bucket is +Inf).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0)
#: The period of the rows that hold the totals since the first job.
ALL_TIME = datetime(1970, 1, 1, tzinfo=UTC)

COUNTERS = ("succeeded", "failed", "retried", "cancelled")
RUN_BUCKET_FIELDS = tuple(f"run_le_{n}" for n in range(len(BUCKETS)))
WAIT_BUCKET_FIELDS = tuple(f"wait_le_{n}" for n in range(len(BUCKETS)))


class TaskRollup(QueueModel):
    task_path = models.CharField(max_length=255)
    queue_name = models.CharField(max_length=255)
    #: The start of the hour the row counts, or ALL_TIME.
    period = models.DateTimeField()
    #: Attempts that ended: succeeded + failed + retried.
    runs = models.PositiveBigIntegerField(default=0)
    succeeded = models.PositiveBigIntegerField(default=0)
    #: Failed for good (no retry left, or failed by a crash or an operator).
    failed = models.PositiveBigIntegerField(default=0)
    #: Attempts that failed and were scheduled to run again.
    retried = models.PositiveBigIntegerField(default=0)
    #: Pending jobs an operator discarded before they ran.
    cancelled = models.PositiveBigIntegerField(default=0)
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
