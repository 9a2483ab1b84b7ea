"""The archive: jobs a ``Retention(..., archive=True)`` rule moved out of the live tables.

One row per job, written in the transaction that deletes the job (``steady_queue.
pruning``): its task, queue, arguments, labels, attempts, its last error and when it
ended, as they were. Nothing points at it and it points at nothing (the job's id, batch
and workflow run are kept as plain numbers), so the live tables never wait on it.

``restore()`` enqueues a new job from a row through the task's own ``enqueue()`` (every
task option applies), and announces it to the audit log. ``ArchivedJob.objects.search``
is what a console searches with: task, error text, label, state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string
from django.utils.translation import gettext_lazy as _

from .. import arguments, db
from ..compat import InvalidTask, Task
from ..exceptions import CANCELLED_CLASS
from ..task_options import labels as job_labels
from .base import QueueManager, QueueModel, QueueQuerySet

if TYPE_CHECKING:
    from ..compat import TaskResult
    from .execution import FailedExecution
    from .job import Job

#: Between the labels in ``label_index``, and around them: a label is found exactly by
#: ``contains(SEPARATOR + label + SEPARATOR)`` (a control character no label uses).
SEPARATOR = "\x1f"


class ArchivedJobQuerySet(QueueQuerySet):
    def search(
        self,
        *,
        task: str | None = None,
        error: str | None = None,
        label: str | None = None,
        state: str | None = None,
        queue: str | None = None,
    ) -> ArchivedJobQuerySet:
        """The rows matching every criterion given (None or "": any), newest archived first.

        ``task``: the task's dotted path, or a part of it. ``error``: a part of the error's
        class or message (case-insensitive). ``label``: one of the job's labels, exactly.
        ``state``: the state the job was archived in (``finished``, ``failed``,
        ``cancelled``). ``queue``: the queue's name, exactly.
        """
        found = self
        if task:
            found = found.filter(task_path__icontains=task)
        if error:
            found = found.filter(
                Q(exception_class__icontains=error) | Q(error_message__icontains=error)
            )
        if label:
            found = found.filter(label_index__contains=f"{SEPARATOR}{label}{SEPARATOR}")
        if state:
            found = found.filter(state=state)
        if queue:
            found = found.filter(queue_name=queue)
        return found.order_by("-archived_at", "-pk")


class ArchivedJob(QueueModel):
    """A job as it was when a retention rule archived it (see the module's docstring)."""

    #: The id the job had in the live tables (a restored job gets a new one).
    job_id = models.BigIntegerField(_("job id"))
    queue_name = models.CharField(_("queue"), max_length=255)
    task_path = models.CharField(_("task"), max_length=255)
    backend = models.CharField(_("backend"), max_length=100, default="default")
    arguments = models.JSONField(_("arguments"), default=dict)
    priority = models.SmallIntegerField(_("priority"), default=0)
    labels = models.JSONField(_("labels"), default=list, blank=True)
    # The labels again, between SEPARATORs: what ``search(label=...)`` matches.
    label_index = models.TextField(_("label index"), blank=True, default="")
    attempts = models.JSONField(_("attempts"), default=list, blank=True)
    metadata = models.JSONField(_("metadata"), default=dict, blank=True)
    return_value = models.JSONField(_("return value"), null=True, blank=True)
    batch_id = models.BigIntegerField(_("batch"), null=True, blank=True)
    workflow_run_id = models.BigIntegerField(_("workflow run"), null=True, blank=True)
    #: The state it was archived in: states.FINISHED, states.FAILED or states.CANCELLED.
    state = models.CharField(_("state"), max_length=16)
    # Its last error (a failed or cancelled job's); empty for a finished one.
    exception_class = models.CharField(_("error class"), max_length=255, blank=True, default="")
    error_message = models.TextField(_("error message"), blank=True, default="")
    backtrace = models.TextField(_("backtrace"), blank=True, default="")
    enqueued_at = models.DateTimeField(_("enqueued at"))
    #: When it entered ``state``: finished, or failed (its last failure).
    ended_at = models.DateTimeField(_("ended at"))
    archived_at = models.DateTimeField(_("archived at"), default=timezone.now)
    #: The rule that archived it, as ``Retention.describe()`` says it.
    rule = models.CharField(_("rule"), max_length=255, blank=True, default="")
    #: The job the last ``restore()`` enqueued, and when (None: never restored).
    restored_job_id = models.BigIntegerField(_("restored as job"), null=True, blank=True)
    restored_at = models.DateTimeField(_("restored at"), null=True, blank=True)

    objects = QueueManager.from_queryset(ArchivedJobQuerySet)()

    class Meta:
        db_table = "steady_queue_archived_jobs"
        verbose_name = _("archived job")
        verbose_name_plural = _("archived jobs")
        indexes = [
            models.Index(fields=["archived_at"], name="sq_archived_at"),
            models.Index(fields=["task_path", "archived_at"], name="sq_archived_task"),
            models.Index(fields=["job_id"], name="sq_archived_job_id"),
        ]

    def __str__(self) -> str:
        return f"{self.task_path} #{self.job_id} (archived)"

    @classmethod
    def from_job(cls, job: Job, failure: FailedExecution | None, *, rule: str) -> ArchivedJob:
        """The unsaved archive row of ``job``: finished, or failed (``failure`` its row)."""
        from . import states

        state = states.FINISHED
        if failure is not None:
            cancelled = failure.exception_class == CANCELLED_CLASS
            state = states.CANCELLED if cancelled else states.FAILED
        labels = list(job.labels or [])
        return cls(
            job_id=job.pk,
            queue_name=job.queue_name,
            task_path=job.task_path,
            backend=job.backend,
            arguments=job.arguments,
            priority=job.priority,
            labels=labels,
            label_index=SEPARATOR.join(["", *labels, ""]) if labels else "",
            attempts=job.attempts or [],
            metadata=job.metadata or {},
            return_value=job.return_value,
            batch_id=job.batch_id,
            workflow_run_id=job.workflow_run_id,
            state=state,
            exception_class=failure.exception_class if failure else "",
            error_message=failure.message if failure else "",
            backtrace=failure.backtrace if failure else "",
            enqueued_at=job.created_at,
            ended_at=failure.created_at if failure else job.finished_at,
            rule=rule[:255],
        )

    @property
    def error(self) -> str:
        """Its last error in one line (``class: message``); empty for a finished job."""
        if not self.exception_class:
            return ""
        if not self.error_message:
            return self.exception_class
        return f"{self.exception_class}: {self.error_message}"

    def call(self) -> tuple[list[Any], dict[str, Any]]:
        """Its arguments as the task receives them (``DeserializationError`` if they no
        longer load)."""
        args, kwargs = arguments.deserialize(self.arguments)
        return list(args), dict(kwargs)

    def task(self) -> Task:
        """Its task as declared now (``InvalidTask`` if it is gone)."""
        try:
            task = import_string(self.task_path)
        except ImportError as exc:
            raise InvalidTask(
                f"Task {self.task_path!r} of archived job {self.job_id} cannot be imported."
            ) from exc
        if not isinstance(task, Task):
            raise InvalidTask(f"{self.task_path!r} of archived job {self.job_id} is not a Task.")
        return task

    def restore(
        self, args: Sequence[Any] | None = None, kwargs: dict[str, Any] | None = None
    ) -> TaskResult:
        """Enqueue a new job from this row; return its TaskResult.

        The same task, queue, priority, backend and labels, due now, its arguments (or
        ``args`` / ``kwargs`` given instead), through the task's ``enqueue()``: every task
        option applies, and a refused value raises as ``enqueue()`` raises it (nothing is
        written). The row stays in the archive and records the new job's id; the restore
        is announced to the audit log (``ops.audit.operation_performed``).
        """
        import dataclasses

        from ..ops import audit

        stored_args, stored_kwargs = self.call() if args is None or kwargs is None else ([], {})
        call_args = list(stored_args if args is None else args)
        call_kwargs = dict(stored_kwargs if kwargs is None else kwargs)
        task = dataclasses.replace(
            self.task(),
            queue_name=self.queue_name,
            priority=self.priority,
            backend=self.backend,
            run_after=None,
        )
        with job_labels.labels(*self.labels):
            result = task.enqueue(*call_args, **call_kwargs)
        self.restored_job_id, self.restored_at = int(result.id), timezone.now()
        with db.atomic():
            type(self).objects.filter(pk=self.pk).update(
                restored_job_id=self.restored_job_id, restored_at=self.restored_at
            )
        audit.announce(
            "restore",
            f"archived job {self.job_id}",
            message=(f"Archived job {self.job_id} ({self.task_path}) restored as job {result.id}."),
            details={
                "task": self.task_path,
                "archived": self.pk,
                "job": self.job_id,
                "after": {
                    "job": int(result.id),
                    "arguments": arguments.serialize(call_args, call_kwargs),
                },
            },
            link_to=("job-detail", str(result.id)),
            backend=self.backend,
        )
        return result
