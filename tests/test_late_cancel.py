"""A cancel that commits while a failing run is recorded: the finish waits for it, and sees it.

The run asked whether its job was cancelled before the cancel landed; the cancel's
transaction then holds the job's row while the worker records the failure. The finish
reads the request again under that row's lock, so the job ends cancelled, not retried.
"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections, transaction

from steady_queue.models import (
    FailedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.models.execution.claimed_finish import Failure
from tests.tasks import cancelling

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor == "sqlite", reason="SQLite writes one transaction at a time"
    ),
]

CANCELLED = "steady_queue.exceptions.JobCancelled"


def test_a_cancel_committing_while_the_failure_is_recorded_is_waited_for_and_seen():
    result = cancelling.raises_after_cancel.enqueue()  # a retry policy of 5 attempts
    process = Process.register(kind="Worker", name="w", pid=1, hostname="h")
    [claimed] = ReadyExecution.claim(["*"], 1, process)
    assert not claimed.job.cancel_requested()  # what the failing run knew
    holding, errors = threading.Event(), []

    def cancel_until_the_finish_waits() -> None:
        try:
            with transaction.atomic():
                assert Job.objects.filter(pk=result.id).cancel_all() == 1
                holding.set()
                _wait_for(lambda: _waiting_for_a_lock() > 0, what="the finish to wait")
        except BaseException as exc:  # reported by the test below
            errors.append(exc)
        finally:
            holding.set()
            connections.close_all()

    canceller = threading.Thread(target=cancel_until_the_finish_waits)
    canceller.start()
    assert holding.wait(10)
    recorded = claimed.record(Failure(ValueError("the task's own error")))
    canceller.join(10)

    assert not errors and recorded
    assert FailedExecution.objects.get(job_id=result.id).exception_class == CANCELLED
    assert not ScheduledExecution.objects.filter(job_id=result.id).exists()  # no retry


def _waiting_for_a_lock() -> int:
    """Sessions of this database waiting for a lock (MariaDB: inside a statement)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # fresh inside a transaction
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        else:  # another session of this database in a statement: these take milliseconds
            cursor.execute(
                "SELECT count(*) FROM information_schema.processlist WHERE command = 'Query' "
                "AND id != CONNECTION_ID() AND db = DATABASE()"
            )
        return cursor.fetchone()[0]


def _wait_for(condition, *, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)
