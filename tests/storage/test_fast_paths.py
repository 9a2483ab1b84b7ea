"""The fast paths (PostgreSQL's statements, MySQL's scripts) and the ORM paths do the same.

Every test runs on each database: what differs is only how many statements it takes,
which the counting tests pin down per database. On MySQL/MariaDB a "statement" counted
here is one script: a whole transaction sent in one round trip (storage/mysql/script.py).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from steady_queue.processes.worker import Worker
from steady_queue.runner.perform import perform
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)

# PostgreSQL: one statement per path; MySQL/MariaDB: one script (round trip) per path.
FAST = connection.vendor in ("postgresql", "mysql")
AWKWARD = ["tab\there", "new\nline", "back\\slash \\N", 'quote "', "é☃ unicode", "", None]


@pytest.fixture
def worker_process() -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker-fast", pid=os.getpid())


def test_bulk_enqueue_stores_every_value_exactly():
    past = timezone.now() - timedelta(minutes=5)
    results = enqueue_all(
        [
            (tasks.echo, (*AWKWARD, Decimal("1.10")), {"when": datetime(2030, 1, 2, tzinfo=UTC)}),
            (tasks.add.using(priority=-7, queue_name="low"), (1, 2), {}),
            (tasks.add.using(run_after=past), (3, 4), {}),
        ]
    )

    echo, low, late = (Job.objects.get(pk=int(result.id)) for result in results)
    assert default_task_backend.get_result(results[0].id).args == [*AWKWARD, "1.10"]
    assert echo.arguments == Job.objects.get(pk=echo.pk).arguments
    assert (low.priority, low.queue_name, low.attempts, low.finished_at) == (-7, "low", [], None)
    assert late.scheduled_at == past
    assert set(ReadyExecution.objects.values_list("job_id", "queue_name", "priority")) == {
        (echo.pk, "default", 0),
        (low.pk, "low", -7),
        (late.pk, "default", 0),
    }
    perform(storage.claim(["default"], 1, None)[0])
    (args, kwargs), *_ = tasks.CALLS
    assert args == (*AWKWARD, Decimal("1.10"))
    assert kwargs == {"when": datetime(2030, 1, 2, tzinfo=UTC)}


def test_claim_then_run_costs_a_fixed_number_of_statements(
    worker_process, django_assert_num_queries
):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])

    # PostgreSQL (MySQL): one statement (script) claims the five jobs, one per job finishes
    # it. SQLite: BEGIN IMMEDIATE, the DELETE ... RETURNING, the claims' INSERT, COMMIT;
    # per job BEGIN IMMEDIATE, delete the claim, update the job, COMMIT
    # (test_sqlite_fast_paths.py names each statement).
    with django_assert_num_queries(1 + 5 if FAST else 4 + 5 * 4):
        for claimed in storage.claim(["*"], 5, worker_process):
            perform(claimed)

    assert Job.objects.filter(finished_at__isnull=False).count() == 5
    assert not ClaimedExecution.objects.exists()


def test_a_busy_thread_records_each_job_and_claims_the_next_in_one_statement(
    worker_process, django_assert_num_queries
):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])
    worker = Worker(queues=["*"], threads=1)
    worker.process = worker_process
    first = storage.claim(["*"], 1, worker_process)[0]

    # PostgreSQL (MySQL): per job, one statement (script) records it and claims the next.
    # SQLite: per job one transaction of six statements that records it and claims the
    # next (test_sqlite_fast_paths.py names them).
    with django_assert_num_queries(5 if FAST else 5 * 6):
        worker._run(first)  # as a worker thread does, until nothing is left

    assert Job.objects.filter(finished_at__isnull=False).count() == 5
    assert not ClaimedExecution.objects.exists() and not ReadyExecution.objects.exists()


def test_claims_follow_the_queue_order_and_skip_paused_queues(worker_process):
    for queue in ("default", "real_time", "low"):
        enqueue_all([(tasks.add.using(queue_name=queue), (1, 1), {})] * 2)
    Pause.objects.create(queue_name="real_time")

    exact = storage.claim(["real_time", "low", "default"], 3, worker_process)
    everything = storage.claim(["*"], 5, worker_process)

    assert [c.job.queue_name for c in exact] == ["low", "low", "default"]
    assert [c.job.queue_name for c in everything] == ["default"]
    Pause.objects.all().delete()
    assert [c.job.queue_name for c in storage.claim(["real*"], 5, worker_process)] == [
        "real_time",
        "real_time",
    ]


def test_finishing_records_the_attempt_and_return_value(worker_process):
    result = tasks.greet.enqueue("Ada", times=2)

    perform(storage.claim(["*"], 1, worker_process)[0])

    job = Job.objects.get(pk=int(result.id))
    assert job.return_value == "Hello, AdaHello, Ada"
    assert [attempt["worker_id"] for attempt in job.attempts] == ["worker-fast"]
    assert job.attempts[0]["error"] is None and job.finished_at is not None
    assert default_task_backend.get_result(result.id).status == TaskResultStatus.SUCCESSFUL
