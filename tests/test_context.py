"""The context API: progress reported from a running task, and rescheduling."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from steady_queue.compat import TaskResultStatus
from steady_queue.models import Job
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from tests.tasks import features as tasks

pytestmark = pytest.mark.django_db


def run_in_thread() -> threading.Thread:
    def work():
        try:
            run_ready_jobs()
        finally:
            connections.close_all()

    thread = threading.Thread(target=work)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_progress_is_readable_from_another_connection_while_the_job_runs():
    result = tasks.with_progress.enqueue(steps=3, pause=0.4)
    thread = run_in_thread()
    seen = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and thread.is_alive():
        job = Job.objects.with_execution().get(pk=result.id)
        if job.progress and job.state == "running":
            seen.append(job.progress["current"])
        time.sleep(0.05)
    thread.join(10)
    assert 1 in seen and 2 in seen
    assert Job.objects.get(pk=result.id).progress == {
        "current": 3,
        "total": 3,
        "message": "step 3",
    }


def test_report_progress_refuses_impossible_numbers():
    from steady_queue.compat import TaskContext
    from steady_queue.context import report_progress

    context = TaskContext(task_result=tasks.tick.enqueue())
    with pytest.raises(ValueError, match="current <= total"):
        report_progress(context, 5, 3)


def test_reschedule_runs_the_job_later_without_counting_an_attempt():
    result = tasks.reschedules_once.enqueue(60)
    run_ready_jobs()
    job = Job.objects.with_execution().get(pk=result.id)
    assert job.state == "scheduled"
    assert job.attempts == []
    assert abs((job.scheduled_at - timezone.now()) - timedelta(seconds=60)) < timedelta(seconds=2)
    result.refresh()
    assert result.status == TaskResultStatus.READY
    assert result.worker_ids == []
    dispatch_scheduled(all_=True)
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 1  # context.attempt on the second run
    assert result.worker_ids == ["in-process"]
    assert result.errors == []


def test_a_broad_except_in_the_task_does_not_swallow_a_reschedule():
    result = tasks.catches_everything.enqueue()
    run_ready_jobs()
    assert Job.objects.with_execution().get(pk=result.id).state == "scheduled"


def test_reschedule_needs_an_aware_time():
    from datetime import datetime

    from steady_queue.compat import TaskContext
    from steady_queue.context import reschedule

    context = TaskContext(task_result=tasks.tick.enqueue())
    with pytest.raises(ValueError, match="aware"):
        reschedule(context, datetime(2030, 1, 1))
