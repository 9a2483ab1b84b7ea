"""Change a job by hand: ``edit()`` one that has not started (or has failed),
``duplicate()`` any job, ``retry(args=...)`` a failed one with other arguments.

An edit is an enqueue done again on the same row: the new values go through the
checks and the serialization of ``enqueue()`` (``Job.for_task_call``), the task's keys
(concurrency, unique, rate limit) are computed afresh, and a job that has not started
leaves its execution row and goes through ``prepare_all_for_execution`` as a new job
would (ready, scheduled, blocked, throttled or paused). All of it is one transaction
that first locks the job's execution row the way a claim does (``.locked()``, SKIP
LOCKED): a worker claiming the job holds that row, and the edit is refused; an edit
holding it makes the claim skip the row, and the claim that comes after sees only the
new values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from django.utils.module_loading import import_string

from ... import arguments, db, encryption
from ...compat import InvalidTask, Task, TaskResult, task_backends
from ...exceptions import CANCELLED_CLASS, JobNotEditable, UniqueKeyConflict
from ...task_options import labels as job_labels
from .. import states

if TYPE_CHECKING:
    from . import Job


class _Keep:
    """The default of ``edit()``'s keywords: leave that value as it is."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()

#: The columns an edit may change: what the operator gives, and the keys derived from it.
EDITED_FIELDS = (
    "arguments",
    "queue_name",
    "priority",
    "scheduled_at",
    "concurrency_key",
    "unique_key",
    "rate_limit_key",
    "fairness_key",
    "labels",
)
#: What the audit log keeps of an edit (the keys follow from these, and may hold secrets).
AUDITED_FIELDS = ("arguments", "queue_name", "priority", "scheduled_at", "labels")
#: Jobs not started that an edit sends through the executions again, as an enqueue would.
REQUEUED = (states.READY, states.SCHEDULED, states.BLOCKED, states.THROTTLED, states.PAUSED)
#: Jobs that keep their execution (a workflow step waiting on others; a failed job,
#: which stays failed until retried): only their values change.
KEPT = (states.WAITING, states.FAILED)
EDITABLE = REQUEUED + KEPT
#: Kinds whose jobs hold a slot of their concurrency key (paused ones were ready).
HOLDING_SLOT = (states.READY, states.PAUSED)


class EditableJob:
    """``edit()``, ``preview_edit()``, ``duplicate()`` and ``retry(args=..., kwargs=...)``."""

    def edit(
        self,
        *,
        args: Sequence[Any] | None = KEEP,
        kwargs: Mapping[str, Any] | None = KEEP,
        priority: int | None = KEEP,
        queue_name: str | None = KEEP,
        run_after: datetime | timedelta | None = KEEP,
        labels: Sequence[str] | None = KEEP,
    ) -> dict[str, tuple[Any, Any]]:
        """Change this job's arguments, priority, queue, time to run or labels; return the changes.

        Each keyword left out (or None, but ``run_after``) keeps its value; ``run_after=None``
        makes the job due now. Only a job that has not started (ready, scheduled, blocked,
        throttled, paused, waiting) or a failed one can be edited; otherwise, or while a
        worker is claiming it, ``JobNotEditable`` is raised and nothing changes. The values
        are checked as ``enqueue()`` checks them (``InvalidTask``, ``SerializationError``,
        ``UniqueKeyError``...), and a unique key another job holds raises
        ``UniqueKeyConflict``; ``labels`` replace the job's labels, checked as
        ``labels()`` checks them (``InvalidLabels``). A failed job stays failed: retry it
        (or ``retry(args=...)``).

        Returns ``{field: (before, after)}`` of the columns that changed (the task's keys
        included); an edit that changes nothing writes nothing.
        """
        changes = self._edit_in_transaction(
            _Request(args, kwargs, priority, queue_name, run_after, labels), only_failed=False
        )
        if changes:
            _announce_edit(self, "edit", changes)
        return changes

    def preview_edit(
        self,
        *,
        args: Sequence[Any] | None = KEEP,
        kwargs: Mapping[str, Any] | None = KEEP,
        priority: int | None = KEEP,
        queue_name: str | None = KEEP,
        run_after: datetime | timedelta | None = KEEP,
        labels: Sequence[str] | None = KEEP,
    ) -> dict[str, tuple[Any, Any]]:
        """What ``edit()`` with the same keywords would change, checked the same way;
        writes nothing (a dry run, the diff a form shows before it is confirmed)."""
        current = _reload(self)
        _check_state(current, _state_of(current))
        fresh = _Request(args, kwargs, priority, queue_name, run_after, labels).job_for(current)
        return _changes(current, fresh)

    def retry(
        self,
        *,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        reset_steps: bool = False,
    ) -> None:
        """Queue this failed job again; with ``args`` or ``kwargs``, with those arguments.

        The arguments are changed and the job retried in one transaction (checked as an
        ``edit()``); it keeps its id, attempts and errors. Without them, a plain retry.
        ``reset_steps``: its durable steps are deleted in the same transaction (see
        ``Retryable.retry``).
        """
        if args is None and kwargs is None:
            return super().retry(reset_steps=reset_steps)
        if not reset_steps:
            changes = self._edit_in_transaction(_Request(args, kwargs), only_failed=True)
        else:  # the steps go in the edit's transaction, or not at all
            with db.atomic():
                changes = self._edit_in_transaction(_Request(args, kwargs), only_failed=True)
                self.reset_steps()
        _announce_edit(self, "retry with changes", changes)

    def duplicate(
        self, args: Sequence[Any] | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> TaskResult:
        """Enqueue a new job of this job's task, in any state; return its TaskResult.

        Same queue, priority and backend (and labels, where jobs have them), due now;
        ``args`` / ``kwargs`` replace the arguments (None keeps this job's). It goes
        through the task's ``enqueue()``, so every task option applies (a ``@unique``
        task's duplicate may get the job that holds its key).
        """
        task, call_args, call_kwargs = self._duplicate_call(args, kwargs)
        # Enqueued inside a block of the original's labels: every enqueue path writes them
        # (the row's list and the indexed label rows), as for any labelled enqueue.
        with job_labels.labels(*self.labels):
            result = task.enqueue(*call_args, **call_kwargs)
        stored = arguments.serialize(call_args, call_kwargs)
        if encryption.is_encrypted(self.task_path):  # the audit log keeps no plaintext either
            stored = encryption.seal(stored)
        after = {"job": int(result.id), "arguments": stored}
        from ...ops import audit

        audit.announce(
            "duplicate",
            f"job {self.pk}",
            message=f"Job {self.pk} ({self.task_path}) duplicated as job {result.id}.",
            details={
                "task": self.task_path,
                "job": self.pk,
                "before": {"arguments": self.arguments},
                "after": after,
            },
            link_to=("job-detail", str(result.id)),
            backend=self.backend,
        )
        return result

    def planned_duplicate(
        self, args: Sequence[Any] | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> Job:
        """The unsaved job ``duplicate()`` would enqueue, checked as enqueue checks it
        (a dry run: nothing is written)."""
        from . import Job

        task, call_args, call_kwargs = self._duplicate_call(args, kwargs)
        backend = task_backends[task.backend]
        with job_labels.labels(*self.labels):
            return Job.for_task_call(task, call_args, call_kwargs, backend=backend)

    def _duplicate_call(self, args, kwargs) -> tuple[Task, list, dict]:
        task = dataclasses.replace(
            declared_task(self),
            queue_name=self.queue_name,
            priority=self.priority,
            backend=self.backend,
            run_after=None,
        )
        return (task, *_arguments(self, args, kwargs))

    def _edit_in_transaction(self, request: _Request, *, only_failed: bool) -> dict:
        from ..execution import BlockedExecution

        def once() -> tuple[Job, dict, str | None]:
            with db.atomic():
                current, state = _lock_for_edit(self, only_failed)
                fresh = request.job_for(current)
                changes = _changes(current, fresh)
                hand_on = _apply(current, fresh, state) if changes else None
                if only_failed:
                    type(self).objects.filter(pk=self.pk).retry_all()
            return current, changes, hand_on

        # InnoDB may pick the edit as a deadlock victim (semaphores, rate limit windows):
        # its transaction rolled back whole, it is run again from the start.
        current, changes, hand_on = db.retry_deadlocks(once)
        if hand_on:
            # As a discard gives a slot back: after the commit (maintenance catches up).
            BlockedExecution.release_one(hand_on)
        for field in EDITED_FIELDS:
            setattr(self, field, getattr(current, field))
        self.updated_at = current.updated_at
        self._state.fields_cache.clear()
        return changes


@dataclasses.dataclass(frozen=True)
class _Request:
    """The values an edit asks for (``KEEP`` or None: as they are)."""

    args: Any = KEEP
    kwargs: Any = KEEP
    priority: Any = KEEP
    queue_name: Any = KEEP
    run_after: Any = KEEP
    labels: Any = KEEP

    def job_for(self, current: Job) -> Job:
        """The unsaved job ``enqueue()`` would build for ``current`` with these values."""
        from . import Job

        task = dataclasses.replace(
            declared_task(current),
            queue_name=_given(self.queue_name, current.queue_name),
            priority=_given(self.priority, current.priority),
            backend=current.backend,
            run_after=current.scheduled_at if self.run_after is KEEP else self.run_after,
        )
        args, kwargs = _arguments(current, _given(self.args, None), _given(self.kwargs, None))
        fresh = Job.for_task_call(task, args, kwargs, backend=task_backends[current.backend])
        # The labels the job has (an enqueue's blocks are long gone), or those given.
        given = _given(self.labels, None)
        if isinstance(given, str):
            raise TypeError("labels must be a list of labels, not one string.")
        fresh.labels = list(current.labels if given is None else job_labels.checked(given))
        return fresh


def _given(value: Any, default: Any) -> Any:
    return default if value is KEEP or value is None else value


def _arguments(job: Job, args, kwargs) -> tuple[list, dict]:
    """The call's arguments: those given, else the job's own (rebuilt as a run would)."""
    if args is not None and not isinstance(args, list | tuple):
        raise arguments.SerializationError(
            f"args must be a list of positional arguments, not {type(args).__name__}."
        )
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise arguments.SerializationError(
            f"kwargs must be a mapping of keyword arguments, not {type(kwargs).__name__}."
        )
    if kwargs is not None and not all(isinstance(key, str) for key in kwargs):
        raise arguments.SerializationError("kwargs must have str keys (argument names).")
    if args is None or kwargs is None:
        stored_args, stored_kwargs = arguments.deserialize(job.arguments)
        args = stored_args if args is None else args
        kwargs = stored_kwargs if kwargs is None else kwargs
    return list(args), dict(kwargs)


def declared_task(job: Job) -> Task:
    """The task ``job`` was enqueued for, as declared (``InvalidTask`` if it is gone);
    ``results.task_for`` rebuilds a run's task from it."""
    try:
        task = import_string(job.task_path)
    except ImportError as exc:
        raise InvalidTask(f"Task {job.task_path!r} of job {job.pk} cannot be imported.") from exc
    if not isinstance(task, Task):
        raise InvalidTask(f"{job.task_path!r} of job {job.pk} is not a Task.")
    return task


def _reload(job: Job) -> Job:
    fresh = type(job).objects.with_execution().filter(pk=job.pk).first()
    if fresh is None:
        raise JobNotEditable(f"Job {job.pk} no longer exists.", state=states.DISCARDED)
    return fresh


def _state_of(job: Job) -> str:
    """The job's state, a cancelled job told from a failed one."""
    failed = getattr(job, "failed_execution", None) if job.finished_at is None else None
    if failed is not None and failed.exception_class == CANCELLED_CLASS:
        return states.CANCELLED
    return job.state


def _check_state(job: Job, state: str, only_failed: bool = False) -> None:
    # Not a cancelled job: its cancel stays asked for, so a run would end it again.
    allowed = (states.FAILED,) if only_failed else EDITABLE
    if state in allowed:
        return
    if only_failed:
        message = f"Job {job.pk} is {state}: only failed jobs can be retried with changes."
    else:
        message = f"Job {job.pk} is {state}: only {states.in_words(EDITABLE)} jobs can be edited."
    raise JobNotEditable(message, state=state)


def _lock_for_edit(job: Job, only_failed: bool) -> tuple[Job, str]:
    """Lock the job's execution row and return the job as it is now, and its state.

    SKIP LOCKED, as claims lock ready rows: a row someone holds is a worker claiming
    it (or another process moving it), and the edit is refused rather than made to
    wait for a run it must not change.
    """
    current = _reload(job)
    state = _state_of(current)
    _check_state(current, state, only_failed)
    table = states.get(state).model
    if table.objects.filter(job_id=job.pk).locked().values_list("job_id", flat=True).first():
        return _reload(job), state  # read again under the lock: nothing moves it now
    now = _state_of(current := _reload(job))
    if now != state:
        _check_state(current, now, only_failed)  # it started (or ended) meanwhile
    what = "claimed or started by a worker" if state == states.READY else "moved by a worker"
    raise JobNotEditable(
        f"Job {job.pk} is being {what} right now: it was not changed. "
        "Look at it again and retry if it is still pending.",
        state=now,
    )


def _changes(current: Job, fresh: Job) -> dict[str, tuple[Any, Any]]:
    return {
        field: (getattr(current, field), getattr(fresh, field))
        for field in EDITED_FIELDS
        if getattr(current, field) != getattr(fresh, field)
    }


def _apply(job: Job, fresh: Job, state: str) -> str | None:
    """Write the edit and move the job as an enqueue would; the concurrency key whose slot
    it gave up, for the caller to hand on after the commit (None: none)."""
    from ..execution import ReadyExecution
    from ..execution.paused import PausedExecution
    from ..semaphore import Semaphore

    old = {field: getattr(job, field) for field in EDITED_FIELDS}
    limit = job.concurrency_limit
    held = old["concurrency_key"] if state in HOLDING_SLOT and limit is not None else ""
    for field in EDITED_FIELDS:
        setattr(job, field, getattr(fresh, field))
    job.save(update_fields=[*EDITED_FIELDS, "updated_at"])
    if old["labels"] != job.labels:
        _replace_label_rows(job)
    if old["unique_key"] != job.unique_key:
        _move_unique_lock(job, state, keep_key=state != states.FAILED)
    model = states.get(state).model
    if state in KEPT:
        values = {"queue_name": job.queue_name}
        if state == states.WAITING:
            values["priority"] = job.priority
        model.objects.filter(job_id=job.pk).update(**values)
        return None
    model.objects.filter(job_id=job.pk).delete()
    if held:
        # Given back, and taken again below if the job is still ready with the same key:
        # the transaction holds the semaphore's row, so no other job takes it meanwhile.
        Semaphore.signal(held, limit)
    job._state.fields_cache.clear()
    type(job).prepare_all_for_execution([job])
    if not held:
        return None
    still_ready = any(
        table.objects.filter(job_id=job.pk).exists() for table in (ReadyExecution, PausedExecution)
    )
    return None if still_ready and job.concurrency_key == held else held


def _move_unique_lock(job: Job, state: str, *, keep_key: bool) -> None:
    """Give up the old key; a job not started takes its new one or the edit fails."""
    from ..unique_lock import UniqueLock

    UniqueLock.objects.filter(job_id=job.pk).delete()
    if not keep_key or not job.unique_key:
        return  # a failed job holds no key: its retry takes it where free
    holder = UniqueLock.take_for(job, timezone.now())
    if holder is not None:
        raise UniqueKeyConflict(
            f"Job {holder} already holds the unique key {job.unique_key!r} of "
            f"{job.task_path}: job {job.pk} was not changed.",
            state=state,
            holder_id=holder,
        )


def _replace_label_rows(job: Job) -> None:
    """The indexed label rows of ``job`` (``labelled()`` reads them) as its new list."""
    from ..label import JobLabel

    JobLabel.objects.filter(job_id=job.pk).delete()
    JobLabel.insert_for([job])


def _announce_edit(job: Job, action: str, changes: dict) -> None:
    from ...ops import audit

    shown = [field for field in AUDITED_FIELDS if field in changes]
    before = {field: _plain(changes[field][0]) for field in shown}
    after = {field: _plain(changes[field][1]) for field in shown}
    if not shown:
        described = "nothing the operator sees (its keys)" if changes else "nothing"
    else:
        described = ", ".join(field.replace("_", " ") for field in shown)
    audit.announce(
        action,
        f"job {job.pk}",
        message=f"Job {job.pk} ({job.task_path}): {action}, changed {described}.",
        details={"task": job.task_path, "job": job.pk, "before": before, "after": after},
        link_to=("job-detail", str(job.pk)),
        backend=job.backend,
    )


def _plain(value: Any) -> Any:
    """A value as JSON keeps it (the audit log's details)."""
    return value.isoformat() if isinstance(value, datetime) else value
