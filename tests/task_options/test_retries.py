"""Retry policies: attempts, backoff, discard_on, max_age, and the same job across attempts."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.models import FailedExecution, Job, ScheduledExecution
from steady_queue.task_options.retries import RetryPolicy, policy_for, retry_policy
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def run_until_settled(result) -> None:
    """Run the job, making each retry due at once, until it stops being retried."""
    run_ready_jobs()
    while dispatch_scheduled(all_=True):
        run_ready_jobs()
    result.refresh()


def scheduled_delay(job_id: int) -> timedelta:
    execution = ScheduledExecution.objects.get(job_id=job_id)
    return execution.scheduled_at - _last_finish(Job.objects.get(pk=job_id))


def _last_finish(job: Job) -> datetime:
    return datetime.fromisoformat(job.attempts[-1]["finished_at"])


def test_a_task_failing_twice_then_succeeding_ends_successful_with_two_errors():
    result = tasks.flaky.enqueue(2)
    run_until_settled(result)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 3
    assert [e.exception_class_path for e in result.errors] == ["builtins.ConnectionError"] * 2
    assert "attempt 1 failed" in result.errors[0].traceback
    assert result.worker_ids == ["in-process"] * 3
    assert Job.objects.count() == 1
    assert default_task_backend.get_result(result.id).id == result.id


def test_retries_wait_as_the_backoff_says():
    result = tasks.flaky.enqueue(5)
    run_ready_jobs()
    first = scheduled_delay(int(result.id))
    dispatch_scheduled(all_=True)
    run_ready_jobs()
    second = scheduled_delay(int(result.id))
    assert abs(first.total_seconds() - 10) < 0.5
    assert abs(second.total_seconds() - 20) < 0.5
    result.refresh()
    assert result.status == TaskResultStatus.READY


def test_the_last_allowed_attempt_fails_the_job_with_every_error_kept():
    result = tasks.flaky.enqueue(5)
    run_until_settled(result)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3
    assert FailedExecution.objects.filter(job_id=result.id).exists()


def test_a_discard_on_exception_fails_at_once():
    result = tasks.forbidden.enqueue()
    run_until_settled(result)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.worker_ids) == 1


def test_an_exception_outside_retry_on_fails_at_once():
    result = tasks.wrong_type.enqueue()
    run_until_settled(result)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 1


def test_no_retry_is_scheduled_past_max_age():
    # Retries wait 10, 20, then 40 minutes: the third would start past the 25 allowed.
    result = tasks.always_fails.enqueue()
    run_until_settled(result)
    assert result.status == TaskResultStatus.FAILED
    assert len(result.errors) == 3


def test_max_age_counts_from_enqueueing():
    result = tasks.always_fails.enqueue()
    Job.objects.filter(pk=result.id).update(created_at=timezone.now() - timedelta(minutes=20))
    run_until_settled(result)
    assert len(result.errors) == 1  # a retry in 10 minutes would start 30 minutes in


def test_a_retried_job_queues_for_its_semaphore_again():
    first = tasks.limited_flaky.enqueue()
    second = tasks.limited_flaky.enqueue()
    assert Job.objects.get(pk=second.id).state == "blocked"
    run_ready_jobs(max_jobs=1)  # the first fails, releases its slot and unblocks the second
    assert Job.objects.get(pk=first.id).state == "scheduled"
    assert Job.objects.get(pk=second.id).state == "ready"
    dispatch_scheduled(all_=True)
    assert Job.objects.get(pk=first.id).state == "blocked"


@pytest.mark.skipif(not tasks.TASK_TAKES_OPTIONS, reason="@task(**options) needs Django 6.1+")
def test_the_policy_can_be_given_to_the_task_decorator():
    result = tasks.retried_by_option.enqueue()
    run_until_settled(result)
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert len(result.worker_ids) == 2


def test_delays_grow_exponentially_between_min_and_max():
    policy = RetryPolicy(
        base_delay=timedelta(seconds=2),
        backoff=3,
        min_delay=timedelta(seconds=5),
        max_delay=timedelta(seconds=30),
        jitter=0,
    )
    delays = [policy.delay(n).total_seconds() for n in range(1, 5)]
    assert delays == [5, 6, 18, 30]


def test_jitter_adds_up_to_its_fraction_of_the_delay():
    policy = RetryPolicy(base_delay=timedelta(seconds=10), jitter=0.5)
    assert policy.delay(1, rand=lambda: 0.0) == timedelta(seconds=10)
    assert policy.delay(1, rand=lambda: 1.0) == timedelta(seconds=15)
    assert all(timedelta(seconds=10) <= policy.delay(1) <= timedelta(seconds=15) for _ in range(50))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attempts": 0}, "attempts"),
        ({"jitter": 2}, "jitter"),
        ({"min_delay": timedelta(hours=2)}, "min_delay"),
        ({"retry_on": ("ValueError",)}, "exception classes"),
    ],
)
def test_bad_policies_are_refused_with_the_reason(options, message):
    with pytest.raises((ValueError, TypeError), match=message):
        retry_policy(**options)


def test_the_policy_is_found_from_the_task_path():
    assert policy_for(tasks.flaky.module_path).attempts == 3
    assert policy_for("tests.tasks.features.tick") is None
    assert policy_for("no.such.module.task") is None


@pytest.mark.parametrize("option", ["base_delay", "min_delay", "max_delay", "max_age"])
def test_a_delay_that_is_no_timedelta_is_refused_when_the_policy_is_declared(option):
    with pytest.raises(TypeError, match=f"{option}=...\\) must be a timedelta"):
        RetryPolicy(**{option: 5})
