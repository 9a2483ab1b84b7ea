"""How a claimed job ends when its process does not finish it: released or failed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.db.models import QuerySet
from django.utils import timezone

from .. import db

if TYPE_CHECKING:
    from .job import Job

logger = logging.getLogger("steady_queue.claims")


class ClaimedLifecycle:
    """Release claimed jobs back to ready, or fail them because their process died."""

    @classmethod
    def orphaned(cls) -> QuerySet:
        """Claims whose process row is gone: it exited or was pruned without finishing them."""
        from .process import Process

        claims = cls.objects.using(db.alias()).filter(process_id__isnull=False)
        return claims.exclude(process_id__in=Process.objects.using(db.alias()).values("pk"))

    @classmethod
    def release_all(cls, claims: QuerySet) -> int:
        """Put the jobs of ``claims`` back to ready, to run again; return how many.

        They keep their concurrency slot: the semaphore was taken when they became ready.
        """
        from .execution import ReadyExecution
        from .job import Job

        with db.atomic():
            job_ids = list(
                db.lock(claims.order_by("job_id"), skip_locked=False).values_list(
                    "job_id", flat=True
                )
            )
            if job_ids:
                jobs = list(Job.objects.using(db.alias()).filter(pk__in=job_ids).order_by("pk"))
                ReadyExecution.create_all_from_jobs(jobs)
                cls.objects.using(db.alias()).filter(job_id__in=job_ids).delete()
        return len(job_ids)

    @classmethod
    def fail_all_with(cls, claims: QuerySet, exc: BaseException) -> int:
        """Fail the jobs of ``claims`` with ``exc`` because their process died; return how many.

        The one way a crash ends a job. Each failure counts as an attempt, so the task's
        retry policy decides whether it runs again (``at_least_once``).
        """
        from .process import Process

        rows = list(claims.values_list("job_id", "process_id"))
        # Not a join: a filter on process_id would turn it into an inner join, and the
        # claims of a process whose row is gone would vanish from the result.
        processes = Process.objects.using(db.alias()).filter(pk__in={pid for _, pid in rows})
        names = dict(processes.values_list("pk", "name"))
        failed = [
            job
            for job_id, process_id in rows
            if (job := cls._fail_one(job_id, process_id, names.get(process_id), exc=exc))
        ]
        for job in failed:
            _after_failure(job)
        return len(failed)

    @classmethod
    def _fail_one(
        cls, job_id: int, process_id: int | None, process_name: str | None, *, exc: BaseException
    ) -> Job | None:
        from ..perform import error_details
        from .job import Job
        from .job_executable import EXECUTION_RELATIONS

        with db.atomic():
            mine = cls.objects.using(db.alias()).filter(job_id=job_id, process_id=process_id)
            claim = db.lock(mine, skip_locked=False).first()
            if claim is None:  # it finished (or was failed) meanwhile
                return None
            job = Job.objects.using(db.alias()).get(pk=job_id)
            error = error_details(exc)
            job.attempts = [*job.attempts, _attempt(claim, process_name, error)]
            job.save(update_fields=["attempts", "updated_at"])
            job._state.fields_cache.update(dict.fromkeys(EXECUTION_RELATIONS))
            job.fail_or_retry(exc, error)
            mine.delete()
        return job


def _attempt(claim, process_name: str | None, error: dict) -> dict:
    return {
        "worker_id": process_name or f"process-{claim.process_id}",
        "started_at": claim.created_at.isoformat(),
        "finished_at": timezone.now().isoformat(),
        "error": error,
    }


def _after_failure(job: Job) -> None:
    # Outside the failure's transaction, as after a normal finish: a problem here must not
    # undo the failure, and the dispatcher's concurrency maintenance catches up.
    try:
        job.unblock_next_blocked_job()
        _announce(job)
    except Exception:
        logger.exception("Could not finish failing job %s", job.pk)


def _announce(job: Job) -> None:
    """Send task_finished for a job failed by a crash, as a worker does for its jobs."""
    from ..backend import SteadyQueueBackend
    from ..compat import InvalidTask, task_finished
    from ..results import result_for

    try:
        result = result_for(job)
    except InvalidTask:
        return  # the task is gone from the code base: nothing to describe it with
    task_finished.send(SteadyQueueBackend, task_result=result)
