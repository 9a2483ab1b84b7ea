"""MySQL/MariaDB's bulk enqueue (storage/mysql/enqueue.py): multi-row INSERTs in one
transaction, the jobs' ids read from their consecutive block.

The contract tests check what an enqueue stores on every storage; these check how the
fast storage does it: one round trip per chunk and a COMMIT, ids right whatever the
server's increment, the portable path for what it does not take, and nothing left
behind by a batch that fails.
"""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.db import DataError, connection, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue.models import Job, ReadyExecution, ScheduledExecution
from steady_queue.storage.mysql import enqueue as mysql_enqueue
from tests import tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's fast storage"),
]


def jobs_for(count: int, task=tasks.add) -> list[Job]:
    return [Job.for_task_call(task, (i, i), {}, backend="default") for i in range(count)]


def assert_stored(jobs: list[Job]) -> None:
    """Each job's id is the row holding its arguments, and each has its ready row."""
    stored = dict(Job.objects.values_list("pk", "arguments"))
    assert [stored[job.pk] for job in jobs] == [job.arguments for job in jobs]
    ready = set(ReadyExecution.objects.values_list("job_id", flat=True))
    assert ready == {job.pk for job in jobs}


def test_many_jobs_are_a_round_trip_per_chunk_and_a_commit(fast):
    fast.enqueue(jobs_for(2))  # the process reads the server's lock mode once, first
    Job.objects.all().delete()
    jobs = jobs_for(mysql_enqueue.CHUNK * 2 + 5)

    with CaptureQueriesContext(connection) as queries:
        fast.enqueue(jobs)

    assert [q["sql"].split(None, 1)[0] for q in queries] == ["START", "INSERT", "INSERT", "COMMIT"]
    assert_stored(jobs)
    assert all(not job._state.adding and job._state.db == "default" for job in jobs)


def test_the_ids_follow_the_servers_increment(fast):
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION auto_increment_increment = 3")
    try:
        jobs = fast.enqueue(jobs_for(10))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET SESSION auto_increment_increment = 1")

    assert [b.pk - a.pk for a, b in itertools.pairwise(jobs)] == [3] * 9
    assert_stored(jobs)


def test_a_batch_with_a_scheduled_job_takes_the_portable_path(fast):
    later = tasks.add.using(run_after=timedelta(hours=1))
    jobs = [*jobs_for(2), *jobs_for(1, later)]

    with CaptureQueriesContext(connection) as queries:
        fast.enqueue(jobs)

    assert not [q for q in queries if q["sql"].startswith("START TRANSACTION")]
    assert ReadyExecution.objects.count() == 2 and ScheduledExecution.objects.count() == 1


def test_a_batch_the_database_refuses_leaves_nothing_and_no_transaction(fast):
    jobs = jobs_for(3)
    jobs[-1].queue_name = "q" * 300  # longer than the column: refused in strict mode

    with pytest.raises(DataError):
        fast.enqueue(jobs)

    assert connection.get_autocommit() and not connection.in_atomic_block
    assert not Job.objects.exists()
    assert_stored(fast.enqueue(jobs_for(2)))  # the connection is fine


def test_inside_a_callers_transaction_many_jobs_roll_back_with_it(fast):
    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        fast.enqueue(jobs_for(3))
        raise Undo

    assert not Job.objects.exists()
