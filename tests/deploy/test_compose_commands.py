"""compose.yaml's commands, run for real on PostgreSQL with the image's settings.

What the containers would run, run here as processes: ``migrate`` creates the tables
in a fresh database, the worker's command starts the supervisor, its health check
passes once the supervisor loops, the whole queue is healthy, a job enqueued by the
web side runs, and TERM stops it within the grace period, the liveness file removed.
Only where the database is differs from the compose file's environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import psycopg
import pytest
from django.db import connection

from tests.processes.conftest import wait_until

from .files import DOCKER, ROOT, environment, seconds, services

pytestmark = [
    pytest.mark.process,
    pytest.mark.postgres_only,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the image's settings are PostgreSQL's"
    ),
]


def server(dbname: str = "postgres") -> psycopg.Connection:
    """A connection of our own to the test server: no test transaction, no flush after."""
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        dbname=dbname,
        user=settings["USER"],
        password=settings["PASSWORD"],
        autocommit=True,
    )


@pytest.fixture
def database():
    """A fresh PostgreSQL database, as compose's db service starts with; dropped after."""
    name = f"{connection.settings_dict['NAME']}_compose"
    with server() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield name
    with server() as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def env(database, tmp_path) -> dict[str, str]:
    settings = connection.settings_dict
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))},
        **environment(),
        "DATABASE_HOST": settings["HOST"],
        "DATABASE_PORT": str(settings["PORT"]),
        "DATABASE_NAME": database,
        "DATABASE_USER": settings["USER"],
        "DATABASE_PASSWORD": settings["PASSWORD"],
        "DJANGO_STATIC_ROOT": str(tmp_path / "static"),
        "PYTHONPATH": os.pathsep.join([str(DOCKER), str(ROOT)]),
        "DJANGO_SETTINGS_MODULE": "production.settings",
    }


def python(argv: list[str], env: dict[str, str], **kwargs) -> subprocess.CompletedProcess:
    assert argv[0] == "python"
    return subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=ROOT / "demo_site",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def relocated(argv: list[str], flag: str, path: str) -> list[str]:
    """``argv`` with the value of ``flag`` replaced (the liveness file, in tmp_path)."""
    index = argv.index(flag) + 1
    return [*argv[:index], path, *argv[index + 1 :]]


def finished_at(env: dict[str, str], job_id: int):
    with server(env["DATABASE_NAME"]) as db:
        row = db.execute("SELECT finished_at FROM steady_queue_jobs WHERE id = %s", [job_id])
        return row.fetchone()[0]


def test_migrate_then_the_worker_runs_jobs_passes_its_checks_and_stops_on_term(env, tmp_path):
    migrated = python(services()["migrate"]["command"], env)
    assert migrated.returncode == 0, migrated.stderr

    worker = services()["worker"]
    alive = str(tmp_path / "steady_queue.alive")
    command = relocated(worker["command"], "--liveness-file", alive)
    probe = relocated(worker["healthcheck"]["test"][1:], "--liveness", alive)
    output = tmp_path / "worker.log"
    with output.open("w") as log:
        supervisor = subprocess.Popen(
            [sys.executable, *command[1:]],
            cwd=ROOT / "demo_site",
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until(lambda: python(probe, env).returncode == 0, timeout=60, what="healthy")
        whole = [*probe[: probe.index("--liveness")]]
        healthy = wait_until(
            lambda: (ran := python(whole, env)).returncode == 0 and ran, timeout=60, what="OK"
        )
        assert healthy.stdout.strip() == "OK"

        enqueue = "from demo.tasks import say_hello; print(say_hello.enqueue('deploy').id)"
        enqueued = python(["python", "manage.py", "shell", "-c", enqueue], env)
        assert enqueued.returncode == 0, enqueued.stderr
        job_id = int(enqueued.stdout.split()[-1])
        wait_until(lambda: finished_at(env, job_id), timeout=30, what="the job to finish")

        supervisor.send_signal(signal.SIGTERM)
        grace = seconds(worker["stop_grace_period"]).total_seconds()
        started = time.monotonic()
        assert supervisor.wait(timeout=grace) == 0, output.read_text()
        assert time.monotonic() - started < grace
        assert not os.path.exists(alive), "the supervisor removes its liveness file on exit"
        assert python(probe, env).returncode == 1
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(supervisor.pid, signal.SIGKILL)
        supervisor.wait()
