from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.utils import timezone

from ... import db
from ...compat import TaskResultStatus
from .. import states
from ..label import JobLabel
from .concurrency_controls import ConcurrencyControls
from .pausable import Pausable
from .rate_limited import RateLimited
from .unique import UniqueJobs

if TYPE_CHECKING:
    from . import Job


class Executable(UniqueJobs, RateLimited, Pausable, ConcurrencyControls):
    """Move a job between its execution tables (``states.kinds()``)."""

    @classmethod
    def enqueue_all(cls, jobs: list[Job]) -> list[Job]:
        """Insert ``jobs`` and their executions in one transaction (the portable way).

        The backend enqueues through the storage of the queue database
        (``steady_queue.storage``), which may do it in fewer statements. Returns, for
        each job, the job that now stands for it: itself, or for a duplicate of a
        ``@unique`` task the job holding its key (see ``UniqueJobs.enqueue_unique``).
        """
        if any(job.unique_key for job in jobs):
            return cls.enqueue_unique(jobs)
        return db.retry_deadlocks(lambda: cls._insert_all(jobs))

    @classmethod
    def _insert_all(cls, jobs: list[Job]) -> list[Job]:
        for job in jobs:  # a retried deadlock victim inserts its rows again
            job.pk, job._state.adding = None, True
        with db.atomic():
            created = cls.objects.bulk_create(jobs)
            JobLabel.insert_for(created)
            cls.prepare_all_for_execution(created)
        return created

    @classmethod
    def prepare_all_for_execution(cls, jobs: Iterable[Job]) -> None:
        from ..execution import ScheduledExecution

        jobs = list(jobs)
        cls.dispatch_all([job for job in jobs if job.is_due])
        ScheduledExecution.create_all_from_jobs([job for job in jobs if not job.is_due])

    @classmethod
    def dispatch_all(cls, jobs: list[Job]) -> None:
        """Make ``jobs`` ready; jobs over their rate limit wait as throttled, and jobs with
        concurrency limits go through their semaphore."""
        limited = [job for job in jobs if job.is_rate_limited]
        if limited:
            from ..rate_limit import admit_all

            admitted = {id(job) for job in admit_all(limited)}
            jobs = [job for job in jobs if not job.is_rate_limited or id(job) in admitted]
        cls.dispatch_admitted(jobs)

    @classmethod
    def dispatch_admitted(cls, jobs: list[Job]) -> None:
        """Make ``jobs`` ready, through their semaphore if they have one (rate limits passed)."""
        from ..execution import ReadyExecution

        ReadyExecution.create_all_from_jobs([j for j in jobs if not j.is_concurrency_limited])
        for job in jobs:
            if job.is_concurrency_limited:
                job.dispatch()

    def dispatch(self) -> None:
        from ..execution import ReadyExecution

        if self.acquire_concurrency_lock():
            ReadyExecution.create_all_from_jobs([self])
        else:
            self.handle_concurrency_conflict()

    @property
    def is_ready_on_enqueue(self) -> bool:
        """Whether enqueueing makes this job ready straight away, with no semaphore to take
        (nor, as far as this process knows, a paused task: ``TaskPause.seems_paused``): the
        storages' fast enqueue writes nothing more than its ready row (with its place in
        the fair order, ``fair_share.orders``, while fair share is in use)."""
        from ..task_pause import TaskPause

        limited = self.is_concurrency_limited or self.is_rate_limited
        return self.is_due and not limited and not TaskPause.seems_paused(self.task_path)

    @property
    def is_due(self) -> bool:
        return self.scheduled_at is None or self.scheduled_at <= timezone.now()

    @property
    def execution(self):
        """Return the one execution row of this job, or None when finished or discarded."""
        for name in states.relations():
            execution = getattr(self, name, None)
            if execution is not None:
                return execution
        return None

    @property
    def status(self) -> TaskResultStatus:
        if self.finished_at is not None:
            return TaskResultStatus.SUCCESSFUL
        execution = self.execution
        return TaskResultStatus.FAILED if execution is None else execution.task_status

    @property
    def state(self) -> str:
        """Return where the job is: its execution's state (``states.KIND_ORDER``), finished
        or discarded."""
        if self.finished_at is not None:
            return states.FINISHED
        execution = self.execution
        return execution.state_name if execution else states.DISCARDED
