"""An idle worker picks a new job up quickly, and sends few statements while nothing happens.

The real ``manage.py steady_queue`` runs one worker polling every two seconds (ten with
SLOW_POLLING). On SQLite a write to the database's files wakes it: a job starts long
before the next poll, and the worker polls no more while nothing is written. On
MySQL/MariaDB its polls tighten after activity: a job enqueued just after another ran
starts long before the polling interval, and once idle the worker polls every interval.
(On PostgreSQL NOTIFY wakes it: tests/processes/test_wakeup.py.)

The worker's statements are logged by the subprocess (``SQ_STATEMENT_LOG``, see
tests/processes/settings.py), one line each with its process id.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection

from steady_queue.models import Job, Process
from tests import tasks
from tests.processes.conftest import wait_until

pytestmark = pytest.mark.process

SQLITE = connection.vendor == "sqlite"
POLLED = "steady_queue_ready_executions"
# Heartbeats are writes, which wake an SQLite worker: at their default pace here.
QUIET = {"SQ_HEARTBEAT_INTERVAL": "60", "SQ_METRICS_FLUSH_INTERVAL": "60"}


class StatementLog:
    def __init__(self, path: Path):
        self.path = path
        path.touch()

    def polls(self, pid: int) -> int:
        """How many times ``pid`` read the ready jobs (one statement per poll of "*")."""
        lines = self.path.read_text().splitlines()
        return sum(1 for line in lines if line.startswith(f"{pid} ") and POLLED in line)

    def statements(self, pid: int) -> int:
        return sum(1 for line in self.path.read_text().splitlines() if line.startswith(f"{pid} "))


@pytest.fixture
def statements(tmp_path: Path) -> StatementLog:
    return StatementLog(tmp_path / "statements.log")


def run_and_time(job_id: int, timeout: float = 10.0) -> float:
    """Wait for job ``job_id`` to finish; return how long after its enqueue it started."""
    job = wait_until(
        lambda: Job.objects.filter(pk=job_id, finished_at__isnull=False).first(),
        timeout=timeout,
        what=f"job {job_id} to finish",
    )
    started_at = datetime.fromisoformat(job.attempts[0]["started_at"])
    return (started_at - job.created_at).total_seconds()


def settled_worker(
    start_supervisor, config: str, statements: StatementLog, children: int = 1
) -> Process:
    """Start ``config``, run one job so the worker's connections are open, then let it idle."""
    start_supervisor(config, children=children, SQ_STATEMENT_LOG=str(statements.path), **QUIET)
    run_and_time(int(tasks.add.enqueue(1, 1).id))
    return Process.objects.get(kind=Process.Kind.WORKER)


@pytest.mark.skipif(not SQLITE, reason="the change signal is SQLite's files")
def test_an_idle_sqlite_worker_starts_jobs_long_before_its_next_poll(start_supervisor, statements):
    settled_worker(start_supervisor, "SLOW_POLLING", statements, children=2)
    began = time.monotonic()
    delays = []
    for index in range(3):
        time.sleep(0.5)  # idle between jobs, as a worker is most of the time
        delays.append(run_and_time(int(tasks.add.enqueue(index, index).id)))

    # Each well under the 10 s polling interval; all three inside one of them.
    assert max(delays) < 1.0, delays
    assert time.monotonic() - began < 10.0


@pytest.mark.skipif(not SQLITE, reason="the change signal is SQLite's files")
def test_an_idle_sqlite_worker_sends_no_query_while_nothing_is_written(
    start_supervisor, statements
):
    worker = settled_worker(start_supervisor, "IDLE_WORKER", statements)
    time.sleep(0.5)  # the polls that follow the settling job's own writes
    polls, sent = statements.polls(worker.pid), statements.statements(worker.pid)

    time.sleep(3.0)  # a window in which nothing is written: nothing to wait for

    # The worker polls every 5 s in case a write went unseen: at most one such poll
    # (a few statements) in the window, against 15 polls every 0.2 s without the signal.
    assert statements.polls(worker.pid) - polls <= 1
    assert statements.statements(worker.pid) - sent <= 8


@pytest.mark.skipif(
    connection.vendor == "postgresql", reason="NOTIFY wakes the worker: test_wakeup.py"
)
def test_a_job_enqueued_just_after_another_ran_starts_well_before_the_next_poll(
    start_supervisor, statements
):
    settled_worker(start_supervisor, "IDLE_WORKER", statements)
    delays = []
    for index in range(3):
        # The previous job just finished: on MySQL the worker polls within milliseconds
        # for a while; every 2 s otherwise.
        delays.append(run_and_time(int(tasks.add.enqueue(index, index).id)))

    assert max(delays) < 1.0, delays


@pytest.mark.skipif(SQLITE or connection.vendor == "postgresql", reason="polling only")
def test_an_idle_polling_worker_polls_every_polling_interval(start_supervisor, statements):
    worker = settled_worker(start_supervisor, "IDLE_WORKER", statements)
    time.sleep(2.5)  # the tightened polls after the settling job are over
    before = statements.polls(worker.pid)

    time.sleep(4.0)

    # One poll per 2 s interval, give or take the window's edges.
    assert 1 <= statements.polls(worker.pid) - before <= 3
