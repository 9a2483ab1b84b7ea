"""A run whose database connection is cut (as a database restart cuts it) still ends
its job once, with its outcome recorded: the worker never gives the claim back.

docs/explanation/guarantees.md, "Database outages": "A job that finished during the outage has
its outcome recorded once the database answers again"; jobs go back to ready only on
QUIT and when a graceful stop outlasts shutdown_timeout.
"""

from __future__ import annotations

import os
import signal
from datetime import timedelta

import pytest
from django.db import connection

import steady_queue
from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process, ReadyExecution
from steady_queue.processes.worker import Worker
from tests.processes.conftest import wait_until
from tests.tasks import async_tasks
from tests.tasks import processes as tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.process
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


@pytest.fixture
def worker():
    """A worker in this process: its pool threads run, its polling loop does not."""
    worker = Worker(queues=["*"], threads=1)
    worker.open_wakeup_pipe()
    worker.process = Process.register(kind=Process.Kind.WORKER, name=worker.name, pid=os.getpid())
    worker.pool.start()
    yield worker
    worker.stop()
    worker.pool.shutdown()
    worker.pool.join(timeout=5)
    worker.close_wakeup_pipe()


@pytest.mark.skipif(
    connection.vendor == "sqlite", reason="SQLite has no server to cut a connection"
)
def test_a_claim_whose_outcome_is_not_recorded_is_failed_never_released(
    worker, run_log, monkeypatch
):
    # Past the alive threshold at once: the success is not retried (OutcomeNotRecorded),
    # as after a database outage longer than the threshold.
    monkeypatch.setattr(steady_queue, "process_alive_threshold", timedelta(0))
    job_id = int(tasks.cut_after_success.enqueue(str(run_log.path), "cut").id)

    worker.poll()
    wait_until(lambda: worker.pool.idle_threads == 1, what="the run to end")

    assert run_log.count("cut") == 1
    assert ClaimedExecution.objects.filter(job_id=job_id, process=worker.process).exists()
    worker._claim_failed = True  # as after a failed claim: the next poll gives back lost ones
    worker.poll()
    assert not ReadyExecution.objects.filter(job_id=job_id).exists()
    assert ClaimedExecution.objects.filter(job_id=job_id).exists()  # still the worker's

    worker.on_shutdown()  # the claim would go back to ready when the worker deregisters
    worker.deregister()
    failure = FailedExecution.objects.get(job_id=job_id)
    assert failure.exception_class.endswith("OutcomeNotRecorded")
    assert not ReadyExecution.objects.filter(job_id=job_id).exists()
    assert run_log.count("cut") == 1


@pytest.mark.process
@pytest.mark.skipif(
    connection.vendor == "sqlite",
    reason="SQLite has no server to cut a connection: the run may end on another helper",
)
def test_an_async_run_whose_connection_is_cut_fails_once_and_is_never_released(
    start_supervisor,
):
    # The steps of an async run before and after its call run on a helper thread:
    # its connection is cut as the run starts, so its ending query fails there.
    supervisor = start_supervisor(
        "ASYNC",
        children=1,
        DJANGO_SETTINGS_MODULE="tests.processes.outage_settings",
        SQ_CUT_CONNECTION_FOR="tests.tasks.async_tasks.nap",
    )
    job_id = int(async_tasks.nap.enqueue(0).id)

    failure = wait_until(
        lambda: FailedExecution.objects.filter(job_id=job_id).first(),
        timeout=30,
        what="the job's failure to be recorded",
    )
    assert failure.message
    later = async_tasks.nap.enqueue(0)  # cut too: it fails, on a fresh connection again
    wait_until(lambda: FailedExecution.objects.filter(job_id=later.id).exists(), what="a later job")

    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
    assert len(Job.objects.get(pk=job_id).attempts) == 1
    assert not ClaimedExecution.objects.exists()
    assert not ReadyExecution.objects.exists()
