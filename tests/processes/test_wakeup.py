"""A real ``manage.py steady_queue`` starts jobs on NOTIFY, long before its next poll.

The worker and the dispatcher poll every 10 seconds; on PostgreSQL a job must still
start within a fraction of a second of being enqueued, or of coming due.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from django.db import connection

from steady_queue.models import Job
from tests import tasks
from tests.processes.conftest import wait_until

pytestmark = [
    pytest.mark.process,
    pytest.mark.postgres_only,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="other databases have no NOTIFY: they poll"
    ),
]

POLLING_INTERVAL = 10.0
# Well before the next poll, with room for a loaded machine.
WELL_BEFORE = 2.0


def listening(count: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
        )
        return cursor.fetchone()[0] == count


def started_after_enqueue(job_id: int) -> float:
    job = wait_until(
        lambda: Job.objects.filter(pk=job_id, finished_at__isnull=False).first(),
        timeout=POLLING_INTERVAL,
        what=f"job {job_id} to finish",
    )
    started_at = datetime.fromisoformat(job.attempts[0]["started_at"])
    return (started_at - job.created_at).total_seconds()


def test_ready_jobs_start_at_once_between_polls(start_supervisor):
    start_supervisor("SLOW_POLLING", children=2)
    wait_until(lambda: listening(2), what="the worker and dispatcher to listen")
    began = time.monotonic()

    delays = [started_after_enqueue(int(tasks.add.enqueue(i, i).id)) for i in range(3)]

    assert max(delays) < WELL_BEFORE, delays
    # Three jobs one after another, all inside one polling interval.
    assert time.monotonic() - began < POLLING_INTERVAL


def test_scheduled_jobs_start_when_due_between_polls(start_supervisor):
    start_supervisor("SLOW_POLLING", children=2)
    wait_until(lambda: listening(2), what="the worker and dispatcher to listen")

    result = tasks.add.using(run_after=timedelta(seconds=1)).enqueue(1, 2)

    job = wait_until(
        lambda: Job.objects.filter(pk=int(result.id), finished_at__isnull=False).first(),
        timeout=POLLING_INTERVAL,
        what="the scheduled job to finish",
    )
    started_at = datetime.fromisoformat(job.attempts[0]["started_at"])
    late = (started_at - job.scheduled_at).total_seconds()
    assert 0 <= late < WELL_BEFORE, late
