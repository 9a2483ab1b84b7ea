"""Rows pruned by their own age: finished batches and workflow runs once their jobs are
gone, hourly task rollups (the all-time rows stay), idle rate limit windows, expired
unique locks, old archived jobs and prune tallies."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import Sum
from django.utils import timezone

import steady_queue
from steady_queue.models import (
    ArchivedJob,
    Batch,
    Job,
    PruneTally,
    RateLimitBucket,
    RateLimitSlot,
    TaskRollup,
    UniqueLock,
    WorkflowDependency,
    WorkflowRun,
    WorkflowStep,
)
from steady_queue.models.task_rollup import hour_of
from steady_queue.retention.pruning import prune
from tests import tasks

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    monkeypatch.setattr(steady_queue, "retention_rules", [])


def removed_by_kind() -> dict[str, int]:
    return {result.kind: result.removed for result in prune(pause=0)}


def test_a_finished_batch_goes_once_it_is_old_and_none_of_its_jobs_is_left():
    now = timezone.now()
    Batch.objects.create(total=1, finished_at=now - 8 * DAY)  # old, no job left
    old_with_job = Batch.objects.create(total=1, finished_at=now - 8 * DAY)
    young = Batch.objects.create(total=1, finished_at=now - 6 * DAY)
    unfinished = Batch.objects.create(total=1, created_at=now - 80 * DAY)
    kept_job = tasks.noop.enqueue()
    Job.objects.filter(pk=kept_job.id).update(batch_id=old_with_job.pk)

    assert removed_by_kind() == {"batches": 1}
    assert set(Batch.objects.values_list("pk", flat=True)) == {
        old_with_job.pk,
        young.pk,
        unfinished.pk,
    }


def test_a_finished_workflow_run_goes_with_its_steps_and_links(monkeypatch):
    monkeypatch.setattr(steady_queue, "finished_groups_kept", DAY)
    now = timezone.now()
    old = WorkflowRun.objects.create(total=2, finished_at=now - 2 * DAY)
    # Steps outlive their jobs (no constraint): these jobs were pruned already.
    first = WorkflowStep.objects.create(job_id=10_001, run=old, name="a")
    second = WorkflowStep.objects.create(job_id=10_002, run=old, name="b")
    WorkflowDependency.objects.create(step=second, upstream=first)
    young = WorkflowRun.objects.create(total=1, finished_at=now)
    WorkflowStep.objects.create(job_id=10_003, run=young, name="a")

    assert removed_by_kind() == {"workflow runs": 1}
    assert list(WorkflowRun.objects.values_list("pk", flat=True)) == [young.pk]
    assert list(WorkflowStep.objects.values_list("run_id", flat=True)) == [young.pk]
    assert not WorkflowDependency.objects.exists()


def test_groups_kept_for_ever_when_finished_groups_kept_is_none(monkeypatch):
    monkeypatch.setattr(steady_queue, "finished_groups_kept", None)
    Batch.objects.create(total=1, finished_at=timezone.now() - 800 * DAY)
    assert removed_by_kind() == {}
    assert Batch.objects.count() == 1


def test_hourly_rollups_older_than_30_days_go_and_the_all_time_totals_stay():
    now = timezone.now()
    key = {"task_path": "tests.tasks.noop", "queue_name": "default"}
    TaskRollup.objects.create(**key, period=TaskRollup.all_time(), succeeded=10)
    TaskRollup.objects.create(**key, period=hour_of(now - 31 * DAY), succeeded=6)
    TaskRollup.objects.create(**key, period=hour_of(now - 29 * DAY), succeeded=4)
    all_time = TaskRollup.objects.filter(period=TaskRollup.all_time())
    before = all_time.aggregate(total=Sum("succeeded"))

    assert removed_by_kind() == {"task rollups": 1}
    assert all_time.aggregate(total=Sum("succeeded")) == before == {"total": 10}
    assert TaskRollup.objects.count() == 2


def test_idle_rate_limit_windows_and_expired_unique_locks_go():
    now = timezone.now()
    idle = RateLimitBucket.objects.create(
        key="idle", task_path="t", limit_key="*", to=1, per=DAY, expires_at=now - DAY
    )
    RateLimitSlot.objects.create(bucket=idle, started_at=now - 2 * DAY)
    RateLimitBucket.objects.create(
        key="waiting",
        task_path="t",
        limit_key="*",
        to=1,
        per=DAY,
        expires_at=now - DAY,
        next_release_at=now,
    )
    holders = [Job.objects.get(pk=tasks.noop.enqueue().id) for _ in range(3)]
    UniqueLock.objects.create(key="expired", job=holders[0], expires_at=now - DAY)
    UniqueLock.objects.create(key="period", job=holders[1], expires_at=now + DAY)
    UniqueLock.objects.create(key="lifetime", job=holders[2], expires_at=None)

    assert removed_by_kind() == {"rate limit windows": 1, "unique locks": 1}
    assert list(RateLimitBucket.objects.values_list("key", flat=True)) == ["waiting"]
    assert not RateLimitSlot.objects.exists()
    assert set(UniqueLock.objects.values_list("key", flat=True)) == {"period", "lifetime"}
    assert Job.objects.count() == 3  # a lock goes, never its job


def test_archived_jobs_and_prune_tallies_go_after_their_own_age(monkeypatch):
    monkeypatch.setattr(steady_queue, "archived_jobs_kept", 90 * DAY)
    now = timezone.now()
    values = {"job_id": 1, "task_path": "t", "queue_name": "q", "state": "failed"}
    ArchivedJob.objects.create(**values, enqueued_at=now, ended_at=now, archived_at=now - 91 * DAY)
    kept = ArchivedJob.objects.create(**values, enqueued_at=now, ended_at=now)
    PruneTally.objects.create(rule="old", removed=1, ran_at=now - 8 * DAY)

    removed = removed_by_kind()

    assert removed == {"archived jobs": 1, "prune tallies": 1}
    assert list(ArchivedJob.objects.values_list("pk", flat=True)) == [kept.pk]
    # This pass's own tallies are new: they stay.
    assert set(PruneTally.objects.values_list("rule", flat=True)) == {
        "archived jobs kept 90 days",
        "prune tallies kept 7 days",
    }
