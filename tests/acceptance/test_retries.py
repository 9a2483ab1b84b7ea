"""docs/reference/retries-and-failures.md: "Retries and failed jobs" and "Error reporting"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job
from steady_queue.task_options.retries import RetryPolicy, retry_policy
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResultStatus, default_task_backend
from tests.tasks.acceptance import (
    fail,
    fetch_rates,
    flaky,
    old_and_flaky,
    policy_in_decorator,
    retried_after_min_delay,
    retried_within_max_delay,
    seen,
)

pytestmark = pytest.mark.django_db


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def test_failing_twice_then_succeeding_ends_successful_with_two_errors_and_three_workers():
    result = flaky.enqueue(2)
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert len(result.errors) == 2
    assert all(e.exception_class_path == "builtins.ConnectionError" for e in result.errors)
    assert "attempt 1" in result.errors[0].traceback
    assert "attempt 2" in result.errors[1].traceback
    assert len(result.worker_ids) == 3
    assert result.attempts == 3
    assert result.started_at < result.last_attempted_at < result.finished_at
    assert seen("flaky") == [1, 2, 3]  # context.attempt counts attempts
    assert Job.objects.count() == 1  # the same job throughout


def test_between_attempts_the_same_result_is_ready_and_delays_follow_the_backoff():
    result = flaky.enqueue(5)  # fails every time; attempts=3, 10 s base, backoff 2, no jitter

    before = timezone.now()
    [first] = run_ready_jobs(max_jobs=1)
    assert first.id == result.id
    assert first.status == TaskResultStatus.READY
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY
    assert len(fetched.errors) == 1 and len(fetched.worker_ids) == 1
    assert job(result).state == "scheduled"
    delay = job(result).scheduled_at - before
    assert timedelta(seconds=10) <= delay <= timedelta(seconds=12)

    before = timezone.now()
    run_ready_jobs(include_scheduled=True, max_jobs=1)
    delay = job(result).scheduled_at - before
    assert timedelta(seconds=20) <= delay <= timedelta(seconds=22)

    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3 and len(result.worker_ids) == 3
    assert job(result).state == "failed"


def test_task_finished_is_sent_for_every_attempt(signals):
    result = flaky.enqueue(1)
    run_ready_jobs(include_scheduled=True)
    finished = [e for e in signals.of("finished") if e[2].id == result.id]
    assert [e[2].status for e in finished] == [TaskResultStatus.READY, TaskResultStatus.SUCCESSFUL]
    assert isinstance(finished[0][3], ConnectionError)  # inside the except block


def test_readme_policy_example_with_jitter_and_max_delay():
    result = fetch_rates.enqueue("EUR")  # ConnectionError: retried, 5 attempts
    before = timezone.now()
    run_ready_jobs(max_jobs=1)
    delay = job(result).scheduled_at - before
    assert timedelta(seconds=10) <= delay <= timedelta(seconds=11.6)
    for _ in range(3):
        run_ready_jobs(include_scheduled=True, max_jobs=1)
    # Fourth retry would wait 80 s (+15 %): still under max_delay of ten minutes.
    run_ready_jobs(include_scheduled=True)
    assert job(result).state == "failed"
    assert seen("fetch_rates").count("EUR") == 5


def test_discard_on_fails_at_once_and_stays_in_the_failed_list():
    result = fetch_rates.enqueue("denied")
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 1
    assert result.errors[0].exception_class_path == "builtins.PermissionError"
    assert job(result).state == "failed"


def test_exception_outside_retry_on_fails_at_once():
    result = fetch_rates.enqueue("bug")
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 1


def test_max_age_fails_instead_of_a_late_retry():
    result = old_and_flaky.enqueue()  # 30 min base delay, max_age one hour
    run_ready_jobs(include_scheduled=True, max_jobs=1)
    assert job(result).state == "scheduled"  # +30 min: within the hour
    run_ready_jobs(include_scheduled=True, max_jobs=1)
    # The next retry would start 30 + 60 = 90 minutes after enqueue: failed instead.
    assert job(result).state == "failed"
    result.refresh()
    assert len(result.errors) == 2


def test_policy_given_to_the_task_decorator():
    result = policy_in_decorator.enqueue()
    run_ready_jobs(max_jobs=1)
    assert job(result).state == "scheduled"
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 2


def test_task_without_policy_is_not_retried():
    result = fail.enqueue("once")
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.worker_ids) == 1


def test_documented_defaults():
    policy = RetryPolicy()
    assert policy.attempts == 3
    assert policy.base_delay == timedelta(seconds=3)
    assert policy.backoff == 2.0
    assert policy.jitter == 0.15
    assert policy.min_delay == timedelta(0)
    assert policy.max_delay == timedelta(hours=1)
    assert policy.retry_on == (Exception,)
    assert policy.discard_on == ()
    assert policy.max_age is None
    assert policy.at_least_once is False
    assert callable(retry_policy())


def test_manual_retry_keeps_id_and_errors():
    result = fail.enqueue("x")
    run_ready_jobs()
    Job.objects.get(pk=result.id).retry()
    assert job(result).state == "ready"
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY
    assert len(fetched.errors) == 1
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 2 and len(result.worker_ids) == 2


def test_min_delay_and_max_delay_bound_the_wait():
    low = retried_after_min_delay.enqueue()
    high = retried_within_max_delay.enqueue()
    before = timezone.now()
    run_ready_jobs()
    assert job(low).scheduled_at - before >= timedelta(seconds=5)
    assert job(high).scheduled_at - before <= timedelta(minutes=1, seconds=2)
