"""Edit, duplicate and enqueue one job from the command line, through the engine's API.

``steady_queue_jobs edit|duplicate|enqueue`` read their values here: JSON arguments, a
priority, a queue, a time to run. Each is checked as ``enqueue()`` checks it, first in
a dry run that writes nothing (``plan``), then for real (``apply``); a value refused
raises ``ChangeError`` with the engine's own message, and nothing is written.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string

from .. import arguments, encryption
from ..compat import InvalidTask, Task, TaskResult, task_backends
from ..exceptions import InvalidLabels, JobNotEditable, RateLimitKeyError, UniqueKeyError
from ..models import Job
from ..models.job.editable import KEEP
from ..task_options.labels import labels as labels_block

#: What the engine raises for a value enqueue() refuses: bad input, not a bad state.
REFUSED_VALUES = (
    InvalidTask,
    arguments.SerializationError,
    arguments.DeserializationError,
    UniqueKeyError,
    RateLimitKeyError,
    InvalidLabels,
)


class ChangeError(ValueError):
    """Input the command refuses (bad JSON, a value enqueue() refuses, no such job or
    task); ``usage`` tells a usage error (exit status 2) from a refused change (1)."""

    def __init__(self, message: str, *, usage: bool = True):
        super().__init__(message)
        self.usage = usage


@dataclasses.dataclass(frozen=True)
class Values:
    """What the operator asked for (``KEEP``: not given)."""

    args: Any = KEEP
    kwargs: Any = KEEP
    priority: Any = KEEP
    queue_name: Any = KEEP
    run_after: Any = KEEP
    labels: Any = KEEP

    @classmethod
    def parse(
        cls,
        *,
        args: str | None,
        kwargs: str | None,
        priority: int | None = None,
        queue: str | None = None,
        run_after: str | None = None,
        labels: str | None = None,
    ) -> Values:
        """Read the command's options; ChangeError names the one that is wrong."""
        return cls(
            args=KEEP if args is None else _json(args, "--args", list, "a JSON list"),
            kwargs=KEEP if kwargs is None else _json(kwargs, "--kwargs", dict, "a JSON object"),
            priority=KEEP if priority is None else priority,
            queue_name=KEEP if queue is None else queue,
            run_after=KEEP if run_after is None else _moment(run_after),
            labels=KEEP if labels is None else _json(labels, "--labels", list, "a JSON list"),
        )

    def given(self) -> dict[str, Any]:
        """The keywords of ``Job.edit()`` that were given."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(self)
            if getattr(self, field.name) is not KEEP
        }

    def call(self) -> tuple[list, dict]:
        return _or(self.args, []), _or(self.kwargs, {})


def _or(value: Any, default: Any) -> Any:
    return default if value is KEEP else value


def _json(text: str, option: str, kind: type, described: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChangeError(f"{option} is not valid JSON: {exc}.") from exc
    if not isinstance(value, kind):
        raise ChangeError(f"{option} must be {described}, not {type(value).__name__}.")
    return value


def _moment(text: str) -> datetime | None:
    """``--run-after``: an ISO 8601 time with its offset, or ``now`` (due at once)."""
    if text.strip().lower() == "now":
        return None
    try:
        moment = parse_datetime(text.strip())
    except ValueError:
        moment = None
    if moment is None:
        raise ChangeError(f"--run-after {text!r} is not an ISO 8601 date and time (or 'now').")
    if timezone.is_naive(moment):
        raise ChangeError(
            f"--run-after {text!r} has no UTC offset: add one (e.g. {text}+00:00 or Z)."
        )
    return moment


def job(job_id: int) -> Job:
    found = Job.objects.with_execution().filter(pk=job_id).first()
    if found is None:
        raise ChangeError(f"There is no job {job_id} in this queue database.", usage=False)
    return found


def task(path: str) -> Task:
    try:
        found = import_string(path)
    except ImportError as exc:
        raise ChangeError(f"{path!r} cannot be imported: {exc}.") from exc
    if not isinstance(found, Task):
        raise ChangeError(f"{path!r} is not a task (define it with @task()).")
    return found


def preview_edit(target: Job, values: Values) -> dict[str, tuple[Any, Any]]:
    """The changes ``edit`` would make, checked; nothing written."""
    with _refusals():
        return target.preview_edit(**values.given())


def edit(target: Job, values: Values) -> dict[str, tuple[Any, Any]]:
    with _refusals():
        return target.edit(**values.given())


def planned_duplicate(source: Job, values: Values) -> Job:
    """The unsaved job ``duplicate`` would enqueue, checked as enqueue checks it."""
    with _refusals():
        return source.planned_duplicate(*_call_or_none(values))


def duplicate(source: Job, values: Values) -> TaskResult:
    with _refusals():
        return source.duplicate(*_call_or_none(values))


def _call_or_none(values: Values) -> tuple[Any, Any]:
    return (
        None if values.args is KEEP else values.args,
        None if values.kwargs is KEEP else values.kwargs,
    )


def with_options(found: Task, values: Values, backend: str | None) -> Task:
    """``found`` with the queue, priority, time and backend asked for (checked)."""
    options = {
        "queue_name": _or(values.queue_name, found.queue_name),
        "priority": _or(values.priority, found.priority),
        "run_after": _or(values.run_after, found.run_after),
        "backend": backend or found.backend,
    }
    with _refusals():
        return dataclasses.replace(found, **options)


def planned_enqueue(found: Task, values: Values) -> Job:
    """The unsaved job ``enqueue`` would write, checked as enqueue checks it."""
    args, kwargs = values.call()
    with _refusals(), labels_block(*_or(values.labels, [])):
        return Job.for_task_call(found, args, kwargs, backend=task_backends[found.backend])


def enqueue(found: Task, values: Values) -> TaskResult:
    args, kwargs = values.call()
    with _refusals(), labels_block(*_or(values.labels, [])):
        return found.enqueue(*args, **kwargs)


class _refusals:
    """Turn the engine's refusals into ChangeError (its message kept)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, traceback) -> bool:
        if exc is None:
            return False
        if isinstance(exc, JobNotEditable):
            raise ChangeError(str(exc), usage=False) from exc
        if isinstance(exc, REFUSED_VALUES):
            raise ChangeError(f"{type(exc).__name__}: {exc}") from exc
        return False


def shown(value: Any) -> str:
    """A value as the diff shows it (an encrypted task's sealed value: "encrypted")."""
    if encryption.is_sealed(value):
        return encryption.ENCRYPTED
    if isinstance(value, datetime):
        return value.isoformat()
    if value is None:
        return "none"
    return json.dumps(value, ensure_ascii=False, default=str)
