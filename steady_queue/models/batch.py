"""Batches: jobs enqueued together, and callbacks once every one of them has ended.

A job of a batch carries ``batch_id``. Each end of such a job (a success; a failure for
good, cancellation and discard included) adds one to its batch's ``succeeded`` or
``failed`` in the transaction that ends the job, then reads the counts back with the
batch's row locked: the end that brings them up to ``total`` marks the batch finished
and enqueues its callbacks, in that same transaction. The row lock puts concurrent ends
one after the other, and the callbacks commit or roll back with the end that finished
the batch, so they are enqueued exactly once, whatever crashes. That is two statements
per ended job whatever the batch's size: nothing ever counts the batch's jobs.

Retrying a failed job of a batch takes it off ``failed`` and reopens the batch; when
the batch finishes again, the callbacks of that new finish are enqueued (``on_finish``
and ``on_success`` or ``on_failure``): ``finishes`` counts the finishes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NamedTuple

from django.db import models
from django.db.models import F
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

from .. import arguments
from .base import QueueModel

logger = logging.getLogger("steady_queue.batches")

CALLBACKS = ("on_finish", "on_success", "on_failure")


class Progress(NamedTuple):
    """Where a batch stands: how many jobs, and how many of them succeeded or failed."""

    total: int
    succeeded: int
    failed: int

    @property
    def pending(self) -> int:
        return self.total - self.succeeded - self.failed


class Batch(QueueModel):
    """Jobs enqueued in one ``steady_queue.batches.batch()`` block, counted as they end."""

    description = models.CharField(_("description"), max_length=255, blank=True)
    backend = models.CharField(_("backend"), max_length=100, default="default")
    # None until the block enqueueing the jobs exits: the batch cannot finish before.
    total = models.IntegerField(_("jobs"), null=True)
    succeeded = models.IntegerField(_("succeeded"), default=0)
    failed = models.IntegerField(_("failed"), default=0)
    # Each callback's task as {"task_path", "queue_name", "priority"}; None: no callback.
    on_finish = models.JSONField(_("on finish"), null=True, blank=True)
    on_success = models.JSONField(_("on success"), null=True, blank=True)
    on_failure = models.JSONField(_("on failure"), null=True, blank=True)
    # Every callback job enqueued: {"callback": "on_finish", "job_id": 12, "finish": 1}.
    callback_jobs = models.JSONField(_("callback jobs"), default=list, blank=True)
    finishes = models.IntegerField(_("finishes"), default=0)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        db_table = "steady_queue_batches"
        verbose_name = _("batch")
        verbose_name_plural = _("batches")
        indexes = [models.Index(fields=["created_at"], name="sq_batches_created_at")]

    def __str__(self) -> str:
        return self.description or f"batch {self.pk}"

    @property
    def progress(self) -> Progress:
        return Progress(self.total or 0, self.succeeded, self.failed)

    @property
    def is_finished(self) -> bool:
        return self.finished_at is not None

    @property
    def is_complete(self) -> bool:
        """Whether every job has ended (the block has exited and nothing is pending)."""
        return self.total is not None and self.succeeded + self.failed >= self.total

    def seal(self, total: int) -> None:
        """Fix the number of jobs as the enqueueing block exits (in its transaction)."""
        self.total = total
        self.save(update_fields=["total", "updated_at"])
        if self.is_complete:  # no job at all, or every job already ran (in-process tests)
            self._finish()

    def _finish(self) -> None:
        """Mark the batch finished and enqueue the callbacks of this finish (row locked)."""
        from .job import Job

        self.finishes += 1
        names = ["on_finish", "on_success" if self.failed == 0 else "on_failure"]
        calls = [(name, getattr(self, name)) for name in names if getattr(self, name)]
        jobs = Job.enqueue_all([callback_job(spec, self) for _, spec in calls])
        self.callback_jobs = [
            *self.callback_jobs,
            *(
                {"callback": name, "job_id": job.pk, "finish": self.finishes}
                for (name, _), job in zip(calls, jobs, strict=True)
            ),
        ]
        self.finished_at = timezone.now()
        self.save(update_fields=["finishes", "callback_jobs", "finished_at", "updated_at"])


def callback_spec(task) -> dict[str, Any]:
    """How a callback task is kept: enough to enqueue it later, from any process."""
    return {"task_path": task.module_path, "queue_name": task.queue_name, "priority": task.priority}


def callback_job(spec: Mapping[str, Any], batch: Batch):
    """The unsaved job of a callback: its task called with the batch's id."""
    from .job import Job

    try:
        task = import_string(spec["task_path"]).using(
            queue_name=spec["queue_name"], priority=spec["priority"]
        )
    except Exception:
        # Gone since the batch was opened (renamed, removed): the job still exists and
        # fails when it runs, saying so, rather than the batch never calling back.
        logger.exception("Could not load the callback %s of %s", spec["task_path"], batch)
        return Job.new(
            queue_name=spec["queue_name"],
            task_path=spec["task_path"],
            backend=batch.backend,
            arguments=arguments.serialize((batch.pk,), {}),
            priority=spec["priority"],
        )
    return Job.for_task_call(task, (batch.pk,), {}, backend=batch.backend)


def count_ends(ends: Mapping[int, tuple[int, int]]) -> None:
    """Add ended jobs to their batches: ``{batch_id: (succeeded, failed)}``.

    Runs in the transaction that ends the jobs; batches in id order, so that two
    transactions ending jobs of the same batches never wait for each other in a circle.
    """
    for batch_id in sorted(ends):
        succeeded, failed = ends[batch_id]
        Batch.objects.filter(pk=batch_id).update(
            succeeded=F("succeeded") + succeeded,
            failed=F("failed") + failed,
            updated_at=timezone.now(),
        )
        # A locking read: the newest counts, whatever the isolation level (MySQL's
        # REPEATABLE READ would show a plain read its snapshot).
        batch = Batch.objects.filter(pk=batch_id).locked(skip_locked=False).first()
        if batch is not None and batch.is_complete and not batch.is_finished:
            batch._finish()


def reopen(retried: Mapping[int, int]) -> None:
    """Take retried failed jobs off their batches' ``failed``: ``{batch_id: count}``."""
    for batch_id in sorted(retried):
        Batch.objects.filter(pk=batch_id).update(
            failed=F("failed") - retried[batch_id], finished_at=None, updated_at=timezone.now()
        )
