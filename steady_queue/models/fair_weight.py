"""Weights set at run time for fairness keys (``steady_queue.fairness.set_weight``)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from .base import QueueModel

#: ``FairWeight.task_path`` of a weight that holds for the key in every task.
ALL_TASKS = ""


class FairWeight(QueueModel):
    """A key's weight, overriding its task's ``@fair(weight=...)`` until it is cleared.

    ``task_path`` empty: the key's weight in every fair task; a task's own row beats it.
    Read when jobs are tagged as they become ready (``fair_share``).
    """

    task_path = models.CharField(max_length=255, blank=True, default=ALL_TASKS)
    key = models.CharField(max_length=255)
    weight = models.PositiveIntegerField()
    set_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "steady_queue_fair_weights"
        constraints = [
            models.UniqueConstraint(fields=["task_path", "key"], name="sq_fair_weight_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.key} x{self.weight} ({self.task_path or 'all tasks'})"
