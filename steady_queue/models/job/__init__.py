from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Value
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ... import arguments
from ...compat import InvalidTask
from ...task_options import concurrency, fairness, rate_limits, uniqueness
from ...task_options.labels import labels_for
from .. import states
from ..base import QueueManager, QueueModel, QueueQuerySet
from .annotated import Annotated
from .cancellation import Cancellable, CancellableQuerySet
from .clearable import ClearableQuerySet
from .durable import DurableJob, DurableQuerySet
from .editable import EditableJob
from .executable import Executable
from .labelled import LabelledQuerySet
from .operations import Operations, OperationsQuerySet
from .retryable import Retryable, RetryableQuerySet


class JobQuerySet(
    RetryableQuerySet,
    OperationsQuerySet,
    CancellableQuerySet,
    ClearableQuerySet,
    LabelledQuerySet,
    DurableQuerySet,
    QueueQuerySet,
):
    """``Job.objects``: the operations API on any queryset of jobs (``retry_all()``,
    ``discard_all()``, ``dispatch_all_now()``, ``release_all()``, ``cancel_all()``,
    ``clear_finished_in_batches()``), each in batches with a bounded number of queries,
    and ``labelled(all=..., any=...)``, the label filter.
    """

    def finished(self) -> JobQuerySet:
        """Jobs that succeeded (their ``finished_at`` is set)."""
        return self.filter(finished_at__isnull=False)

    def pending(self) -> JobQuerySet:
        """Jobs that have not succeeded: queued, running or failed."""
        return self.filter(finished_at__isnull=True)

    def with_execution(self) -> JobQuerySet:
        """Load each job's execution (and claiming process) in the same query."""
        return self.select_related(*states.relations(), "claimed_execution__process")


class Job(
    EditableJob, Retryable, Operations, Cancellable, Executable, Annotated, DurableJob, QueueModel
):
    """One task invocation, kept as a single row for its whole life."""

    queue_name = models.CharField(_("queue"), max_length=255)
    task_path = models.CharField(_("task"), max_length=255)
    backend = models.CharField(_("backend"), max_length=100, default="default")
    # Serialized form (steady_queue.arguments): {"args": [...], "kwargs": {...}}.
    arguments = models.JSONField(_("arguments"), default=dict)
    priority = models.SmallIntegerField(_("priority"), default=0)
    scheduled_at = models.DateTimeField(_("scheduled at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    concurrency_key = models.CharField(_("concurrency key"), max_length=255, blank=True)
    # The key of a @unique task's job (task_options.uniqueness); a digest when long. The
    # database's default too: rows inserted by SQL of their own (bulk loads) need none.
    unique_key = models.CharField(
        _("unique key"), max_length=255, blank=True, default="", db_default=""
    )
    # The window of a @rate_limit task's job (task_options.rate_limits): its key, "*" for
    # the task's one window, a digest when long; empty for a task without a limit. The
    # database's default too, as for unique_key (rows bulk-loaded by SQL of their own).
    rate_limit_key = models.CharField(
        _("rate limit key"), max_length=255, blank=True, default="", db_default=""
    )
    # The tenant of a @fair task's job (task_options.fairness): its key, a digest when
    # long; empty for a task without @fair. Kept across retries; copied to its ready row.
    fairness_key = models.CharField(
        _("fairness key"), max_length=255, blank=True, default="", db_default=""
    )
    # The batch (steady_queue.batches) and workflow run (steady_queue.workflows) the job
    # belongs to. No database constraint: a job's end counts in its group, and deleting
    # either row never waits on the other.
    batch = models.ForeignKey(
        "steady_queue.Batch",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="jobs",
    )
    workflow_run = models.ForeignKey(
        "steady_queue.WorkflowRun",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        null=True,
        blank=True,
        related_name="jobs",
    )
    return_value = models.JSONField(_("return value"), null=True, blank=True)
    # One entry per finished attempt: worker_id, started_at, finished_at, error.
    attempts = models.JSONField(_("attempts"), default=list, blank=True)
    # Reported from inside the task: {"current": int, "total": int, "message": str}.
    progress = models.JSONField(_("progress"), null=True, blank=True)
    # The W3C trace context of the span that enqueued the job (steady_queue.observability.tracing).
    trace_context = models.JSONField(_("trace context"), null=True, blank=True)
    # When someone asked to cancel the job (Job.cancel()); it ends as cancelled.
    cancel_requested_at = models.DateTimeField(_("cancel requested at"), null=True, blank=True)
    # The job's labels (steady_queue.labels), in order; JobLabel indexes them for
    # labelled(). The database's default too, for rows bulk-loaded by SQL of their own.
    labels = models.JSONField(
        _("labels"), default=list, blank=True, db_default=Value([], models.JSONField())
    )
    # What the running task stored with steady_queue.context.set_metadata: a JSON object.
    metadata = models.JSONField(
        _("metadata"), default=dict, blank=True, db_default=Value({}, models.JSONField())
    )
    created_at = models.DateTimeField(_("enqueued at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    objects = QueueManager.from_queryset(JobQuerySet)()

    class Meta:
        db_table = "steady_queue_jobs"
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        indexes = [
            models.Index(fields=["finished_at"], name="sq_jobs_finished_at"),
            models.Index(fields=["queue_name", "finished_at"], name="sq_jobs_for_filtering"),
            models.Index(fields=["task_path", "finished_at"], name="sq_jobs_task_path"),
            models.Index(fields=["scheduled_at", "finished_at"], name="sq_jobs_for_alerting"),
        ]
        permissions = [("manage_jobs", _("Can run Steady Queue dashboard actions"))]

    def __str__(self) -> str:
        return f"{self.task_path} #{self.pk}"

    @classmethod
    def new(cls, **values) -> Job:
        """An unsaved job: like ``Job(**values)``, several times faster.

        A bulk enqueue builds thousands of jobs, and ``Model.__init__`` (its signals, a
        descriptor call per field, each field's default looked up again) was a third of
        its time. Without pre_init or post_init receivers for Job, the instance is filled
        the way ``__init__`` fills it: its state, then each field's attname in its
        ``__dict__``, from the given values or the fields' defaults.
        """
        constant, computed = _defaults()
        unknown = values.keys() - constant.keys() - computed.keys()
        if unknown:
            raise TypeError(f"Job has no fields {', '.join(sorted(unknown))}")
        if _init_receivers(cls):
            fields = cls._meta.concrete_fields
            return cls(
                *[values[f.attname] if f.attname in values else f.get_default() for f in fields]
            )
        job = cls.__new__(cls)
        job.__dict__.update(constant)
        for attname, default in computed.items():
            if attname not in values:
                job.__dict__[attname] = default()
        job.__dict__.update(values)
        job._state = ModelState()
        return job

    @classmethod
    def for_task_call(
        cls,
        task,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        *,
        backend,
        validated: set[int] | None = None,
    ) -> Job:
        """The unsaved job of calling ``task`` with ``args`` and ``kwargs`` on ``backend``.

        ``backend`` is the task backend that enqueues the call, and checks it first: it
        must be the task's backend, and the task must pass its ``validate_task`` (once per
        Task object in ``validated``, which a bulk enqueue shares between its calls). Its
        alias instead (a str) builds a call checked already, such as a batch's callback.
        """
        if not isinstance(backend, str):
            _check_task(backend, task, validated)
            backend = backend.alias
        limit = concurrency.limit_for(task.module_path)
        declared_unique = uniqueness.unique_for(task.module_path)
        declared_rate = rate_limits.rate_limit_for(task.module_path)
        declared_fair = fairness.fairness_for(task.module_path)
        return cls.new(
            queue_name=task.queue_name,
            task_path=task.module_path,
            backend=backend,
            arguments=arguments.serialize(args, kwargs),
            priority=task.priority,
            scheduled_at=scheduled_at(task.run_after),
            concurrency_key=limit.key_for(args, kwargs) if limit else "",
            unique_key=declared_unique.key_for(task, args, kwargs) if declared_unique else "",
            rate_limit_key=declared_rate.key_for(task, args, kwargs) if declared_rate else "",
            fairness_key=declared_fair.key_for(task, args, kwargs) if declared_fair else "",
            labels=labels_for(task.module_path),
        )


def _check_task(backend, task, validated: set[int] | None) -> None:
    if task.backend != backend.alias:
        raise InvalidTask(f"Task {task.module_path} uses backend {task.backend!r}.")
    # A bulk enqueue repeats its tasks: ``validated`` holds those already checked.
    if validated is None or id(task) not in validated:
        backend.validate_task(task)
        if validated is not None:
            validated.add(id(task))


def scheduled_at(run_after: datetime | timedelta | None) -> datetime | None:
    """Turn ``run_after`` (an aware datetime or a delay) into the time the job is due."""
    if isinstance(run_after, timedelta):
        return timezone.now() + run_after
    return run_after


def _init_receivers(cls: type[Job]) -> bool:
    # Most projects have no init receivers at all: the lists' emptiness is cheap to see.
    if not (pre_init.receivers or post_init.receivers):
        return False
    return pre_init.has_listeners(cls) or post_init.has_listeners(cls)


@functools.cache
def _defaults() -> tuple[dict[str, Any], dict[str, Callable[[], Any]]]:
    """Job's defaults by attname: the constant ones, and the callables that make one per
    job (a fresh list or dict, the time now)."""
    constant, computed = {}, {}
    for field in Job._meta.concrete_fields:
        if field.has_default() and callable(field.default):
            computed[field.attname] = field.default
        else:
            constant[field.attname] = field.get_default()
    return constant, computed
