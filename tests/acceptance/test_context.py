"""docs/reference/retries-and-failures.md, "Reporting progress and rescheduling" (the
context API)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from steady_queue.exceptions import RescheduleJob
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResultStatus, default_task_backend
from tests.tasks.acceptance import (
    async_progress,
    import_file,
    seen,
    wait_for_upload,
)


@pytest.mark.django_db(transaction=True)
def test_progress_is_visible_to_other_connections_while_the_task_runs():
    result = import_file.enqueue(3)
    run_ready_jobs()
    assert seen("import_file") == [
        {"current": 1, "total": 3, "message": "Imported row 1"},
        {"current": 2, "total": 3, "message": "Imported row 2"},
        {"current": 3, "total": 3, "message": "Imported row 3"},
    ]
    assert Job.objects.get(pk=result.id).progress == {
        "current": 3,
        "total": 3,
        "message": "Imported row 3",
    }


@pytest.mark.django_db
def test_async_tasks_use_areport_progress():
    result = async_progress.enqueue()
    run_ready_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert Job.objects.get(pk=result.id).progress == {"current": 1, "total": 2, "message": "half"}


@pytest.mark.django_db
def test_reschedule_does_not_count_an_attempt(tmp_path, signals):
    marker = tmp_path / "uploaded"
    result = wait_for_upload.enqueue(str(marker))
    before = timezone.now()

    run_ready_jobs()

    job = Job.objects.get(pk=result.id)
    assert job.state == "scheduled"
    assert 290 <= (job.scheduled_at - before).total_seconds() <= 301
    fetched = default_task_backend.get_result(result.id)
    assert fetched.status == TaskResultStatus.READY
    assert fetched.errors == [] and fetched.worker_ids == []
    # A broad "except Exception" in the task did not catch it.
    assert "swallowed" not in seen("wait_for_upload")
    assert signals.of("finished") == []

    marker.touch()
    run_ready_jobs(include_scheduled=True)
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.attempts == 1 and result.errors == []
    assert seen("wait_for_upload") == [1, 1]  # the same context.attempt next time
    assert len([e for e in signals.of("finished") if e[2].id == result.id]) == 1


def test_reschedule_job_is_a_base_exception():
    assert issubclass(RescheduleJob, BaseException)
    assert not issubclass(RescheduleJob, Exception)


@pytest.mark.django_db
def test_reschedule_gives_the_concurrency_slot_back(tmp_path):
    from tests.tasks.acceptance import limited_wait as task

    never, present = tmp_path / "never", tmp_path / "present"
    present.touch()
    first = task.enqueue(str(never))
    second = task.enqueue(str(present))
    assert Job.objects.get(pk=second.id).state == "blocked"
    run_ready_jobs()
    assert Job.objects.get(pk=first.id).state == "scheduled"
    assert Job.objects.get(pk=second.id).state == "finished"
    # Coming due again, the rescheduled job takes a slot like any other.
    third = task.enqueue(str(present))
    assert Job.objects.get(pk=third.id).state == "ready"
    Job.objects.get(pk=first.id).dispatch_now()
    assert Job.objects.get(pk=first.id).state == "blocked"
