"""Gunicorn with ``-c python:steady_queue.embedded.gunicorn``: one queue per master."""

from __future__ import annotations

import re
import signal

import pytest

from steady_queue.models import ClaimedExecution, Job, Process
from tests.processes.conftest import has_exited, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

GUNICORN = (
    "gunicorn",
    "-c",
    "python:steady_queue.embedded.gunicorn",
    "--workers",
    "3",
    "--bind",
    "127.0.0.1:{port}",
    "tests.embedded.wsgi:application",
)
QUEUE = 3  # a worker, a dispatcher and the scheduler


def web_workers(server) -> set[int]:
    return {int(pid) for pid in re.findall(r"Booting worker with pid: (\d+)", server.output())}


def test_three_gunicorn_workers_share_one_queue_that_stops_with_the_master(serve, run_log):
    server = serve(*GUNICORN)
    wait_until(lambda: len(web_workers(server)) == 3, what="three web workers")
    supervisor = server.wait_for_queue(children=QUEUE)

    # One queue, in a process of its own: neither the master nor a web worker.
    assert Process.objects.filter(kind=Process.Kind.SUPERVISOR).count() == 1
    assert {row.pid for row in Process.objects.all()} == {supervisor.pid}
    assert supervisor.pid not in {server.pid, *web_workers(server)}
    ran = [tasks.record.enqueue(str(run_log.path), f"job-{n}") for n in range(10)]
    wait_until(lambda: len(run_log.entries()) == 10, what="the jobs to run")
    assert run_log.pids() == {supervisor.pid}

    server.send(signal.SIGTERM)

    assert server.wait() == 0, server.output()
    assert has_exited(supervisor.pid)
    assert not Process.objects.exists()
    assert not ClaimedExecution.objects.exists()
    assert Job.objects.filter(pk__in=[r.id for r in ran], finished_at__isnull=True).count() == 0


def test_a_hup_replaces_the_queue_and_the_old_one_finishes_its_job(serve, run_log, tmp_path):
    server = serve(*GUNICORN, SQ_SHUTDOWN_TIMEOUT="30")
    wait_until(lambda: len(web_workers(server)) == 3, what="three web workers")
    old = server.wait_for_queue(children=QUEUE)
    release = tmp_path / "release"
    held = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the held job to start")

    server.send(signal.SIGHUP)

    wait_until(lambda: "stopping gracefully" in server.output(), what="the old queue to stop")
    release.touch()
    wait_until(lambda: has_exited(old.pid), what="the old queue to exit")
    assert Job.objects.get(pk=held.id).finished_at is not None  # finished by the old one
    new = wait_until(
        lambda: Process.objects.filter(kind=Process.Kind.SUPERVISOR).exclude(pk=old.pk).first(),
        what="a new queue",
    )
    assert server.wait_for_queue(children=QUEUE) == new  # again exactly one
    later = tasks.record.enqueue(str(run_log.path), "later")
    wait_until(lambda: Job.objects.get(pk=later.id).finished_at, what="a job for the new one")
    assert run_log.pids() == {new.pid}
    assert run_log.entries("end") == ["held"]
