"""Timeouts, in-process: the interrupt, the watchdog's own ending, async tasks, the policy."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

import steady_queue
from steady_queue.compat import TaskResultStatus
from steady_queue.models import FailedExecution, Job, ReadyExecution, ScheduledExecution
from steady_queue.testing import run_ready_jobs
from steady_queue.timeouts import seconds_for, timeout
from tests.tasks import timing_out as tasks

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = "steady_queue.exceptions.JobTimeout"


def failure_of(result) -> FailedExecution:
    return FailedExecution.objects.get(job_id=result.id)


def test_a_task_in_python_code_is_interrupted_where_it_is():
    result = tasks.spins.enqueue()
    started = time.monotonic()
    [finished] = run_ready_jobs()
    assert time.monotonic() - started < 5  # not the task's own 60 s
    assert finished.status == TaskResultStatus.FAILED
    failed = failure_of(result)
    assert failed.exception_class == TIMEOUT
    assert "ran past its timeout of 0.5 s" in failed.message
    assert "in spins" in failed.backtrace  # where it was


def test_a_task_stuck_in_a_c_call_has_its_job_ended_for_it_with_where_it_was():
    result = tasks.sleeps.enqueue(3.0)
    run_ready_jobs()  # returns once time.sleep does; the job ended long before
    failed = failure_of(result)
    assert failed.exception_class == TIMEOUT
    assert "Where the task was" in failed.backtrace and "time.sleep" in failed.backtrace
    ended = Job.objects.get(pk=result.id).attempts[0]
    assert ended["error"]["exception_class"] == TIMEOUT
    assert failed.created_at.timestamp() - _started(ended) < 2.0  # ended about 0.7 s in
    assert len(Job.objects.get(pk=result.id).attempts) == 1  # the late return changed nothing


def test_an_async_task_is_cancelled():
    result = tasks.awaits.enqueue()
    started = time.monotonic()
    run_ready_jobs()
    assert time.monotonic() - started < 5
    assert failure_of(result).exception_class == TIMEOUT


def test_a_timeout_follows_the_retry_policy_like_any_failure():
    result = tasks.spins_then_retries.enqueue()
    run_ready_jobs()
    job = Job.objects.get(pk=result.id)
    assert job.attempts[0]["error"]["exception_class"] == TIMEOUT
    assert ReadyExecution.objects.filter(job_id=result.id).exists() or (
        ScheduledExecution.objects.filter(job_id=result.id).exists()
    )


def test_a_quick_task_under_a_timeout_succeeds_and_leaves_no_interrupt_behind():
    results = [tasks.quick.enqueue() for _ in range(20)]
    finished = run_ready_jobs()
    assert [r.status for r in finished] == [TaskResultStatus.SUCCESSFUL] * 20
    time.sleep(0)  # any interrupt left pending would be raised here, at the next instruction
    assert len(results) == 20


def test_the_default_timeout_applies_to_tasks_without_one(monkeypatch):
    assert seconds_for(tasks.undeclared.module_path) is None
    monkeypatch.setattr(steady_queue, "default_timeout", timedelta(seconds=0.3))
    assert seconds_for(tasks.undeclared.module_path) == 0.3
    assert seconds_for(tasks.quick.module_path) == 5.0  # its own wins


@pytest.mark.parametrize(
    ("duration", "error"),
    [(0, ValueError), (timedelta(seconds=-1), ValueError), ("30s", TypeError), (True, TypeError)],
)
def test_bad_timeouts_are_refused_when_declared(duration, error):
    with pytest.raises(error, match="@timeout"):
        timeout(duration)


def _started(attempt: dict) -> float:
    from django.utils.dateparse import parse_datetime

    return parse_datetime(attempt["started_at"]).timestamp()
