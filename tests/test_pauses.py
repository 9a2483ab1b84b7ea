"""Task pauses (``steady_queue.pauses``): a paused task's jobs wait as paused, on every
queue, and run in their order when it resumes; other tasks never notice."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue import storage
from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import (
    ClaimedExecution,
    Job,
    PausedExecution,
    ReadyExecution,
    TaskPause,
    states,
    task_pause,
)
from steady_queue.models.task_pause import _hint
from steady_queue.pauses import TaskPauseError, pause_task, paused_tasks, resume_task
from steady_queue.runner.perform import perform
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from tests import tasks
from tests.tasks import pausing

pytestmark = pytest.mark.django_db

ECHO = "tests.tasks.echo"


def job_state(result) -> str:
    return Job.objects.get(pk=result.id).state


def echoed() -> list:
    return [args for args, _ in tasks.CALLS]


def test_pausing_moves_the_ready_jobs_of_the_task_on_every_queue_and_no_other():
    first = tasks.echo.enqueue(1)
    second = tasks.echo.using(queue_name="low").enqueue(2)
    other = tasks.add.enqueue(1, 2)

    assert pause_task(ECHO) == 2

    assert (job_state(first), job_state(second), job_state(other)) == ("paused", "paused", "ready")
    assert ReadyExecution.objects.count() == 1
    assert [r.status for r in (first, second)] == [r.status for r in (other, other)]
    assert [r.id for r in run_ready_jobs()] == [other.id]
    assert echoed() == []
    assert paused_tasks() == [ECHO]


def test_resuming_runs_the_jobs_in_their_original_order_with_no_attempt_counted():
    pause_task(tasks.echo)  # a task object works as its path does
    results = [tasks.echo.using(priority=p).enqueue(i) for i, p in enumerate([0, 0, 5, 0])]
    assert {job_state(r) for r in results} == {"paused"}

    assert resume_task(tasks.echo) == 4

    assert paused_tasks() == []
    assert echoed() == []
    assert [Job.objects.get(pk=r.id).attempts for r in results] == [[]] * 4
    run_ready_jobs()
    # The poll order: priority first, then enqueue order.
    assert echoed() == [(2,), (0,), (1,), (3,)]


def test_a_job_enqueued_while_its_task_is_paused_waits_as_paused():
    pause_task(ECHO)

    result = tasks.echo.enqueue("later")

    assert job_state(result) == "paused"
    assert not ReadyExecution.objects.exists()
    assert run_ready_jobs() == []


def test_a_ready_job_of_a_paused_task_is_paused_by_its_run_not_started():
    # What a transaction that made it ready without seeing the pause leaves (an enqueue
    # racing the pause, or a fast path trusting a stale hint): a ready row of a paused task.
    result = tasks.echo.enqueue("raced")
    TaskPause.objects.create(task_path=ECHO)
    # A worker's hint of the paused tasks is at most HINT_SECONDS old, and pause_task
    # returns only after that long: by a run that starts after it returned, read again.
    TaskPause.forget_hint()

    assert run_ready_jobs() == []

    job = Job.objects.get(pk=result.id)
    assert (job.state, job.attempts, echoed()) == ("paused", [], [])
    resume_task(ECHO)
    run_ready_jobs()
    assert echoed() == [("raced",)]


def test_a_claimed_job_that_has_not_started_when_its_task_pauses_does_not_start():
    results = [tasks.echo.enqueue("a"), tasks.echo.enqueue("b")]
    claims = storage.for_alias().claim(["*"], 2, None)
    pause_task(ECHO)

    assert [perform(claimed) for claimed in claims] == [None, None]

    assert echoed() == []
    assert [job_state(r) for r in results] == ["paused", "paused"]
    assert [Job.objects.get(pk=r.id).attempts for r in results] == [[], []]
    assert not ClaimedExecution.objects.exists()


def test_a_run_that_started_before_the_pause_finishes_and_its_slot_goes_to_no_paused_job():
    pausing.RAN.clear()
    first, second = pausing.pauses_itself.enqueue(0), pausing.pauses_itself.enqueue(1)
    assert job_state(second) == "blocked"

    run_ready_jobs()  # the first run pauses its own task, and finishes

    assert pausing.RAN == [0]
    assert (job_state(first), job_state(second)) == ("finished", "paused")
    resume_task(pausing.pauses_itself)
    run_ready_jobs()
    assert pausing.RAN == [0, 1]


def test_scheduled_and_retried_jobs_of_a_paused_task_wait_as_paused():
    later = tasks.echo.using(run_after=timezone.now() + timedelta(hours=1)).enqueue("later")
    failed = tasks.explode.enqueue()
    run_ready_jobs()
    pause_task(ECHO)
    pause_task("tests.tasks.explode")
    assert job_state(later) == "scheduled"  # scheduled jobs wait for their time first

    dispatch_scheduled(all_=True)
    Job.objects.get(pk=failed.id).retry()

    assert (job_state(later), job_state(failed)) == ("paused", "paused")


def test_pausing_twice_and_resuming_a_task_that_is_not_paused_change_nothing():
    tasks.echo.enqueue(1)
    assert pause_task(ECHO) == 1
    assert pause_task(ECHO) == 0
    assert TaskPause.objects.count() == 1
    assert resume_task("tests.tasks.add") == 0
    assert paused_tasks() == [ECHO]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("tests.tasks.nothing_here", "does not import"),
        ("no_such_module.task", "does not import"),
        ("tests.tasks.CALLS", "is not a task"),
        ("echo", "not the dotted path"),
        ("", "not the dotted path"),
        (" tests.tasks.echo", "not the dotted path"),
        ("tests.tasks.echo\x00", "not the dotted path"),
        (42, "got int"),
        (None, "got NoneType"),
    ],
)
def test_bad_input_is_refused_clearly_and_writes_nothing(given, message):
    tasks.echo.enqueue(1)
    with pytest.raises(TaskPauseError, match=message):
        pause_task(given)
    with pytest.raises(TaskPauseError, match=message):
        resume_task(given)
    assert not TaskPause.objects.exists()
    assert ReadyExecution.objects.count() == 1


def test_a_paused_task_whose_code_is_gone_can_be_resumed_by_its_path():
    TaskPause.objects.create(task_path="app.tasks.removed")
    assert paused_tasks() == ["app.tasks.removed"]
    assert resume_task("app.tasks.removed") == 0
    assert paused_tasks() == []


def test_paused_jobs_can_be_cancelled_and_discarded():
    cancel_me, discard_me = tasks.echo.enqueue(1), tasks.echo.enqueue(2)
    pause_task(ECHO)

    Job.objects.get(pk=cancel_me.id).cancel()
    Job.objects.get(pk=discard_me.id).discard()

    cancelled = Job.objects.get(pk=cancel_me.id)
    assert cancelled.failed_execution.exception_class == CANCELLED_CLASS
    assert not Job.objects.filter(pk=discard_me.id).exists()
    assert resume_task(ECHO) == 0


def test_a_limited_job_paused_as_it_would_start_keeps_its_slot_until_resumed():
    first, second = tasks.limited.enqueue("k"), tasks.limited.enqueue("k")
    [claimed] = storage.for_alias().claim(["*"], 1, None)
    pause_task("tests.tasks.limited")

    perform(claimed)

    assert (job_state(first), job_state(second)) == ("paused", "blocked")
    resume_task("tests.tasks.limited")
    run_ready_jobs()
    assert (job_state(first), job_state(second)) == ("finished", "finished")


def test_the_state_registry_knows_paused():
    kind = states.get("paused")
    assert kind.model is PausedExecution
    assert kind.discardable and kind.cancellable and not kind.started


def test_the_hint_is_read_at_most_once_a_second_per_process(monkeypatch, django_assert_num_queries):
    from steady_queue.models import task_pause

    monkeypatch.setattr(task_pause, "HINT_SECONDS", 60.0)
    _hint.clear()
    with django_assert_num_queries(1):
        assert not TaskPause.seems_paused(ECHO)
        assert not TaskPause.seems_paused(ECHO)
    pause_task(ECHO)  # forgets the hint
    with django_assert_num_queries(1):
        assert TaskPause.seems_paused(ECHO)


def test_jobs_left_paused_after_their_task_resumed_are_made_ready_by_the_failsafe(
    django_assert_max_num_queries,
):
    # What an enqueue that read the pause as the task was resumed leaves behind.
    pause_task(ECHO)
    pause_task("tests.tasks.add")
    forgotten = tasks.echo.enqueue("left behind")
    kept = tasks.add.enqueue(1, 2)
    TaskPause.objects.filter(task_path=ECHO).delete()

    with django_assert_max_num_queries(4):  # the pauses, then a seek per gap (3)
        assert PausedExecution._forgotten_tasks() == [ECHO]
    assert PausedExecution.repair_forgotten() == 1

    assert (job_state(forgotten), job_state(kept)) == ("ready", "paused")
    assert PausedExecution.repair_forgotten() == 0


def test_pause_task_returns_once_every_process_hint_has_been_read_since():
    started = time.monotonic()
    pause_task(ECHO)

    assert time.monotonic() - started >= task_pause.SETTLE_SECONDS >= 0.5


def test_a_run_of_a_task_its_hint_says_is_not_paused_asks_nothing(django_assert_num_queries):
    tasks.echo.enqueue("free")
    job = Job.objects.get()

    with django_assert_num_queries(0):
        assert job.paused_run() is None


def test_a_stale_hint_of_a_resumed_task_does_not_park_its_job():
    pause_task(ECHO)
    result = tasks.echo.enqueue("later")
    TaskPause.objects.filter(task_path=ECHO).delete()  # resumed elsewhere; hint not read

    assert Job.objects.get(pk=result.id).paused_run() is None
