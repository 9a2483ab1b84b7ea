"""Cancelling jobs: ``job.cancel()`` and ``Job.objects.filter(...).cancel_all()``.

A job that has not started (ready, scheduled, blocked, throttled) ends at once: failed for good
with ``JobCancelled``, kept for the record, its concurrency slot handed on. A running
job is asked to stop (``cancel_requested_at``): the task sees it through
``steady_queue.context.cancelled()`` and ``report_progress``, and the run ends failed
with ``JobCancelled`` whatever it raises. A cancelled job is never retried by its
policy, and a claim given back (QUIT, a crash) ends it rather than queue it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

from ...exceptions import JobCancelled, JobStateError
from .. import states
from ..signals import jobs_ended
from ..task_rollup import count_jobs
from .operations import executions_of, in_batches
from .retryable import state_of

if TYPE_CHECKING:
    from ..execution.outcomes import Failure

MESSAGE = "cancelled"


class Cancellable:
    """Cancel one job: end it at once if it has not started, else ask its run to stop."""

    def cancel(self) -> None:
        """Cancel this job: at once if it has not started, else ask its run to stop."""
        if type(self).objects.filter(pk=self.pk).cancel_all() == 0:
            state, cancellable = state_of(self), states.in_words(states.names_where("cancellable"))
            raise JobStateError(
                f"Job {self.pk} is {state}: only {cancellable} jobs can be cancelled."
            )
        self.refresh_from_db(fields=["cancel_requested_at"])
        self._state.fields_cache.clear()

    def cancel_requested(self, *, refresh: bool = False) -> bool:
        """Whether someone asked to cancel this job (``refresh``: ask the database)."""
        if refresh:
            rows = type(self).objects.filter(pk=self.pk, cancel_requested_at__isnull=False)
            return rows.exists()
        return self.cancel_requested_at is not None

    def cancelled_run(
        self, cause: BaseException | None = None, *, seen: bool = False, ask: bool = False
    ) -> Failure | None:
        """How a run of this job ends if its cancel was asked for: failed for good with
        ``JobCancelled`` (what the run raised, ``cause``, kept as its cause); else None.

        ``seen``: the run learnt of the cancel itself (``context.cancelled()``); ``ask``:
        read the database, not the row as claimed (a run that failed or asked to run
        again; a success costs nothing more). A run that raised ``JobCancelled`` ends so.
        """
        from ..execution.outcomes import Failure

        if isinstance(cause, JobCancelled):
            return Failure(cause, final=True)
        if not (seen or self.cancel_requested(refresh=ask)):
            return None
        exc = JobCancelled(f"Job {self.pk} was cancelled")
        exc.__cause__ = cause
        return Failure(exc, final=True)


class CancellableQuerySet(models.QuerySet):
    """Cancel the jobs of a queryset, a batch per transaction."""

    def cancel_all(self, batch_size: int = 500) -> int:
        """Cancel every job of this queryset that has not ended; return how many.

        Jobs not started end at once, a batch per transaction; running ones are asked
        to stop (one statement). Finished and failed jobs are left alone.
        """
        cancelled = sum(
            in_batches(executions_of(self, kind.relation), batch_size, _cancel)
            for kind in states.kinds()
            if kind.cancellable and not kind.started
        )
        running = self.filter(claimed_execution__isnull=False, cancel_requested_at__isnull=True)
        cancelled += self.model.objects.filter(pk__in=running.values("pk")).update(
            cancel_requested_at=timezone.now()
        )
        return cancelled


def cancelled_by(cause: BaseException | None = None) -> JobCancelled:
    """The error of a run that ended after its job's cancel was asked for."""
    exc = JobCancelled("cancelled while running")
    exc.__cause__ = cause
    return exc


def cancellation_error() -> dict[str, str]:
    """The stored error of a job cancelled before it started (no traceback: it never ran)."""
    kind = JobCancelled
    return {
        "exception_class": f"{kind.__module__}.{kind.__qualname__}",
        "message": MESSAGE,
        "traceback": "",
    }


def _cancel(execution_model: type[models.Model], ids: list[int], jobs: models.QuerySet) -> None:
    from ..execution import FailedExecution
    from ..unique_lock import UniqueLock
    from .groups import jobs_failed

    count_jobs(jobs, "cancelled")
    now = timezone.now()
    execution_model.objects.filter(job_id__in=ids).delete()
    jobs.update(cancel_requested_at=now, updated_at=now)
    UniqueLock.release(ids)  # failed for good, as Job.fail would: the key is free
    FailedExecution.create_never_ran(dict.fromkeys(ids, cancellation_error()), now)
    jobs_failed(ids)
    jobs_ended.send(execution_model, job_ids=ids)
