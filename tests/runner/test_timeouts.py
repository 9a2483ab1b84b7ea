"""Timeouts, in-process: the interrupt, the watchdog's own ending, async tasks, the policy."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.utils.dateparse import parse_datetime

import steady_queue
from steady_queue.compat import TaskResultStatus
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.runner import deadlines
from steady_queue.task_options.timeouts import seconds_for, timeout
from steady_queue.testing import run_ready_jobs
from tests.tasks import timing_out as tasks

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT = "steady_queue.exceptions.JobTimeout"


def failure_of(result) -> FailedExecution:
    return FailedExecution.objects.get(job_id=result.id)


def test_a_task_in_python_code_is_interrupted_where_it_is():
    result = tasks.spins.enqueue()
    started = time.monotonic()
    [finished] = run_ready_jobs()
    assert time.monotonic() - started < 5  # not the task's own 60 s
    assert finished.status == TaskResultStatus.FAILED
    failed = failure_of(result)
    assert failed.exception_class == TIMEOUT
    assert "ran past its timeout of 0.5 s" in failed.message
    assert "in spins" in failed.backtrace  # where it was


def test_a_task_stuck_in_a_c_call_ends_when_the_call_returns_with_where_it_was():
    result = tasks.sleeps.enqueue(1.5)
    run_ready_jobs()  # returns once time.sleep does: the job ends then, not before
    failed = failure_of(result)
    assert failed.exception_class == TIMEOUT
    assert "Where the task was" in failed.backtrace and "time.sleep" in failed.backtrace
    [ended] = Job.objects.get(pk=result.id).attempts
    assert ended["error"]["exception_class"] == TIMEOUT
    assert failed.created_at.timestamp() - _started(ended) >= 1.5  # once the thread stopped


def test_a_stuck_run_keeps_its_slot_and_its_claim_while_its_thread_lives():
    stuck = tasks.sleeps_holding_a_slot.enqueue(3.0)
    waiting = tasks.sleeps_holding_a_slot.enqueue(0.0)  # same key, to=1: blocked
    runner = threading.Thread(target=_run_ready_jobs_and_close)
    runner.start()
    try:
        wait_for(lambda: _given_up_or_ended(stuck.id), what="the stuck thread to be given up")
        assert ClaimedExecution.objects.filter(job_id=stuck.id).exists()  # still running
        assert BlockedExecution.objects.filter(job_id=waiting.id).exists()  # no slot for it
        assert not FailedExecution.objects.filter(job_id=stuck.id).exists()
    finally:
        runner.join(10)
    # Once its thread stopped: failed with JobTimeout, under its policy; the slot handed on.
    assert failure_of(stuck).exception_class == TIMEOUT
    assert Job.objects.get(pk=waiting.id).finished_at is not None


def test_a_task_that_swallows_exceptions_stops_at_its_timeout_and_writes_no_more(tmp_path):
    writes = tmp_path / "writes"
    result = tasks.swallows.enqueue(str(writes), 3.0)
    started = time.monotonic()
    run_ready_jobs()
    assert time.monotonic() - started < 2  # not the task's own 3 s
    job = Job.objects.get(pk=result.id)
    [attempt] = job.attempts
    assert attempt["error"]["exception_class"] == TIMEOUT  # for its retry policy
    assert ScheduledExecution.objects.filter(job_id=result.id).exists()  # the retry, later
    last_write = max(float(line) for line in writes.read_text().split())
    assert last_write <= parse_datetime(attempt["finished_at"]).timestamp()


def test_a_task_that_swallows_the_interrupt_itself_still_ends_with_job_timeout(tmp_path):
    writes = tmp_path / "writes"
    result = tasks.swallows_everything.enqueue(str(writes), 1.0)
    run_ready_jobs()  # it returns on its own, after 1 s: too late all the same
    [attempt] = Job.objects.get(pk=result.id).attempts
    assert failure_of(result).exception_class == TIMEOUT
    assert Job.objects.get(pk=result.id).finished_at is None  # no success recorded
    last_write = max(float(line) for line in writes.read_text().split())
    assert last_write <= parse_datetime(attempt["finished_at"]).timestamp()


def _run_ready_jobs_and_close() -> None:
    try:
        run_ready_jobs()
    finally:
        connections.close_all()  # this thread's own


def _given_up_or_ended(job_id: int) -> bool:
    run = deadlines.watchdog()._runs.get(int(job_id))
    given_up = run is not None and getattr(run, "held", False)
    return given_up or FailedExecution.objects.filter(job_id=job_id).exists()


def wait_for(condition, *, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def test_an_async_task_is_cancelled():
    result = tasks.awaits.enqueue()
    started = time.monotonic()
    run_ready_jobs()
    assert time.monotonic() - started < 5
    assert failure_of(result).exception_class == TIMEOUT


def test_a_timeout_follows_the_retry_policy_like_any_failure():
    result = tasks.spins_then_retries.enqueue()
    run_ready_jobs()
    job = Job.objects.get(pk=result.id)
    assert job.attempts[0]["error"]["exception_class"] == TIMEOUT
    assert ReadyExecution.objects.filter(job_id=result.id).exists() or (
        ScheduledExecution.objects.filter(job_id=result.id).exists()
    )


def test_a_quick_task_under_a_timeout_succeeds_and_leaves_no_interrupt_behind():
    results = [tasks.quick.enqueue() for _ in range(20)]
    finished = run_ready_jobs()
    assert [r.status for r in finished] == [TaskResultStatus.SUCCESSFUL] * 20
    time.sleep(0)  # any interrupt left pending would be raised here, at the next instruction
    assert len(results) == 20


def test_the_default_timeout_applies_to_tasks_without_one(monkeypatch):
    assert seconds_for(tasks.undeclared.module_path) is None
    monkeypatch.setattr(steady_queue, "default_timeout", timedelta(seconds=0.3))
    assert seconds_for(tasks.undeclared.module_path) == 0.3
    assert seconds_for(tasks.quick.module_path) == 5.0  # its own wins


@pytest.mark.parametrize(
    ("duration", "error"),
    [(0, ValueError), (timedelta(seconds=-1), ValueError), ("30s", TypeError), (True, TypeError)],
)
def test_bad_timeouts_are_refused_when_declared(duration, error):
    with pytest.raises(error, match="@timeout"):
        timeout(duration)


def _started(attempt: dict) -> float:
    return parse_datetime(attempt["started_at"]).timestamp()
