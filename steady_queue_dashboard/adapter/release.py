"""Release blocked jobs in bulk, through the engine's one-job release."""

from __future__ import annotations

from django.db.models import QuerySet

from steady_queue.exceptions import JobStateError


def release_all(queryset: QuerySet, batch_size: int = 500) -> int:
    """Release every blocked job of ``queryset``; return how many were released.

    The engine releases one job at a time (each under its lock); a job that left
    the blocked state meanwhile is skipped, not an error.
    """
    released = 0
    ids = list(queryset.filter(blocked_execution__isnull=False).values_list("pk", flat=True))
    for start in range(0, len(ids), batch_size):
        for job in queryset.model.objects.filter(pk__in=ids[start : start + batch_size]):
            try:
                job.release()
            except JobStateError:
                continue
            released += 1
    return released
