"""Bulk enqueue: many calls, each with its own options, in a constant number of queries."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue.arguments import SerializationError
from steady_queue.backend import enqueue_all
from steady_queue.compat import TaskResultStatus, default_task_backend, task_backends
from steady_queue.models import Job, ReadyExecution, ScheduledExecution
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_call_keeps_its_own_options():
    results = enqueue_all(
        [
            (tasks.add, (1, 2), {}),
            (tasks.add.using(priority=7, queue_name="low"), (3, 4), {}),
            (tasks.greet.using(run_after=timedelta(hours=1)), ("later",), {"times": 2}),
        ]
    )

    assert [r.status for r in results] == [TaskResultStatus.READY] * 3
    jobs = {job.pk: job for job in Job.objects.all()}
    first, second, third = (jobs[int(r.id)] for r in results)
    assert (first.priority, first.queue_name) == (0, "default")
    assert (second.priority, second.queue_name) == (7, "low")
    assert third.arguments == {"args": ["later"], "kwargs": {"times": 2}}
    assert set(ReadyExecution.objects.values_list("job_id", flat=True)) == {first.pk, second.pk}
    assert ScheduledExecution.objects.get().job_id == third.pk
    assert results[1].args == [3, 4]


def test_results_are_real_and_runnable():
    results = enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])
    run_ready_jobs()

    assert [default_task_backend.get_result(r.id).return_value for r in results] == [0, 2, 4, 6, 8]


def _queries_for(n: int) -> int:
    with CaptureQueriesContext(connection) as captured:
        enqueue_all([(tasks.add.using(priority=i % 5), (i, i), {}) for i in range(n)])
    return len(captured.captured_queries)


def _forced_chunks(n: int) -> int:
    """How many INSERTs Django needs for ``n`` jobs and their ready executions.

    Django 5.2 caps an SQLite statement at 999 parameters and splits the INSERTs;
    Django 6 and the server databases insert any batch in one statement per table.
    """
    chunks = 0
    for model in (Job, ReadyExecution):
        inserted = _inserted_fields(model)
        chunks += math.ceil(n / connection.ops.bulk_batch_size(inserted, [None] * n))
    return chunks


def test_query_count_is_constant_in_the_number_of_jobs():
    # Once per process, MySQL's storage reads a server setting (its auto-increment lock
    # mode) on the first bulk enqueue: this test may run first.
    _queries_for(2)
    small = _queries_for(10)
    large = _queries_for(1000)

    if _forced_chunks(1000) > 2:
        # Constant per statement-sized chunk where Django splits the INSERTs.
        assert large - small == _forced_chunks(1000) - _forced_chunks(10)
        return
    assert small == large
    # BEGIN, jobs, ready executions, COMMIT; PostgreSQL takes the ids first (and sends
    # the NOTIFY in that statement), then COPYs both tables; MySQL sends one script (the
    # START, both INSERTs), then the COMMIT.
    expected = {"postgresql": 5, "mysql": 2}.get(connection.vendor, 4)
    assert large == expected
    assert Job.objects.count() == 1012
    assert ReadyExecution.objects.count() == 1012


def test_a_refused_call_enqueues_nothing():
    with pytest.raises(SerializationError, match=r"args\[0\]"):
        enqueue_all([(tasks.add, (1, 2), {}), (tasks.echo, ({1},), {})])

    assert not Job.objects.exists()


def test_calls_for_several_backends_are_enqueued_together():
    results = enqueue_all([(tasks.add, (1, 2), {}), (tasks.on_secondary, (), {})])

    assert [r.backend for r in results] == ["default", "secondary"]
    assert task_backends["secondary"].get_result(results[1].id).task.func is tasks.on_secondary.func


def test_backend_enqueue_all_refuses_tasks_of_another_backend():
    from steady_queue.compat import InvalidTask

    with pytest.raises(InvalidTask, match="secondary"):
        task_backends["default"].enqueue_all([(tasks.on_secondary, (), {})])
    assert not Job.objects.exists()


def _inserted_fields(model) -> list:
    """The columns a bulk insert of ``model`` sends: all but a primary key the database
    makes. A column with a database default that the engine fills itself (the unique
    key) is sent, although Django may mark it as returned."""
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.db_returning)]
    if model is ReadyExecution:
        # The FIFO path leaves fair share's columns to their database defaults.
        fields = [f for f in fields if f.name not in ("fairness_key", "fair_order")]
    return fields
