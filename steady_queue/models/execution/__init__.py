"""The execution tables: where each unfinished job is, one row per job.

Over 300 lines: ``Execution`` and the five tables of the first design (ready, scheduled,
claimed, blocked, failed) with their moves in and out share the poll order and the
copied columns; the later kinds have modules of their own beside it (``throttled``,
``paused``, ``waiting``), and a claimed job's end is ``claimed_finish`` / ``outcomes``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

from ... import db
from ...compat import TaskResultStatus
from .. import fair_share, states
from ..base import QueueModel
from ..queue_selector import QueueSelector
from ..signals import jobs_ready, jobs_scheduled
from ..task_pause import TaskPause
from .claimed_lifecycle import ClaimedLifecycle

if TYPE_CHECKING:
    from datetime import datetime

    from ..job import Job
    from ..process import Process


class Execution(QueueModel):
    """Where a job is now: exactly one execution row exists per unfinished job.

    Each table declares its kind once, as keywords of its class statement: its state
    (a word of ``states.KIND_ORDER``: ``Job.state``, its dashboard URL and ``--status``
    value), the TaskResult status it shows as, whether its jobs have started, may be
    discarded or cancelled (retried: failed ones), and the field saying when a job
    entered it. ``states`` keeps the registry every list of states derives from.
    """

    state_name: str
    task_status: TaskResultStatus
    kind: states.State

    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True

    def __init_subclass__(
        cls,
        *,
        state: str,
        task_status: TaskResultStatus,
        entered_at: str = "created_at",
        started: bool = False,
        discardable: bool = False,
        cancellable: bool = False,
        retryable: bool = False,
        **kwargs,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.state_name, cls.task_status = state, task_status
        cls.kind = states.register(
            cls,
            name=state,
            task_status=task_status,
            entered_at=entered_at,
            started=started,
            discardable=discardable,
            cancellable=cancellable,
            retryable=retryable,
        )

    def __str__(self) -> str:
        return f"{type(self).__name__} of job {self.job_id}"


#: The order in which workers claim ready jobs, best first: by the ORM, the
#: fast paths' SQL and the two poll indexes alike. ``fair_order`` is 0 for every job
#: while no ``@fair`` task is in use (FIFO by job id), else each job's place in the
#: fair share of its queue and priority (``models/fair_share.py``).
POLL_ORDER = ("-priority", "fair_order", "job")
#: The columns a ready row copies from its job (with ``job_id`` and ``created_at``).
READY_COPIED_FIELDS = ("queue_name", "priority")


class ReadyExecution(
    Execution,
    state=states.READY,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A job that a worker may claim now."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="ready_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    # The job's fairness key (``Job.fairness_key``; "" for a task without ``@fair``) and
    # its start tag in the fair order of its queue and priority (``models/fair_share``).
    fairness_key = models.CharField(max_length=255, blank=True, default="", db_default="")
    fair_order = models.FloatField(default=0, db_default=0)

    class Meta:
        db_table = "steady_queue_ready_executions"
        # Same column order as the two poll queries' ORDER BY: index-only, no sort.
        indexes = [
            models.Index(fields=[*POLL_ORDER], name="sq_poll_all"),
            models.Index(fields=["queue_name", *POLL_ORDER], name="sq_poll_by_queue"),
            # A key's last start tag in its queue and priority (tagging new ready jobs).
            models.Index(
                fields=["queue_name", "priority", "fairness_key", "fair_order"],
                name="sq_ready_fair_key",
            ),
        ]

    @classmethod
    def create_all_from_jobs(cls, jobs: Iterable[Job]) -> None:
        """Make ``jobs`` ready; those of a paused task wait as paused instead."""
        jobs = list(jobs)
        if paused := TaskPause.paused_among(job.task_path for job in jobs):
            from .paused import PausedExecution

            PausedExecution.create_all_from_jobs(j for j in jobs if j.task_path in paused)
            jobs = [job for job in jobs if job.task_path not in paused]
        rows = [cls(job=j, **{f: getattr(j, f) for f in READY_COPIED_FIELDS}) for j in jobs]
        if rows and fair_share.needed(jobs):
            fair_share.tag(rows, jobs)
        if rows:
            cls.objects.bulk_create(rows)
            jobs_ready.send(cls, queue_names={row.queue_name for row in rows})

    @classmethod
    def claim(
        cls, queues: list[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        """Claim up to ``limit`` ready jobs from ``queues`` (in order) for ``process``.

        The portable claim, a transaction per queue; the storage of the queue database
        may claim faster (``steady_queue.storage``): workers claim through it.
        """
        claimed: list[ClaimedExecution] = []
        selector = QueueSelector(queues, cls.objects)
        for relation in selector.scoped_relations():
            if len(claimed) >= limit:
                break
            claimed += cls._select_and_lock(relation, limit - len(claimed), process)
        return claimed

    @classmethod
    def _select_and_lock(cls, relation, limit: int, process) -> list[ClaimedExecution]:
        with db.atomic():
            if process is not None:  # pruned, its claims were failed: it claims nothing more
                relation = relation.filter(process.row_exists())
            candidates = relation.order_by(*POLL_ORDER).locked()
            job_ids = list(candidates.values_list("job_id", flat=True)[:limit])
            if not job_ids:
                return []
            claimed = ClaimedExecution.claiming(job_ids, process)
            cls.objects.filter(job_id__in=job_ids).delete()
            return claimed


class ScheduledExecution(
    Execution,
    state=states.SCHEDULED,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A job waiting for its ``scheduled_at`` before it becomes ready."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="scheduled_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    scheduled_at = models.DateTimeField()

    class Meta:
        db_table = "steady_queue_scheduled_executions"
        indexes = [
            models.Index(fields=["scheduled_at", "-priority", "job"], name="sq_dispatch_all"),
        ]

    @classmethod
    def create_all_from_jobs(cls, jobs: Iterable[Job]) -> None:
        rows = [
            cls(job=j, queue_name=j.queue_name, priority=j.priority, scheduled_at=j.scheduled_at)
            for j in jobs
        ]
        if rows:
            cls.objects.bulk_create(rows)
            jobs_scheduled.send(cls, due_at=min(row.scheduled_at for row in rows))

    @classmethod
    def dispatch_next_batch(cls, batch_size: int) -> int:
        """Make up to ``batch_size`` due jobs ready; return how many were dispatched."""
        with db.atomic():
            due = cls.objects.filter(scheduled_at__lte=timezone.now())
            ordered = due.order_by("scheduled_at", "-priority", "job_id").locked()
            # Ids are selected and locked once, then moved: MySQL rejects LIMIT in IN (...).
            return cls.dispatch_jobs(list(ordered.values_list("job_id", flat=True)[:batch_size]))

    @classmethod
    def dispatch_jobs(cls, job_ids: list[int]) -> int:
        """Move the scheduled jobs ``job_ids`` to ready (or blocked) now."""
        from ..job import Job

        if not job_ids:
            return 0
        with db.atomic():
            jobs = list(Job.objects.filter(pk__in=job_ids).order_by("pk"))
            cls.objects.filter(job_id__in=job_ids).delete()
            Job.dispatch_all(jobs)
        return len(jobs)


class ClaimedExecution(
    ClaimedLifecycle,
    Execution,
    state=states.RUNNING,
    task_status=TaskResultStatus.RUNNING,
    started=True,
    cancellable=True,
):
    """A job a worker has claimed and is running; ``created_at`` is the attempt's start."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="claimed_execution",
    )
    # No database constraint: a process row may vanish before its claims are failed.
    # No index of its own: sq_claimed_by_process starts with it, and every claim and
    # finish would pay for a second one.
    process = models.ForeignKey(
        "steady_queue.Process",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        null=True,
        blank=True,
        related_name="claimed_executions",
    )

    class Meta:
        db_table = "steady_queue_claimed_executions"
        indexes = [models.Index(fields=["process", "job"], name="sq_claimed_by_process")]

    @classmethod
    def claiming(cls, job_ids: list[int], process: Process | None) -> list[ClaimedExecution]:
        from ..job import Job

        now = timezone.now()
        rows = [cls(job_id=job_id, process=process, created_at=now) for job_id in job_ids]
        cls.objects.bulk_create(rows)
        jobs = Job.objects.in_bulk(job_ids)
        return [cls.claimed_for(jobs[row.job_id], process, now) for row in rows]

    @classmethod
    def claimed_for(cls, job: Job, process: Process | None, now: datetime) -> ClaimedExecution:
        """The claim of ``job`` (already stored), linked both ways so nothing is re-fetched."""
        claimed = cls(job=job, process=process, created_at=now)
        job._state.fields_cache.update(dict.fromkeys(states.relations()))
        job._state.fields_cache["claimed_execution"] = claimed
        return claimed


class BlockedExecution(
    Execution,
    state=states.BLOCKED,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A job waiting for its concurrency semaphore."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="blocked_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    concurrency_key = models.CharField(max_length=255)
    expires_at = models.DateTimeField()

    class Meta:
        db_table = "steady_queue_blocked_executions"
        indexes = [
            models.Index(fields=["concurrency_key", "-priority", "job"], name="sq_blocked_release"),
            models.Index(fields=["expires_at", "concurrency_key"], name="sq_blocked_maintenance"),
        ]

    @classmethod
    def unblock(cls, count: int) -> int:
        """Release one job for each of up to ``count`` keys blocked past their expiry."""
        from ..semaphore import Semaphore

        expired = cls.objects.filter(expires_at__lt=timezone.now())
        keys = list(expired.values_list("concurrency_key", flat=True).distinct()[:count])
        taken = Semaphore.objects.filter(key__in=keys, value__lte=0)
        held = set(taken.values_list("key", flat=True))
        return sum(cls.release_one(key) for key in keys if key not in held)

    @classmethod
    def release_one(cls, concurrency_key: str) -> bool:
        """Move the highest-priority job blocked on ``concurrency_key`` to ready, if it may run."""
        with db.atomic():
            candidates = cls.objects.filter(concurrency_key=concurrency_key).order_by(
                "-priority", "job"
            )
            execution = candidates.locked().first()
            return execution is not None and execution.release()

    def release(self) -> bool:
        with db.atomic():
            if not self.job.acquire_concurrency_lock():
                return False
            ReadyExecution.create_all_from_jobs([self.job])
            self.delete()
            return True


class FailedExecution(
    Execution,
    state=states.FAILED,
    task_status=TaskResultStatus.FAILED,
    discardable=True,
    retryable=True,
):
    """A job whose last attempt failed; it stays here until retried or discarded."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="failed_execution",
    )
    # Its job's queue, copied so that counting failed jobs per queue reads one index.
    queue_name = models.CharField(max_length=255, default="")
    exception_class = models.CharField(max_length=255)
    message = models.TextField(blank=True)
    backtrace = models.TextField(blank=True)

    class Meta:
        db_table = "steady_queue_failed_executions"
        indexes = [
            # Per queue, and per queue and class (cancelled): the health and metrics counts.
            models.Index(fields=["queue_name", "exception_class"], name="sq_failed_queue"),
            models.Index(fields=["-created_at"], name="sq_failed_recent"),
            # The cancelled jobs (exceptions.CANCELLED_CLASS), newest first, as listed.
            models.Index(fields=["exception_class", "-created_at", "job"], name="sq_failed_class"),
        ]

    @staticmethod
    def error_fields(error: Mapping[str, str]) -> dict[str, str]:
        """The columns holding ``error`` (a stored error: class, message, traceback)."""
        return {
            "exception_class": error["exception_class"],
            "message": error["message"],
            "backtrace": error["traceback"],
        }

    @classmethod
    def create_never_ran(cls, errors: Mapping[int, Mapping[str, str]], now: datetime) -> None:
        """Fail, as of ``now``, jobs that never ran (cancelled before they started, or a
        workflow step whose dependency failed): ``{job id: its stored error}``."""
        from ..job import Job

        queues = dict(Job.objects.filter(pk__in=list(errors)).values_list("pk", "queue_name"))
        cls.objects.bulk_create(
            cls(job_id=job_id, queue_name=queues[job_id], created_at=now, **cls.error_fields(error))
            for job_id, error in errors.items()
        )

    def save(self, *args, **kwargs) -> None:
        if not self.queue_name:  # made without it: its job's, as every caller here sets
            self.queue_name = self.job.queue_name
        super().save(*args, **kwargs)
