"""A real worker writes a running job's log lines as it runs, and answers for its live stack."""

from __future__ import annotations

import inspect
import signal
import time
from pathlib import Path

import pytest

from steady_queue.models import ClaimedExecution, Job, JobLogLine, StackRequest
from tests.processes.conftest import wait_until
from tests.tasks import logging_tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def line_of(function, marker: str) -> int:
    """The line number of ``function``'s source line holding ``marker``."""
    lines, first = inspect.getsourcelines(getattr(function, "func", function))
    return first + next(i for i, line in enumerate(lines) if marker in line)


def ask_for_stack(job_id: int) -> tuple[dict, float]:
    """Write a stack request for ``job_id``; return its answer and how long it took."""
    asked_at = time.monotonic()
    request = StackRequest.objects.create(job_id=job_id)
    answered = wait_until(
        lambda: StackRequest.objects.filter(pk=request.pk, answered_at__isnull=False).first(),
        timeout=10,
        what="the worker to answer the stack request",
    )
    return answered.answer, time.monotonic() - asked_at


def test_a_running_jobs_lines_are_written_while_it_runs_and_its_stack_is_answered(
    start_supervisor, tmp_path: Path
):
    supervisor = start_supervisor("WORKER", children=1)
    release = tmp_path / "release"
    result = logging_tasks.sleeps_until_released.enqueue(str(release), lines=2)
    wait_until(lambda: ClaimedExecution.objects.filter(job_id=result.id).exists(), what="a start")

    # Written by the worker's loop while the job still runs (not only as it ends).
    lines = wait_until(
        lambda: list(JobLogLine.objects.filter(job_id=result.id).values_list("message", flat=True)),
        timeout=5,
        what="the running job's lines",
    )
    assert lines == ["running line 1", "running line 2"]
    assert ClaimedExecution.objects.filter(job_id=result.id).exists()

    answer, took = ask_for_stack(int(result.id))

    assert took < 2.0, f"answered in {took:.2f}s"
    innermost = answer["frames"][-1]
    assert innermost["function"] == "sleeps_until_released"
    assert innermost["file"].endswith("tests/tasks/logging_tasks.py")
    sleeping = line_of(logging_tasks.sleeps_until_released, "the live stack's frame")
    assert innermost["line"] == sleeping
    assert "time.sleep(0.05)" in innermost["code"]
    assert answer["in_c"] is True and "C code" in answer["note"]
    assert answer["frames"][0]["function"] == "sleeps_until_released"  # from the task inward

    release.touch()
    wait_until(lambda: Job.objects.get(pk=result.id).finished_at, what="the job to finish")
    assert JobLogLine.objects.filter(job_id=result.id).count() == 2
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_an_async_jobs_stack_is_its_awaiting_coroutine(start_supervisor, tmp_path: Path):
    supervisor = start_supervisor("ASYNC", children=1)
    release = tmp_path / "release"
    result = logging_tasks.async_sleeps_until_released.enqueue(str(release))
    wait_until(
        lambda: JobLogLine.objects.filter(job_id=result.id).exists(), what="the job's first line"
    )

    answer, took = ask_for_stack(int(result.id))

    assert took < 2.0, f"answered in {took:.2f}s"
    functions = [frame["function"] for frame in answer["frames"]]
    assert functions[0] == "async_sleeps_until_released"
    awaiting = answer["frames"][0]
    awaiting_line = line_of(logging_tasks.async_sleeps_until_released, "awaiting frame")
    assert awaiting["line"] == awaiting_line
    assert functions[-1] == "sleep"  # asyncio.sleep, awaiting its future
    assert answer["note"].startswith("Suspended, awaiting")
    assert answer["in_c"] is False

    release.touch()
    wait_until(lambda: Job.objects.get(pk=result.id).finished_at, what="the job to finish")
    assert list(JobLogLine.objects.filter(job_id=result.id).values_list("message", flat=True)) == [
        "async job started"
    ]
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_a_request_for_a_job_not_running_is_not_answered(start_supervisor):
    supervisor = start_supervisor("WORKER", children=1)
    request = StackRequest.objects.create(job_id=987654)
    result = logging_tasks.chatty.enqueue(1)
    wait_until(lambda: Job.objects.get(pk=result.id).finished_at, what="a job to run")

    assert StackRequest.objects.get(pk=request.pk).answered_at is None
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
