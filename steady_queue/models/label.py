"""The label index: one row per label of a job, for ``Job.objects.labelled()``.

``Job.labels`` keeps a job's labels in its own row (read with the job, no join); this
table is what a label filter searches. Its primary key is ``(label, job_id)``: the
jobs of one label are one range of it, newest last, on every database (InnoDB keeps the
rows themselves in that order). A second index, on ``job_id``, serves the deletes.

Written with the job, in the same transaction, by every way a job is inserted (the
ORM's ``bulk_create`` paths call ``JobLabel.insert_for``; the storage's fast paths
write the rows in their own statements). Never changed afterwards: a retry keeps the
row and its labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import models
from django.utils.translation import gettext_lazy as _

from .. import db
from ..task_options.labels import MAX_LENGTH
from .base import QueueModel

if TYPE_CHECKING:
    from .job import Job


class LabelField(models.CharField):
    """A label's column: compared byte for byte on every database.

    MySQL's and MariaDB's default collations compare case and trailing spaces away,
    which would make ``Tenant`` and ``tenant`` one label (and one primary key); there the
    column takes the binary collation without padding. PostgreSQL and SQLite compare
    text exactly already.
    """

    def db_parameters(self, connection):
        parameters = super().db_parameters(connection)
        if (collation := db.exact_collation(connection)) is not None:
            parameters["collation"] = collation
        return parameters


class JobLabel(QueueModel):
    """One label of one job."""

    pk = models.CompositePrimaryKey("label", "job_id")
    label = LabelField(_("label"), max_length=MAX_LENGTH)
    # Deleted with its job: by Job.discard (one DELETE a table), by
    # clear_finished_in_batches (every cascading relation), by Django's cascade.
    job = models.ForeignKey("steady_queue.Job", on_delete=models.CASCADE, related_name="label_rows")

    class Meta:
        db_table = "steady_queue_job_labels"
        verbose_name = _("job label")
        verbose_name_plural = _("job labels")

    def __str__(self) -> str:
        return f"{self.label} (job {self.job_id})"

    @classmethod
    def rows_for(cls, jobs: Iterable[Job]) -> list[tuple[int, str]]:
        """``(job_id, label)`` of every label of ``jobs`` (inserted: their ids set)."""
        return [(job.pk, label) for job in jobs for label in job.labels]

    @classmethod
    def insert_for(cls, jobs: Iterable[Job]) -> None:
        """Insert the label rows of ``jobs``, just inserted; no query when none has one."""
        rows = [cls(job_id=pk, label=label) for pk, label in cls.rows_for(jobs)]
        if rows:
            cls.objects.bulk_create(rows)
