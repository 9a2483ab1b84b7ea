"""docs/reference/tasks.md: "Define and enqueue tasks", "Priority, queue and delay" and
"Errors when enqueueing"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import transaction
from django.test import override_settings
from django.utils import timezone

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import InvalidTask, TaskResultStatus, default_task_backend
from tests.tasks.acceptance import record, seen, send_receipt, send_welcome_email

pytestmark = pytest.mark.django_db


def test_enqueue_returns_a_ready_result_with_a_string_id():
    result = send_welcome_email.enqueue(42)

    assert isinstance(result.id, str)
    assert result.status == TaskResultStatus.READY
    assert result.status == "READY"
    assert result.args == [42]
    assert result.kwargs == {}
    assert result.backend == "default"
    assert result.enqueued_at is not None
    assert result.started_at is None and result.finished_at is None
    assert result.errors == [] and result.worker_ids == []
    assert Job.objects.filter(pk=result.id).exists()


def test_backend_declares_every_capability():
    assert default_task_backend.supports_defer is True
    assert default_task_backend.supports_priority is True
    assert default_task_backend.supports_get_result is True
    assert default_task_backend.supports_async_task is True


def test_enqueue_rolled_back_with_the_surrounding_transaction():
    before = Job.objects.count()
    with pytest.raises(RuntimeError), transaction.atomic():
        send_welcome_email.enqueue(42)
        raise RuntimeError("roll back")
    assert Job.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit():
    with transaction.atomic():
        transaction.on_commit(lambda: send_welcome_email.enqueue(42))
        assert Job.objects.count() == 0
    assert Job.objects.count() == 1


def test_readme_priority_queue_and_delay_examples():
    tomorrow_at_nine = (timezone.now() + timedelta(days=1)).replace(hour=9, minute=0)
    plain = send_receipt.enqueue(7)
    urgent = send_receipt.using(priority=50).enqueue(8)
    other_queue = send_receipt.using(queue_name="default").enqueue(9)
    later = send_receipt.using(run_after=timedelta(minutes=15)).enqueue(10)
    tomorrow = send_receipt.using(run_after=tomorrow_at_nine).enqueue(11)

    jobs = Job.objects.in_bulk([int(r.id) for r in (plain, urgent, other_queue, later, tomorrow)])
    assert (jobs[int(plain.id)].priority, jobs[int(plain.id)].queue_name) == (10, "real_time")
    assert jobs[int(urgent.id)].priority == 50
    assert jobs[int(other_queue.id)].queue_name == "default"
    assert jobs[int(later.id)].scheduled_at - timezone.now() > timedelta(minutes=14)
    assert jobs[int(tomorrow.id)].scheduled_at == tomorrow_at_nine
    for result in (later, tomorrow):
        assert default_task_backend.get_result(result.id).status == TaskResultStatus.READY

    # Due jobs run, the scheduled ones wait.
    run_ready_jobs()
    assert sorted(seen("send_receipt")) == [7, 8, 9]


def test_higher_priority_runs_first_and_equal_priorities_in_enqueue_order():
    record.using(priority=0).enqueue("zero-a")
    record.using(priority=-100).enqueue("lowest")
    record.using(priority=100).enqueue("highest")
    record.using(priority=0).enqueue("zero-b")
    record.using(priority=5).enqueue("five")
    record.enqueue("zero-c")  # the default priority is 0

    run_ready_jobs()

    assert seen("record") == ["highest", "five", "zero-a", "zero-b", "zero-c", "lowest"]


def test_priority_defaults_to_zero():
    result = record.enqueue("x")
    assert result.task.priority == 0
    assert Job.objects.get(pk=result.id).priority == 0


@pytest.mark.parametrize("priority", [101, -101, 1000])
def test_priority_out_of_range_is_invalid_task_and_writes_nothing(priority):
    with pytest.raises(InvalidTask):
        record.using(priority=priority).enqueue("x")
    assert not Job.objects.exists()


def test_unknown_queue_is_invalid_task_with_the_documented_message():
    with pytest.raises(InvalidTask, match=r"Queue 'nope' is not valid for backend\."):
        record.using(queue_name="nope").enqueue("x")
    assert not Job.objects.exists()


def test_invalid_task_is_not_a_value_error():
    with pytest.raises(InvalidTask) as caught:
        record.using(queue_name="nope").enqueue("x")
    assert not isinstance(caught.value, ValueError)


def test_empty_queues_list_accepts_any_queue_name():
    # The "secondary" backend of the test settings has QUEUES = [].
    result = record.using(backend="secondary", queue_name="anything-goes").enqueue("x")
    assert Job.objects.get(pk=result.id).queue_name == "anything-goes"


def test_queues_default_to_default_when_left_out():
    tasks_setting = {"default": {"BACKEND": "steady_queue.backend.SteadyQueueBackend"}}
    with override_settings(TASKS=tasks_setting):
        assert record.enqueue("x").task.queue_name == "default"
        with pytest.raises(InvalidTask):
            record.using(queue_name="low").enqueue("x")


def test_run_after_timedelta_schedules_the_job():
    before = timezone.now()
    result = record.using(run_after=timedelta(minutes=15)).enqueue("later")
    job = Job.objects.get(pk=result.id)
    assert (
        before + timedelta(minutes=15) <= job.scheduled_at <= timezone.now() + timedelta(minutes=15)
    )
    assert job.state == "scheduled"
    assert run_ready_jobs() == []
    assert [r.id for r in run_ready_jobs(include_scheduled=True)] == [result.id]


def test_run_after_aware_datetime_in_the_past_runs_now():
    result = record.using(run_after=datetime(2020, 1, 1, tzinfo=UTC)).enqueue("past")
    assert [r.id for r in run_ready_jobs()] == [result.id]


def test_run_after_naive_datetime_is_refused():
    with pytest.raises(InvalidTask):
        record.using(run_after=datetime(2030, 1, 1)).enqueue("naive")
    assert not Job.objects.exists()


def test_task_switched_to_another_backend_with_using():
    result = record.using(backend="secondary").enqueue("elsewhere")
    assert result.backend == "secondary"
    job = Job.objects.get(pk=result.id)
    assert job.backend == "secondary"
    [done] = run_ready_jobs()
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert done.backend == "secondary"
    fetched = record.using(backend="secondary").get_result(result.id)
    assert fetched.status == TaskResultStatus.SUCCESSFUL


def test_task_declared_for_secondary_switched_to_default():
    from tests.tasks.acceptance import on_secondary

    result = on_secondary.using(backend="default").enqueue(3)
    assert result.backend == "default"
    [done] = run_ready_jobs()
    assert done.return_value == 3


@pytest.mark.django_db(transaction=True)
def test_aenqueue_and_aget_result():
    async def scenario():
        result = await send_welcome_email.aenqueue(42)
        assert result.status == TaskResultStatus.READY
        fetched = await default_task_backend.aget_result(result.id)
        assert fetched.id == result.id
        assert fetched.args == [42]
        again = await send_welcome_email.aget_result(result.id)
        assert again.id == result.id
        await again.arefresh()
        return result.id

    result_id = async_to_sync(scenario)()
    assert Job.objects.filter(pk=result_id).exists()
