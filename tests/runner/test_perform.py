"""Running a claimed job: task.call, context, signals and an exactly-once outcome."""

from __future__ import annotations

import sys
from datetime import timedelta

import pytest

import steady_queue
from steady_queue import storage
from steady_queue.backend import SteadyQueueBackend
from steady_queue.compat import TaskResultStatus, task_finished, task_started
from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process, ReadyExecution
from steady_queue.runner.perform import perform
from steady_queue.testing import run_ready_jobs
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def signals_seen():
    seen = []

    def on_started(sender, task_result, **kwargs):
        seen.append(("started", sender, task_result))

    def on_finished(sender, task_result, **kwargs):
        seen.append(("finished", sender, task_result, sys.exc_info()[0]))

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    yield seen
    task_started.disconnect(on_started)
    task_finished.disconnect(on_finished)


def test_async_tasks_run_through_task_call():
    result = tasks.async_add.enqueue(2, 5)
    run_ready_jobs()

    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == 7


def test_takes_context_tasks_get_the_context_with_attempt_one():
    result = tasks.with_context.enqueue("v")
    run_ready_jobs()

    result.refresh()
    assert result.return_value == {"attempt": 1, "id": result.id, "value": "v"}


def test_success_sends_started_then_finished(signals_seen):
    result = tasks.add.enqueue(1, 2)
    run_ready_jobs()

    (started, finished) = signals_seen
    assert started[0] == "started" and started[1] is SteadyQueueBackend
    assert started[2].id == result.id
    assert started[2].status == TaskResultStatus.RUNNING
    assert started[2].started_at is not None and started[2].finished_at is None
    assert finished[:2] == ("finished", SteadyQueueBackend)
    assert finished[2].status == TaskResultStatus.SUCCESSFUL
    assert finished[2].return_value == 3
    assert finished[2].finished_at >= finished[2].started_at
    assert finished[3] is None


def test_failure_sends_finished_inside_the_exception_handler(signals_seen):
    tasks.explode.enqueue("bad")
    run_ready_jobs()

    finished = signals_seen[-1]
    assert finished[2].status == TaskResultStatus.FAILED
    assert finished[2].finished_at is not None
    assert finished[2].errors[0].exception_class_path == "builtins.ValueError"
    assert finished[3] is ValueError


def test_failure_is_recorded_once_with_traceback():
    result = tasks.explode.enqueue("kaput")
    run_ready_jobs()

    failed = FailedExecution.objects.get(job_id=int(result.id))
    assert failed.exception_class == "builtins.ValueError"
    assert failed.message == "kaput"
    assert "ValueError: kaput" in failed.backtrace
    job = Job.objects.get(pk=int(result.id))
    assert job.finished_at is None
    assert len(job.attempts) == 1
    assert job.attempts[0]["error"]["exception_class"] == "builtins.ValueError"
    assert not ClaimedExecution.objects.exists()


def test_return_values_are_normalised_to_json():
    result = tasks.returns_tuple.enqueue()
    run_ready_jobs()

    result.refresh()
    assert result.return_value == [1, "two", [3]]


def test_unserializable_return_value_fails_the_job():
    result = tasks.returns_set.enqueue()
    run_ready_jobs()

    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "builtins.TypeError"


def test_a_job_that_lost_its_claim_records_nothing(signals_seen):
    result = tasks.add.enqueue(1, 2)
    (claimed,) = storage.claim(["*"], 1, None)
    # Someone (a pruner, a QUIT release) took the claim away while the task ran.
    ClaimedExecution.objects.filter(job_id=claimed.job_id).delete()
    ReadyExecution.objects.create(job_id=claimed.job_id, queue_name="default", priority=0)

    assert perform(claimed) is None

    job = Job.objects.get(pk=int(result.id))
    assert job.finished_at is None and job.attempts == []
    assert ReadyExecution.objects.filter(job=job).exists()
    assert [s[0] for s in signals_seen] == ["started"]


def test_finished_jobs_are_deleted_when_not_preserved(monkeypatch):
    monkeypatch.setattr(steady_queue, "preserve_finished_jobs", False)
    tasks.add.enqueue(1, 2)

    (result,) = run_ready_jobs()

    assert result.status == TaskResultStatus.SUCCESSFUL
    assert not Job.objects.exists()


def test_run_ready_jobs_runs_jobs_enqueued_by_jobs():
    tasks.enqueue_child.enqueue(41)

    results = run_ready_jobs()

    assert [r.task.func for r in results] == [tasks.enqueue_child.func, tasks.add.func]
    assert results[1].return_value == 42


def test_run_ready_jobs_respects_priority_then_age():
    low = tasks.add.using(priority=-10).enqueue(0, 0)
    first = tasks.add.enqueue(0, 1)
    second = tasks.add.enqueue(0, 2)
    high = tasks.add.using(priority=50).enqueue(0, 3)

    ran = [r.id for r in run_ready_jobs()]

    assert ran == [high.id, first.id, second.id, low.id]


def test_run_ready_jobs_can_include_scheduled_jobs():
    from datetime import timedelta

    later = tasks.add.using(run_after=timedelta(days=1)).enqueue(1, 1)
    assert run_ready_jobs() == []

    (result,) = run_ready_jobs(include_scheduled=True)
    assert result.id == later.id


def test_a_claim_taken_from_its_process_while_it_waited_to_start_is_not_run():
    # A worker stopped between its claim and the run's start, past the alive threshold:
    # pruned meanwhile, its claim failed; resumed, it must not run the job after all.
    process = Process.objects.create(kind="Worker", name="frozen-worker", pid=1)
    result = tasks.echo.enqueue("must not run")
    claimed = storage.for_alias().claim(["*"], 1, process)[0]
    claimed.created_at -= steady_queue.process_alive_threshold / 2 + timedelta(seconds=1)
    job = claimed.job
    ClaimedExecution.objects.filter(job_id=job.pk).delete()  # what the prune did
    job.fail({"exception_class": "ProcessPrunedError", "message": "pruned", "traceback": ""})
    tasks.CALLS.clear()

    assert perform(claimed) is None

    assert tasks.CALLS == []
    assert FailedExecution.objects.filter(job_id=result.id).exists()


def test_a_claim_that_waited_long_but_is_still_held_runs():
    process = Process.objects.create(kind="Worker", name="slow-worker", pid=1)
    tasks.echo.enqueue("runs")
    claimed = storage.for_alias().claim(["*"], 1, process)[0]
    claimed.created_at -= steady_queue.process_alive_threshold / 2 + timedelta(seconds=1)
    tasks.CALLS.clear()

    assert perform(claimed).status.name == "SUCCESSFUL"
    assert tasks.CALLS == [(("runs",), {})]
