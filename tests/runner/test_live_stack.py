"""A run's live stack, read from another thread: its frames from the task's inward."""

from __future__ import annotations

import threading
import time

import pytest

from steady_queue.models import Job, StackRequest
from steady_queue.runner import live_stack, run_logs
from tests.processes.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def sleeping_task(started: threading.Event, stop: threading.Event) -> None:
    started.set()
    while not stop.is_set():
        time.sleep(0.01)  # in C


def busy_task(started: threading.Event, stop: threading.Event) -> None:
    started.set()
    count = 0
    while not stop.is_set():
        count += 1  # in Python


def run_in_thread(job: Job, task) -> tuple[threading.Event, threading.Thread]:
    started, stop = threading.Event(), threading.Event()

    def run() -> None:
        with run_logs.capture(job, code=task.__code__):
            task(started, stop)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(5)
    return stop, thread


@pytest.fixture
def job() -> Job:
    return Job.objects.create(task_path="tests.tasks.noop", queue_name="default")


def test_a_sleeping_run_is_shown_in_c_code_at_its_line(job):
    stop, thread = run_in_thread(job, sleeping_task)
    try:
        stack = live_stack.stack_of(job.pk)
    finally:
        stop.set()
        thread.join(5)

    assert [frame["function"] for frame in stack["frames"]] == ["sleeping_task"]
    assert stack["frames"][0]["code"] == "time.sleep(0.01)  # in C"
    assert stack["in_c"] is True


def test_a_busy_run_is_shown_running_python(job):
    stop, thread = run_in_thread(job, busy_task)
    try:
        stack = wait_until(lambda: (s := live_stack.stack_of(job.pk))["frames"] and s, timeout=5)
    finally:
        stop.set()
        thread.join(5)

    assert stack["frames"][0]["function"] == "busy_task"
    assert stack["in_c"] is False


def test_a_job_not_running_here_says_so(job):
    stack = live_stack.stack_of(job.pk)

    assert stack["frames"] == [] and "not running" in stack["note"]


def test_requests_for_running_jobs_are_answered_once_in_their_rows(job):
    stop, thread = run_in_thread(job, sleeping_task)
    try:
        asked = StackRequest.objects.create(job_id=job.pk)
        other = StackRequest.objects.create(job_id=job.pk + 1000)
        assert live_stack.answer_requests({job.pk}) == 1
        assert live_stack.answer_requests({job.pk}) == 0
    finally:
        stop.set()
        thread.join(5)

    asked.refresh_from_db()
    other.refresh_from_db()
    assert asked.answered_at is not None
    assert asked.answer["frames"][0]["function"] == "sleeping_task"
    assert other.answered_at is None
