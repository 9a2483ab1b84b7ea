"""One poll of a worker or dispatcher, in process: what it claims and its query count.

A worker's poll-claim cycle costs a fixed number of queries: no N+1 for pauses or
wildcards.
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from steady_queue.models import (
    ClaimedExecution,
    Pause,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.processes.dispatcher import Dispatcher
from steady_queue.processes.worker import Worker
from tests.tasks import processes as tasks

pytestmark = pytest.mark.django_db(transaction=True)

# The pauses, then per queue polled one transaction: BEGIN, select-and-lock, insert the
# claims, load their jobs, delete the ready rows, COMMIT. On PostgreSQL one statement per
# queue (on MySQL/MariaDB one script, a transaction in one round trip) locks, moves and
# loads the jobs and checks the pauses itself: the pauses are read only with wildcards,
# or when a poll of "*" found nothing (some queue may be paused). SQLite's the same way,
# in one transaction: BEGIN IMMEDIATE, a DELETE taking the ready rows and loading their
# jobs, one INSERT of the claims, COMMIT.
FAST = connection.vendor in ("postgresql", "mysql")
SQLITE = connection.vendor == "sqlite"
ALL_QUEUES = 1 if FAST else 4 if SQLITE else 7
ONE_QUEUE_AFTER_DISTINCT = 3 if FAST else 6 if SQLITE else 8
# Whether a poll of "*" claims first, and reads the pauses only when it found nothing.
ALL_FIRST = FAST or SQLITE


def enqueue(queue: str, count: int = 3) -> None:
    for index in range(count):
        tasks.record.using(queue_name=queue).enqueue("/dev/null", f"{queue}-{index}")


@pytest.fixture
def worker_process() -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker-test", pid=os.getpid())


def unstarted_worker(queues: list[str], process: Process) -> Worker:
    # The pool's threads are not started: claimed jobs are posted, not run.
    worker = Worker(queues=queues, threads=3)
    worker.process = process
    return worker


def poll_once(queues: list[str], process: Process) -> Worker:
    worker = unstarted_worker(queues, process)
    worker.poll()
    return worker


def test_polling_all_queues_claims_in_a_fixed_number_of_queries(
    worker_process, django_assert_num_queries
):
    enqueue("default")
    enqueue("low")

    with django_assert_num_queries(ALL_QUEUES):
        worker = poll_once(["*"], worker_process)

    assert worker.pool.idle_threads == 0
    assert ClaimedExecution.objects.filter(process=worker_process).count() == 3


@pytest.mark.parametrize("paused", [1, 5])
def test_paused_queues_cost_one_query_whatever_their_number(
    worker_process, django_assert_num_queries, paused
):
    paused_queues = ["low", "background", "other", "beta_one", "beta_two"][:paused]
    for queue in paused_queues:
        Pause.objects.create(queue_name=queue)
        enqueue(queue)
    enqueue("default")

    # On PostgreSQL, MySQL and SQLite the poll of "*" comes first and finds nothing: some
    # queue is paused.
    with django_assert_num_queries(ONE_QUEUE_AFTER_DISTINCT + ALL_FIRST):
        poll_once(["*"], worker_process)

    claimed = ClaimedExecution.objects.values_list("job__queue_name", flat=True)
    assert set(claimed) == {"default"}
    assert ReadyExecution.objects.filter(queue_name__in=paused_queues).count() == 3 * paused


@pytest.mark.parametrize("matching", [1, 2])
def test_wildcards_cost_one_distinct_query(worker_process, django_assert_num_queries, matching):
    enqueue("beta_one")
    if matching == 2:
        enqueue("beta_two")
    enqueue("default")

    with django_assert_num_queries(ONE_QUEUE_AFTER_DISTINCT):
        poll_once(["beta*"], worker_process)

    claimed = ClaimedExecution.objects.values_list("job__queue_name", flat=True)
    assert list(claimed) == ["beta_one"] * 3


def test_an_idle_poll_of_exact_queues_costs_one_query_per_queue(
    worker_process, django_assert_num_queries
):
    # The pauses, then per queue in the configured order: BEGIN, an empty select, COMMIT
    # (on PostgreSQL and MySQL only the claiming statement or script of each queue; on
    # SQLite BEGIN, one claiming statement for both, COMMIT).
    with django_assert_num_queries(2 if FAST else 3 if SQLITE else 7):
        delay = unstarted_worker(["real_time", "background"], worker_process).poll()

    assert delay == pytest.approx(0.1)


def test_a_busy_worker_polls_without_queries(worker_process, django_assert_num_queries):
    enqueue("default", 5)
    worker = poll_once(["*"], worker_process)

    with django_assert_num_queries(0):
        delay = worker.poll()

    # Until a thread frees up and wakes it, or the next write of its jobs' log lines
    # (job_log_flush_interval, a second; no query when they logged nothing).
    assert delay > 0.9


def test_dispatcher_polls_again_at_once_while_a_backlog_remains(django_assert_max_num_queries):
    for index in range(3):
        tasks.record.using(run_after=timedelta(hours=1)).enqueue("/dev/null", str(index))
    ScheduledExecution.objects.update(scheduled_at=timezone.now() - timedelta(seconds=1))
    dispatcher = Dispatcher(polling_interval=0.5, batch_size=2, concurrency_maintenance=False)

    # BEGIN, lock the due ids, (savepoint) load their jobs, delete, read whether their
    # tasks are paused, insert ready, (NOTIFY on PostgreSQL), (release savepoint), COMMIT:
    # whatever the batch size; one read of the rate limit windows' next turn, and one of
    # the signal waits past their deadline.
    with django_assert_max_num_queries(12):
        assert dispatcher.poll() == 0  # a full batch: more may be due
    assert dispatcher.poll() == 0.5
    assert ReadyExecution.objects.count() == 3 and not ScheduledExecution.objects.exists()


def test_dispatcher_runs_concurrency_maintenance_on_its_interval(django_assert_num_queries):
    dispatcher = Dispatcher(polling_interval=0.5, concurrency_maintenance_interval=600)
    dispatcher.poll()  # the first poll runs the maintenance

    # Nothing due and maintenance not due: BEGIN, one select, COMMIT; one read of the
    # rate limit windows' next turn (none wait) and one of the signal waits past their
    # deadline (none).
    with django_assert_num_queries(5):
        assert dispatcher.poll() == 0.5
