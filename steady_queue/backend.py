"""The Django tasks backend ``steady_queue.backend.SteadyQueueBackend``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from contextlib import nullcontext
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from . import db, ours
from .compat import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_backends,
    task_enqueued,
)
from .preflight import missing_table_error
from .task_options.retries import SteadyQueueTask

TaskCall = tuple[Task, Sequence[Any], Mapping[str, Any]]


@ours.register
class SteadyQueueBackend(BaseTaskBackend):
    """The Django tasks backend that stores jobs in the queue database for Steady Queue's workers.

    Name it in ``TASKS`` (``"BACKEND": "steady_queue.backend.SteadyQueueBackend"``).
    ``QUEUES`` lists the queue names its tasks may use (``["default"]`` when left out;
    an empty list allows any name), and ``OPTIONS["database"]`` gives it a queue
    database of its own. It supports priorities, ``run_after`` (an aware datetime or a
    ``timedelta``), async tasks and ``get_result()``.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True
    task_class = SteadyQueueTask

    def __init__(self, alias: str, params: dict):
        super().__init__(alias, params)
        #: The alias of this backend's queue database (OPTIONS["database"]); None: the
        #: project's queue database, ``steady_queue.database``.
        self.database: str | None = self.options.get("database")

    def enqueue(self, task: Task, args: Sequence[Any], kwargs: Mapping[str, Any]) -> TaskResult:
        """Store the job and its execution in one transaction and return its result."""
        return self.enqueue_all([(task, args, kwargs)])[0]

    def enqueue_all(self, calls: Iterable[TaskCall]) -> list[TaskResult]:
        """Enqueue many task calls in a constant number of queries; all or nothing.

        A duplicate call of a ``@unique`` task enqueues nothing: its result is that of
        the job holding its key (the same id), and no ``task_enqueued`` is sent for it.
        """
        from . import storage
        from .batches import joining
        from .models import Job
        from .observability import tracing

        calls = list(calls)
        validated: set[int] = set()  # ids of the Task objects already validated
        jobs = [
            Job.for_task_call(task, args, kwargs, backend=self, validated=validated)
            for task, args, kwargs in calls
        ]
        if (open_batch := joining(self.database)) is not None:
            for job in jobs:
                job.batch_id = open_batch.pk
        with db.using_alias(self.database) as alias, tracing.enqueue_span(jobs):
            try:
                holders = storage.enqueue(jobs)
            except DatabaseError as exc:
                # A missing table means migrations were not run: say so, not just the SQL.
                if (clearer := missing_table_error(exc, alias)) is not None:
                    raise clearer from exc
                raise
        results = self._results(jobs, holders, [task for task, _, _ in calls])
        for job, holder, result in zip(jobs, holders, results, strict=True):
            if holder is job:
                task_enqueued.send(type(self), task_result=result)
        return results

    async def aenqueue(self, task: Task, args, kwargs) -> TaskResult:
        """Enqueue like ``enqueue()``, from async code (in a thread, so the loop runs on)."""
        return await sync_to_async(self.enqueue, thread_sensitive=True)(task, args, kwargs)

    def get_result(self, result_id: str) -> TaskResult:
        """Return the TaskResult with ``result_id``; raise TaskResultDoesNotExist if unknown."""
        from .models import FinishedHistory, Job
        from .results import result_for

        with db.using_alias(self.database):
            try:
                job = Job.objects.with_execution().get(pk=int(result_id))
            except (ValueError, TypeError) as exc:
                raise TaskResultDoesNotExist(result_id) from exc
            except Job.DoesNotExist as exc:
                # Moved to the finished history (steady_queue.partition_finished_by)?
                moved = FinishedHistory.find(int(result_id))
                if moved is None:
                    raise TaskResultDoesNotExist(result_id) from exc
                job = moved.as_job()
            return result_for(job)

    async def aget_result(self, result_id: str) -> TaskResult:
        """Return the TaskResult like ``get_result()``, from async code."""
        return await sync_to_async(self.get_result, thread_sensitive=True)(result_id)

    def check(self, **kwargs):
        """Yield Django's checks of a backend, then Steady Queue's (its queues, its database)."""
        from .checks import check_backend

        yield from super().check(**kwargs)
        yield from check_backend(self)

    def validate_task(self, task: Task) -> None:
        """Raise InvalidTask if this backend cannot run ``task`` (queue, priority, run_after).

        A ``run_after`` given as a ``timedelta`` (counted from the enqueue) is valid.
        """
        # Django validates run_after as a datetime; a delay is valid here too.
        if isinstance(task.run_after, timedelta):
            return super().validate_task(dataclasses.replace(task, run_after=None))
        return super().validate_task(task)

    def _results(self, jobs: list, holders: list, tasks: list[Task]) -> list[TaskResult]:
        """Each call's result: its new job's, or the result of the job holding its key."""
        from .results import result_for

        built: dict[int, TaskResult] = {}  # by id() of the holding job: one result each
        for job, holder, task in zip(jobs, holders, tasks, strict=True):
            if id(holder) in built:
                continue  # a duplicate of an earlier call of this batch
            # A holder other than the job itself was read with its execution: no query.
            built[id(holder)] = self._new_result(job, task) if holder is job else result_for(holder)
        return [built[id(holder)] for holder in holders]

    def _new_result(self, job, task: Task) -> TaskResult:
        from .results import enqueued_result

        if isinstance(task.run_after, timedelta):  # the result shows when it is due
            task = task.using(run_after=job.scheduled_at)
        return enqueued_result(job, task)


def scheduled_at(run_after: datetime | timedelta | None) -> datetime | None:
    """Turn ``run_after`` (an aware datetime or a delay) into the time the job is due."""
    from .models.job import scheduled_at

    return scheduled_at(run_after)


def enqueue_all(calls: Iterable[TaskCall]) -> list[TaskResult]:
    """Enqueue many ``(task, args, kwargs)`` calls, each on its task's own backend."""
    calls = list(calls)
    by_backend: dict[str, list[int]] = {}
    for index, (task, _, _) in enumerate(calls):
        by_backend.setdefault(task.backend, []).append(index)
    results: list[TaskResult | None] = [None] * len(calls)
    # One backend needs no outer transaction: its own enqueue_all is atomic.
    with db.atomic() if len(by_backend) > 1 else nullcontext():
        for alias, indexes in by_backend.items():
            backend = task_backends[alias]
            enqueued = backend.enqueue_all([calls[i] for i in indexes])
            for index, result in zip(indexes, enqueued, strict=True):
                results[index] = result
    return results
