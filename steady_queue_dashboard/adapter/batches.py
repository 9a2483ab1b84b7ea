"""Batches: each one's progress and callbacks, and the jobs it holds."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from steady_queue.models import Batch, Job

from ..group_progress import ProgressBar

CALLBACK_LABELS = {
    "on_finish": _("On finish"),
    "on_success": _("On success"),
    "on_failure": _("On failure"),
}


@dataclass(frozen=True)
class CallbackJob:
    job_id: int
    # Which finish of the batch enqueued it: a retried batch finishes again.
    finish: int


@dataclass(frozen=True)
class Callback:
    name: str
    label: str | Promise
    task_path: str
    jobs: list[CallbackJob]


@dataclass(frozen=True)
class BatchRow:
    """A batch with what its row and page show, read from its own columns (no query)."""

    batch: Batch
    bar: ProgressBar
    callbacks: list[Callback]

    @property
    def sealed(self) -> bool:
        """Whether the block enqueueing its jobs has exited (its total is known)."""
        return self.batch.total is not None


def batches() -> QuerySet:
    """Every batch; the list orders them newest first (sq_batches_created_at)."""
    return Batch.objects.all()


def batch_rows(rows: list[Batch]) -> list[BatchRow]:
    return [describe_batch(batch) for batch in rows]


def find_batch(pk: int) -> BatchRow | None:
    batch = Batch.objects.filter(pk=pk).first()
    return describe_batch(batch) if batch is not None else None


def batch_jobs(pk: int) -> QuerySet:
    """The batch's jobs with their executions, to page through by id (the batch_id index)."""
    return Job.objects.with_execution().filter(batch_id=pk)


def describe_batch(batch: Batch) -> BatchRow:
    progress = batch.progress
    bar = ProgressBar(progress.total, progress.succeeded, progress.failed)
    return BatchRow(batch, bar, callbacks_of(batch))


def callbacks_of(batch: Batch) -> list[Callback]:
    """The batch's callbacks, each with the jobs it enqueued so far."""
    enqueued = [entry for entry in batch.callback_jobs or [] if isinstance(entry, dict)]
    callbacks = []
    for name, label in CALLBACK_LABELS.items():
        spec = getattr(batch, name)
        if not spec:
            continue
        jobs = [
            CallbackJob(entry["job_id"], entry.get("finish", 1))
            for entry in enqueued
            if entry.get("callback") == name and isinstance(entry.get("job_id"), int)
        ]
        callbacks.append(Callback(name, label, spec.get("task_path", "?"), jobs))
    return callbacks
