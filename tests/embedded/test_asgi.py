"""uvicorn serving ``steady_queue.embedded.lifespan(...)``: a queue from startup to shutdown."""

from __future__ import annotations

import signal
import urllib.error
import urllib.request

import pytest

from steady_queue.models import ClaimedExecution, Job, Process
from tests.processes.conftest import wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

UVICORN = ("uvicorn", "tests.embedded.asgi:application", "--port", "{port}", "--lifespan", "on")


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_uvicorn_runs_jobs_and_a_sigterm_lets_the_running_one_finish(serve, run_log, tmp_path):
    server = serve(*UVICORN)
    supervisor = server.wait_for_queue(children=3)  # worker, dispatcher, scheduler
    assert supervisor.pid == server.pid  # in the web server's own process
    assert supervisor.metadata["pidfile"] is None
    assert {row.pid for row in Process.objects.all()} == {server.pid}

    # http passes through the wrapper to Django (no such page: Django's 404).
    assert status_of(f"http://127.0.0.1:{server.port}/no-such-page/") == 404
    ran = [tasks.record.enqueue(str(run_log.path), f"job-{n}") for n in range(10)]
    wait_until(lambda: len(run_log.entries()) == 10, what="the jobs to run")
    release = tmp_path / "release"
    held = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the held job to start")

    server.send(signal.SIGTERM)
    wait_until(lambda: "Waiting for application shutdown" in server.output(), what="shutdown")
    release.touch()

    # uvicorn stops gracefully, then raises the signal it caught again to exit with it.
    assert server.wait() == -signal.SIGTERM, server.output()
    assert "Application shutdown complete" in server.output()
    assert Job.objects.get(pk=held.id).finished_at is not None  # finished, not lost
    assert run_log.entries("end") == ["held"]
    assert sorted(run_log.entries()) == sorted(f"job-{n}" for n in range(10))
    assert Job.objects.filter(pk__in=[r.id for r in ran], finished_at__isnull=True).count() == 0
    assert not Process.objects.exists()
    assert not ClaimedExecution.objects.exists()
