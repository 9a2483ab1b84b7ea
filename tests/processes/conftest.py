"""Start the real ``manage.py steady_queue`` as a subprocess and watch the database.

Every supervisor runs in its own session, so that teardown can kill it together with
all its children (even orphaned ones) whatever the test did to it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, connections, transaction

from steady_queue.models import Job, Process

REPO = Path(__file__).resolve().parents[2]
MANAGE = REPO / "tests" / "manage.py"


def wait_until[T](condition: Callable[[], T], *, timeout: float = 20.0, what: str = "") -> T:
    """Return the first truthy value of ``condition()``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out after {timeout}s waiting for {what or condition}")
        time.sleep(0.05)
    return value


def finished_count() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


def stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped by a signal (state T in /proc)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        # A thread (or the process) can end between the listing and the read: the open
        # then fails with ENOENT, or the read with ESRCH.
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return all(state in ("T", "t") for state in states)


def has_exited(pid: int) -> bool:
    """Whether ``pid`` is gone (or a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        # Reaped before the open (ENOENT) or between the open and the read (ESRCH).
        return True
    return state in ("Z", "X")


def freeze(process: Process, timeout: float = 20.0) -> None:
    """SIGSTOP ``process`` at a moment it holds no lock its supervisor's prune needs.

    Stopped inside a write (SQLite: the database's write lock; PostgreSQL and MariaDB:
    its process row, during a heartbeat), the process would block the prune until it
    resumes. That is the database's locking, not what these tests are about, so let it
    run until it has let go, and try again (stopped again at once, a process on a loaded
    machine may get no CPU in between and never let go).
    """
    deadline = time.monotonic() + timeout
    while True:
        os.kill(process.pid, signal.SIGSTOP)
        # kill() returns before every thread has stopped: a thread still running could
        # take a lock just after the probe below found none.
        wait_until(lambda: stopped(process.pid), timeout=5, what=f"{process} to stop")
        if not _holds_a_lock(process):
            return
        os.kill(process.pid, signal.SIGCONT)
        if time.monotonic() > deadline:
            raise AssertionError(f"{process} kept holding a database lock for {timeout}s")
        wait_until(
            lambda: not _holds_a_lock(process),
            timeout=max(deadline - time.monotonic(), 0.1),
            what=f"{process} to let go of the lock it was stopped with",
        )


def _holds_a_lock(process: Process) -> bool:
    if connection.vendor == "sqlite":
        probe = sqlite3.connect(connection.settings_dict["NAME"], timeout=0.2)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
        except sqlite3.OperationalError:
            return True
        finally:
            probe.close()
        return False
    try:
        with transaction.atomic():
            Process.objects.select_for_update(nowait=True).filter(pk=process.pk).exists()
    except DatabaseError:
        return True
    return False


class RunLog:
    """The file the test tasks append ``<event> <label> <pid>`` lines to."""

    def __init__(self, path: Path):
        self.path = path
        path.touch()

    def entries(self, event: str = "run") -> list[str]:
        lines = [line.split() for line in self.path.read_text().splitlines()]
        return [label for kind, label, _ in lines if kind == event]

    def count(self, label: str, event: str = "run") -> int:
        return self.entries(event).count(label)

    def pids(self, event: str = "run") -> set[int]:
        lines = [line.split() for line in self.path.read_text().splitlines()]
        return {int(pid) for kind, _, pid in lines if kind == event}


class Supervisor:
    """A running ``manage.py steady_queue`` and what it printed."""

    def __init__(self, popen: subprocess.Popen, output: Path):
        self.popen = popen
        self.output_path = output

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")

    def send(self, signum: int) -> None:
        os.kill(self.pid, signum)

    def wait(self, timeout: float = 30.0) -> int:
        return self.popen.wait(timeout)

    def row(self) -> Process | None:
        return Process.objects.filter(kind=Process.Kind.SUPERVISOR, pid=self.pid).first()

    def children(self, kind: str | None = None) -> list[Process]:
        rows = Process.objects.filter(supervisor__pid=self.pid).order_by("pk")
        return list(rows.filter(kind=kind) if kind else rows)

    def wait_until_ready(self, children: int, timeout: float = 30.0) -> list[Process]:
        """Wait until the supervisor and ``children`` children are registered."""

        def ready():
            if self.popen.poll() is not None:
                raise AssertionError(f"The supervisor exited early:\n{self.output()}")
            rows = self.children()
            return rows if self.row() and len(rows) == children else None

        return wait_until(ready, timeout=timeout, what=f"{children} registered children")

    def kill_all(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)
        self.popen.wait()


@pytest.fixture
def run_log(tmp_path: Path) -> RunLog:
    return RunLog(tmp_path / "runs.log")


@pytest.fixture
def hooks_log(tmp_path: Path) -> Path:
    return tmp_path / "hooks.log"


@pytest.fixture
def start_supervisor(transactional_db, tmp_path: Path, hooks_log: Path) -> Iterator[Callable]:
    """Start ``manage.py steady_queue --config tests.processes.configs.<config>``."""
    started: list[Supervisor] = []

    def start(
        config: str = "FAST",
        *args: str,
        children: int | None = None,
        recurring: bool = False,
        **env: str,
    ) -> Supervisor:
        output = tmp_path / f"supervisor-{len(started)}.log"
        command = [sys.executable, str(MANAGE), "steady_queue", "--skip-checks", "-v", "2"]
        command += ["--config", f"tests.processes.configs.{config}", *args]
        if not recurring:
            command.append("--skip-recurring")
        with output.open("w") as out:
            popen = subprocess.Popen(
                command,
                cwd=REPO,
                env=_environment(hooks_log, env),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        supervisor = Supervisor(popen, output)
        started.append(supervisor)
        if children is not None:
            supervisor.wait_until_ready(children)
        return supervisor

    yield start
    for supervisor in started:
        supervisor.kill_all()
        print(f"--- output of supervisor {supervisor.pid} ---\n{supervisor.output()}")


def _environment(hooks_log: Path, overrides: dict[str, str]) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.processes.settings",
        "SQ_PROCESS_DB_NAME": str(connection.settings_dict["NAME"]),
        # The "billing" backend's queue database (its test database once created).
        "SQ_PROCESS_BILLING_DB_NAME": str(connections["billing"].settings_dict["NAME"]),
        "SQ_HOOKS_LOG": str(hooks_log),
        **overrides,
    }
