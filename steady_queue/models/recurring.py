from __future__ import annotations

from django.db import models
from django.utils import timezone as dj_timezone

from .base import QueueManager, QueueModel
from .recurring_schedulable import RecurringTaskQuerySet, Schedulable


class RecurringTask(Schedulable, QueueModel):
    """A task enqueued on a cron schedule by the scheduler."""

    key = models.CharField(max_length=255, unique=True)
    schedule = models.CharField(max_length=255)
    task_path = models.CharField(max_length=255)
    arguments = models.JSONField(default=dict, blank=True)
    queue_name = models.CharField(max_length=255, blank=True)
    priority = models.SmallIntegerField(null=True, blank=True)
    description = models.TextField(blank=True)
    # Declared in code (True) rather than created at run time (``recurring_task.schedule``).
    static = models.BooleanField(default=True)
    # The IANA zone the cron fields are read in; "" for settings.TIME_ZONE.
    timezone = models.CharField(max_length=64, blank=True, default="")
    enabled = models.BooleanField(default=True)
    # Runs missed while no scheduler was up are enqueued when no older than this.
    catch_up_window = models.DurationField(null=True, blank=True)
    # The due time of the latest run a scheduler enqueued. Catch-up starts after it, and no
    # run at or before it is enqueued again, even once cleanup deleted the runs' rows.
    last_enqueued_run_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=dj_timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = QueueManager.from_queryset(RecurringTaskQuerySet)()

    class Meta:
        db_table = "steady_queue_recurring_tasks"
        indexes = [models.Index(fields=["static"], name="sq_recurring_static")]

    def __str__(self) -> str:
        return self.key

    @property
    def dynamic(self) -> bool:
        """Made at run time (editable, deletable) rather than declared with ``@recurring``."""
        return not self.static


class RecurringExecution(QueueModel):
    """One run of a recurring task; unique per (task_key, run_at) across schedulers."""

    job = models.OneToOneField(
        "steady_queue.Job", on_delete=models.CASCADE, related_name="recurring_execution"
    )
    task_key = models.CharField(max_length=255)
    run_at = models.DateTimeField()
    created_at = models.DateTimeField(default=dj_timezone.now)

    class Meta:
        db_table = "steady_queue_recurring_executions"
        constraints = [
            models.UniqueConstraint(fields=["task_key", "run_at"], name="sq_recurring_once_per_run")
        ]

    def __str__(self) -> str:
        return f"{self.task_key} @ {self.run_at:%Y-%m-%d %H:%M:%S}"
