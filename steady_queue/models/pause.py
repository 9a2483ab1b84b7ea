from __future__ import annotations

from django.db import models
from django.utils import timezone

from .base import QueueModel


class Pause(QueueModel):
    """A paused queue: workers skip it until the row is deleted."""

    queue_name = models.CharField(max_length=255, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "steady_queue_pauses"

    def __str__(self) -> str:
        return self.queue_name
