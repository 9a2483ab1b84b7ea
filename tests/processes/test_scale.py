"""Several supervisors on one database, and connections dropped under their feet."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection

from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

# SQLite serializes every write: a smaller run proves the same there.
JOBS = {"postgresql": 5000, "mysql": 5000, "sqlite": 1000}


def enqueue_records(run_log, labels, **options) -> None:
    task = tasks.record.using(**options) if options else tasks.record
    calls = [(task, (str(run_log.path), label), {}) for label in labels]
    for start in range(0, len(calls), 1000):
        enqueue_all(calls[start : start + 1000])


def test_two_supervisors_run_every_job_exactly_once(start_supervisor, run_log):
    count = JOBS[connection.vendor]
    supervisors = [start_supervisor("SCALE", children=2) for _ in range(2)]

    enqueue_records(run_log, [str(i) for i in range(count)])

    wait_until(lambda: finished_count() == count, timeout=180, what=f"{count} finished jobs")
    runs = Counter(run_log.entries())
    assert len(runs) == count and set(runs.values()) == {1}
    assert {len(attempts) for attempts in Job.objects.values_list("attempts", flat=True)} == {1}
    for supervisor in supervisors:  # both took their share
        assert {worker.pid for worker in supervisor.children()} & run_log.pids()


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no server connections")
def test_processing_resumes_after_connections_are_terminated(start_supervisor, run_log):
    supervisor = start_supervisor("FAST", children=2)
    enqueue_records(run_log, [f"ready-{i}" for i in range(200)])
    enqueue_records(run_log, [f"later-{i}" for i in range(50)], run_after=timedelta(seconds=1))
    [worker] = supervisor.children(Process.Kind.WORKER)

    for progress in (20, 60, 120):
        wait_until(lambda p=progress: finished_count() >= p, what=f"{progress} finished jobs")
        terminate_other_connections()

    wait_until(lambda: finished_count() == 250, timeout=60, what="every job to finish")
    runs = Counter(run_log.entries())
    assert len(runs) == 250 and set(runs.values()) == {1}
    assert not ClaimedExecution.objects.exists() and not FailedExecution.objects.exists()
    assert "works again" in supervisor.output()
    # Nothing crashed: the same processes are still running.
    assert Process.objects.filter(pk=worker.pk).exists()


def terminate_other_connections() -> None:
    """Kill every database session but the test's own, as a database restart would."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
            return
        cursor.execute(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )
        for (session,) in cursor.fetchall():
            with contextlib.suppress(DatabaseError):  # it ended by itself meanwhile
                cursor.execute(f"KILL {int(session)}")
