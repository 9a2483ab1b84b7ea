"""Waiting for a job's end: ``steady_queue.wait`` and ``steady_queue.await_result``.

The job ends in a thread of the test process while the test waits. On PostgreSQL no
poll is due for an hour (``only_notifications_wake``): a waiter that returns there was
woken by the end's NOTIFY. The other databases poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator

import pytest
from asgiref.sync import sync_to_async
from django.db import connection, connections

import steady_queue
from steady_queue import db, storage, waiting
from steady_queue.compat import TaskResultDoesNotExist, TaskResultStatus
from steady_queue.models import ClaimedExecution, Job, ReadyExecution
from steady_queue.storage import notify
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.processes.conftest import wait_until
from tests.tasks import acceptance, billing

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "billing"])

LISTENING = connection.vendor == "postgresql"
only_postgres = pytest.mark.skipif(not LISTENING, reason="LISTEN/NOTIFY is PostgreSQL's")
AN_HOUR = 3600.0


@pytest.fixture(autouse=True)
def only_notifications_wake(monkeypatch):
    if LISTENING:
        monkeypatch.setattr(waiting, "LISTENING_POLL", AN_HOUR)
        monkeypatch.setattr(waiting, "FIRST_POLL", AN_HOUR)  # the fallback's too


def waiters(alias: str = "default") -> int:
    """How many waiters hold their waiting lock (PostgreSQL)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s "
            "AND granted AND database = (SELECT oid FROM pg_database "
            "WHERE datname = current_database())",
            [notify.WAITING_LOCK],
        )
        return cursor.fetchone()[0]


@contextlib.contextmanager
def meanwhile(action: Callable[[], object], alias: str = "default") -> Iterator[None]:
    """Run ``action`` in a thread once the test waits (on PostgreSQL: holds its lock)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            if LISTENING:
                wait_until(lambda: waiters(alias) == 1, timeout=10, what="the waiter's lock")
            with db.using_alias(alias):
                action()
        except BaseException as exc:
            failures.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join(30)
    if failures:
        raise failures[0]


def test_returns_the_result_once_the_job_succeeds():
    result = tasks.add.enqueue(1, 2)

    with meanwhile(run_ready_jobs):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.SUCCESSFUL
    assert final.return_value == 3
    assert final.id == result.id and final.finished_at is not None


def test_returns_a_job_that_ended_before_the_wait_at_once():
    result = tasks.add.enqueue(2, 2)
    run_ready_jobs()

    assert steady_queue.wait(result, timeout=0).return_value == 4


def test_a_success_that_hands_a_concurrency_slot_on_wakes_the_waiter_too():
    result = tasks.limited.enqueue("wait")  # stored by the ORM, not one statement

    with meanwhile(run_ready_jobs):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.SUCCESSFUL and final.return_value == "wait"


def test_returns_a_job_that_failed_for_good_with_its_error():
    result = tasks.explode.enqueue("boom")

    with meanwhile(run_ready_jobs):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.FAILED
    [error] = final.errors
    assert error.exception_class_path == "builtins.ValueError" and "boom" in error.traceback


def test_returns_a_job_cancelled_before_it_started_as_failed():
    result = tasks.add.enqueue(1, 1)

    with meanwhile(lambda: Job.objects.get(pk=result.id).cancel()):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.FAILED and not final.worker_ids  # it never ran
    [error] = final.errors  # the failure it ended with, without a traceback
    assert error.exception_class_path == "steady_queue.exceptions.JobCancelled"
    assert error.traceback == ""
    failure = Job.objects.get(pk=result.id).failed_execution
    assert failure.exception_class == "steady_queue.exceptions.JobCancelled"


def test_returns_a_job_failed_because_its_process_died():
    result = tasks.add.enqueue(1, 1)
    storage.claim(["*"], 1, None)
    claims = ClaimedExecution.objects.filter(job_id=result.id)

    with meanwhile(lambda: ClaimedExecution.fail_all_with(claims, RuntimeError("died"))):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.FAILED
    assert final.errors[0].exception_class_path == "builtins.RuntimeError"


def test_a_job_waiting_for_a_retry_has_not_ended():
    result = acceptance.flaky.enqueue(failures=5)  # retried in 10 seconds

    with meanwhile(run_ready_jobs), pytest.raises(TimeoutError):
        steady_queue.wait(result, timeout=1)

    again = result.task.get_backend().get_result(result.id)
    assert again.status == TaskResultStatus.READY and len(again.errors) == 1


def test_raises_timeout_error_and_changes_nothing():
    result = tasks.add.enqueue(1, 2)

    with pytest.raises(TimeoutError, match=result.id):
        steady_queue.wait(result, timeout=0.05)

    assert result.task.get_backend().get_result(result.id).status == TaskResultStatus.READY
    assert ReadyExecution.objects.filter(job_id=result.id).exists()
    if LISTENING:
        # Its connection closed: the server lets go of the lock once that backend exits.
        wait_until(lambda: waiters() == 0, timeout=10, what="the waiting lock to go")


def test_a_discarded_job_raises_task_result_does_not_exist():
    result = tasks.add.enqueue(1, 2)

    with (
        meanwhile(lambda: Job.objects.get(pk=result.id).discard()),
        pytest.raises(TaskResultDoesNotExist),
    ):
        steady_queue.wait(result, timeout=20)


def test_a_batch_of_ends_too_big_to_lock_wakes_every_waiter(monkeypatch):
    monkeypatch.setattr(notify, "MAX_LOCKS_PER_END", 1)
    result, other = tasks.add.enqueue(1, 2), tasks.add.enqueue(3, 4)
    both = Job.objects.filter(pk__in=[result.id, other.id])

    with meanwhile(both.cancel_all):
        final = steady_queue.wait(result, timeout=20)

    assert final.status == TaskResultStatus.FAILED


def test_accepts_a_result_id_of_the_default_backend():
    result = tasks.add.enqueue(3, 4)

    with meanwhile(run_ready_jobs):
        assert steady_queue.wait(result.id, timeout=20).return_value == 7
    with pytest.raises(TaskResultDoesNotExist):
        steady_queue.wait("not-a-job", timeout=1)


def test_waits_in_the_queue_database_of_the_results_backend():
    result = billing.invoice.enqueue(7)

    with meanwhile(run_ready_jobs, alias="billing"):
        final = steady_queue.wait(result, timeout=20)

    assert final.return_value == "invoice 7" and final.backend == "billing"


def test_the_event_loop_runs_on_while_a_result_is_awaited():
    result = tasks.add.enqueue(5, 6)

    async def end_the_job_once_awaited() -> None:
        if LISTENING:
            while await sync_to_async(_run_and_close, thread_sensitive=False)(waiters) == 0:
                await asyncio.sleep(0.01)  # the loop's own turn: it runs while awaiting
        await sync_to_async(_run_and_close, thread_sensitive=False)()

    async def both():
        return await asyncio.gather(
            steady_queue.await_result(result, timeout=20), end_the_job_once_awaited()
        )

    final, _ = asyncio.run(both())

    assert final.status == TaskResultStatus.SUCCESSFUL and final.return_value == 11


def test_await_result_raises_timeout_error():
    result = tasks.add.enqueue(5, 6)

    with pytest.raises(TimeoutError):
        asyncio.run(steady_queue.await_result(result, timeout=0.05))


def test_a_cancelled_await_stops_waiting(monkeypatch):
    monkeypatch.setattr(waiting, "LISTENING_POLL", 0.05)
    result = tasks.add.enqueue(5, 6)
    stopped = threading.Event()
    original = waiting._wait_in_thread

    def watched(*args):
        try:
            return original(*args)
        finally:
            stopped.set()

    monkeypatch.setattr(waiting, "_wait_in_thread", watched)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(asyncio.wait_for(steady_queue.await_result(result), timeout=0.2))

    assert stopped.wait(10)
    if LISTENING:  # closed: the server lets go once the waiter's backend has exited
        wait_until(lambda: waiters() == 0, timeout=10, what="the waiting lock to go")


@only_postgres
def test_without_listening_it_polls(monkeypatch):
    monkeypatch.setattr(steady_queue, "listen_database", False)
    monkeypatch.setattr(waiting, "FIRST_POLL", 0.01)
    result = tasks.add.enqueue(1, 2)

    with meanwhile_unlocked(run_ready_jobs):
        assert steady_queue.wait(result, timeout=20).return_value == 3


@only_postgres
def test_an_end_nobody_waits_for_sends_no_notification():
    listener = notify.listening_connection()
    try:
        listener.execute(f"LISTEN {notify.ENDED_CHANNEL}")
        tasks.add.enqueue(1, 2), tasks.explode.enqueue("boom"), tasks.limited.enqueue("k")
        run_ready_jobs()
        with connection.cursor() as cursor:  # committed after every end above
            cursor.execute("SELECT pg_notify(%s, 'sentinel')", [notify.ENDED_CHANNEL])
        heard = [n.payload for n in listener.notifies(timeout=10, stop_after=1)]
    finally:
        listener.close()

    assert heard == ["sentinel"]
    assert Job.objects.filter(finished_at__isnull=False).count() == 2


@only_postgres
def test_a_waiter_that_loses_its_connection_polls():
    import psycopg

    result = tasks.add.enqueue(1, 2)
    listening = waiting.Listening(int(result.id))
    listening.connection.close()

    listening.sleep(0.01)

    assert isinstance(listening.fallback, waiting.Polling)
    with pytest.raises(psycopg.OperationalError):
        listening.connection.execute("SELECT 1")


@contextlib.contextmanager
def meanwhile_unlocked(action: Callable[[], object]) -> Iterator[None]:
    thread = threading.Thread(target=_run_and_close, args=(action,))
    thread.start()
    try:
        yield
    finally:
        thread.join(30)


def _run_and_close(action: Callable[[], object] = run_ready_jobs) -> object:
    try:
        return action()
    finally:
        connections.close_all()
