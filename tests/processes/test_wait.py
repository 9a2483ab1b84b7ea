"""A job that a real ``manage.py steady_queue`` ends wakes ``steady_queue.wait`` by NOTIFY.

The waiter's polls are an hour apart: returning within the test's timeout, it was
woken by the worker's NOTIFY, which the worker sends only because a waiter holds the
job's waiting lock.
"""

from __future__ import annotations

import signal
import threading

import pytest
from django.db import connection, connections

import steady_queue
from steady_queue import waiting
from steady_queue.compat import TaskResultStatus
from steady_queue.models import ClaimedExecution, Job
from tests.processes.conftest import wait_until
from tests.tasks import cancelling, processes
from tests.test_wait import waiters

pytestmark = [
    pytest.mark.process,
    pytest.mark.postgres_only,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="other databases poll"),
]


@pytest.fixture(autouse=True)
def no_polls(monkeypatch):
    monkeypatch.setattr(waiting, "LISTENING_POLL", 3600.0)
    monkeypatch.setattr(waiting, "FIRST_POLL", 3600.0)


def once_waited_for(action) -> threading.Thread:
    """Run ``action`` in a thread once a waiter holds its lock."""

    def run() -> None:
        try:
            wait_until(lambda: waiters() == 1, timeout=20, what="the waiter's lock")
            action()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_job_a_worker_finishes_wakes_its_waiter(start_supervisor, run_log, tmp_path):
    supervisor = start_supervisor("WORKER", children=1)
    release = tmp_path / "release"
    result = processes.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the job to start")

    thread = once_waited_for(release.touch)
    final = steady_queue.wait(result, timeout=20)
    thread.join(20)

    assert final.status == TaskResultStatus.SUCCESSFUL and final.return_value == "held"
    assert Job.objects.get(pk=result.id).finished_at == final.finished_at
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_a_running_job_cancelled_wakes_its_waiter_when_it_ends(start_supervisor):
    supervisor = start_supervisor("WORKER", children=1)
    result = cancelling.waits_to_be_cancelled.enqueue()
    wait_until(lambda: ClaimedExecution.objects.filter(job_id=result.id).exists(), what="a start")

    thread = once_waited_for(lambda: Job.objects.get(pk=result.id).cancel())
    final = steady_queue.wait(result, timeout=20)
    thread.join(20)

    assert final.status == TaskResultStatus.FAILED
    assert final.errors[0].exception_class_path == "steady_queue.exceptions.JobCancelled"
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
