"""The built-in cleanup task, scheduled as a recurring task."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.cleanup import clear_finished_jobs
from steady_queue.models import Job, RecurringTask
from steady_queue.task_options.recurring_task import recurring
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db


def test_scheduled_cleanup_deletes_jobs_finished_longer_ago_than_the_setting(declared):
    old, recent = tasks.noop.enqueue(), tasks.noop.enqueue()
    run_ready_jobs()
    Job.objects.filter(pk=old.id).update(finished_at=timezone.now() - timedelta(days=2))
    recurring(schedule="0 * * * *", key="clear finished jobs")(clear_finished_jobs)
    RecurringTask.objects.sync_static(declared)

    RecurringTask.objects.get().enqueue_now()
    [cleanup] = run_ready_jobs()

    assert cleanup.return_value == 1
    assert not Job.objects.filter(pk=old.id).exists()
    assert Job.objects.filter(pk=recent.id).exists()


def test_clearing_in_batches_deletes_only_what_finished_before_the_cutoff():
    jobs = [tasks.noop.enqueue() for _ in range(5)]
    run_ready_jobs()
    now = timezone.now()
    for days, job in zip((10, 9, 8, 7, 6), jobs, strict=True):
        Job.objects.filter(pk=job.id).update(finished_at=now - timedelta(days=days))
    cutoff = now - timedelta(days=7, hours=12)
    assert Job.objects.clear_finished_in_batches(batch_size=2, finished_before=cutoff) == 3
    assert {str(pk) for pk in Job.objects.values_list("pk", flat=True)} == {jobs[3].id, jobs[4].id}


def test_clearing_costs_the_same_statements_per_batch_whatever_its_size(
    django_assert_max_num_queries,
):
    from django.test.utils import CaptureQueriesContext

    from steady_queue import db

    def statements(jobs: int) -> int:
        for _ in range(jobs):
            tasks.noop.enqueue()
        run_ready_jobs()
        later = timezone.now() + timedelta(seconds=1)
        with CaptureQueriesContext(db.connection()) as captured:
            assert Job.objects.clear_finished_in_batches(finished_before=later) == jobs
        return len(captured)

    # One batch: the select of its ids, a delete per table that points at jobs, the
    # jobs' delete, and the select that finds nothing left. No job is loaded.
    assert statements(1) == statements(40)
    related = len(Job._meta.related_objects)
    assert statements(40) <= related + 2 + 4  # + BEGIN/COMMIT or savepoints
