"""What a claimed job can end with: the outcomes ``ClaimedExecution.record`` stores.

Each is a small frozen value; ``store`` writes it with the claim taken, inside the
transaction of ``claimed_finish``, which also hands the job's slot on.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from django.utils import timezone

import steady_queue

from ...exceptions import CANCELLED_CLASS, UnstorableOutcome
from ...observability.log import job_fields
from ..attempt import Attempt, refused_text
from ..signals import jobs_ended

if TYPE_CHECKING:
    from ..job import Job
    from . import ClaimedExecution

logger = logging.getLogger("steady_queue.claims")

NOT_STORED = "outcome could not be stored"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What a claimed job ended with; ``store`` runs with the claim taken, in its transaction."""

    #: Whether the job gives its concurrency slot back (a released job keeps it).
    hands_off_slot: ClassVar[bool] = True
    #: Whether it counts as an attempt, appended to ``Job.attempts``.
    is_attempt: ClassVar[bool] = True

    def check(self) -> None:
        """Raise before anything is written if the database would refuse this outcome."""

    def store(self, claimed: ClaimedExecution, attempt: Attempt | None) -> str | None:
        """Write the outcome; ``attempt`` is None unless ``is_attempt``.

        Returns the TaskRollup counter the outcome adds to (None: it is no ending).
        """
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class Success(Outcome):
    return_value: Any

    def check(self) -> None:
        if refused := refused_text(self.return_value):
            raise ValueError(f"the return value contains {refused}")

    def hands_nothing_on(self, claimed: ClaimedExecution) -> bool:
        """Whether storing this success is only "delete the claim, mark the job finished".

        True for a kept job with no concurrency slot to hand on, no unique key to give
        back and no batch or workflow to tell: what a storage may write in one statement
        (``record(..., write=...)``).
        """
        job = claimed.job
        in_group = job.batch_id is not None or job.workflow_run_id is not None
        return steady_queue.preserve_finished_jobs and not (
            job.concurrency_key or job.unique_key or in_group
        )

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> str:
        from ..job import Job
        from ..job.groups import job_ended

        job, jobs = claimed.job, Job.objects
        job.release_unique_lock()
        if steady_queue.preserve_finished_jobs:
            jobs.filter(pk=job.pk).update(
                attempts=[*job.attempts, attempt.to_dict()],
                finished_at=attempt.finished_at,
                return_value=self.return_value,
                updated_at=attempt.finished_at,
            )
        else:
            jobs.filter(pk=job.pk).delete()
        job_ended(job, succeeded=True, return_value=self.return_value)
        jobs_ended.send(Success, job_ids=[job.pk])
        return "succeeded"

    def stored(self, job: Job, attempt: Attempt) -> None:
        job.attempts = [*job.attempts, attempt.to_dict()]
        job.finished_at, job.return_value = attempt.finished_at, self.return_value


@dataclasses.dataclass(frozen=True)
class Failure(Outcome):
    """A failed attempt; the task's retry policy decides what follows, unless ``final``."""

    exc: BaseException
    final: bool = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> str:
        job, final = claimed.job, self.final
        if not final and _cancel_requested_now(job):
            # A cancel that landed while this run failed: no retry, whatever the policy.
            from ..attempt import error_details
            from ..job.cancellation import cancelled_by

            attempt = dataclasses.replace(attempt, error=error_details(cancelled_by(self.exc)))
            final = True
        job.attempts = [*job.attempts, attempt.to_dict()]
        job.save(update_fields=["attempts", "updated_at"])
        if final:
            job.fail(attempt.error)
        elif job.fail_or_retry(self.exc, attempt.error):
            return "retried"
        # A cancel is no failure: alerts on failures and the failure rate leave it out.
        return "cancelled" if attempt.error["exception_class"] == CANCELLED_CLASS else "failed"


def _cancel_requested_now(job: Job) -> bool:
    """Whether the job's cancel was asked for, read under a lock on its row.

    Inside the finish's transaction: a cancel writing the row now is waited for, so
    that it is either seen here or finds the job ended (and the claim path fails a job
    whose cancel was asked for: it never runs again).
    """
    rows = type(job).objects.filter(pk=job.pk).locked(skip_locked=False)
    return rows.values_list("cancel_requested_at", flat=True).first() is not None


@dataclasses.dataclass(frozen=True)
class Reschedule(Outcome):
    """Not an attempt: the task asked to run again at ``run_at``."""

    run_at: datetime
    is_attempt: ClassVar[bool] = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        claimed.job.reschedule(self.run_at)
        logger.info(
            "Rescheduled job %s for %s",
            claimed.job_id,
            self.run_at.isoformat(),
            extra=job_fields(claimed.job),
        )


@dataclasses.dataclass(frozen=True)
class Sleep(Reschedule):
    """Not an attempt: ``durable.sleep`` ended the run; the job sleeps until ``run_at``.

    The sleep's record (the run's ``number``-th) is written with the reschedule, in the
    finish's transaction: a crash leaves the claim (and no record) or both.
    """

    number: int = 0

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        from ..durable import SLEEP, JobStep

        JobStep.objects.create(
            job_id=claimed.job_id,
            kind=SLEEP,
            name=str(self.number),
            until=self.run_at,
            completed_at=timezone.now(),
        )
        super().store(claimed, attempt)


@dataclasses.dataclass(frozen=True)
class WaitForSignal(Outcome):
    """Not an attempt: ``durable.wait_for_signal`` ended the run; the job waits for ``name``.

    In the finish's transaction, under the job row's lock that ``send_signal`` takes
    too: a signal sent meanwhile is seen here (the job becomes due at once), or finds
    the job waiting. ``new``: the wait's record (its deadline) is written now.
    """

    name: str
    deadline: datetime | None
    new: bool = True
    is_attempt: ClassVar[bool] = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        from ..durable import WAIT, JobSignal, JobStep
        from ..job import Job
        from .waiting import WaitingExecution

        job = claimed.job
        Job.objects.filter(pk=job.pk).locked(skip_locked=False).values_list("pk").first()
        if self.new:
            JobStep.objects.create(job_id=job.pk, kind=WAIT, name=self.name, until=self.deadline)
        sent = JobSignal.objects.filter(job_id=job.pk, name=self.name).locked(skip_locked=False)
        if sent.values_list("pk").first() is not None:
            Job.dispatch_all([job])  # it came as the run ended: due at once
            return
        WaitingExecution.objects.create(
            job=job,
            queue_name=job.queue_name,
            priority=job.priority,
            signal_name=self.name,
            signal_deadline=self.deadline,
        )
        until = self.deadline.isoformat() if self.deadline else "no deadline"
        logger.info(
            "Job %s waits for signal %r (%s)",
            claimed.job_id,
            self.name,
            until,
            extra=job_fields(claimed.job),
        )


@dataclasses.dataclass(frozen=True)
class Throttle(Outcome):
    """Not an attempt: the job's rate limit window had no room; it waits, from ``until``."""

    until: datetime
    is_attempt: ClassVar[bool] = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        from .throttled import throttle

        throttle(claimed.job, self.until)
        logger.info(
            "Throttled job %s until %s",
            claimed.job_id,
            self.until.isoformat(),
            extra=job_fields(claimed.job),
        )


@dataclasses.dataclass(frozen=True)
class Release(Outcome):
    """Back to ready, to run again; the job keeps its slot (taken when it became ready)."""

    hands_off_slot: ClassVar[bool] = False
    is_attempt: ClassVar[bool] = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        from . import ReadyExecution

        ReadyExecution.create_all_from_jobs([claimed.job])


@dataclasses.dataclass(frozen=True)
class Paused(Release):
    """Not an attempt: the job's task is paused; it waits as paused (``PausedExecution``).

    Stored as a release is: the move to ready sees the pause (or, resumed meanwhile, the
    job is simply ready again). It keeps its slot, as a paused ready job does.
    """

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> None:
        super().store(claimed, attempt)
        logger.info(
            "Paused job %s: its task is paused", claimed.job_id, extra=job_fields(claimed.job)
        )


@dataclasses.dataclass(frozen=True)
class LastResort(Outcome):
    """A fixed failure with nothing from the run in it, when even UnstorableOutcome failed."""

    is_attempt: ClassVar[bool] = False

    def store(self, claimed: ClaimedExecution, attempt: Attempt) -> str:
        kind = UnstorableOutcome
        claimed.job.fail(
            {
                "exception_class": f"{kind.__module__}.{kind.__qualname__}",
                "message": NOT_STORED,
                "traceback": "",
            }
        )
        return "failed"
