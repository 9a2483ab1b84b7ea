"""The built-in cleanup task, scheduled as a recurring task."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.cleanup import clear_finished_jobs
from steady_queue.models import Job, RecurringTask
from steady_queue.recurring_task import recurring
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
