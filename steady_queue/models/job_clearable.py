from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

import steady_queue


class ClearableQuerySet(models.QuerySet):
    def clear_finished_in_batches(
        self,
        *,
        batch_size: int = 500,
        finished_before: datetime | None = None,
        task_path: str | None = None,
    ) -> int:
        """Delete finished jobs older than ``clear_finished_jobs_after``, a batch at a time."""
        cutoff = finished_before or timezone.now() - steady_queue.clear_finished_jobs_after
        finished = self.filter(finished_at__lt=cutoff)
        if task_path:
            finished = finished.filter(task_path=task_path)
        deleted = 0
        while ids := list(finished.values_list("pk", flat=True)[:batch_size]):
            self.model.objects.filter(pk__in=ids).delete()
            deleted += len(ids)
        return deleted
