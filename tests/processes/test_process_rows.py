"""Features under real ``manage.py steady_queue`` processes: limits, retries, crashes,
progress and recurring runs with several schedulers."""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime, timedelta
from itertools import pairwise

import pytest

from steady_queue.compat import TaskResultStatus, default_task_backend
from steady_queue.models import Job, Process, RecurringExecution, RecurringTask
from tests.processes.conftest import wait_until
from tests.tasks import features as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

SETTINGS = "tests.processes.recurring_settings"
EXIT_ERROR = "steady_queue.processes.ProcessExitError"


def all_finished(results, timeout: float = 60) -> list:
    ids = [r.id for r in results]
    wait_until(
        lambda: Job.objects.filter(pk__in=ids, finished_at__isnull=False).count() == len(ids),
        timeout=timeout,
        what=f"{len(ids)} jobs to finish",
    )
    return [Job.objects.get(pk=pk).return_value for pk in ids]


def most_at_once(intervals: list[list[float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, change in events:
        running += change
        peak = max(peak, running)
    return peak


def result(result_id: str):
    return default_task_backend.get_result(result_id)


def test_twenty_jobs_with_one_key_and_to_one_never_overlap(start_supervisor):
    start_supervisor("FAST", children=2)
    intervals = all_finished([tasks.exclusive.enqueue(i, 0.05) for i in range(20)])
    assert most_at_once(intervals) == 1


def test_to_two_runs_exactly_two_at_once(start_supervisor):
    start_supervisor("FAST", children=2)
    assert most_at_once(all_finished([tasks.paired.enqueue(i, 0.2) for i in range(12)])) == 2


def test_different_keys_run_in_parallel(start_supervisor):
    start_supervisor("FAST", children=2)
    results = [tasks.per_account.enqueue(account, 0.5) for account in ("a", "b", "c")]
    assert most_at_once(all_finished(results)) == 3


def test_a_worker_killed_holding_a_semaphore_does_not_block_its_key(start_supervisor):
    start_supervisor("FAST", children=2)
    held = tasks.short_lease.enqueue(30)
    waiting = tasks.short_lease.enqueue(0)
    wait_until(lambda: result(held.id).status == TaskResultStatus.RUNNING, what="the holder")
    killed_at = time.monotonic()
    os.kill(Process.objects.get(kind=Process.Kind.WORKER).pid, signal.SIGKILL)
    all_finished([waiting], timeout=30)
    assert time.monotonic() - killed_at < 2 + 5  # the duration, plus a poll or two
    assert result(held.id).status == TaskResultStatus.FAILED


def test_a_flaky_task_is_retried_with_backoff_until_it_succeeds(start_supervisor):
    start_supervisor("FAST", children=2)
    flaky = tasks.quick_flaky.enqueue(2)
    all_finished([flaky])
    done = result(flaky.id)
    assert done.status == TaskResultStatus.SUCCESSFUL
    assert [e.exception_class_path for e in done.errors] == ["builtins.ConnectionError"] * 2
    assert len(done.worker_ids) == 3
    attempts = Job.objects.get(pk=flaky.id).attempts
    starts = [datetime.fromisoformat(a["started_at"]) for a in attempts]
    ends = [datetime.fromisoformat(a["finished_at"]) for a in attempts]
    assert starts[1] - ends[0] >= timedelta(seconds=0.3)
    assert starts[2] - ends[1] >= timedelta(seconds=0.6)


@pytest.mark.parametrize(
    ("task", "status", "runs"),
    [
        (tasks.at_least_once_sleeper, TaskResultStatus.SUCCESSFUL, 2),
        (tasks.at_most_once_sleeper, TaskResultStatus.FAILED, 1),
    ],
)
def test_a_job_killed_mid_run_runs_again_only_if_at_least_once(
    start_supervisor, task, status, runs
):
    start_supervisor("FAST", children=2)
    job = task.enqueue(30)
    wait_until(lambda: result(job.id).status == TaskResultStatus.RUNNING, what="the job to run")
    os.kill(Process.objects.get(kind=Process.Kind.WORKER).pid, signal.SIGKILL)
    wait_until(lambda: result(job.id).status == status, timeout=30, what=f"a {status} job")
    time.sleep(0.5)  # a rerun would have been dispatched by now
    final = result(job.id)
    assert final.status == status
    assert len(final.worker_ids) == runs
    assert final.errors[0].exception_class_path == EXIT_ERROR


def test_progress_is_readable_while_a_worker_runs_the_job(start_supervisor):
    start_supervisor("FAST", children=2)
    job = tasks.with_progress.enqueue(steps=4, pause=0.3)

    def progress_while_running():
        row = Job.objects.with_execution().get(pk=job.id)
        return row.state == "running" and row.progress and row.progress["current"] >= 2

    wait_until(progress_while_running, what="progress of a running job")
    all_finished([job])
    assert Job.objects.get(pk=job.id).progress["current"] == 4


def test_three_schedulers_enqueue_an_every_second_task_once_per_second(start_supervisor):
    for _ in range(3):
        start_supervisor(
            "FAST",
            "--only-dispatchers",
            recurring=True,
            children=2,
            DJANGO_SETTINGS_MODULE=SETTINGS,
        )
    runs = lambda: list(  # noqa: E731
        RecurringExecution.objects.order_by("run_at").values_list("run_at", flat=True)
    )
    wait_until(lambda: len(runs()) >= 30, timeout=90, what="thirty recurring runs")
    seen = runs()
    assert len(set(seen)) == len(seen)  # unique (task_key, run_at): never enqueued twice
    assert all(
        (later - earlier) % timedelta(seconds=1) == timedelta(0)
        for earlier, later in pairwise(seen)
    )
    # Once per second; a scheduler starved of CPU on a loaded machine may skip a second.
    assert (seen[-1] - seen[0]).total_seconds() + 1 - len(seen) <= 2
    assert Job.objects.count() == len(seen)
    assert Job.objects.filter(recurring_execution__isnull=True).count() == 0

    RecurringTask.objects.get(key="every second").disable()
    time.sleep(1.5)  # every scheduler re-reads the flag within its 1 s polling interval
    stopped = len(runs())
    time.sleep(2)
    assert len(runs()) == stopped

    RecurringTask.objects.get(key="every second").enable()
    wait_until(lambda: len(runs()) >= stopped + 2, timeout=10, what="runs after enabling")
    assert Job.objects.count() == len(runs())
