"""``durable.sleep``: the run ends without an attempt; the job sleeps as scheduled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import ClaimedExecution, Job, ScheduledExecution, states
from steady_queue.models.job.durable import SLEEPING
from steady_queue.testing import dispatch_scheduled
from tests.durable.helpers import error_class, job, records, run, state, wake
from tests.tasks import durable as tasks

pytestmark = pytest.mark.django_db

PLAN = [["step", "a"], ["sleep", 3600], ["step", "b"]]


def test_a_sleep_ends_the_run_and_the_job_resumes_after_it():
    before = timezone.now()
    result = tasks.scripted.enqueue(PLAN)
    run()
    slept = job(result)
    assert slept.state == states.SCHEDULED
    assert slept.attempts == []  # not an attempt
    assert not ClaimedExecution.objects.filter(job_id=result.id).exists()
    wake = ScheduledExecution.objects.get(job_id=result.id).scheduled_at
    assert before + timedelta(seconds=3600) <= wake <= timezone.now() + timedelta(seconds=3600)
    status = slept.durable_status()
    assert (status.kind, status.until) == (SLEEPING, wake)
    assert list(Job.objects.sleeping().values_list("pk", "durable_until")) == [
        (int(result.id), wake)
    ]
    run()  # not due: nothing runs
    assert state(result) == states.SCHEDULED
    dispatch_scheduled(all_=True)  # its time came (or an operator's "run now")
    run()
    done = job(result)
    assert done.state == states.FINISHED
    assert done.return_value == ["a-result", "b-result"]
    assert [name for _, name in tasks.BODIES] == ["a", "b"]
    assert len(done.attempts) == 1
    assert records(result) == [("step", "a"), ("sleep", "1"), ("step", "b")]
    assert done.durable_status() is None
    assert not Job.objects.sleeping().exists()


def test_each_sleep_of_a_run_is_recorded_once():
    result = tasks.scripted.enqueue([["sleep", 60], ["step", "a"], ["sleep", 60], ["step", "b"]])
    for _ in range(2):
        run()
        assert state(result) == states.SCHEDULED
        wake(result)
    run()
    assert state(result) == states.FINISHED
    assert records(result, "sleep") == [("sleep", "1"), ("sleep", "2")]
    assert [name for _, name in tasks.BODIES] == ["a", "b"]


@pytest.mark.parametrize("seconds", [0, -5])
def test_a_sleep_of_zero_or_less_goes_on_at_once(seconds):
    result = tasks.scripted.enqueue([["sleep", seconds], ["step", "a"]])
    run()
    assert state(result) == states.FINISHED
    assert records(result) == [("step", "a")]


def test_a_retry_after_a_sleep_does_not_sleep_again():
    result = tasks.scripted.enqueue([["sleep", 60], ["raise_once", "x"], ["step", "a"]])
    run()
    wake(result)
    run()
    assert state(result) == states.FAILED
    job(result).retry()
    run()
    assert state(result) == states.FINISHED


def test_where_a_durable_job_is_costs_one_query_at_most(django_assert_max_num_queries):
    sleeper = tasks.scripted.enqueue(PLAN)
    waiter = tasks.scripted.enqueue([["wait", "go", None]])
    run()
    jobs = list(Job.objects.with_execution().filter(pk__in=[sleeper.id, waiter.id]).order_by("pk"))
    with django_assert_max_num_queries(1):
        assert jobs[0].durable_status().kind == SLEEPING
    with django_assert_max_num_queries(0):
        assert jobs[1].durable_status().signal_name == "go"


def test_a_sleeping_job_can_be_cancelled():
    result = tasks.scripted.enqueue(PLAN)
    run()
    job(result).cancel()
    assert error_class(result) == CANCELLED_CLASS
    dispatch_scheduled(all_=True)
    run()
    assert [name for _, name in tasks.BODIES] == ["a"]


def test_a_job_retried_with_a_delay_after_a_sleep_is_not_called_sleeping():
    result = tasks.scripted.enqueue(PLAN)
    run()
    ScheduledExecution.objects.filter(job_id=result.id).update(
        scheduled_at=timezone.now() + timedelta(days=9)
    )
    Job.objects.filter(pk=result.id).update(scheduled_at=timezone.now() + timedelta(days=9))
    assert job(result).durable_status() is None
    assert not Job.objects.sleeping().exists()
