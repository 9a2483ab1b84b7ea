"""Process rows with chosen heartbeats, the health command's result, an unreachable database."""

from __future__ import annotations

import io
import itertools
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, connections
from django.utils import timezone

import steady_queue
from steady_queue.models import Process
from tests.processes.conftest import hooks_log, start_supervisor  # noqa: F401 (fixtures)

_names = itertools.count()


def register(
    kind: str, *, queues: list[str] | None = None, age: timedelta = timedelta(0), **fields
) -> Process:
    """A process row whose last heartbeat was ``age`` ago (a worker records its queues)."""
    metadata = {"queues": queues} if queues is not None else {}
    return Process.objects.create(
        kind=kind,
        name=f"{kind.lower()}-{next(_names)}",
        pid=40000 + next(_names),
        hostname="box",
        metadata=metadata,
        last_heartbeat_at=timezone.now() - age,
        **fields,
    )


def stale_age() -> timedelta:
    return steady_queue.process_alive_threshold + timedelta(minutes=1)


@dataclass
class Result:
    code: int
    output: str

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def problems(self) -> list[str]:
        return [line.split(":", 1)[0] for line in self.lines if line != "OK"]


def run_command(name: str, *args: str) -> Result:
    """Run ``manage.py <name> args`` in this process; its exit code and output."""
    out = io.StringIO()
    try:
        call_command(name, *args, stdout=out, stderr=io.StringIO())
    except SystemExit as exit:
        return Result(int(exit.code), out.getvalue())
    return Result(0, out.getvalue())


def health(*args: str) -> Result:
    return run_command("steady_queue_health", *args)


@pytest.fixture
def healthy_processes(db) -> list[Process]:
    """A live supervisor with a worker on every queue and a dispatcher."""
    supervisor = register("Supervisor")
    return [
        supervisor,
        register("Worker", queues=["*"], supervisor=supervisor),
        register("Dispatcher", supervisor=supervisor),
    ]


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def unreachable_database(tmp_path, django_db_blocker) -> Iterator[str]:
    """Point the queue database at a server that is not there (SQLite: a missing directory).

    Outside any test case's database (which would refuse a connection to an alias it
    does not manage): nothing else is read or written.
    """
    settings = dict(connection.settings_dict)
    if connection.vendor == "sqlite":
        settings["NAME"] = str(tmp_path / "missing" / "queue.sqlite3")
    else:
        settings.update(HOST="127.0.0.1", PORT=str(closed_port()))
    settings["OPTIONS"] = {
        **settings.get("OPTIONS", {}),
        **({} if connection.vendor == "sqlite" else {"connect_timeout": 2}),
    }
    connections.settings["unreachable"] = settings
    previous, steady_queue.database = steady_queue.database, "unreachable"
    try:
        with django_db_blocker.unblock():
            yield "unreachable"
    finally:
        steady_queue.database = previous
        connections["unreachable"].close()
        del connections["unreachable"]
        del connections.settings["unreachable"]
