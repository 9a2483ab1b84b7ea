from __future__ import annotations

from django.db import models
from django.utils import timezone

from .base import QueueModel
from .process_executor import Executor
from .process_prunable import Prunable
from .process_registration import Registration


class Process(Registration, Executor, Prunable, QueueModel):
    """A registered supervisor, worker, dispatcher or scheduler, kept alive by heartbeats."""

    class Kind(models.TextChoices):
        SUPERVISOR = "Supervisor"
        WORKER = "Worker"
        DISPATCHER = "Dispatcher"
        SCHEDULER = "Scheduler"

    kind = models.CharField(max_length=32, choices=Kind.choices)
    name = models.CharField(max_length=255)
    pid = models.IntegerField()
    hostname = models.CharField(max_length=255, blank=True)
    # No database constraint: children may outlive their supervisor's row for a moment.
    supervisor = models.ForeignKey(
        "self",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="supervisees",
    )
    metadata = models.JSONField(default=dict, blank=True)
    last_heartbeat_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "steady_queue_processes"
        verbose_name_plural = "processes"
        indexes = [models.Index(fields=["last_heartbeat_at"], name="sq_process_heartbeat")]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "supervisor"], name="sq_process_name_supervisor"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} (pid {self.pid})"
