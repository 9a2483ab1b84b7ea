"""Jobs of a paused task, waiting for it to resume: ``PausedExecution``.

Out of the ready table, as throttled jobs are, so that a paused task's backlog costs
the workers' claims nothing: the claim stays the same index scan of the ready table.
Pausing a task moves its ready jobs here in one transaction; a job of a paused task
that becomes ready later (enqueued, dispatched, retried, released) comes here instead
(``ReadyExecution.create_all_from_jobs``); one that reached a worker anyway (claimed
before its transaction saw the pause, or a concurrency slot handed on to it) is moved
here as its run would start (``Job.paused_run``): not an attempt. Resuming moves the
task's jobs back to ready with their job ids, so that they run in their original order.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import IntegrityError, models

from ... import db
from ...compat import TaskResultStatus
from ...task_options import fairness
from .. import fair_share, states
from ..task_pause import TaskPause
from . import READY_COPIED_FIELDS, Execution, ReadyExecution

if TYPE_CHECKING:
    from ..job import Job

#: Rows moved per statement when a task pauses or resumes (all in one transaction);
#: under SQLite's oldest limit of 999 parameters.
MOVE_BATCH = 900


class PausedExecution(
    Execution,
    state=states.PAUSED,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A job of a paused task, waiting for the task to resume."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="paused_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    task_path = models.CharField(max_length=255)

    class Meta:
        db_table = "steady_queue_paused_executions"
        # Resuming reads a task's jobs in job order.
        indexes = [models.Index(fields=["task_path", "job"], name="sq_paused_by_task")]

    @classmethod
    def create_all_from_jobs(cls, jobs: Iterable[Job]) -> None:
        rows = [
            cls(
                job=job,
                task_path=job.task_path,
                **{f: getattr(job, f) for f in READY_COPIED_FIELDS},
            )
            for job in jobs
        ]
        if rows:
            cls.objects.bulk_create(rows)

    @classmethod
    def pause_task(cls, task_path: str) -> int:
        """Pause ``task_path`` and move its ready jobs here; return how many were moved.

        One transaction: once it commits, no ready row of the task is left (a claim
        that took one first has it: that run goes on), and every later way to ready
        sees the pause.
        """

        def pause() -> int:
            with db.atomic():
                _insert_pause(task_path)
                return cls._park_ready(task_path)

        try:
            return db.retry_deadlocks(pause)
        finally:
            TaskPause.forget_hint()

    @classmethod
    def resume_task(cls, task_path: str) -> int:
        """Resume ``task_path``: its paused jobs become ready again; return how many."""

        def resume() -> int:
            with db.atomic():
                TaskPause.objects.filter(task_path=task_path).delete()
                return cls._unpark(task_path)

        try:
            return db.retry_deadlocks(resume)
        finally:
            TaskPause.forget_hint()

    @classmethod
    def repair_forgotten(cls, batch_size: int = 500) -> int:
        """Make ready the jobs waiting as paused whose task is not paused; return how many.

        A failsafe, run by the dispatchers' maintenance: an enqueue that read the pause
        as the task was being resumed writes its job here after the resume moved the
        others. One index seek per gap between the paused tasks (few), however many
        jobs wait; a run repairs the first forgotten task of each gap, the next run the
        next. A task paused again meanwhile is no harm: its jobs made ready here
        are paused again by the worker that claims them (``Job.paused_run``).
        """
        moved = 0
        for task_path in cls._forgotten_tasks()[:batch_size]:
            moved += db.retry_deadlocks(lambda path=task_path: cls._unpark_forgotten(path))
        return moved

    @classmethod
    def _forgotten_tasks(cls) -> list[str]:
        paused = sorted(TaskPause.objects.values_list("task_path", flat=True))
        bounds = [None, *paused, None]
        found = []
        for low, high in itertools.pairwise(bounds):
            gap = cls.objects.all()
            gap = gap if low is None else gap.filter(task_path__gt=low)
            gap = gap if high is None else gap.filter(task_path__lt=high)
            found += gap.order_by("task_path").values_list("task_path", flat=True)[:1]
        return found

    @classmethod
    def _unpark_forgotten(cls, task_path: str) -> int:
        with db.atomic():
            if TaskPause.objects.filter(task_path=task_path).exists():
                return 0
            return cls._unpark(task_path)

    @classmethod
    def _park_ready(cls, task_path: str) -> int:
        ready = ReadyExecution.objects.filter(job__task_path=task_path).order_by("job_id")
        # Waits for a claim holding one of them (its claim wins); only the rows locked
        # here move, so that a job never lands in two tables.
        locked = ready.locked(skip_locked=False, only_self=True)
        job_ids = list(locked.values_list("job_id", flat=True))
        for chunk in _chunks(job_ids):
            _copy(ReadyExecution, cls, chunk, task_path=task_path)
            ReadyExecution.objects.filter(job_id__in=chunk).delete()
        return len(job_ids)

    @classmethod
    def _unpark(cls, task_path: str) -> int:
        from ..signals import jobs_ready

        paused = cls.objects.filter(task_path=task_path).order_by("job_id")
        job_ids = list(paused.locked(skip_locked=False).values_list("job_id", flat=True))
        for chunk in _chunks(job_ids):
            if fair_share.needed(jobs := _fair_jobs(chunk, task_path)):
                # Their places in the fair order are taken anew, as they become ready.
                cls.objects.filter(job_id__in=chunk).delete()
                ReadyExecution.create_all_from_jobs(jobs)
                continue
            # Same job ids, priorities and entry times: the poll order is the original one.
            _copy(cls, ReadyExecution, chunk)
            cls.objects.filter(job_id__in=chunk).delete()
        if job_ids:
            queues = set(
                ReadyExecution.objects.filter(job__task_path=task_path)
                .values_list("queue_name", flat=True)
                .distinct()
                .order_by()
            )
            jobs_ready.send(ReadyExecution, queue_names=queues)
        return len(job_ids)


def _fair_jobs(job_ids: list[int], task_path: str) -> list[Job]:
    """The jobs ``job_ids`` of ``task_path`` when fair share is in use (read for their
    keys); none otherwise, without a query. Looking the task's ``@fair`` up imports it."""
    from ..job import Job

    if fairness.fairness_for(task_path) is None and not fair_share.in_use():
        return []
    return list(Job.objects.filter(pk__in=job_ids).order_by("pk"))


def _chunks(job_ids: list[int]) -> list[list[int]]:
    return [job_ids[start : start + MOVE_BATCH] for start in range(0, len(job_ids), MOVE_BATCH)]


def _copy(source, target, job_ids: list[int], **constants: str) -> None:
    """Copy the rows ``job_ids`` of ``source`` into ``target``, in one INSERT ... SELECT.

    Not the ORM's bulk_create: a backlog of 100,000 jobs would be read into objects and
    written back; this statement moves them inside the database, the same on each one.
    """
    connection = db.connection()
    quote = connection.ops.quote_name
    shared = ["job_id", *READY_COPIED_FIELDS, "created_at"]
    names = ", ".join(quote(name) for name in [*shared, *constants])
    selected = ", ".join([*(quote(name) for name in shared), *(["%s"] * len(constants))])
    marks = ", ".join(["%s"] * len(job_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {quote(target._meta.db_table)} ({names}) SELECT {selected} "
            f"FROM {quote(source._meta.db_table)} WHERE {quote('job_id')} IN ({marks})",
            [*constants.values(), *job_ids],
        )


def _insert_pause(task_path: str) -> None:
    if TaskPause.objects.filter(task_path=task_path).exists():
        return
    try:
        with db.atomic():  # a savepoint: a concurrent pause of the same task is no error
            TaskPause.objects.create(task_path=task_path)
    except IntegrityError:
        pass
