"""Task pauses with the real supervisor: pausing a task stops its starts at once while
other tasks keep running; resuming runs its jobs in their original order."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from steady_queue.backend import enqueue_all
from steady_queue.models import Job, PausedExecution
from steady_queue.pauses import pause_task, resume_task
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import pausing

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def starts(log: Path) -> list[tuple[float, str]]:
    lines = [line.split() for line in log.read_text().splitlines()]
    return [(float(at), label) for at, label in lines]


def test_pausing_stops_the_tasks_starts_within_a_poll_and_resuming_runs_them_in_order(
    start_supervisor, tmp_path
):
    log = tmp_path / "starts.log"
    log.touch()
    start_supervisor("ONE_THREAD", children=1)
    # A stream of exported jobs, 50 ms each: the worker is busy with them when the pause
    # lands.
    enqueue_all([(pausing.exported, (str(log), f"e{n:02}", 0.05), {}) for n in range(60)])
    wait_until(lambda: len(starts(log)) >= 5, timeout=30, what="5 exported starts")

    pause_task(pausing.exported)
    paused_at = time.monotonic()

    # Other tasks keep running: enqueued after the pause, they run while exported waits.
    enqueue_all([(pausing.mailed, (str(log), f"m{n}"), {}) for n in range(5)])
    wait_until(
        lambda: sum(label.startswith("m") for _, label in starts(log)) == 5,
        timeout=30,
        what="the other task's five jobs",
    )
    late = [label for at, label in starts(log) if label.startswith("e") and at > paused_at]
    # At most the one run that had passed its start check as the pause committed.
    assert len(late) <= 1, late
    ran = [label for _, label in starts(log) if label.startswith("e")]
    waiting = PausedExecution.objects.count()
    assert waiting == 60 - len(ran) and waiting > 0
    assert {job.attempts == [] for job in Job.objects.filter(paused_execution__isnull=False)} == {
        True
    }

    assert resume_task(pausing.exported) == waiting
    wait_until(lambda: finished_count() == 65, timeout=60, what="every job finished")

    exported = [label for _, label in starts(log) if label.startswith("e")]
    assert exported == [f"e{n:02}" for n in range(60)]  # once each, in enqueue order
