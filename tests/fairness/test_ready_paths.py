"""Every way a job becomes ready writes its place in the fair order.

Each test makes a backlog of tenant A first (tags 1, 2, ... less the head start), then
moves a job of tenant B to ready by one path, and checks the tag B's ready row got:
a key with no ready job starts one weighted step after the smallest tag ready (``V``).
"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.db.models import Max, Min
from django.utils import timezone

from steady_queue import storage
from steady_queue.models import (
    ClaimedExecution,
    Job,
    Process,
    RateLimitBucket,
    RateLimitSlot,
    ReadyExecution,
    ScheduledExecution,
    ThrottledExecution,
)
from steady_queue.models.execution.outcomes import Release, Success
from steady_queue.models.fair_share import HEAD_START
from steady_queue.pauses import pause_task, resume_task
from steady_queue.runner.perform import perform
from steady_queue.task_options.rate_limits import WHOLE_TASK, bucket_key

from .conftest import enqueue_tenant

pytestmark = pytest.mark.django_db(transaction=True)


def expected_tags(key: str, count: int = 1, weight: int = 1, queue="default", priority=0, gone=()):
    """The tags ``count`` new jobs of ``key`` get now, by the rule, from the ready rows
    (but those of the jobs ``gone``, about to leave)."""
    group = ReadyExecution.objects.filter(queue_name=queue, priority=priority)
    group = group.exclude(job_id__in=list(gone))
    low = group.aggregate(low=Min("fair_order"))["low"] or 0.0
    last = group.filter(fairness_key=key).aggregate(last=Max("fair_order"))["last"]
    first = last + 1 / weight if last is not None else low + (1 - HEAD_START) / weight
    return [pytest.approx(first + i / weight) for i in range(count)]


def tags_of(job_ids) -> list[float]:
    rows = ReadyExecution.objects.filter(job_id__in=list(job_ids)).order_by("job_id")
    return list(rows.values_list("fair_order", flat=True))


def ids(results) -> list[int]:
    return [int(result.id) for result in results]


def backlog(fair, count: int = 5) -> None:
    enqueue_tenant(fair.weighted, "A", count)


@pytest.fixture
def claimant() -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker-fair", pid=os.getpid())


def claim_only(job_id: int, process: Process | None = None) -> ClaimedExecution:
    """Claim exactly the job ``job_id`` (the only ready one), through the storage."""
    (claimed,) = storage.claim(["*"], 10, process)
    assert claimed.job_id == job_id
    return claimed


def test_a_single_enqueue(fair):
    backlog(fair)
    expected = expected_tags("B")

    result = fair.by_tenant.enqueue("B")

    assert tags_of([int(result.id)]) == expected
    assert ReadyExecution.objects.get(job_id=int(result.id)).fairness_key == "B"


def test_a_bulk_enqueue_continues_a_keys_backlog(fair):
    backlog(fair)
    expected = expected_tags("A", count=3)

    results = enqueue_tenant(fair.weighted, "A", 3, start=5)

    assert tags_of(ids(results)) == expected


def test_a_scheduled_job_dispatched(fair):
    (result,) = [fair.by_tenant.using(run_after=timedelta(hours=1)).enqueue("B")]
    backlog(fair)
    expected = expected_tags("B")

    ScheduledExecution.objects.filter(job_id=int(result.id)).update(scheduled_at=timezone.now())
    assert ScheduledExecution.dispatch_next_batch(10) == 1

    assert tags_of([int(result.id)]) == expected


def test_a_blocked_job_released_by_a_finish(fair, claimant):
    first, second = (fair.one_at_a_time.enqueue("B", n=n) for n in range(2))
    claimed = claim_only(int(first.id), claimant)
    backlog(fair)
    expected = expected_tags("B")

    # With the next claim asked: the fast storages' hand-on statements step aside.
    finished = storage.for_alias("default").finish(
        claimed,
        Success(1),
        then_claim=storage.ClaimNext(["*"], claimant),
    )

    assert finished.recorded
    assert tags_of([int(second.id)]) == expected


def test_a_blocked_job_released_by_a_discard(fair):
    first, second = (fair.one_at_a_time.enqueue("B", n=n) for n in range(2))
    backlog(fair)
    expected = expected_tags("B", gone=[int(first.id)])

    Job.objects.filter(pk=int(first.id)).discard_all()

    assert tags_of([int(second.id)]) == expected


def test_a_throttled_job_released(fair):
    first, second = (fair.rate_limited.enqueue("B", n=n) for n in range(2))
    ReadyExecution.objects.filter(job_id=int(first.id)).delete()
    backlog(fair)
    expected = expected_tags("B")
    key = bucket_key(fair.rate_limited.module_path, WHOLE_TASK)
    RateLimitSlot.objects.filter(bucket_id=key).update(
        started_at=timezone.now() - timedelta(hours=1)
    )
    RateLimitBucket.objects.filter(key=key).update(next_release_at=timezone.now())

    assert ThrottledExecution.release(key) == 1

    assert tags_of([int(second.id)]) == expected


def test_a_failed_job_retried(fair):
    result = fair.fails.enqueue("B")
    perform(claim_only(int(result.id)))
    job = Job.objects.get(pk=int(result.id))
    assert job.state == "failed"
    backlog(fair)
    expected = expected_tags("B")

    job.retry()

    assert tags_of([job.pk]) == expected
    assert Job.objects.get(pk=job.pk).fairness_key == "B"  # kept across the retry


def test_a_released_claim(fair):
    result = fair.by_tenant.enqueue("B")
    claimed = claim_only(int(result.id))
    backlog(fair)
    expected = expected_tags("B")

    assert claimed.record(Release())

    assert tags_of([int(result.id)]) == expected


def test_a_paused_tasks_jobs_resumed(fair):
    pause_task(fair.by_tenant)
    results = enqueue_tenant(fair.by_tenant, "B", 2)
    backlog(fair)
    assert not ReadyExecution.objects.filter(fairness_key="B").exists()
    expected = expected_tags("B", count=2)

    assert resume_task(fair.by_tenant) == 2

    assert tags_of(ids(results)) == expected


def test_a_process_without_the_fair_task_declared_still_tags_its_jobs(fair, monkeypatch):
    from steady_queue.task_options import TaskOptions, fairness

    (result,) = [fair.by_tenant.using(run_after=timedelta(hours=1)).enqueue("B")]
    backlog(fair)
    expected = expected_tags("B")
    # A dispatcher whose registry lacks by_tenant: the job's key says it is fair (weight 1).
    declared = fairness._registry
    fresh = TaskOptions()
    monkeypatch.setattr(fairness, "_registry", fresh)
    fresh.register(fair.weighted, declared.get(fair.weighted.module_path))  # the backlog's
    ScheduledExecution.objects.filter(job_id=int(result.id)).update(scheduled_at=timezone.now())

    assert ScheduledExecution.dispatch_next_batch(10) == 1

    assert tags_of([int(result.id)]) == expected
