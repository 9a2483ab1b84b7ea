"""Start a real web server (uvicorn, Gunicorn) with an embedded queue, and kill it after."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import connection

from steady_queue.models import Process
from tests.processes.conftest import REPO, RunLog, wait_until


class Server:
    """A running web server and what it printed."""

    def __init__(self, popen: subprocess.Popen, output: Path, port: int):
        self.popen, self.output_path, self.port = popen, output, port

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def send(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float = 30.0) -> int:
        return self.popen.wait(timeout)

    def supervisors(self) -> list[Process]:
        return list(Process.objects.filter(kind=Process.Kind.SUPERVISOR).order_by("pk"))

    def wait_for_queue(self, children: int) -> Process:
        """Wait until one supervisor and its ``children`` are registered; return it."""

        def ready():
            if self.popen.poll() is not None:
                raise AssertionError(f"The server exited early:\n{self.output()}")
            supervisors = self.supervisors()
            if len(supervisors) != 1:
                return None
            rows = Process.objects.filter(supervisor=supervisors[0])
            return supervisors[0] if rows.count() == children else None

        return wait_until(ready, timeout=30, what=f"a queue of {children} processes")

    def kill_all(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def run_log(tmp_path: Path) -> RunLog:
    return RunLog(tmp_path / "runs.log")


@pytest.fixture
def serve(transactional_db, tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Start ``command`` (its port given by ``{port}``) with the embedded tests' settings."""
    started: list[Server] = []

    def start(*command: str, **env: str) -> Server:
        port = free_port()
        output = tmp_path / f"server-{len(started)}.log"
        with output.open("w") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", *(part.format(port=port) for part in command)],
                cwd=REPO,
                env=_environment(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        started.append(Server(popen, output, port))
        return started[-1]

    yield start
    for server in started:
        server.kill_all()
        print(f"--- output of server {server.pid} ---\n{server.output()}")


def _environment(overrides: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.embedded.settings",
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
        **overrides,
    }
