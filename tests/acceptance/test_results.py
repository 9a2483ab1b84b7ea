"""docs/reference/tasks.md, "Results", and the Django 6 tasks contract the backend implements."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.backend import SteadyQueueBackend
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import (
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultMismatch,
    TaskResultStatus,
    default_task_backend,
)
from tests.tasks.acceptance import (
    async_double,
    fail,
    look_at_myself,
    record,
    returns,
    seen,
    send_welcome_email,
    with_context,
)

pytestmark = pytest.mark.django_db


def test_readme_results_example():
    result = send_welcome_email.enqueue(42)
    result_id = result.id

    fetched = default_task_backend.get_result(result_id)
    assert isinstance(fetched, TaskResult)
    assert fetched.id == result_id and fetched.status == TaskResultStatus.READY
    assert send_welcome_email.get_result(result_id).id == result_id

    run_ready_jobs()
    fetched.refresh()
    assert fetched.status == TaskResultStatus.SUCCESSFUL
    assert fetched.return_value == "sent"


@pytest.mark.parametrize("result_id", ["999999999", "0", "-1", "not-a-number", "", "1.5"])
def test_unknown_id_raises_task_result_does_not_exist(result_id):
    with pytest.raises(TaskResultDoesNotExist):
        default_task_backend.get_result(result_id)
    with pytest.raises(TaskResultDoesNotExist):
        record.get_result(result_id)


def test_get_result_of_another_task_raises_mismatch():
    result = record.enqueue("x")
    with pytest.raises(TaskResultMismatch):
        send_welcome_email.get_result(result.id)


def test_successful_result_fields():
    before = timezone.now()
    result = returns.enqueue({"a": [1, 2], "b": (3, 4)})
    [ran] = run_ready_jobs()
    after = timezone.now()

    fetched = default_task_backend.get_result(result.id)
    for value in (ran, fetched):
        assert value.status == TaskResultStatus.SUCCESSFUL
        assert value.is_finished
        assert value.return_value == {"a": [1, 2], "b": [3, 4]}  # stored as JSON
        assert before <= value.enqueued_at <= value.started_at
        assert value.started_at == value.last_attempted_at
        assert value.started_at <= value.finished_at <= after
        assert value.errors == []
        assert len(value.worker_ids) == 1 and value.worker_ids[0]
        assert value.attempts == 1
        assert value.task.module_path == returns.module_path


def test_return_value_of_unfinished_and_failed_results_raises():
    pending = record.enqueue("x")
    with pytest.raises(ValueError):
        _ = pending.return_value
    failed = fail.enqueue("bad")
    run_ready_jobs()
    failed.refresh()
    with pytest.raises(ValueError):
        _ = failed.return_value


def test_failed_result_has_one_error_with_class_path_and_full_traceback():
    result = fail.enqueue("kaboom")
    [ran] = run_ready_jobs()
    result.refresh()
    for value in (ran, result):
        assert value.status == TaskResultStatus.FAILED
        assert value.is_finished
        assert value.finished_at is not None
        assert len(value.errors) == 1
        error = value.errors[0]
        assert isinstance(error, TaskError)
        assert error.exception_class_path == "builtins.ValueError"
        assert error.exception_class is ValueError
        assert "Traceback (most recent call last)" in error.traceback
        assert "ValueError: kaboom" in error.traceback
        assert "raise ValueError(message)" in error.traceback
        assert len(value.worker_ids) == 1


def test_running_result_seen_from_inside_the_task():
    look_at_myself.enqueue()
    run_ready_jobs()
    [(status, started_at, worker_ids)] = seen("look_at_myself")
    assert status == TaskResultStatus.RUNNING
    assert started_at is not None
    assert len(worker_ids) == 1


def test_result_of_a_scheduled_job_is_ready():
    result = record.using(run_after=timedelta(hours=1)).enqueue("later")
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY
    assert fetched.started_at is None and fetched.finished_at is None


def test_refresh_updates_in_place():
    result = record.enqueue("x")
    same = result
    run_ready_jobs()
    assert result.status == TaskResultStatus.READY
    result.refresh()
    assert same.status == TaskResultStatus.SUCCESSFUL
    assert same.finished_at is not None
    assert same.return_value == "x"


def test_async_task_runs():
    result = async_double.enqueue(21)
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 42


def test_takes_context_gets_the_result_and_attempt_number():
    result = with_context.enqueue("value")
    run_ready_jobs()
    assert seen("with_context") == [(1, result.id)]
    result.refresh()
    assert result.return_value == "value"


def test_signals_with_backend_sender_and_statuses(signals):
    ok = record.enqueue("x")
    bad = fail.enqueue("y")
    run_ready_jobs()

    enqueued = signals.of("enqueued")
    assert [e[2].id for e in enqueued] == [ok.id, bad.id]
    assert all(e[1] is SteadyQueueBackend for e in enqueued)
    assert all(e[2].status == TaskResultStatus.READY for e in enqueued)

    assert all(e[1] is SteadyQueueBackend for e in signals.of("started") + signals.of("finished"))
    started = {e[2].id: e for e in signals.of("started")}
    assert started[ok.id][2].status == TaskResultStatus.RUNNING
    assert started[ok.id][2].started_at is not None
    assert started[bad.id][2].status == TaskResultStatus.RUNNING

    finished = {e[2].id: e for e in signals.of("finished")}
    assert finished[ok.id][2].status == TaskResultStatus.SUCCESSFUL
    assert finished[ok.id][2].finished_at is not None
    assert finished[ok.id][3] is None
    assert finished[bad.id][2].status == TaskResultStatus.FAILED
    assert finished[bad.id][2].finished_at is not None
    assert len(finished[bad.id][2].errors) == 1
    # Sent inside the except block: sys.exc_info() holds the task's exception.
    assert isinstance(finished[bad.id][3], ValueError)
    assert str(finished[bad.id][3]) == "y"


def test_readme_error_reporting_receiver_sees_the_exception():
    from django.dispatch import receiver

    from tests.acceptance.api import task_finished

    captured = []

    @receiver(task_finished)
    def report_failures(sender, task_result, **kwargs):
        if task_result.status == "FAILED":
            captured.append(sys.exc_info()[1])

    try:
        fail.enqueue("reported")
        run_ready_jobs()
    finally:
        task_finished.disconnect(report_failures)
    assert len(captured) == 1 and str(captured[0]) == "reported"


def test_results_of_each_status_from_get_result():
    ready = record.using(queue_name="low").enqueue("r")
    scheduled = record.using(run_after=timedelta(days=1)).enqueue("s")
    ok = returns.enqueue(1)
    bad = fail.enqueue("f")
    run_ready_jobs(queues=["default"])
    statuses = {
        r.id: default_task_backend.get_result(r.id).status for r in (ready, scheduled, ok, bad)
    }
    assert statuses == {
        ready.id: "READY",
        scheduled.id: "READY",
        ok.id: "SUCCESSFUL",
        bad.id: "FAILED",
    }


def test_return_value_that_json_cannot_store_fails_the_job():
    from tests.tasks.acceptance import returns_a_set

    result = returns_a_set.enqueue()
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "builtins.TypeError"


@pytest.mark.django_db(transaction=True)
def test_return_value_nan_fails_the_job_instead_of_leaving_it_claimed():
    from steady_queue.models import Job
    from tests.tasks.acceptance import returns_nan

    result = returns_nan.enqueue()
    try:
        run_ready_jobs()
    finally:
        state = Job.objects.get(pk=result.id).state
    assert state == "failed"
