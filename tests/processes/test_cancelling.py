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
