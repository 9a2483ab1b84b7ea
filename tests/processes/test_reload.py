"""``manage.py steady_queue --reload``: a changed Python file restarts the supervisor.

Each test runs the real command on a project of its own: a package in ``tmp_path``
(``reload_project``: its settings, which add it to INSTALLED_APPS, and a ``tasks.py``
that nothing imports), so that touching its files reloads no other test's command.
Django's StatReloader looks at the files once a second: the waits below allow for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from steady_queue.models import ClaimedExecution, Job, Process
from tests.processes.conftest import RunLog, has_exited, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

WATCHING = "Watching the project's Python files"
# A bound, not a wait: a restart starts Python and Django again, slow on a loaded machine.
RESTART_TIMEOUT = 60.0
SETTINGS = """\
from tests.processes.settings import *  # noqa: F403
from tests.processes.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "reload_project"]
"""


class Reloading:
    """A running ``manage.py steady_queue --reload`` and the processes it started."""

    def __init__(self, supervisor, project: Path, token: str):
        self.outer = supervisor  # conftest's Supervisor: the outer process
        self.project = project
        self.token = token

    def output(self) -> str:
        return self.outer.output()

    def wait_for_workers(self, *, replacing: Process | None = None) -> tuple[Process, Process]:
        """The supervisor (not ``replacing``) and its worker, once both are registered."""

        def ready():
            if self.outer.popen.poll() is not None:
                raise AssertionError(f"The command exited early:\n{self.output()}")
            supervisors = Process.objects.filter(kind=Process.Kind.SUPERVISOR)
            if replacing is not None:
                supervisors = supervisors.exclude(pk=replacing.pk)
            for supervisor in supervisors:
                if worker := supervisor.supervisees.filter(kind=Process.Kind.WORKER).first():
                    return supervisor, worker
            return None

        return wait_until(ready, timeout=RESTART_TIMEOUT, what="a supervisor with its worker")

    def wait_until_watching(self, times: int = 1) -> None:
        wait_until(lambda: self.output().count(WATCHING) >= times, what="the files to be watched")

    def change(self, name: str = "tasks.py") -> None:
        path = self.project / name
        path.write_text(path.read_text() + "# changed\n")

    def watcher_pid(self) -> int:
        [pid] = _children(self.outer.pid)
        return pid

    def pids(self) -> set[int]:
        """Every live process of this command, found by the token in its environment."""
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and self._ours(entry) and not has_exited(int(entry.name)):
                found.add(int(entry.name))
        return found

    def kill_all(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.outer.kill_all()

    def _ours(self, entry: Path) -> bool:
        try:
            return self.token.encode() in (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return False


def _children(pid: int) -> list[int]:
    proc = Path("/proc")
    return [int(e.name) for e in proc.iterdir() if e.name.isdigit() and _parent(e.name) == pid]


def _parent(pid: int | str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


@pytest.fixture
def start_reloading(start_supervisor, tmp_path):
    started: list[Reloading] = []

    def start(config: str = "WORKER", *args: str, **env: str) -> Reloading:
        project = tmp_path / "reload_project"
        project.mkdir()
        (project / "__init__.py").write_text("")
        (project / "settings.py").write_text(SETTINGS)
        (project / "tasks.py").write_text('"""Stands for a module of the project\'s tasks."""\n')
        token = f"SQ_RELOAD_TEST_{uuid.uuid4().hex}"
        path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
        outer = start_supervisor(
            config,
            "--reload",
            *args,
            DJANGO_SETTINGS_MODULE="reload_project.settings",
            PYTHONPATH=path,
            SQ_RELOAD_TEST_TOKEN=token,
        )
        started.append(Reloading(outer, project, token))
        return started[-1]

    yield start
    for reloading in started:
        reloading.kill_all()


def start_holding_job(reloading: Reloading, run_log: RunLog, tmp_path: Path):
    release = tmp_path / "release"
    result = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the job to start")
    return Job.objects.get(pk=result.id), release


def assert_stopped_cleanly(reloading: Reloading, code: int = 0) -> None:
    assert reloading.outer.wait() == code, reloading.output()
    wait_until(lambda: not reloading.pids(), timeout=10, what="every process to exit")
    assert not Process.objects.exists()
    assert not ClaimedExecution.objects.exists()


def test_a_changed_python_file_restarts_the_workers_and_the_running_job_finishes_once(
    start_reloading, run_log, tmp_path, hooks_log
):
    reloading = start_reloading()
    first, first_worker = reloading.wait_for_workers()
    job, release = start_holding_job(reloading, run_log, tmp_path)
    reloading.wait_until_watching()

    reloading.change("tasks.py")  # a module nothing has imported yet

    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")
    assert ClaimedExecution.objects.filter(job_id=job.pk).exists()  # still running it
    release.touch()
    second, second_worker = reloading.wait_for_workers(replacing=first)
    assert second.pid != first.pid and second_worker.pid != first_worker.pid
    assert has_exited(first.pid) and has_exited(first_worker.pid)
    job.refresh_from_db()
    assert job.finished_at is not None and len(job.attempts) == 1
    assert run_log.entries("start") == run_log.entries("end") == ["held"]
    assert "reload_project/tasks.py changed: stopping the supervisor gracefully" in (
        reloading.output()
    )

    reloading.outer.send(signal.SIGTERM)

    assert_stopped_cleanly(reloading)
    assert reloading.output().count("Restarting Steady Queue after a change") == 1


def test_a_job_running_past_shutdown_timeout_is_released_and_runs_again_once(
    start_reloading, run_log, tmp_path
):
    reloading = start_reloading(SQ_SHUTDOWN_TIMEOUT="0.5")
    first, _ = reloading.wait_for_workers()
    job, release = start_holding_job(reloading, run_log, tmp_path)
    reloading.wait_until_watching()

    reloading.change("settings.py")  # a module the watching process imported

    wait_until(
        lambda: run_log.entries("start") == ["held", "held"],
        timeout=RESTART_TIMEOUT,
        what="the job to run again",
    )
    _, second_worker = reloading.wait_for_workers(replacing=first)
    release.touch()
    wait_until(lambda: Job.objects.get(pk=job.pk).finished_at, what="the job to finish")
    job.refresh_from_db()
    assert len(job.attempts) == 1  # the released run was no attempt
    assert run_log.entries("end") == ["held"]
    assert second_worker.pid in run_log.pids("start") and len(run_log.pids("start")) == 2

    reloading.outer.send(signal.SIGTERM)

    assert_stopped_cleanly(reloading)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_signal_to_the_command_stops_everything_gracefully(
    start_reloading, run_log, tmp_path, hooks_log, signum
):
    reloading = start_reloading()
    reloading.wait_for_workers()
    job, release = start_holding_job(reloading, run_log, tmp_path)
    reloading.wait_until_watching()
    started = reloading.pids()

    reloading.outer.send(signum)

    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")
    release.touch()
    assert_stopped_cleanly(reloading)
    assert all(has_exited(pid) for pid in started)
    job.refresh_from_db()
    assert job.finished_at is not None and len(job.attempts) == 1
    assert run_log.entries("start") == run_log.entries("end") == ["held"]
    assert "Restarting" not in reloading.output()


def test_a_stop_while_the_command_starts_leaves_nothing_behind(start_reloading):
    reloading = start_reloading()
    wait_until(lambda: _children(reloading.outer.pid), what="the watching process to start")

    reloading.outer.send(signal.SIGINT)  # wherever it is in its start

    assert_stopped_cleanly(reloading)
    assert "Traceback" not in reloading.output()


def test_a_stop_during_a_reload_lets_its_graceful_stop_finish_and_restarts_nothing(
    start_reloading, run_log, tmp_path, hooks_log
):
    reloading = start_reloading()
    reloading.wait_for_workers()
    job, release = start_holding_job(reloading, run_log, tmp_path)
    reloading.wait_until_watching()
    reloading.change("tasks.py")
    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")

    reloading.outer.send(signal.SIGTERM)  # the supervisor is stopping already: not twice

    release.touch()
    assert_stopped_cleanly(reloading)
    job.refresh_from_db()
    assert job.finished_at is not None and len(job.attempts) == 1
    assert run_log.entries("start") == run_log.entries("end") == ["held"]
    assert "Restarting" not in reloading.output()


def test_what_the_queue_writes_in_the_project_restarts_nothing(start_reloading, tmp_path):
    liveness = tmp_path / "reload_project" / "liveness"
    reloading = start_reloading("WORKER", "--liveness-file", str(liveness))
    project_log = RunLog(reloading.project / "runs.log")
    first, _ = reloading.wait_for_workers()
    reloading.wait_until_watching()
    watcher = reloading.watcher_pid()

    # The queue's own writes beside the project's Python files, for longer than two of
    # the reloader's looks (once a second): jobs' output, the liveness file, a database,
    # a pidfile, compiled modules.
    for label in range(3):
        tasks.record.enqueue(str(project_log.path), f"noise-{label}")
    noise_until = time.monotonic() + 2.5

    def noisy_for_long_enough() -> bool:
        write_noise(tmp_path / "reload_project")
        return time.monotonic() > noise_until and len(project_log.entries()) == 3

    wait_until(noisy_for_long_enough, what="the jobs to run, amid the noise")
    assert liveness.exists()
    assert reloading.watcher_pid() == watcher
    assert [row.pk for row in Process.objects.filter(kind=Process.Kind.SUPERVISOR)] == [first.pk]
    assert "changed: stopping" not in reloading.output()

    reloading.change("tasks.py")

    reloading.wait_for_workers(replacing=first)
    reloading.outer.send(signal.SIGTERM)
    assert_stopped_cleanly(reloading)


def write_noise(directory: Path) -> None:
    for name in ("queue.sqlite3", "queue.sqlite3-wal", "supervisor.pid"):
        (directory / name).write_text(str(time.monotonic()))
    (directory / "__pycache__").mkdir(exist_ok=True)
    (directory / "__pycache__" / "tasks.cpython-313.pyc").write_bytes(b"")


@pytest.mark.parametrize("killed", ["outer", "watcher"])
def test_a_killed_command_leaves_no_process_behind(start_reloading, killed):
    reloading = start_reloading()
    supervisor, worker = reloading.wait_for_workers()
    reloading.wait_until_watching()
    started = reloading.pids()
    assert {supervisor.pid, worker.pid, reloading.outer.pid} <= started

    os.kill(reloading.outer.pid if killed == "outer" else reloading.watcher_pid(), signal.SIGKILL)

    # What is left stops as TERM stops it: rows deregistered, every process gone.
    wait_until(lambda: not (reloading.pids() - {reloading.outer.pid}), what="the processes to stop")
    wait_until(lambda: not Process.objects.exists(), what="the rows to be deregistered")
    assert "Stopped Supervisor" in reloading.output()
