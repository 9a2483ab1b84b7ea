"""Async tasks on a worker's event loop: a thousand at once in one process, and its crash."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.db import connection

from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process, ReadyExecution
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import async_tasks as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

JOBS = 1000
# Measured on a busy 2-core machine: about 1.5 s on PostgreSQL (see bench/README.md);
# the bounds leave room for a loaded CI machine without letting a thread per job pass
# (1,000 sleeps of 1 s on two threads take 500 s).
DEADLINES = {"postgresql": 6.0, "mysql": 10.0, "sqlite": 15.0}


def enqueue(calls) -> None:
    for start in range(0, len(calls), 500):
        enqueue_all(calls[start : start + 500])


def test_a_thousand_async_naps_run_at_once_in_one_worker(start_supervisor):
    supervisor = start_supervisor("ASYNC", children=1)
    enqueue([(tasks.nap, (1.0,), {}) for _ in range(JOBS)])

    started = time.monotonic()
    wait_until(lambda: finished_count() == JOBS, timeout=60, what=f"{JOBS} finished naps")
    span = time.monotonic() - started
    print(f"{JOBS} async naps of 1 s on {connection.vendor}: {span:.2f} s")

    jobs = Job.objects.all()
    assert not FailedExecution.objects.exists() and not ClaimedExecution.objects.exists()
    assert {len(attempts) for attempts in jobs.values_list("attempts", flat=True)} == {1}
    [worker] = supervisor.children(Process.Kind.WORKER)
    assert {a[0]["worker_id"] for a in jobs.values_list("attempts", flat=True)} == {worker.name}
    assert worker.metadata["async_concurrency"] == 1000
    assert span < DEADLINES[connection.vendor], f"{JOBS} naps of 1 s took {span:.2f} s"


def test_killed_worker_fails_its_async_jobs_as_it_does_its_threads_jobs(
    start_supervisor, run_log, tmp_path
):
    start_supervisor("ASYNC", children=1)
    release = str(tmp_path / "release")
    results = [tasks.hold.enqueue(str(run_log.path), str(i), release) for i in range(50)]
    job_ids = {int(result.id) for result in results}
    wait_until(lambda: len(run_log.entries("start")) == 50, what="50 async holds to start")
    worker = Process.objects.get(kind=Process.Kind.WORKER)

    os.kill(worker.pid, signal.SIGKILL)

    wait_until(
        lambda: FailedExecution.objects.filter(job_id__in=job_ids).count() == 50,
        what="the 50 jobs to fail",
    )
    for failure in FailedExecution.objects.filter(job_id__in=job_ids):
        assert failure.exception_class == "steady_queue.processes.ProcessExitError"
        assert f"(pid {worker.pid}) was killed by signal 9 (SIGKILL)" in failure.message
    assert run_log.entries("end") == []
    replacement = wait_until(
        lambda: Process.objects.filter(kind=Process.Kind.WORKER).exclude(pk=worker.pk).first(),
        what="a replacement worker",
    )
    later = tasks.nap.enqueue(0.01)
    wait_until(lambda: Job.objects.get(pk=later.id).finished_at, what="a later job to run")
    assert Job.objects.get(pk=later.id).attempts[0]["worker_id"] == replacement.name


def start_holds(start_supervisor, run_log, tmp_path, count: int, **env: str):
    supervisor = start_supervisor("ASYNC", children=1, **env)
    release = tmp_path / "release"
    results = [tasks.hold.enqueue(str(run_log.path), str(i), str(release)) for i in range(count)]
    wait_until(lambda: len(run_log.entries("start")) == count, what=f"{count} holds to start")
    return supervisor, {int(result.id) for result in results}, release


def test_graceful_stop_lets_the_running_async_jobs_finish_once(
    start_supervisor, run_log, tmp_path, hooks_log
):
    supervisor, job_ids, release = start_holds(start_supervisor, run_log, tmp_path, 20)

    supervisor.send(signal.SIGTERM)
    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")
    release.touch()

    assert supervisor.wait() == 0, supervisor.output()
    jobs = Job.objects.filter(pk__in=job_ids)
    assert [len(job.attempts) for job in jobs if job.finished_at] == [1] * 20
    assert sorted(run_log.entries("end"), key=int) == [str(i) for i in range(20)]
    assert not ClaimedExecution.objects.exists() and not Process.objects.exists()


def test_graceful_stop_past_shutdown_timeout_releases_the_async_jobs(
    start_supervisor, run_log, tmp_path
):
    supervisor, job_ids, _ = start_holds(
        start_supervisor, run_log, tmp_path, 20, SQ_SHUTDOWN_TIMEOUT="0.5"
    )

    supervisor.send(signal.SIGTERM)

    assert supervisor.wait() == 0, supervisor.output()
    assert ReadyExecution.objects.filter(job_id__in=job_ids).count() == 20
    assert {len(job.attempts) for job in Job.objects.filter(pk__in=job_ids)} == {0}
    assert not ClaimedExecution.objects.exists() and not FailedExecution.objects.exists()
    assert run_log.entries("end") == []
