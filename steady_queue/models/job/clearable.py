from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone

import steady_queue

from ... import db


class ClearableQuerySet(models.QuerySet):
    """Delete finished jobs in short transactions (see ``steady_queue.cleanup``)."""

    def clear_finished_in_batches(
        self,
        *,
        batch_size: int = 500,
        finished_before: datetime | None = None,
        task_path: str | None = None,
    ) -> int:
        """Delete finished jobs older than ``clear_finished_jobs_after``, a batch at a time.

        Each batch is its own short transaction, so autovacuum (and replicas) keep up
        and no lock is held for long, however many jobs there are to clear.
        """
        cutoff = finished_before or timezone.now() - steady_queue.clear_finished_jobs_after
        finished = self.filter(finished_at__lt=cutoff)
        if task_path:
            finished = finished.filter(task_path=task_path)
        # Oldest first, along the finished_at index: a batch reads only the rows it
        # deletes, not the table's dead rows left by the batches before it.
        oldest = finished.order_by("finished_at").values_list("pk", flat=True)
        deleted = 0
        while ids := list(oldest[:batch_size]):
            with db.atomic():
                delete_jobs(self.model, ids)
            deleted += len(ids)
        return deleted


def delete_jobs(job_model: type[models.Model], ids: list[int]) -> None:
    """Delete the jobs ``ids`` and the rows that point at them, one statement a table.

    Django's cascading delete would first load every job (arguments, attempts, return
    value) and delete them a hundred at a time.
    """
    alias = db.alias()
    for relation in job_model._meta.related_objects:
        if relation.on_delete is models.DO_NOTHING:
            continue  # a workflow step outlives its job, for its dependents and the graph
        related = relation.related_model._base_manager.using(alias)
        related.filter(**{f"{relation.field.name}__in": ids}).delete()
    connection = db.connection()
    table = connection.ops.quote_name(job_model._meta.db_table)
    pk = connection.ops.quote_name(job_model._meta.pk.column)
    with connection.cursor() as cursor:
        marks = ", ".join(["%s"] * len(ids))
        cursor.execute(f"DELETE FROM {table} WHERE {pk} IN ({marks})", ids)
