"""Durable jobs under SIGKILL with the real ``manage.py steady_queue``: the acceptance of
durable execution.

Jobs of five steps, with a sleep and a signal wait each, run while worker processes are
killed at random moments; the test sends each job its signal once it waits (a tenth of
them before: a signal is kept until the wait). Whatever the kills hit: every step's
record exists exactly once, every job completes with its steps' values, none is lost,
and a step body ran twice only where the run that ran it first was killed between the
body's return and the step's record (the run log shows it: the killed process wrote
``ran`` for that step and never ``kept``).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections import Counter, defaultdict

import pytest
from django.db import connection

from steady_queue.backend import enqueue_all
from steady_queue.durable import send_signal
from steady_queue.models import ClaimedExecution, Job, JobStep, Process, WaitingExecution
from tests.processes.conftest import has_exited, wait_until
from tests.tasks import durable_journeys as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

# The whole suite runs 50 jobs on every database; the fault suite (`make test-faults`,
# `make test-slow-processes`: marked slow) runs the acceptance's 500.
RUNS = [pytest.param(50, id="50"), pytest.param(500, id="500", marks=pytest.mark.slow)]
KILL_EVERY = (1.0, 4.0)  # seconds between kills, at random


def kills_for(jobs: int) -> int:
    return max(3, jobs // 40)


EXIT_ERROR = "steady_queue.processes.ProcessExitError"
STEP_NAMES = [f"s{n}" for n in range(tasks.STEPS)]


@pytest.mark.parametrize("jobs", RUNS)
def test_durable_jobs_complete_once_per_step_while_workers_are_killed(
    start_supervisor, run_log, jobs
):
    supervisor = start_supervisor("DURABLE", children=3)
    labels = [f"j{n}" for n in range(jobs)]
    calls = [(tasks.journey, (str(run_log.path), label, 0.2), {}) for label in labels]
    results = enqueue_all(calls)
    job_ids = {int(result.id): label for result, label in zip(results, labels, strict=True)}
    signalled: set[int] = set()
    for job_id in list(job_ids)[::10]:  # sent before the wait: kept until it comes
        send(job_id, signalled)
    killed: set[int] = set()
    # The first kill comes as soon as a worker holds a claim (a fast machine may finish
    # the 50 jobs within a few seconds); the next ones at random intervals.
    started = next_kill = time.monotonic()

    def completed_while_killing() -> bool:
        nonlocal next_kill
        waiting = WaitingExecution.objects.filter(signal_name="go").values_list("job_id", flat=True)
        for job_id in set(waiting) - signalled:
            send(job_id, signalled)
        due = len(killed) < kills_for(jobs) and time.monotonic() >= next_kill
        # None busy: try again at the next look.
        if due and (victims := kill_a_busy_worker(supervisor)):
            killed.update(victims)
            next_kill = time.monotonic() + random.uniform(*KILL_EVERY)
        return not Job.objects.filter(finished_at__isnull=True).exists()

    wait_until(completed_while_killing, timeout=120 + jobs * 0.8, what=f"{jobs} durable jobs")
    elapsed = time.monotonic() - started

    finished = Job.objects.filter(pk__in=job_ids, finished_at__isnull=False)
    assert finished.count() == jobs  # none lost
    for job in finished:
        label = job_ids[job.pk]
        expected = [f"{label}/s{n}" for n in range(4)] + [{"by": "test"}, f"{label}/s4"]
        assert job.return_value == expected, job.pk
    assert_each_record_once(job_ids)
    reran = assert_bodies_ran_twice_only_when_killed_in_between(run_log, labels, killed)
    crashed = sum(
        attempt["error"] is not None and attempt["error"]["exception_class"] == EXIT_ERROR
        for attempts in finished.values_list("attempts", flat=True)
        for attempt in attempts
    )
    print(
        f"{connection.vendor}: {jobs} durable jobs in {elapsed:.1f} s, {len(killed)} kills, "
        f"{crashed} runs killed, {reran} step bodies ran again after a kill between "
        "their return and their record"
    )
    assert killed and crashed


def send(job_id: int, signalled: set[int]) -> None:
    send_signal(job_id, "go", {"by": "test"})
    signalled.add(job_id)


def kill_a_busy_worker(supervisor) -> set[int]:
    """SIGKILL a worker holding claims, if any; the pids killed."""
    workers = {w.pk: w.pid for w in supervisor.children(Process.Kind.WORKER)}
    workers = {pk: pid for pk, pid in workers.items() if not has_exited(pid)}
    busy = list(
        ClaimedExecution.objects.filter(process_id__in=workers).values_list("process_id", flat=True)
    )
    if not busy:
        return set()
    pid = workers[random.choice(busy)]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
        return {pid}
    return set()


def assert_each_record_once(job_ids: dict[int, str]) -> None:
    records = Counter(
        JobStep.objects.filter(job_id__in=job_ids).values_list("job_id", "kind", "name")
    )
    assert set(records.values()) == {1}, "a durable record written twice"
    kinds = Counter(kind for _, kind, _ in records)
    assert kinds == {"step": 5 * len(job_ids), "sleep": len(job_ids), "wait": len(job_ids)}


def assert_bodies_ran_twice_only_when_killed_in_between(run_log, labels, killed) -> int:
    """Every step body ran at least once; each run but the last of one was the killed
    process's, which never saw that step kept. Returns how many bodies ran again."""
    ran, kept = defaultdict(list), defaultdict(set)
    for line in run_log.path.read_text().splitlines():
        event, step, pid = line.split()
        if event == "ran":
            ran[step].append(int(pid))
        elif event == "kept":
            kept[step].add(int(pid))
    again = 0
    for label in labels:
        for name in STEP_NAMES:
            runs = ran[f"{label}/{name}"]
            assert runs, f"{label}/{name} never ran"
            for pid in runs[:-1]:
                assert pid in killed, f"{label}/{name} ran again though {pid} was not killed"
                assert pid not in kept[f"{label}/{name}"], f"{label}/{name} ran again once kept"
            again += len(runs) - 1
    return again
