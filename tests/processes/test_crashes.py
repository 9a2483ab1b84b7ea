"""Crashes: killed workers and supervisors, and processes whose heartbeat expired."""

from __future__ import annotations

import os
import signal

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process
from tests.processes.conftest import freeze, has_exited, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

EXIT_ERROR = "steady_queue.processes.ProcessExitError"
PRUNED_ERROR = "steady_queue.processes.ProcessPrunedError"


def failure_of(job_id: int) -> FailedExecution | None:
    return FailedExecution.objects.filter(job_id=job_id).first()


def hold(run_log, tmp_path, label: str = "held") -> int:
    result = tasks.hold.enqueue(str(run_log.path), label, str(tmp_path / f"release-{label}"))
    wait_until(lambda: label in run_log.entries("start"), what=f"{label} to start")
    return int(result.id)


def test_killed_worker_fails_its_job_and_is_replaced(start_supervisor, run_log, tmp_path):
    supervisor = start_supervisor("WORKER", children=1)
    job_id = hold(run_log, tmp_path)
    worker = Process.objects.get(kind=Process.Kind.WORKER)

    os.kill(worker.pid, signal.SIGKILL)

    failure = wait_until(lambda: failure_of(job_id), what="the job to fail")
    assert failure.exception_class == EXIT_ERROR
    assert f"{worker.name} (pid {worker.pid}) was killed by signal 9 (SIGKILL)" in failure.message
    attempts = Job.objects.get(pk=job_id).attempts
    assert [a["worker_id"] for a in attempts] == [worker.name]
    replacement = wait_until(
        lambda: Process.objects.filter(kind=Process.Kind.WORKER).exclude(pk=worker.pk).first(),
        what="a replacement worker",
    )
    assert replacement.supervisor_id == supervisor.row().pk
    later = tasks.record.enqueue(str(run_log.path), "later")
    wait_until(lambda: Job.objects.get(pk=later.id).finished_at, what="a later job to run")
    assert not Process.objects.filter(pk=worker.pk).exists()


def test_children_of_a_killed_supervisor_exit_and_the_next_one_fails_their_jobs(
    start_supervisor, run_log, tmp_path
):
    first = start_supervisor("WORKER", children=1, SQ_SHUTDOWN_TIMEOUT="0.5")
    job_id = hold(run_log, tmp_path)
    worker = Process.objects.get(kind=Process.Kind.WORKER)

    first.send(signal.SIGKILL)
    first.wait()

    wait_until(lambda: has_exited(worker.pid), timeout=10, what="the orphaned worker to exit")
    assert not Process.objects.filter(pk=worker.pk).exists()
    assert ClaimedExecution.objects.filter(job_id=job_id).exists()  # orphaned

    start_supervisor("WORKER", children=1)
    failure = wait_until(lambda: failure_of(job_id), what="the orphaned job to fail")
    assert failure.exception_class == EXIT_ERROR
    assert f"Process {worker.pk} exited without finishing this job" in failure.message
    assert run_log.entries("end") == []


def test_process_with_expired_heartbeat_is_pruned_and_a_late_finish_changes_nothing(
    start_supervisor, run_log, tmp_path
):
    start_supervisor("WORKER", children=1, SQ_ALIVE_THRESHOLD="1.5", SQ_HEARTBEAT_INTERVAL="0.2")
    job_id = hold(run_log, tmp_path)
    worker = Process.objects.get(kind=Process.Kind.WORKER)

    freeze(worker)  # frozen: no heartbeats, the job is still "running"
    try:
        failure = wait_until(lambda: failure_of(job_id), what="the job to fail")
        assert failure.exception_class == PRUNED_ERROR
        assert f"{worker.name} (pid {worker.pid} on" in failure.message
        assert not Process.objects.filter(pk=worker.pk).exists()
        (tmp_path / "release-held").touch()
    finally:
        os.kill(worker.pid, signal.SIGCONT)

    # It finishes the job late, finds its claim gone, notices it was pruned and exits.
    wait_until(lambda: has_exited(worker.pid), what="the pruned worker to exit")
    assert run_log.entries("end") == ["held"]
    job = Job.objects.get(pk=job_id)
    assert job.finished_at is None and len(job.attempts) == 1
    assert FailedExecution.objects.filter(job_id=job_id).exists()
    wait_until(
        lambda: Process.objects.filter(kind=Process.Kind.WORKER).exclude(pk=worker.pk).exists(),
        what="a replacement worker",
    )
