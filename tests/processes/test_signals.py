"""TERM/INT stop gracefully (running jobs finish, once); QUIT and timeouts release them."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from tests.processes.conftest import has_exited, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def start_holding_job(start_supervisor, run_log, tmp_path: Path, **env: str):
    release = tmp_path / "release"
    supervisor = start_supervisor("WORKER", children=1, **env)
    result = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the job to start")
    return supervisor, Job.objects.get(pk=result.id), release


def assert_clean_exit(supervisor) -> None:
    assert supervisor.wait() == 0, supervisor.output()
    assert not Process.objects.exists()
    assert not ClaimedExecution.objects.exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_graceful_stop_lets_the_running_job_finish_once(
    start_supervisor, run_log, tmp_path, hooks_log, signum
):
    supervisor, job, release = start_holding_job(start_supervisor, run_log, tmp_path)

    supervisor.send(signum)
    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")
    late = tasks.record.enqueue(str(run_log.path), "late")
    release.touch()

    assert_clean_exit(supervisor)
    job.refresh_from_db()
    assert job.finished_at is not None and len(job.attempts) == 1
    assert run_log.entries("start") == run_log.entries("end") == ["held"]
    # A stopping worker claims nothing more.
    assert ReadyExecution.objects.filter(job_id=late.id).exists()
    assert run_log.entries() == []


def test_graceful_stop_past_shutdown_timeout_releases_the_job(start_supervisor, run_log, tmp_path):
    supervisor, job, _ = start_holding_job(
        start_supervisor, run_log, tmp_path, SQ_SHUTDOWN_TIMEOUT="0.5"
    )

    supervisor.send(signal.SIGTERM)

    assert_clean_exit(supervisor)
    assert ReadyExecution.objects.filter(job_id=job.pk).exists()
    job.refresh_from_db()
    assert job.finished_at is None and job.attempts == []
    assert run_log.entries("start") == ["held"]


def test_quit_releases_the_running_job_at_once(start_supervisor, run_log, tmp_path):
    supervisor, job, _ = start_holding_job(start_supervisor, run_log, tmp_path)

    supervisor.send(signal.SIGQUIT)

    assert_clean_exit(supervisor)
    assert ReadyExecution.objects.filter(job_id=job.pk).exists()
    assert run_log.entries("end") == []


def test_released_job_runs_again_on_the_next_start(start_supervisor, run_log, tmp_path):
    supervisor, job, release = start_holding_job(start_supervisor, run_log, tmp_path)
    supervisor.send(signal.SIGQUIT)
    assert supervisor.wait() == 0
    release.touch()

    start_supervisor("WORKER", children=1)

    wait_until(lambda: Job.objects.get(pk=job.pk).finished_at, what="the job to finish")
    assert run_log.entries("start") == ["held", "held"]


def test_a_child_stopped_on_its_own_is_replaced(start_supervisor):
    supervisor = start_supervisor("WORKER", children=1)
    [worker] = supervisor.children()

    os.kill(worker.pid, signal.SIGTERM)

    wait_until(lambda: has_exited(worker.pid), what="the worker to exit")
    [replacement] = wait_until(
        lambda: [row for row in supervisor.children() if row.pk != worker.pk],
        what="a replacement worker",
    )
    assert replacement.kind == Process.Kind.WORKER and replacement.pid != worker.pid
