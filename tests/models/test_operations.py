"""The operations API: retry, discard, dispatch now and release, one job or in bulk."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steady_queue import storage
from steady_queue.exceptions import JobStateError
from steady_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
)
from steady_queue.testing import run_ready_jobs
from tests import tasks as foundation_tasks
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def state(result) -> str:
    return Job.objects.with_execution().get(pk=result.id).state


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def claim_all() -> None:
    storage.claim(["*"], 100, None)


def test_retry_queues_a_failed_job_again_keeping_its_errors():
    result = foundation_tasks.explode.enqueue()
    run_ready_jobs()
    job(result).retry()
    assert state(result) == "ready"
    run_ready_jobs()
    result.refresh()
    assert len(result.errors) == 2
    assert len(result.worker_ids) == 2


def test_retry_of_a_job_that_did_not_fail_says_why():
    result = foundation_tasks.noop.enqueue()
    with pytest.raises(JobStateError, match="is ready: only failed jobs can be retried"):
        job(result).retry()


@pytest.mark.parametrize("where", ["ready", "scheduled", "blocked", "failed"])
def test_discard_deletes_a_pending_or_failed_job(where):
    result = make_job(where)
    job(result).discard()
    assert not Job.objects.filter(pk=result.id).exists()


def test_a_running_job_cannot_be_discarded():
    result = foundation_tasks.noop.enqueue()
    claim_all()
    with pytest.raises(JobStateError, match="running: a running job cannot be discarded"):
        job(result).discard()
    assert ClaimedExecution.objects.filter(job_id=result.id).exists()


def test_a_finished_job_cannot_be_discarded():
    result = foundation_tasks.noop.enqueue()
    run_ready_jobs()
    with pytest.raises(
        JobStateError,
        match="finished: only ready, scheduled, blocked, throttled, paused, waiting or failed jobs",
    ):
        job(result).discard()


def test_discarding_a_ready_limited_job_gives_its_slot_to_the_next_blocked_one():
    first, second = tasks.exclusive.enqueue(1), tasks.exclusive.enqueue(2)
    assert state(second) == "blocked"
    job(first).discard()
    assert state(second) == "ready"
    assert Semaphore.objects.get(key__endswith="/exclusive").value == 0


def test_discarding_a_blocked_job_leaves_the_semaphore_alone():
    tasks.exclusive.enqueue(1)
    second = tasks.exclusive.enqueue(2)
    job(second).discard()
    assert Semaphore.objects.get(key__endswith="/exclusive").value == 0


def test_dispatch_now_makes_a_scheduled_job_ready():
    result = foundation_tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    job(result).dispatch_now()
    assert state(result) == "ready"
    with pytest.raises(JobStateError, match="only scheduled jobs"):
        job(result).dispatch_now()


def test_dispatch_now_still_honours_concurrency_limits():
    tasks.exclusive.enqueue(1)
    later = tasks.exclusive.using(run_after=timedelta(hours=1)).enqueue(2)
    job(later).dispatch_now()
    assert state(later) == "blocked"


def test_release_with_force_makes_a_blocked_job_ready_without_a_free_slot():
    tasks.exclusive.enqueue(1)
    second = tasks.exclusive.enqueue(2)
    assert job(second).release(force=True) is True
    assert state(second) == "ready"
    with pytest.raises(JobStateError, match="is ready: only blocked jobs can be released"):
        job(second).release()


def test_bulk_actions_only_touch_the_jobs_of_the_queryset():
    kept = foundation_tasks.explode.enqueue()
    retried = [foundation_tasks.explode.using(queue_name="low").enqueue() for _ in range(3)]
    run_ready_jobs()
    assert Job.objects.filter(queue_name="low").retry_all() == 3
    assert {state(r) for r in retried} == {"ready"}
    assert state(kept) == "failed"
    assert Job.objects.filter(queue_name="low").discard_all() == 3
    assert Job.objects.count() == 1


def test_discard_all_skips_running_jobs():
    running = foundation_tasks.noop.enqueue()
    claim_all()
    waiting = [foundation_tasks.noop.enqueue() for _ in range(2)]
    assert Job.objects.discard_all() == 2
    assert list(Job.objects.values_list("pk", flat=True)) == [int(running.id)]
    assert not Job.objects.filter(pk__in=[w.id for w in waiting]).exists()


def test_dispatch_all_now_moves_every_scheduled_job_of_the_queryset():
    for _ in range(5):
        foundation_tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    assert Job.objects.dispatch_all_now(batch_size=2) == 5
    assert ReadyExecution.objects.count() == 5
    assert not ScheduledExecution.objects.exists()


FAILED_JOBS = 10_000
BATCH = 500
BATCHES = FAILED_JOBS // BATCH


def make_failed_jobs(count: int) -> None:
    Job.objects.bulk_create(
        Job(
            queue_name="bulk", task_path="tests.tasks.explode", arguments={"args": [], "kwargs": {}}
        )
        for _ in range(count)
    )
    ids = Job.objects.filter(queue_name="bulk").values_list("pk", flat=True)
    FailedExecution.objects.bulk_create(
        (FailedExecution(job_id=pk, exception_class="builtins.ValueError") for pk in ids),
        batch_size=2000,
    )


def test_retrying_ten_thousand_failed_jobs_takes_a_bounded_number_of_queries(
    django_assert_max_num_queries,
):
    make_failed_jobs(FAILED_JOBS)
    # Eight per batch on Django 6: one of them reads whether the jobs' tasks are paused,
    # as every way to ready does. Ten on Django 5.2, which splits SQLite INSERTs past 999
    # parameters: a batch's 500 ready rows (six columns since fair share) take two.
    with django_assert_max_num_queries(BATCHES * 10 + 5):
        assert Job.objects.retry_all(batch_size=BATCH) == FAILED_JOBS
    assert ReadyExecution.objects.count() == FAILED_JOBS
    assert not FailedExecution.objects.exists()
    assert Job.objects.count() == FAILED_JOBS


def test_discarding_ten_thousand_failed_jobs_takes_a_bounded_number_of_queries(
    django_assert_max_num_queries,
):
    make_failed_jobs(FAILED_JOBS)
    foundation_tasks.noop.enqueue()
    # Eight per batch: the unique locks of the discarded jobs are one DELETE more, their
    # log lines one more, their labels' rows one more, and their durable steps and
    # signals two more; on PostgreSQL, telling the jobs' waiters (steady_queue.wait) is
    # one statement more.
    with django_assert_max_num_queries(BATCHES * 13 + 10):
        assert Job.objects.filter(queue_name="bulk").discard_all(batch_size=BATCH) == FAILED_JOBS
    assert Job.objects.count() == 1
    assert ReadyExecution.objects.count() == 1
    assert not FailedExecution.objects.exists()


def make_job(where: str):
    if where == "scheduled":
        return foundation_tasks.noop.using(run_after=timedelta(hours=1)).enqueue()
    if where == "blocked":
        tasks.exclusive.enqueue(0)
        return tasks.exclusive.enqueue(1)
    if where == "failed":
        result = foundation_tasks.explode.enqueue()
        run_ready_jobs()
        return result
    return foundation_tasks.noop.enqueue()


def test_discarding_waiting_workflow_steps_with_their_dependents_leaves_no_failed_rows():
    from steady_queue.models import WorkflowRun
    from steady_queue.workflows import Workflow
    from tests.tasks import groups

    wf = Workflow("chain")
    first = wf.add(groups.step, name="first")
    second = wf.add(groups.step, after=[first], name="second")
    wf.add(groups.step, after=[second], name="third")
    run = wf.enqueue()
    waiting = [int(run["second"].id), int(run["third"].id)]

    assert Job.objects.filter(pk__in=waiting).discard_all() == 2

    assert not Job.objects.filter(pk__in=waiting).exists()
    assert not FailedExecution.objects.filter(job_id__in=waiting).exists()
    assert WorkflowRun.objects.get(pk=run.id).failed == 2
