"""The LISTEN side of PostgreSQL notifications: who is woken, when, and how it recovers.

Everything runs in-process against the real database: a Listener thread with its own
connection, and real enqueues committing (or not) on the test's connection.
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connection, transaction

from steady_queue.backend import enqueue_all
from steady_queue.processes import listener
from steady_queue.processes.dispatcher import Dispatcher
from steady_queue.processes.worker import Worker
from steady_queue.storage import notify
from tests import tasks
from tests.processes.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

POSTGRES = connection.vendor == "postgresql"
only_postgres = pytest.mark.skipif(not POSTGRES, reason="LISTEN/NOTIFY is PostgreSQL's")


class Woken:
    """Record the wake-ups a process gets (a real Worker or Dispatcher, never started)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.lock = threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.times.append(time.monotonic())

    @property
    def count(self) -> int:
        with self.lock:
            return len(self.times)


class CountingWorker(Worker):
    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.woken = Woken()

    def wake_up(self) -> None:
        self.woken()


class CountingDispatcher(Dispatcher):
    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.woken = Woken()

    def wake_up(self) -> None:
        self.woken()


@pytest.fixture
def started():
    """Start listeners for the test and stop them (closing their connections) after it."""
    running: list[listener.Listener] = []

    def start(built: listener.Listener) -> listener.Listener:
        built.start()
        running.append(built)
        return built

    yield start
    for each in running:
        each.stop()


def listening_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
        )
        return cursor.fetchone()[0]


def send_marker(queue_name: str = "marker") -> None:
    """A notification sent after everything before it: its arrival proves theirs did."""
    notify.jobs_ready([queue_name])


def test_without_notifications_processes_only_poll():
    # SQLite and MySQL have no NOTIFY: no listener, no thread, no connection.
    expected = POSTGRES
    assert (listener.for_worker(Worker()) is not None) is expected
    assert (listener.for_dispatcher(Dispatcher()) is not None) is expected


@pytest.mark.parametrize(
    ("queues", "queue_name", "wanted"),
    [
        (["*"], "anything", True),
        (["default"], "default", True),
        (["default"], "low", False),
        (["beta*"], "beta_one", True),
        (["beta*"], "alpha", False),
        (["real_time", "background"], "background", True),
        (["low"], notify.ANY_QUEUE, True),
    ],
)
def test_a_worker_wants_the_notifications_of_the_queues_it_polls(queues, queue_name, wanted):
    assert listener.wants(queues, queue_name) is wanted


@only_postgres
def test_an_enqueue_wakes_a_worker_of_its_queue_once_committed(started):
    worker = CountingWorker(queues=["default"], threads=2)
    started(listener.for_worker(worker))
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")

    tasks.add.enqueue(1, 2)

    wait_until(lambda: worker.woken.count == 2, timeout=5, what="the wake-up for the job")


@only_postgres
def test_rolled_back_and_foreign_enqueues_wake_nobody(started):
    worker = CountingWorker(queues=["default"], threads=2)
    handle = started(listener.for_worker(worker))
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")

    with pytest.raises(RuntimeError), transaction.atomic():
        tasks.add.enqueue(1, 2)
        raise RuntimeError("roll back")
    tasks.add.using(queue_name="low").enqueue(1, 2)
    marker = CountingWorker(queues=["marker"])
    started(listener.for_worker(marker))
    wait_until(lambda: marker.woken.count == 1, what="the marker's listener")
    send_marker()
    wait_until(lambda: marker.woken.count == 2, what="the marker")

    # Notifications arrive in commit order: the worker has seen all that came before.
    assert worker.woken.count == 1
    assert handle.is_alive()


@only_postgres
def test_a_busy_worker_is_not_woken(started):
    worker = CountingWorker(queues=["*"], threads=1)
    worker.pool.submit(lambda: None)  # its only thread is taken (the pool is not started)
    started(listener.for_worker(worker))
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")

    tasks.add.enqueue(1, 2)
    marker = CountingWorker(queues=["marker"])
    started(listener.for_worker(marker))
    wait_until(lambda: marker.woken.count == 1, what="the marker's listener")
    send_marker()
    wait_until(lambda: marker.woken.count == 2, what="the marker")

    assert worker.woken.count == 1


@only_postgres
def test_a_bulk_enqueue_wakes_a_worker_once_per_queue(started):
    worker = CountingWorker(queues=["*"], threads=3)
    started(listener.for_worker(worker))
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")

    enqueue_all([(tasks.add, (i, i), {}) for i in range(50)])
    enqueue_all([(tasks.add.using(queue_name=q), (1, 1), {}) for q in ("low", "other")] * 5)

    # One notification per queue of each enqueue: 1 + 2, whatever the number of jobs.
    wait_until(lambda: worker.woken.count == 4, timeout=5, what="three wake-ups")
    marker = CountingWorker(queues=["marker"])
    started(listener.for_worker(marker))
    wait_until(lambda: marker.woken.count == 1, what="the marker's listener")
    send_marker()
    wait_until(lambda: marker.woken.count == 2, what="the marker")
    # A worker of "*" wants the marker too; its listener thread may see it a moment later.
    wait_until(lambda: worker.woken.count >= 5, what="the marker on the other listener")
    assert worker.woken.count == 5  # and nothing else woke it in between


@only_postgres
def test_a_dispatcher_is_woken_when_a_scheduled_job_comes_due(started):
    dispatcher = CountingDispatcher(polling_interval=60)
    started(listener.for_dispatcher(dispatcher))
    wait_until(lambda: dispatcher.woken.count == 1, what="the wake-up on connecting")

    tasks.add.using(run_after=timedelta(seconds=0.5)).enqueue(1, 2)
    due = time.monotonic() + 0.5

    wait_until(lambda: dispatcher.woken.count == 2, timeout=5, what="the due wake-up")
    woken_at = dispatcher.woken.times[-1]
    assert due - 0.1 <= woken_at <= due + 1.0


@only_postgres
def test_a_lost_connection_is_replaced_and_the_owner_polls(started):
    worker = CountingWorker(queues=["*"], threads=1)
    started(listener.for_worker(worker))
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
        )

    # Reconnecting wakes the worker: what was sent meanwhile is lost, so it polls.
    wait_until(lambda: worker.woken.count == 2, timeout=10, what="the reconnection")
    tasks.add.enqueue(1, 2)
    wait_until(lambda: worker.woken.count == 3, timeout=5, what="a wake-up after it")


@only_postgres
def test_stopping_ends_the_thread_and_closes_its_connection():
    worker = CountingWorker(queues=["*"])
    handle = listener.for_worker(worker)
    handle.start()
    wait_until(lambda: worker.woken.count == 1, what="the wake-up on connecting")
    assert listening_connections() == 1

    started_at = time.monotonic()
    handle.stop()

    assert not handle.is_alive()
    assert time.monotonic() - started_at < 1.0
    wait_until(lambda: listening_connections() == 0, timeout=5, what="the connection to close")
