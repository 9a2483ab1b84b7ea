"""Finished history: succeeded jobs that maintenance moved out of the jobs table.

Only with ``steady_queue.partition_finished_by = "day"`` on PostgreSQL. The table is
partitioned by range of ``finished_at``, one partition per UTC day, created and dropped
by the maintenance (``steady_queue.retention.history``): retention drops a day's
partition instead of deleting its rows one by one. The jobs table itself cannot be
partitioned (every unique index would need the partition key, and executions, labels,
run logs and steps point at ``jobs.id``), so a job moves here whole once it is done with.

A row is the job's own id and what its result and its page need, each column named and
typed as in the jobs table (the move copies them with one ``INSERT ... SELECT``, an
encrypted job's ciphertext as it is): ``get_result`` and the console's job page read
it when the id is no longer in the jobs table. Django does not manage the table (a
migration creates the partitioned parent on PostgreSQL only); the model only reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import db
from . import states
from .base import QueueManager, QueueModel

if TYPE_CHECKING:
    from .job import Job

TABLE = "steady_queue_finished_history"


class FinishedHistory(QueueModel):
    """A succeeded job as it was when it moved to history (see the module's docstring)."""

    #: The job's id in the jobs table, kept: results and links go on naming it. The
    #: table's key is (id, finished_at), as a partitioned table's must hold its key.
    id = models.BigIntegerField(_("job id"), primary_key=True)
    queue_name = models.CharField(_("queue"), max_length=255)
    task_path = models.CharField(_("task"), max_length=255)
    backend = models.CharField(_("backend"), max_length=100, default="default")
    arguments = models.JSONField(_("arguments"), default=dict)
    priority = models.SmallIntegerField(_("priority"), default=0)
    labels = models.JSONField(_("labels"), default=list, blank=True)
    attempts = models.JSONField(_("attempts"), default=list, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    return_value = models.JSONField(_("return value"), null=True, blank=True)
    batch_id = models.BigIntegerField(_("batch"), null=True, blank=True)
    workflow_run_id = models.BigIntegerField(_("workflow run"), null=True, blank=True)
    created_at = models.DateTimeField(_("enqueued at"))
    scheduled_at = models.DateTimeField(_("scheduled at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"))
    moved_at = models.DateTimeField(_("moved to history at"), default=timezone.now)

    objects = QueueManager()

    class Meta:
        managed = False
        db_table = TABLE
        verbose_name = _("finished job in history")
        verbose_name_plural = _("finished history")

    def __str__(self) -> str:
        return f"{self.task_path} #{self.pk} (history)"

    @classmethod
    def find(cls, job_id: int) -> FinishedHistory | None:
        """The history row of job ``job_id``: one query by key on PostgreSQL (where the
        table is, whatever the setting says now: history turned off stays readable);
        None elsewhere, without a query."""
        if not db.is_postgresql():
            return None
        return cls.objects.filter(pk=job_id).first()

    def as_job(self) -> Job:
        """An unsaved ``Job`` as the row was in the jobs table, finished and with no
        execution (known, so nothing is queried for it): what ``results.result_for``
        builds a TaskResult from."""
        from .job import Job

        job = Job.new(
            id=self.pk,
            queue_name=self.queue_name,
            task_path=self.task_path,
            backend=self.backend,
            arguments=self.arguments,
            priority=self.priority,
            labels=list(self.labels or []),
            attempts=list(self.attempts or []),
            metadata=dict(self.metadata or {}),
            return_value=self.return_value,
            batch_id=self.batch_id,
            workflow_run_id=self.workflow_run_id,
            created_at=self.created_at,
            scheduled_at=self.scheduled_at,
            finished_at=self.finished_at,
        )
        for relation in states.relations():
            Job._meta.get_field(relation).set_cached_value(job, None)
        return job
