"""Retry failed jobs: automatically under the task's retry policy, or on request."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

from ... import db
from ...exceptions import JobStateError
from ...task_options import retries
from ..signals import jobs_ended

if TYPE_CHECKING:
    from . import Job


class Retryable:
    """What happens to a job after a failed attempt, and how an operator retries it."""

    def fail_or_retry(self, exc: BaseException, error: dict) -> bool:
        """Schedule the retry the task's policy allows after ``exc`` (True), or fail the job."""
        policy = retries.policy_for(self.task_path)
        retry_at = policy.retry_at(self, exc, timezone.now()) if policy else None
        if retry_at is None:
            self.fail(error)
            return False
        self.reschedule(retry_at)
        return True

    def fail(self, error: dict) -> None:
        """Fail this job for good (until an operator retries it); its unique key is free."""
        from ..execution import FailedExecution
        from .groups import job_ended

        self.release_unique_lock()
        self._state.fields_cache["failed_execution"] = FailedExecution.objects.create(
            job=self, queue_name=self.queue_name, **FailedExecution.error_fields(error)
        )
        job_ended(self, succeeded=False)
        jobs_ended.send(type(self), job_ids=[self.pk])

    def reschedule(self, run_at: datetime) -> None:
        """Run this (claimed) job again at ``run_at``; the caller removes its claim."""
        from ..execution import ScheduledExecution

        self.scheduled_at = run_at
        self.save(update_fields=["scheduled_at", "updated_at"])
        self._state.fields_cache["scheduled_execution"] = ScheduledExecution.objects.create(
            job=self, queue_name=self.queue_name, priority=self.priority, scheduled_at=run_at
        )

    def retry(self, *, reset_steps: bool = False) -> None:
        """Queue this failed job again; it keeps its id, attempts and errors.

        It keeps its durable records too (``steady_queue.durable``: completed steps,
        sleeps, waits), unless ``reset_steps``: then they are deleted in the same
        transaction and the task starts again from its first step (signals received
        stay, for its waits to take again).
        """
        if not reset_steps:
            self._retry_or_refuse()
        else:  # the steps go in the retry's transaction, or not at all
            with db.atomic():
                self._retry_or_refuse()
                self.reset_steps()
        self._state.fields_cache.clear()

    def _retry_or_refuse(self) -> None:
        if type(self).objects.filter(pk=self.pk).retry_all() == 0:
            raise JobStateError(
                f"Job {self.pk} is {state_of(self)}: only failed jobs can be retried."
            )

    def reset_steps(self) -> None:
        """Delete this job's durable records (steps, sleeps, waits); its signals stay."""
        from ..durable import JobStep

        JobStep.objects.filter(job_id=self.pk).delete()


class RetryableQuerySet(models.QuerySet):
    """Retry the failed jobs of a queryset."""

    def retry_all(self, batch_size: int = 500) -> int:
        """Queue every failed job of this queryset again, a batch at a time; return how many."""
        from ..execution import FailedExecution

        failed = FailedExecution.objects.filter(job__in=self.values("pk"))
        retried, after = 0, 0
        # Onwards by job id: a retried workflow step that fails again at once (its upstream
        # step is still failed) is not retried a second time by the same call.
        while batch := _retry_batch(failed.filter(job_id__gt=after), batch_size):
            count, after = batch
            retried += count
        return retried


def _retry_batch(failed: models.QuerySet, batch_size: int) -> tuple[int, int] | None:
    """Retry up to ``batch_size`` failed jobs; return how many, and the last one's id."""
    from ..unique_lock import UniqueLock
    from . import Job
    from .groups import jobs_reopened

    with db.atomic():
        ids = list(failed.order_by("job_id").locked().values_list("job_id", flat=True)[:batch_size])
        if not ids:
            return None
        failed.model.objects.filter(job_id__in=ids).delete()
        jobs = list(Job.objects.filter(pk__in=ids))
        Job.prepare_all_for_execution(jobs_reopened(jobs))
        # A newer duplicate may hold the key by now: the job runs all the same, without it.
        UniqueLock.retake_all(jobs)
    return len(ids), ids[-1]


def state_of(job: Job) -> str:
    """Describe where ``job`` is now, read afresh from the database."""
    fresh = type(job).objects.with_execution().filter(pk=job.pk).first()
    if fresh is None:
        return "deleted"
    return fresh.state
