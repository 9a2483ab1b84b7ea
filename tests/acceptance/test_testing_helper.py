"""docs/reference/testing.md: steady_queue.testing.run_ready_jobs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from tests.acceptance.api import TaskResult, TaskResultStatus
from tests.tasks.acceptance import enqueue_more, fail, record, seen, send_welcome_email

pytestmark = pytest.mark.django_db


def test_welcome_email_is_sent(db):
    # The docs' example, as written.
    result = send_welcome_email.enqueue(42)
    run_ready_jobs()  # also runs jobs that those jobs enqueue
    result.refresh()
    assert result.status == "SUCCESSFUL"


def test_returns_the_result_of_every_job_it_ran():
    ok = record.enqueue("a")
    bad = fail.enqueue("b")
    results = run_ready_jobs()
    assert all(isinstance(r, TaskResult) for r in results)
    assert {r.id: r.status for r in results} == {
        ok.id: TaskResultStatus.SUCCESSFUL,
        bad.id: TaskResultStatus.FAILED,
    }
    assert run_ready_jobs() == []


def test_runs_jobs_enqueued_by_jobs_until_the_queue_is_empty():
    enqueue_more.enqueue(3)
    results = run_ready_jobs()
    assert len(results) == 4
    assert sorted(seen("record")) == ["child-0", "child-1", "child-2"]
    assert not Job.objects.filter(finished_at__isnull=True).exists()


def test_queues_limits_it_to_some_queues():
    record.using(queue_name="low").enqueue("low")
    record.using(queue_name="background").enqueue("background")
    record.enqueue("default")
    run_ready_jobs(queues=["low", "default"])
    assert sorted(seen("record")) == ["default", "low"]
    run_ready_jobs()
    assert sorted(seen("record")) == ["background", "default", "low"]


def test_scheduled_jobs_wait_unless_include_scheduled():
    result = record.using(run_after=timedelta(days=3)).enqueue("later")
    assert run_ready_jobs() == []
    [ran] = run_ready_jobs(include_scheduled=True)
    assert ran.id == result.id and ran.status == TaskResultStatus.SUCCESSFUL


def test_max_jobs_stops_after_n_jobs():
    for i in range(5):
        record.enqueue(i)
    assert len(run_ready_jobs(max_jobs=2)) == 2
    assert len(seen("record")) == 2
    assert len(run_ready_jobs()) == 3


def test_max_jobs_also_bounds_jobs_that_reschedule_themselves():
    from tests.tasks.acceptance import reschedule_forever

    reschedule_forever.enqueue("unused", 50)
    run_ready_jobs(include_scheduled=True, max_jobs=3)
    assert len(seen("reschedule_forever")) == 3


def test_include_scheduled_with_queues_leaves_other_queues_scheduled():
    emails = record.using(queue_name="low", run_after=timedelta(days=1)).enqueue("mine")
    other = record.using(queue_name="background", run_after=timedelta(days=1)).enqueue("other")
    [ran] = run_ready_jobs(queues=["low"], include_scheduled=True)
    assert ran.id == emails.id
    assert Job.objects.get(pk=other.id).state == "scheduled"
