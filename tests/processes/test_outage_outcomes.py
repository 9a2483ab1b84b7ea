"""A run whose database connection is cut (as a database restart cuts it) still ends
its job once, with its outcome recorded: the worker never gives the claim back.

README "Crashes and delivery guarantees": "A job that finished during the outage has
its outcome recorded once the database answers again"; jobs go back to ready only on
QUIT and when a graceful stop outlasts shutdown_timeout.
"""

from __future__ import annotations

import signal

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job, ReadyExecution
from tests.processes.conftest import wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_a_run_that_lost_its_connection_fails_once_and_is_never_released(start_supervisor, run_log):
    supervisor = start_supervisor("WORKER", children=1)
    job_id = int(tasks.loses_its_connection.enqueue(str(run_log.path), "cut").id)

    failure = wait_until(
        lambda: FailedExecution.objects.filter(job_id=job_id).first(),
        timeout=30,
        what="the job's failure to be recorded",
    )
    assert failure.message
    # The worker goes on running jobs on a fresh connection.
    later = tasks.record.enqueue(str(run_log.path), "later")
    wait_until(lambda: Job.objects.get(pk=later.id).finished_at, what="a later job to run")

    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
    assert run_log.count("cut") == 1
    assert not ClaimedExecution.objects.filter(job_id=job_id).exists()
    assert not ReadyExecution.objects.filter(job_id=job_id).exists()
    assert "released" not in supervisor.output()
