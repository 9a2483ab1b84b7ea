"""Fixtures of the fault suite: the real ``manage.py steady_queue``, the tasks' record,
and the kills, freezes and restarts the scenarios inflict on them."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from steady_queue.models import ClaimedExecution, Process
from tests.faults import harness
from tests.processes.conftest import (
    MANAGE,
    REPO,
    Supervisor,
    _environment,
    freeze,
    has_exited,
    wait_until,
)

# A killed supervisor's children notice within a second and stop after shutdown_timeout
# (2 s here); the rest is room for a loaded two-core machine.
SHUTDOWN_TIMEOUT = 2.0
ORPHANS_GONE_WITHIN = 1 + SHUTDOWN_TIMEOUT + 4


def pytest_terminal_summary(terminalreporter) -> None:
    if harness.FIGURES:
        terminalreporter.section("fault suite figures")
        for figures in [*harness.FIGURES, harness.Figures.total(harness.FIGURES)]:
            terminalreporter.write_line(figures.line())


class Fleet:
    """The supervisors of one scenario, and what the test did to their processes."""

    def __init__(self, tmp_path: Path, record: harness.Record, figures: harness.Figures):
        self.tmp_path = tmp_path
        self.record = record
        self.figures = figures
        self.supervisors: list[Supervisor] = []
        self.deaths: dict[int, float] = {}  # pid -> when it was killed or seen gone
        self.frozen: dict[int, float] = {}  # pid -> when it was stopped

    @property
    def current(self) -> Supervisor:
        return self.supervisors[-1]

    def start(self, config: str = "FAULTS", workers: int = 2, **env: str) -> Supervisor:
        self.env = env  # a supervisor started again after a kill gets the same settings
        output = self.tmp_path / f"supervisor-{len(self.supervisors)}.log"
        command = [sys.executable, str(MANAGE), "steady_queue", "--skip-checks", "-v", "1"]
        command += ["--config", f"tests.faults.configs.{config}", "--skip-recurring"]
        environment = _environment(self.tmp_path / "hooks.log", env)
        environment["DJANGO_SETTINGS_MODULE"] = "tests.faults.settings"
        environment["SQ_FAULTS_RECORD"] = str(self.record.path)
        environment.setdefault("SQ_SHUTDOWN_TIMEOUT", str(SHUTDOWN_TIMEOUT))
        with output.open("w") as out:
            popen = subprocess.Popen(
                command,
                cwd=REPO,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.supervisors.append(Supervisor(popen, output))
        self.current.wait_until_ready(workers + 1, timeout=60)
        return self.current

    def workers(self) -> list[Process]:
        return self.current.children(Process.Kind.WORKER)

    def busy_worker(self, prefer_task: str = "limited") -> Process:
        """A worker of the current supervisor, one running ``prefer_task`` if any is."""
        workers = self.workers()
        pids = {worker.pk: worker for worker in workers}
        claims = ClaimedExecution.objects.filter(
            process_id__in=pids, job__task_path__endswith=prefer_task
        )
        busy = [pids[pk] for pk in claims.values_list("process_id", flat=True)]
        return random.choice(busy or workers)

    def kill_worker(self) -> None:
        """kill -9 a worker a few milliseconds after one of its limited runs ended.

        That is when the engine records the outcome, gives the slot back and releases the
        next blocked job: the window where a crash can strand a key. With no limited run
        ending soon, any busy worker, at any instant.
        """
        pids = {worker.pid for worker in self.workers()}
        deadline, since = time.monotonic() + 2, time.time()
        while time.monotonic() < deadline:
            found = self.record.last_limited_end(since)
            if found and found[0] in pids:
                pid = found[0]
                time.sleep(random.uniform(0.001, 0.02))
                break
            time.sleep(0.001)
        else:
            pid = self.busy_worker().pid
        os.kill(pid, signal.SIGKILL)
        self.deaths[pid] = time.time()
        self.figures.kills += 1
        # The supervisor replaces it; the next kill needs a worker of its own to aim at.
        wait_until(
            lambda: len({w.pid for w in self.workers()} - {pid}) == 2,
            timeout=30,
            what="a replacement worker",
        )

    def kill_supervisor(self, restart: bool = True) -> None:
        """kill -9 the supervisor; its children must be gone within the bound; start anew."""
        supervisor = self.current
        children = set(harness.children_of(supervisor.pid))
        children |= {row.pid for row in supervisor.children()}
        supervisor.send(signal.SIGKILL)
        killed_at = time.time()
        supervisor.wait()
        self.figures.kills += 1
        pending = set(children)
        deadline = time.monotonic() + ORPHANS_GONE_WITHIN
        while pending and time.monotonic() < deadline:
            for pid in [pid for pid in pending if has_exited(pid)]:
                self.deaths[pid] = time.time()
                pending.discard(pid)
            time.sleep(0.02)
        gone_in = max((self.deaths[pid] - killed_at for pid in children - pending), default=0)
        self.figures.orphan_seconds = max(self.figures.orphan_seconds, gone_in)
        assert not pending, (
            f"orphaned children {sorted(pending)} still alive {ORPHANS_GONE_WITHIN}s after "
            f"their supervisor was killed"
        )
        if restart:
            self.start(**self.env)

    def freeze(self, worker: Process, timeout: float = 20.0) -> Process:
        """SIGSTOP ``worker`` outside any transaction (see tests.processes.conftest.freeze).

        On PostgreSQL a worker stopped inside a transaction (one of its threads finishing
        a job) would hold row locks its pruner waits for; stopped inside a write to the
        record, it would hold up every other task: let it run until that transaction or
        write has ended, then try again. (Stopping it again at once would starve it: on a
        loaded machine it got no CPU between two stops and never left the transaction.)
        """
        deadline = time.monotonic() + timeout
        while True:
            before = _database_now()
            freeze(worker)
            if not _transaction_open_since(before) and not self.record.locked():
                break
            os.kill(worker.pid, signal.SIGCONT)
            wait_until(
                lambda since=before: (
                    not _transaction_open_since(since) and not self.record.locked()
                ),
                timeout=max(deadline - time.monotonic(), 0.1),
                what=f"{worker} to end the transaction it was stopped in",
            )
            assert time.monotonic() < deadline, f"{worker} kept a transaction open"
        self.frozen[worker.pid] = time.time()
        self.figures.freezes += 1
        return worker

    def freeze_before_a_start(self, timeout: float = 15.0) -> Process:
        """Freeze a worker that has claimed a job it has not started yet.

        When it resumes that job has been failed (the worker was pruned): it must not
        start it. Falls back to any busy worker if the moment never comes.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            workers = {worker.pk: worker for worker in self.workers()}
            claims = ClaimedExecution.objects.filter(process_id__in=workers)
            started = self.record.labels()
            for process_id, arguments in claims.values_list("process_id", "job__arguments"):
                label = arguments["args"][0]
                if label in started:
                    continue
                worker = workers[process_id]
                self.freeze(worker)
                if label not in self.record.labels():
                    print(f"froze {worker} before it started {label}")
                    return worker
                os.kill(worker.pid, signal.SIGCONT)  # it started meanwhile: again
                del self.frozen[worker.pid]
                self.figures.freezes -= 1
                break
            time.sleep(0.002)
        worker = self.busy_worker()
        self.freeze(worker)
        return worker

    def stop(self) -> None:
        for supervisor in self.supervisors:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.popen.wait()
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def _database_now():
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def _transaction_open_since(moment) -> bool:
    """Whether a backend has been idle in a transaction since before ``moment``."""
    if moment is None:
        return False
    time.sleep(0.05)  # time for a running transaction to end
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND state LIKE 'idle in transaction%%' AND xact_start < %s",
            [moment],
        )
        return cursor.fetchone()[0] > 0


@pytest.fixture
def fleet(transactional_db, tmp_path: Path, request) -> Iterator[Fleet]:
    figures = harness.Figures(request.node.name.removeprefix("test_"))
    fleet = Fleet(tmp_path, harness.Record(tmp_path / "record.sqlite3"), figures)
    started = time.monotonic()
    yield fleet
    fleet.stop()
    figures.seconds = time.monotonic() - started
    harness.FIGURES.append(figures)
    print(figures.line())
    for supervisor in fleet.supervisors:
        print(f"--- output of supervisor {supervisor.pid} ---\n{supervisor.output()[-20000:]}")
