"""docs/reference/tasks.md, "Enqueue many tasks at once" (DESIGN: bulk enqueue)."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue.backend import enqueue_all
from steady_queue.models import Job, ReadyExecution, ScheduledExecution
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import InvalidTask, TaskResultStatus
from tests.tasks.acceptance import (
    one_at_a_time,
    record,
    send_receipt,
    send_welcome_email,
    unique_while_queued,
)

pytestmark = pytest.mark.django_db


class Thing:
    def __init__(self, id):
        self.id = id


def test_readme_example_returns_results_in_order():
    orders = [Thing(i) for i in range(1, 4)]
    user = Thing(99)

    results = enqueue_all(
        [(send_receipt.using(priority=5), [order.id], {}) for order in orders]
        + [(send_welcome_email, [user.id], {})]
    )

    assert [r.args for r in results] == [[1], [2], [3], [99]]
    assert all(r.status == TaskResultStatus.READY for r in results)
    assert [r.task.module_path for r in results] == [send_receipt.module_path] * 3 + [
        send_welcome_email.module_path
    ]
    jobs = Job.objects.in_bulk([int(r.id) for r in results])
    assert [jobs[int(r.id)].priority for r in results] == [5, 5, 5, 0]
    assert len(set(r.id for r in results)) == 4


def test_each_call_keeps_its_own_priority_queue_and_run_after():
    results = enqueue_all(
        [
            (record.using(priority=-5, queue_name="low"), ["a"], {}),
            (record.using(priority=7, queue_name="background"), [], {"label": "b"}),
            (record.using(run_after=timedelta(hours=1)), ["c"], {}),
            (record.using(run_after=timezone.now() + timedelta(days=1)), ["d"], {}),
        ]
    )
    jobs = Job.objects.in_bulk([int(r.id) for r in results])
    a, b, c, d = (jobs[int(r.id)] for r in results)
    assert (a.priority, a.queue_name, a.state) == (-5, "low", "ready")
    assert (b.priority, b.queue_name, b.state) == (7, "background", "ready")
    assert c.state == "scheduled" and d.state == "scheduled"
    assert results[1].kwargs == {"label": "b"}


def test_empty_call_list():
    assert enqueue_all([]) == []


def test_all_or_nothing_on_an_invalid_queue():
    with pytest.raises(InvalidTask):
        enqueue_all(
            [
                (record, ["fine"], {}),
                (record.using(queue_name="nope"), ["bad"], {}),
            ]
        )
    assert not Job.objects.exists()


def test_all_or_nothing_across_backends():
    with pytest.raises(TypeError):
        enqueue_all(
            [
                (record.using(backend="secondary"), ["fine"], {}),
                (record, [{"a set"}], {}),
            ]
        )
    assert not Job.objects.exists()


def test_bulk_enqueue_sends_task_enqueued_per_job(signals):
    results = enqueue_all([(record, [i], {}) for i in range(3)])
    assert [event[2].id for event in signals.of("enqueued")] == [r.id for r in results]


def _queries_for(count: int) -> int:
    with CaptureQueriesContext(connection) as queries:
        enqueue_all([(record.using(priority=i % 3), [i], {"n": i}) for i in range(count)])
    return len(queries)


def test_constant_number_of_queries_whatever_the_size():
    small, large = _queries_for(10), _queries_for(1000)
    assert large - small == _inserts(1000, ReadyExecution) - _inserts(10, ReadyExecution)
    assert Job.objects.count() == 1010


def test_constant_number_of_queries_with_scheduled_jobs():
    def scheduled(count):
        with CaptureQueriesContext(connection) as queries:
            enqueue_all(
                [(record.using(run_after=timedelta(minutes=1)), [i], {}) for i in range(count)]
            )
        return len(queries)

    extra = _inserts(500, ScheduledExecution) - _inserts(5, ScheduledExecution)
    assert scheduled(500) - scheduled(5) == extra


def _inserts(n: int, execution_model) -> int:
    """INSERT statements for ``n`` jobs and executions: one per table, except where
    Django 5.2 splits SQLite statements at 999 parameters (documented in
    docs/reference/tasks.md)."""
    chunks = 0
    for model in (Job, execution_model):
        fields = _inserted_fields(model)
        chunks += math.ceil(n / connection.ops.bulk_batch_size(fields, [None] * n))
    return chunks


def test_concurrency_limits_apply_as_for_single_enqueues():
    results = enqueue_all([(one_at_a_time, ["same"], {}) for _ in range(3)])
    states = sorted(Job.objects.get(pk=r.id).state for r in results)
    assert states == ["blocked", "blocked", "ready"]
    run_ready_jobs()
    assert all(Job.objects.get(pk=r.id).state == "finished" for r in results)


def test_discarding_limit_applies_within_one_bulk_call():
    from tests.acceptance.api import TaskResultDoesNotExist

    results = enqueue_all([(unique_while_queued, [i], {}) for i in range(3)])
    assert Job.objects.count() == 1
    unique_while_queued.get_result(results[0].id)
    for result in results[1:]:
        with pytest.raises(TaskResultDoesNotExist):
            unique_while_queued.get_result(result.id)


def _inserted_fields(model) -> list:
    """The columns a bulk insert of ``model`` sends: all but a primary key the database
    makes. A column with a database default that the engine fills itself (the unique
    key) is sent, although Django may mark it as returned."""
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.db_returning)]
    if model is ReadyExecution:
        # The FIFO path leaves fair share's columns to their database defaults.
        fields = [f for f in fields if f.name not in ("fairness_key", "fair_order")]
    return fields
