"""get_result() rebuilds a complete TaskResult from the job in every state."""

from __future__ import annotations

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from steady_queue.compat import TaskResultDoesNotExist, TaskResultStatus, default_task_backend
from steady_queue.models import BlockedExecution, ReadyExecution
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("result_id", ["999999", "not-a-number", ""])
def test_unknown_ids_raise_task_result_does_not_exist(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)


def test_result_rebuilds_the_task_from_its_import_path():
    result = tasks.greet.using(priority=3).enqueue("x")

    fetched = default_task_backend.get_result(result.id)

    assert fetched.task.func is tasks.greet.func
    assert fetched.task.priority == 3
    assert fetched.task.queue_name == "real_time"
    assert tasks.greet.get_result(result.id).id == result.id


def test_ready_and_scheduled_jobs_are_ready():
    ready = tasks.add.enqueue(1, 1)
    scheduled = tasks.add.using(run_after=timedelta(hours=1)).enqueue(1, 1)

    assert default_task_backend.get_result(ready.id).status == TaskResultStatus.READY
    fetched = default_task_backend.get_result(scheduled.id)
    assert fetched.status == TaskResultStatus.READY
    assert fetched.task.run_after == fetched_scheduled_at(scheduled.id)


def fetched_scheduled_at(result_id):
    from steady_queue.models import Job

    return Job.objects.get(pk=int(result_id)).scheduled_at


def test_blocked_job_is_ready():
    first = tasks.limited.enqueue("k")
    second = tasks.limited.enqueue("k")

    assert BlockedExecution.objects.filter(job_id=int(second.id)).exists()
    assert default_task_backend.get_result(first.id).status == TaskResultStatus.READY
    assert default_task_backend.get_result(second.id).status == TaskResultStatus.READY


def test_claimed_job_is_running_with_its_worker_and_start_time():
    result = tasks.add.enqueue(1, 1)
    before = timezone.now()
    (claimed,) = ReadyExecution.claim(["*"], 1, None)

    fetched = default_task_backend.get_result(result.id)

    assert fetched.status == TaskResultStatus.RUNNING
    assert fetched.worker_ids == ["in-process"]
    assert before <= fetched.started_at == fetched.last_attempted_at == claimed.created_at
    assert fetched.finished_at is None


def test_successful_job_has_timestamps_and_return_value():
    result = tasks.add.enqueue(20, 22)
    run_ready_jobs()

    fetched = default_task_backend.get_result(result.id)

    assert fetched.status == TaskResultStatus.SUCCESSFUL
    assert fetched.return_value == 42
    assert fetched.enqueued_at <= fetched.started_at <= fetched.finished_at
    assert fetched.last_attempted_at == fetched.started_at
    assert fetched.errors == []
    assert fetched.worker_ids == ["in-process"]


def test_failed_job_has_its_error_and_traceback():
    result = tasks.explode.enqueue("kaput")
    run_ready_jobs()

    fetched = default_task_backend.get_result(result.id)

    assert fetched.status == TaskResultStatus.FAILED
    assert fetched.finished_at is not None
    (error,) = fetched.errors
    assert error.exception_class is ValueError
    assert "Traceback (most recent call last)" in error.traceback
    assert "raise ValueError(message)" in error.traceback
    assert "ValueError: kaput" in error.traceback
    with pytest.raises(ValueError, match="failed"):
        fetched.return_value  # noqa: B018


def test_refresh_updates_a_result_in_place():
    result = tasks.add.enqueue(1, 2)
    run_ready_jobs()

    result.refresh()

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert result.finished_at is not None


def test_async_refresh():

    result = tasks.add.enqueue(1, 2)
    run_ready_jobs()
    async_to_sync(result.arefresh)()

    assert result.status == TaskResultStatus.SUCCESSFUL


def test_get_result_uses_one_query(django_assert_num_queries):
    result = tasks.add.enqueue(1, 2)
    run_ready_jobs()

    with django_assert_num_queries(1):
        default_task_backend.get_result(result.id)
