"""Enqueueing through the Django tasks API writes a job and exactly one execution, atomically."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import connection, transaction
from django.utils import timezone

from steady_queue.arguments import SerializationError
from steady_queue.backend import SteadyQueueBackend
from steady_queue.compat import (
    InvalidTask,
    TaskResultStatus,
    default_task_backend,
    task_backends,
    task_enqueued,
)
from steady_queue.models import Job, ReadyExecution, ScheduledExecution
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def test_backend_declares_every_capability():
    backend = task_backends["default"]
    assert isinstance(backend, SteadyQueueBackend)
    assert backend.supports_defer
    assert backend.supports_priority
    assert backend.supports_get_result
    assert backend.supports_async_task


def test_enqueue_writes_the_job_and_a_ready_execution():
    result = tasks.greet.enqueue("World", times=2)

    job = Job.objects.get(pk=int(result.id))
    assert job.task_path == "tests.tasks.greet"
    assert (job.queue_name, job.priority) == ("real_time", 10)
    assert job.arguments == {"args": ["World"], "kwargs": {"times": 2}}
    ready = ReadyExecution.objects.get(job=job)
    assert (ready.queue_name, ready.priority) == ("real_time", 10)
    assert not ScheduledExecution.objects.exists()


def test_enqueue_returns_a_ready_result():
    before = timezone.now()
    result = tasks.greet.enqueue("World", times=2)

    assert result.status == TaskResultStatus.READY
    assert result.task.func is tasks.greet.func
    assert result.args == ["World"]
    assert result.kwargs == {"times": 2}
    assert result.backend == "default"
    assert before <= result.enqueued_at <= timezone.now()
    assert result.started_at is None and result.finished_at is None
    assert result.errors == [] and result.worker_ids == []


def test_using_overrides_priority_and_queue():
    result = tasks.greet.using(priority=-5, queue_name="low").enqueue("x")

    job = Job.objects.get(pk=int(result.id))
    assert (job.priority, job.queue_name) == (-5, "low")


@pytest.mark.parametrize("priority", [101, -101, 1.5])
def test_priority_outside_django_range_is_refused(priority):
    with pytest.raises(InvalidTask):
        tasks.add.using(priority=priority)
    assert not Job.objects.exists()


def test_unknown_queue_is_refused_with_invalid_task():
    with pytest.raises(InvalidTask, match="nowhere"):
        tasks.add.using(queue_name="nowhere")


def test_run_after_timedelta_schedules_the_job():
    before = timezone.now()
    result = tasks.add.using(run_after=timedelta(minutes=5)).enqueue(1, 2)

    scheduled = ScheduledExecution.objects.get(job_id=int(result.id))
    assert before + timedelta(minutes=5) <= scheduled.scheduled_at
    assert scheduled.scheduled_at <= timezone.now() + timedelta(minutes=5)
    assert not ReadyExecution.objects.exists()
    assert result.status == TaskResultStatus.READY


def test_run_after_aware_datetime_schedules_the_job():
    when = datetime(2040, 1, 2, 3, 4, 5, tzinfo=UTC)
    result = tasks.add.using(run_after=when).enqueue(1, 2)

    assert ScheduledExecution.objects.get(job_id=int(result.id)).scheduled_at == when


def test_run_after_in_the_past_is_ready_at_once():
    result = tasks.add.using(run_after=timezone.now() - timedelta(seconds=1)).enqueue(1, 2)

    assert ReadyExecution.objects.filter(job_id=int(result.id)).exists()


def test_naive_run_after_is_refused():
    with pytest.raises(InvalidTask, match="aware"):
        tasks.add.using(run_after=datetime(2040, 1, 1))


def test_enqueue_inside_a_rolled_back_transaction_leaves_no_row():
    with pytest.raises(RuntimeError), transaction.atomic():
        tasks.add.enqueue(1, 2)
        raise RuntimeError("roll back")

    assert not Job.objects.exists()
    assert not ReadyExecution.objects.exists()


def test_refused_argument_leaves_no_row_and_names_the_argument():
    with pytest.raises(SerializationError, match=r"kwargs\['payload'\].*builtins\.set"):
        tasks.echo.enqueue(1, payload={1, 2})

    assert not Job.objects.exists()


def test_refused_argument_is_a_type_error():
    with pytest.raises(TypeError):
        tasks.echo.enqueue(object())


def test_task_declared_for_another_backend_can_be_switched():
    result = tasks.on_secondary.using(backend="default").enqueue()

    assert result.backend == "default"
    assert Job.objects.get(pk=int(result.id)).backend == "default"


def test_task_declared_for_another_backend_is_stored_under_it():
    result = tasks.on_secondary.enqueue()

    assert result.backend == "secondary"
    assert task_backends["secondary"].get_result(result.id).task.func is tasks.on_secondary.func


def test_single_enqueue_query_count_is_bounded(django_assert_num_queries):
    # PostgreSQL: one statement inserts the job and its execution and sends the NOTIFY.
    # MySQL/MariaDB: one script (START TRANSACTION, the two inserts, COMMIT). SQLite:
    # BEGIN, job insert, execution insert, COMMIT.
    with django_assert_num_queries(1 if connection.vendor in ("postgresql", "mysql") else 4):
        tasks.add.enqueue(1, 2)


def test_task_enqueued_is_sent_with_the_backend_class():
    received = []

    def receiver(sender, task_result, **kwargs):
        received.append((sender, task_result.status, task_result.id))

    task_enqueued.connect(receiver)
    try:
        result = tasks.add.enqueue(1, 2)
    finally:
        task_enqueued.disconnect(receiver)

    assert received == [(SteadyQueueBackend, TaskResultStatus.READY, result.id)]


def test_aenqueue_and_aget_result():
    async def scenario():
        result = await tasks.add.aenqueue(3, 4)
        return result, await default_task_backend.aget_result(result.id)

    # async_to_sync keeps thread-sensitive database work on this thread and connection.
    enqueued, fetched = async_to_sync(scenario)()

    assert fetched.id == enqueued.id
    assert fetched.status == TaskResultStatus.READY
    assert fetched.args == [3, 4]


def test_result_of_a_delayed_job_shows_when_it_is_due():
    result = tasks.add.using(run_after=timedelta(minutes=5)).enqueue(1, 2)

    assert result.task.run_after == ScheduledExecution.objects.get().scheduled_at
