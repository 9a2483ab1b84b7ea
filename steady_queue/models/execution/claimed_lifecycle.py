"""How a claimed job ends when its process does not finish it: released or failed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.dispatch import Signal
from django.utils import timezone

import steady_queue

from .claimed_finish import ClaimedFinish, Failure, Release

if TYPE_CHECKING:
    from ..job import Job

logger = logging.getLogger("steady_queue.claims")

#: Sent with ``job`` after a crash failed it (its failure committed). The backend sends
#: ``task_finished`` from here, as a worker does for the jobs it runs: models do not
#: import the backend.
failed_by_crash = Signal()


class ClaimedLifecycle(ClaimedFinish):
    """Release claimed jobs back to ready, or fail them because their process died."""

    @classmethod
    def orphaned(cls) -> QuerySet:
        """Claims whose process row is gone: it exited or was pruned without finishing them."""
        from ..process import Process

        claims = cls.objects.filter(process_id__isnull=False)
        return claims.exclude(process_id__in=Process.objects.values("pk"))

    @classmethod
    def release_all(cls, claims: QuerySet) -> int:
        """Put the jobs of ``claims`` back to ready, to run again; return how many.

        They keep their concurrency slot: the semaphore was taken when they became ready.
        """
        # A cancelled job given back would run again: it ends as cancelled instead.
        return sum(
            claim.record(_cancelled() if claim.job.cancel_requested() else Release())
            for claim in cls._with_jobs(claims)
        )

    @classmethod
    def fail_all_with(cls, claims: QuerySet, exc: BaseException) -> int:
        """Fail the jobs of ``claims`` with ``exc`` because their process died; return how many.

        The one way a crash ends a job. Each failure counts as an attempt, so the task's
        retry policy decides whether it runs again (``at_least_once``); the job's slot
        is handed on in the same transaction.
        """
        from ..process import Process

        claims = cls._with_jobs(claims)
        # Not a join: a filter on process_id would turn it into an inner join, and the
        # claims of a process whose row is gone would vanish from the result.
        processes = Process.objects.filter(pk__in={c.process_id for c in claims})
        names = dict(processes.values_list("pk", "name"))
        failed = []
        for claim in claims:
            worker_id = names.get(claim.process_id) or f"process-{claim.process_id}"
            outcome = _cancelled(exc) if claim.job.cancel_requested() else Failure(exc)
            if claim.record(outcome, worker_id=worker_id):
                failed.append(claim.job)
        for job in failed:
            _announce(job)
        return len(failed)

    def lost_while_waiting(self) -> bool:
        """Whether this claim, waiting long to start its run, was taken from its process.

        A worker process stopped (SIGSTOP, a VM paused) between its claim and the run's
        start for longer than the alive threshold is pruned and its jobs failed; resumed,
        it must not run them after all. Only a claim older than half the threshold costs
        the query that asks; the others cannot have been pruned yet.
        """
        if self.process_id is None:
            return False  # an in-process run: nothing prunes it
        waited = timezone.now() - self.created_at
        if waited < steady_queue.process_alive_threshold / 2:
            return False
        mine = type(self).objects.filter(job_id=self.job_id, process_id=self.process_id)
        return not mine.exists()

    def start_unless_lost(self, start: Callable[[], object]) -> bool:
        """Call ``start`` (the run's start) unless the claim was lost while it waited.

        The answer must be fresh when the run starts: a process stopped while it asked
        (the query's answer read after it resumed) or just after could have been pruned
        meanwhile. Being pruned takes a stop of at least half the alive threshold (the
        heartbeat beats more often than that), so an answer that took longer to reach
        the start is asked again, once (the second answer is read by a process that was
        just running; a zero threshold must not ask forever).
        """
        fresh = steady_queue.process_alive_threshold.total_seconds() / 2
        for _ in range(2):
            asked_at = time.monotonic()
            if self.lost_while_waiting():
                return False
            if time.monotonic() - asked_at < fresh:
                break
        start()
        return True

    @classmethod
    def _with_jobs(cls, claims: QuerySet) -> list[ClaimedLifecycle]:
        from .. import states

        claims = list(claims.select_related("job").order_by("job_id"))
        for claim in claims:
            claim.job._state.fields_cache.update(dict.fromkeys(states.relations()))
            claim.job._state.fields_cache["claimed_execution"] = claim
        return claims


def _announce(job: Job) -> None:
    try:
        failed_by_crash.send(ClaimedLifecycle, job=job)
    except Exception:
        logger.exception("Could not announce the failure of job %s", job.pk)


def _cancelled(cause: BaseException | None = None) -> Failure:
    """The end of a cancelled job whose run was cut short: failed for good, no retry."""
    from ...exceptions import JobCancelled

    exc = JobCancelled("cancelled while running")
    exc.__cause__ = cause
    return Failure(exc, final=True)
