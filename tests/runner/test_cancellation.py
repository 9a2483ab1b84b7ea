"""Cancelling jobs: at once before they start, on request while they run; never retried."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.compat import TaskResultStatus
from steady_queue.exceptions import JobStateError
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.models.execution.claimed_finish import Failure
from steady_queue.runner import cancellation
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.tasks import cancelling

pytestmark = pytest.mark.django_db

CANCELLED = "steady_queue.exceptions.JobCancelled"


def error_of(result) -> str:
    return FailedExecution.objects.get(job_id=result.id).exception_class


def test_a_ready_job_ends_at_once_failed_with_job_cancelled():
    result = tasks.noop.enqueue()
    job = Job.objects.get(pk=result.id)
    job.cancel()

    assert job.cancel_requested_at is not None
    assert not ReadyExecution.objects.exists()
    assert error_of(result) == CANCELLED
    assert tasks.noop.get_result(result.id).status == TaskResultStatus.FAILED
    assert run_ready_jobs() == []  # nothing left to run


def test_scheduled_and_blocked_jobs_are_cancelled_too():
    scheduled = tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    holder = tasks.limited.enqueue("key")
    blocked = tasks.limited.enqueue("key")
    assert BlockedExecution.objects.filter(job_id=blocked.id).exists()

    assert Job.objects.filter(pk__in=[scheduled.id, blocked.id]).cancel_all() == 2

    assert not ScheduledExecution.objects.exists() and not BlockedExecution.objects.exists()
    assert error_of(scheduled) == error_of(blocked) == CANCELLED
    assert ReadyExecution.objects.filter(job_id=holder.id).exists()  # left alone


def test_cancelling_a_ready_job_hands_its_concurrency_slot_on():
    first = tasks.limited.enqueue("key")
    waiting = tasks.limited.enqueue("key")
    Job.objects.get(pk=first.id).cancel()

    assert ReadyExecution.objects.filter(job_id=waiting.id).exists()


def test_finished_and_failed_jobs_cannot_be_cancelled():
    done = tasks.noop.enqueue()
    run_ready_jobs()
    job = Job.objects.get(pk=done.id)
    with pytest.raises(
        JobStateError, match="only ready, scheduled, running, blocked, throttled, paused or waiting"
    ):
        job.cancel()
    assert Job.objects.filter(pk=done.id).cancel_all() == 0


def test_cancel_all_costs_the_same_queries_for_3_jobs_as_for_30():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def cancel(jobs: int) -> int:
        for _ in range(jobs):
            tasks.noop.enqueue()
        with CaptureQueriesContext(connection) as captured:
            assert Job.objects.filter(finished_at__isnull=True).cancel_all() == jobs
        FailedExecution.objects.all().delete()
        return len(captured)

    def queries(jobs: int) -> int:
        # The first cancellation of an hour also creates the task's rollup rows for that
        # hour: each count is taken after one in its hour, again if the hour turned
        # between the two (CI once crossed 20:00 here: 37 queries for 3 jobs, 34 for 30).
        while True:
            hour = timezone.now().replace(minute=0, second=0, microsecond=0)
            cancel(1)
            count = cancel(jobs)
            if timezone.now() < hour + timedelta(hours=1):
                return count

    assert queries(3) == queries(30)
    assert FailedExecution.objects.count() == 0


def test_a_running_job_that_sees_its_cancellation_and_returns_ends_cancelled():
    result = cancelling.notices_and_returns.enqueue()
    [finished] = run_ready_jobs()
    assert finished.status == TaskResultStatus.FAILED
    assert error_of(result) == CANCELLED
    assert Job.objects.get(pk=result.id).finished_at is None


def test_report_progress_raises_job_cancelled():
    result = cancelling.reports_progress.enqueue()
    [finished] = run_ready_jobs()
    assert finished.status == TaskResultStatus.FAILED
    assert error_of(result) == CANCELLED


def test_whatever_a_cancelled_run_raises_it_ends_cancelled_and_is_not_retried():
    result = cancelling.raises_after_cancel.enqueue()
    run_ready_jobs()
    failed = FailedExecution.objects.get(job_id=result.id)
    assert failed.exception_class == CANCELLED
    assert "ValueError: interrupted half-way" in failed.backtrace  # the cause, kept
    assert not ScheduledExecution.objects.exists()  # its retry policy did not apply
    assert len(Job.objects.get(pk=result.id).attempts) == 1


def test_a_cancelled_run_that_asks_to_be_rescheduled_ends_cancelled():
    result = cancelling.reschedules_after_cancel.enqueue()
    run_ready_jobs()
    assert error_of(result) == CANCELLED
    assert not ScheduledExecution.objects.exists()


def test_a_run_that_never_looks_and_succeeds_keeps_its_success():
    result = cancelling.never_looks.enqueue()
    [finished] = run_ready_jobs()
    assert finished.status == TaskResultStatus.SUCCESSFUL
    assert Job.objects.get(pk=result.id).cancel_requested_at is not None


def test_a_cancelled_claim_given_back_ends_cancelled_instead_of_running_again():
    result = tasks.noop.enqueue()
    process = Process.register(kind="Worker", name="w", pid=1, hostname="h")
    [_claimed] = ReadyExecution.claim(["*"], 1, process)
    Job.objects.get(pk=result.id).cancel()
    assert ClaimedExecution.objects.filter(job_id=result.id).exists()  # still running

    process.deregister()  # what a worker's QUIT does: its claims go back

    assert not ReadyExecution.objects.exists()
    assert error_of(result) == CANCELLED


def test_a_run_ignores_what_was_known_of_another_job_of_the_same_id():
    # As a job of another queue database with the same id, or a check made outside a run.
    done = tasks.noop.enqueue()
    cancellation.mark(int(done.id))

    run_ready_jobs()

    assert Job.objects.get(pk=done.id).state == "finished"


def test_a_cancel_that_lands_while_a_failure_is_recorded_is_not_lost():
    # The run asked before the cancel landed; the finish re-reads it under the row's lock.
    result = cancelling.raises_after_cancel.enqueue()  # a retry policy of 5 attempts
    process = Process.register(kind="Worker", name="w", pid=1, hostname="h")
    [claimed] = ReadyExecution.claim(["*"], 1, process)
    assert not claimed.job.cancel_requested()  # what the failing run knows
    assert Job.objects.filter(pk=result.id).cancel_all() == 1  # lands now

    assert claimed.record(Failure(ValueError("the task's own error")))

    failed = FailedExecution.objects.get(job_id=result.id)
    assert failed.exception_class == CANCELLED
    assert "ValueError: the task's own error" in failed.backtrace  # the cause, kept
    assert not ScheduledExecution.objects.exists()  # no retry
    [attempt] = Job.objects.get(pk=result.id).attempts
    assert attempt["error"]["exception_class"] == CANCELLED


def test_a_due_job_whose_cancel_was_requested_fails_when_claimed_without_running():
    # What a cancel that lost the race against a retry's scheduling leaves: due, cancelled.
    result = tasks.noop.enqueue()
    Job.objects.filter(pk=result.id).update(cancel_requested_at=timezone.now())

    run_ready_jobs()

    job = Job.objects.get(pk=result.id)
    assert error_of(result) == CANCELLED
    assert job.finished_at is None and job.return_value is None  # it never ran
    assert not ReadyExecution.objects.exists() and not ClaimedExecution.objects.exists()
