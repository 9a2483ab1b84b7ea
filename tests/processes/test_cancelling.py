"""Cancelling a job that a real worker is running: the task sees it and the job ends."""

from __future__ import annotations

import signal

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job
from tests.processes.conftest import wait_until
from tests.tasks import cancelling

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_a_running_job_that_checks_cancelled_ends_soon_after_cancel(start_supervisor):
    supervisor = start_supervisor("WORKER", children=1)
    result = cancelling.waits_to_be_cancelled.enqueue()
    wait_until(lambda: ClaimedExecution.objects.filter(job_id=result.id).exists(), what="a start")

    Job.objects.get(pk=result.id).cancel()

    # The task asks four times a second: it stops well within the deadline.
    failed = wait_until(
        lambda: FailedExecution.objects.filter(job_id=result.id).first(),
        timeout=5,
        what="the cancelled job to end",
    )
    assert failed.exception_class == "steady_queue.exceptions.JobCancelled"
    assert not ClaimedExecution.objects.exists()
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_a_running_job_that_never_looks_is_interrupted_after_the_grace(start_supervisor):
    supervisor = start_supervisor("ONE_THREAD", children=1, SQ_CANCEL_GRACE="1")
    result = cancelling.ignores_cancellation.enqueue()
    wait_until(lambda: ClaimedExecution.objects.filter(job_id=result.id).exists(), what="a start")

    Job.objects.get(pk=result.id).cancel()

    # 1 s of grace, found by the worker's check every 2 s: well within 10 s.
    failed = wait_until(
        lambda: FailedExecution.objects.filter(job_id=result.id).first(),
        timeout=10,
        what="the interrupted job to end",
    )
    assert failed.exception_class == "steady_queue.exceptions.JobCancelled"
    assert "in ignores_cancellation" in failed.backtrace  # interrupted where it was
    after = cancelling.notices_and_returns.enqueue()  # the one thread is free again
    wait_until(lambda: FailedExecution.objects.filter(job_id=after.id).exists(), what="next")
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
