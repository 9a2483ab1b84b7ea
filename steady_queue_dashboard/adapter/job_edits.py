"""Change jobs from the console: edit one, retry a failed one with other arguments, duplicate
one, or enqueue a new job of a task the engine knows.

Every change goes through the engine's own API (``Job.edit``, ``Job.retry``,
``Job.duplicate``, a task's ``enqueue``), which validates the arguments as an enqueue
does; what it refuses comes back as a ``Refusal`` naming the form field at fault, never
as an exception.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import IntegrityError
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from steady_queue import arguments
from steady_queue.compat import InvalidTask, Task
from steady_queue.exceptions import CANCELLED_CLASS, JobStateError, UniqueKeyConflict
from steady_queue.models import Job, RecurringTask
from steady_queue.models.job.editable import EDITABLE
from steady_queue.ops import audit as ops_audit

from ..conf import setting
from .actions import Outcome

logger = logging.getLogger(__name__)
# Task paths read from the jobs table for the "New job" picker, at most.
KNOWN_TASKS_LIMIT = 200


class Refusal(Exception):
    """The engine refused a change; ``field`` is the form field at fault (None: the whole form)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Values:
    """What an edit can change of a job: its call, priority, queue, due time and labels."""

    args: list
    kwargs: dict
    priority: int
    queue_name: str
    run_after: datetime | None
    labels: list = field(default_factory=list)


def values_of(job: Job) -> Values:
    """The job's current values, arguments as the task receives them (raw, not masked)."""
    args, kwargs = arguments.display(job.arguments)
    return Values(
        list(args), dict(kwargs), job.priority, job.queue_name, job.scheduled_at, list(job.labels)
    )


def fingerprint(job: Job) -> str:
    """A digest of all a change depends on: signed into a confirmation, compared at "Save".

    A job that ran, moved state, or was changed by someone else in between has another
    one, so the confirmation no longer applies (the operator sees the new values first).
    """
    failed = getattr(job, "failed_execution", None)
    parts = [
        job.state,
        job.arguments,
        job.priority,
        job.queue_name,
        job.scheduled_at,
        job.updated_at,
        job.labels,
        len(job.attempts or []),
        failed.pk if failed is not None else None,
    ]
    return digest(parts)


def digest(value: Any) -> str:
    """A short digest of JSON-able ``value``: a token signs it rather than raw arguments,
    whose masked values must not travel in a page (a signed token is readable)."""
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def is_editable(job: Job) -> bool:
    return job.state in EDITABLE and not _cancelled(job)


def edit_job(pk: int, expected: str, changes: dict[str, Any], *, user: str) -> Outcome:
    """Apply ``changes`` (``Job.edit``'s keywords) if the job still has fingerprint ``expected``.

    The engine writes the audit entry of its own change (``ops.audit.announce``), in
    ``user``'s name and with before and after; the dashboard's receiver masks it.
    """
    done = _("Job %(id)s was changed.")
    return _on_job(pk, expected, lambda job: job.edit(**changes), done, user)


def preview_edit(job: Job, changes: dict[str, Any]) -> None:
    """Check ``changes`` as ``edit()`` would, writing nothing; raise ``Refusal``."""
    _engine(lambda: job.preview_edit(**changes))


def plan_duplicate(job: Job, args: list | None, kwargs: dict | None) -> None:
    """Check a duplicate as ``duplicate()`` would, writing nothing; raise ``Refusal``."""
    _engine(lambda: job.planned_duplicate(args=args, kwargs=kwargs))


def retry_job(pk: int, expected: str, args: list, kwargs: dict, *, user: str) -> Outcome:
    """Queue the failed job again with other arguments (audited by the engine, as ``user``)."""
    done = _("Job %(id)s will run again with the new arguments.")
    return _on_job(pk, expected, lambda job: job.retry(args=args, kwargs=kwargs), done, user)


def duplicate_job(
    pk: int, args: list | None, kwargs: dict | None, *, user: str
) -> tuple[Outcome, int | None]:
    """Enqueue a copy of the job (its arguments, or these); return the outcome and its id."""
    job = Job.objects.filter(pk=pk).first()
    if job is None:
        return Outcome(False, _("Job %(id)s no longer exists.") % {"id": pk}), None
    with ops_audit.acting_as(user):
        result = _engine(lambda: job.duplicate(args=args, kwargs=kwargs))
    copy = int(result.id)
    message = _("Job %(id)s was duplicated as job %(copy)s.") % {"id": pk, "copy": copy}
    return Outcome(True, message, affected=1), copy


def enqueue_job(
    task: Task,
    args: list,
    kwargs: dict,
    *,
    queue_name: str | None,
    priority: int | None,
    run_after: datetime | None,
) -> tuple[Outcome, int]:
    """Enqueue a new job of ``task`` through its own ``enqueue``; raise ``Refusal``."""
    routed = _engine(lambda: routed_task(task, queue_name, priority, run_after))
    result = _engine(lambda: routed.enqueue(*args, **kwargs))
    job_id = int(result.id)
    message = _("Job %(id)s of %(task)s was enqueued.") % {"id": job_id, "task": task.module_path}
    return Outcome(True, message, affected=1), job_id


def routed_task(
    task: Task, queue_name: str | None, priority: int | None, run_after: datetime | None
) -> Task:
    """The task with the chosen queue, priority and due time, checked by its backend."""
    options = {"queue_name": queue_name, "priority": priority, "run_after": run_after}
    routed = task.using(**{name: value for name, value in options.items() if value is not None})
    routed.get_backend().validate_task(routed)
    return routed


def check_call(task: Task, args: list, kwargs: dict) -> None:
    """Raise ``Refusal`` unless the task takes these arguments and the queue can store them."""
    context = (None,) if task.takes_context else ()
    try:
        inspect.signature(task.func).bind(*context, *args, **kwargs)
    except TypeError as exc:
        raise Refusal(
            _("%(task)s cannot take these arguments: %(error)s.")
            % {"task": task.module_path, "error": exc},
            field="args",
        ) from exc
    except ValueError:  # no signature to read (a builtin): the enqueue decides
        pass
    try:
        arguments.serialize(args, kwargs)
    except arguments.SerializationError as exc:
        raise Refusal(str(exc), field="args") from exc


def find_task(path: str) -> Task:
    """The task at dotted ``path``; raise ``Refusal`` if there is none."""
    try:
        found = import_string(path.strip())
    except Exception as exc:  # ImportError, or the module itself failing to import
        message = _("Cannot import task %(path)r: %(error)s") % {"path": path, "error": exc}
        raise Refusal(message, field="task") from exc
    if not isinstance(found, Task):
        message = _("%(path)r is not a task: decorate the function with @task.") % {"path": path}
        raise Refusal(message, field="task")
    return found


def known_tasks() -> list[str]:
    """Task paths to offer for a new job: those in the jobs table (bounded), the recurring
    schedule's, and ``STEADY_QUEUE_DASHBOARD["TASKS"]``; sorted, each once."""
    seen = Job.objects.order_by("task_path").values_list("task_path", flat=True).distinct()
    scheduled = RecurringTask.objects.order_by().values_list("task_path", flat=True).distinct()
    return sorted({*seen[:KNOWN_TASKS_LIMIT], *scheduled[:KNOWN_TASKS_LIMIT], *setting("TASKS")})


def _on_job(pk: int, expected: str, change, done: str, user: str) -> Outcome:
    """Run ``change`` on the job if it is still as the operator saw it.

    The engine's call locks the job's execution row and checks its state again (a job
    a worker claims meanwhile is refused), in its own transaction: it hands a freed
    concurrency slot on after its commit, so it is not wrapped in another one here.
    """
    job = Job.objects.with_execution().filter(pk=pk).first()
    if job is None:
        return Outcome(False, _("Job %(id)s no longer exists.") % {"id": pk})
    if fingerprint(job) != expected:
        return Outcome(False, stale_message(pk))
    with ops_audit.acting_as(user):
        _engine(lambda: change(job))
    return Outcome(True, done % {"id": pk}, affected=1)


def stale_message(pk: int) -> str:
    return _(
        "Job %(id)s changed or started since you confirmed, so nothing was done: "
        "check its new values and try again."
    ) % {"id": pk}


def _engine(call):
    """Run an engine call; turn what it refuses into a ``Refusal`` for the form."""
    try:
        return call()
    except Refusal:
        raise
    except UniqueKeyConflict as exc:  # the new arguments give a key another job holds
        raise Refusal(str(exc), field="args") from exc
    except JobStateError as exc:  # JobNotEditable among them: the job's state forbids it
        raise Refusal(str(exc)) from exc
    # Enqueue's own errors: the arguments (SerializationError, a TypeError), the queue,
    # priority or run_after (InvalidTask), a key function that raised on the arguments.
    except (InvalidTask, TypeError, ValueError, LookupError, IntegrityError) as exc:
        raise Refusal(str(exc), field=field_of(str(exc))) from exc
    except Exception as exc:  # the task's own code (a key function): a message, not a 500
        logger.exception("A job change from the dashboard failed")
        raise Refusal(f"{type(exc).__name__}: {exc}") from exc


def field_of(message: str, fields=None) -> str | None:
    """The form field an engine's message is about (None: the whole form, or a field
    the form does not have)."""
    lowered = message.lower()
    words = (
        ("priority", "priority"),
        ("queue", "queue_name"),
        ("run_after", "run_after"),
        ("label", "labels"),
    )
    field = next((field for word, field in words if word in lowered), None)
    if field is None and ("argument" in lowered or "serializ" in lowered):
        field = "args"
    return field if fields is None or field in fields else None


def _cancelled(job: Job) -> bool:
    failed = getattr(job, "failed_execution", None)
    return failed is not None and failed.exception_class == CANCELLED_CLASS
