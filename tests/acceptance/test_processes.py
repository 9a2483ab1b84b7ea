"""docs/reference/command.md, settings.md ("Configuration"), hooks-and-signals.md, recurring.md and
docs/explanation/guarantees.md, with the real command."""

from __future__ import annotations

import itertools
import os
import signal
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.models import Job, Process, Queue, RecurringTask
from tests.acceptance.api import default_task_backend
from tests.processes.conftest import freeze, has_exited, wait_until
from tests.tasks.acceptance import (
    hold_safely,
    hold_until,
    hold_with_policy,
    timed_interval,
    write_line,
)

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

QUICK = ("--config", "tests.acceptance.configs.QUICK")


def status(result) -> str:
    return default_task_backend.get_result(result.id).status


def lines(path, kind: str) -> list[str]:
    if not path.exists():
        return []
    return [line.split()[1] for line in path.read_text().splitlines() if line.startswith(kind)]


def children(supervisor, kind: str | None = None) -> list[Process]:
    rows = Process.objects.filter(supervisor__pid=supervisor.pid)
    return list(rows.filter(kind=kind) if kind else rows)


def ready(supervisor, count: int) -> list[Process]:
    def registered():
        if supervisor.popen.poll() is not None:
            raise AssertionError(f"The supervisor exited:\n{supervisor.output()}")
        rows = children(supervisor)
        return rows if supervisor.row() and len(rows) == count else None

    return wait_until(registered, timeout=30, what=f"{count} children")


def test_runs_jobs_registers_processes_and_stops_cleanly_on_term(steady_queue_command, tmp_path):
    log = tmp_path / "runs.log"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring")
    rows = ready(supervisor, 2)

    now = write_line.enqueue(str(log), "now")
    other_queue = write_line.using(queue_name="low").enqueue(str(log), "low")
    later = write_line.using(run_after=timedelta(seconds=1)).enqueue(str(log), "later")
    wait_until(
        lambda: all(status(r) == "SUCCESSFUL" for r in (now, other_queue, later)), timeout=20
    )
    result = default_task_backend.get_result(later.id)
    assert result.started_at >= result.enqueued_at + timedelta(seconds=0.9)
    assert sorted(lines(log, "run")) == ["later", "low", "now"]

    # Each process is registered with its kind, name, pid, host, supervisor and options.
    worker = next(row for row in rows if row.kind == "Worker")
    dispatcher = next(row for row in rows if row.kind == "Dispatcher")
    assert worker.name.startswith("worker-") and dispatcher.name.startswith("dispatcher-")
    assert worker.pid != supervisor.pid and worker.hostname
    assert worker.supervisor.pid == supervisor.pid
    assert worker.metadata.get("queues") == ["*"] and worker.metadata.get("threads") == 2
    assert result.worker_ids == [worker.name]

    # Heartbeats (every 0.5 s in the test settings) move last_heartbeat_at forward.
    first_beat = worker.last_heartbeat_at
    wait_until(lambda: Process.objects.get(pk=worker.pk).last_heartbeat_at > first_beat)

    supervisor.send(signal.SIGTERM)
    assert supervisor.wait(timeout=20) == 0
    assert not Process.objects.exists()


def test_graceful_stop_lets_the_running_job_finish_and_it_runs_once(steady_queue_command, tmp_path):
    signum = signal.SIGTERM
    log, release = tmp_path / "runs.log", tmp_path / "release"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", SQ_SHUTDOWN_TIMEOUT="20")
    ready(supervisor, 2)
    result = hold_until.enqueue(str(log), "long", str(release))
    wait_until(lambda: lines(log, "start") == ["long"], what="the job to start")

    supervisor.send(signum)
    wait_until(lambda: signum.name in supervisor.output(), what="the stop to begin")
    assert status(result) == "RUNNING"
    release.touch()
    assert supervisor.wait(timeout=20) == 0
    assert status(result) == "SUCCESSFUL"
    assert lines(log, "start") == ["long"]
    assert not Process.objects.exists()


def test_int_past_shutdown_timeout_puts_the_job_back_to_ready(steady_queue_command, tmp_path):
    log, release = tmp_path / "runs.log", tmp_path / "never"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", SQ_SHUTDOWN_TIMEOUT="1")
    ready(supervisor, 2)
    result = hold_until.enqueue(str(log), "stuck", str(release))
    wait_until(lambda: lines(log, "start") == ["stuck"], what="the job to start")

    supervisor.send(signal.SIGINT)  # INT (Ctrl-C) is a graceful stop too
    supervisor.wait(timeout=20)
    assert Job.objects.get(pk=result.id).state == "ready"
    assert status(result) == "READY"
    assert not Process.objects.exists()


def test_quit_puts_running_jobs_back_to_ready(steady_queue_command, tmp_path):
    log, release = tmp_path / "runs.log", tmp_path / "never"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring")
    ready(supervisor, 2)
    result = hold_until.enqueue(str(log), "quit", str(release))
    wait_until(lambda: lines(log, "start") == ["quit"], what="the job to start")

    supervisor.send(signal.SIGQUIT)
    supervisor.wait(timeout=20)
    assert Job.objects.get(pk=result.id).state == "ready"
    assert not Process.objects.exists()


def test_killed_worker_fails_its_job_and_at_least_once_reruns(steady_queue_command, tmp_path):
    log, release = tmp_path / "runs.log", tmp_path / "release"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring")
    [worker] = [row for row in ready(supervisor, 2) if row.kind == "Worker"]
    at_most_once = hold_with_policy.enqueue(str(log), "once", str(release))
    at_least_once = hold_safely.enqueue(str(log), "safe", str(release))
    wait_until(lambda: sorted(lines(log, "start")) == ["once", "safe"], what="both jobs")

    os.kill(worker.pid, signal.SIGKILL)
    wait_until(lambda: status(at_most_once) == "FAILED", what="the job to fail")
    failed = default_task_backend.get_result(at_most_once.id)
    [error] = failed.errors
    assert error.exception_class_path == "steady_queue.processes.ProcessExitError"
    from steady_queue.processes import ProcessExitError

    assert error.exception_class is ProcessExitError
    assert "was killed by signal 9 (SIGKILL)" in error.traceback

    # A replacement worker runs the at-least-once job again.
    release.touch()
    wait_until(lambda: status(at_least_once) == "SUCCESSFUL", what="the re-run")
    rerun = default_task_backend.get_result(at_least_once.id)
    assert len(rerun.errors) == 1 and len(rerun.worker_ids) == 2
    assert lines(log, "start").count("safe") == 2
    assert lines(log, "start").count("once") == 1
    new_workers = children(supervisor, "Worker")
    assert len(new_workers) == 1 and new_workers[0].pid != worker.pid


def test_killed_supervisor_children_exit_and_next_supervisor_fails_orphans(
    steady_queue_command, tmp_path
):
    log, release = tmp_path / "runs.log", tmp_path / "never"
    first = steady_queue_command(*QUICK, "--skip-recurring", SQ_SHUTDOWN_TIMEOUT="0.5")
    rows = ready(first, 2)
    result = hold_until.enqueue(str(log), "orphan", str(release))
    wait_until(lambda: lines(log, "start") == ["orphan"], what="the job to start")

    first.send(signal.SIGKILL)
    first.wait()
    wait_until(lambda: all(has_exited(row.pid) for row in rows), timeout=8, what="children exit")

    second = steady_queue_command(*QUICK, "--skip-recurring")
    ready(second, 2)
    wait_until(lambda: status(result) == "FAILED", timeout=20, what="the orphan to fail")
    error = default_task_backend.get_result(result.id).errors[-1]
    assert error.exception_class_path.endswith("ProcessExitError")


def test_process_selection_options_and_configurations(steady_queue_command):
    # Started together, checked one by one: each is a separate supervisor.
    workers_only = steady_queue_command(*QUICK, "--only-workers")
    dispatchers = steady_queue_command(*QUICK, "--only-dispatchers")
    skip = steady_queue_command(*QUICK, "--only-dispatchers", "--skip-recurring")
    default = steady_queue_command("--skip-recurring")  # no STEADY_QUEUE in the settings
    two_kinds = steady_queue_command(
        "--config", "tests.acceptance.configs.TWO_KINDS", "--skip-recurring"
    )
    invalid = steady_queue_command("--config", "tests.acceptance.configs.NOT_THERE")

    assert {row.kind for row in ready(workers_only, 1)} == {"Worker"}
    assert sorted(row.kind for row in ready(dispatchers, 2)) == ["Dispatcher", "Scheduler"]
    assert [row.kind for row in ready(skip, 1)] == ["Dispatcher"]

    # Without configuration: one worker (all queues, 3 threads) and one dispatcher.
    rows = ready(default, 2)
    assert sorted(row.kind for row in rows) == ["Dispatcher", "Worker"]
    [worker] = [row for row in rows if row.kind == "Worker"]
    assert worker.metadata["queues"] == ["*"] and worker.metadata["threads"] == 3

    # processes=2 forks two identical workers.
    workers = [row for row in ready(two_kinds, 4) if row.kind == "Worker"]
    assert sorted(tuple(row.metadata["queues"]) for row in workers) == [
        ("default", "low"),
        ("default", "low"),
        ("real_time",),
    ]

    # An invalid configuration: the command refuses to start.
    assert invalid.wait(timeout=30) != 0
    assert "NOT_THERE" in invalid.output()


def test_queue_order_wildcards_and_pauses_with_one_thread(steady_queue_command, tmp_path):
    log = tmp_path / "runs.log"
    jobs = [
        write_line.using(queue_name="default", priority=100).enqueue(str(log), "default"),
        write_line.using(queue_name="beta_two").enqueue(str(log), "beta_two"),
        write_line.using(queue_name="real_time", priority=-5).enqueue(str(log), "rt-low"),
        write_line.using(queue_name="real_time", priority=5).enqueue(str(log), "rt-high"),
        write_line.using(queue_name="other").enqueue(str(log), "other"),  # not listed
    ]
    Queue("beta_two").pause()
    supervisor = steady_queue_command(
        "--config", "tests.acceptance.configs.QUEUE_ORDER", "--skip-recurring"
    )
    ready(supervisor, 1)
    wait_until(lambda: len(lines(log, "run")) == 3, what="three jobs")
    assert lines(log, "run") == ["rt-high", "rt-low", "default"]
    Queue("beta_two").resume()
    wait_until(lambda: len(lines(log, "run")) == 4, what="the resumed queue")
    assert lines(log, "run")[-1] == "beta_two"
    assert Job.objects.get(pk=jobs[-1].id).state == "ready"


def test_concurrency_limit_holds_across_threads(steady_queue_command, tmp_path):
    log = tmp_path / "intervals.log"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring")
    ready(supervisor, 2)
    results = [timed_interval.enqueue(str(log), 0.15) for _ in range(5)]
    wait_until(lambda: all(status(r) == "SUCCESSFUL" for r in results), timeout=30)
    intervals = sorted(
        (float(start), float(end))
        for _, start, end, _ in (line.split() for line in log.read_text().splitlines())
    )
    assert len(intervals) == 5
    for (_, end), (start, _) in itertools.pairwise(intervals):
        assert start >= end


def test_recurring_tasks_are_stored_enqueued_and_can_be_disabled(steady_queue_command):
    from steady_queue.models import RecurringExecution

    RecurringTask.objects.create(
        key="qa removed from code", schedule="@hourly", task_path=write_line.module_path
    )
    # Declared in code and already stored: disabled by an operator, and missed while no
    # scheduler ran for five hours (its catch_up window is three hours).
    long_ago = timezone.now() - timedelta(hours=5)
    RecurringTask.objects.create(
        key="qa daily report", schedule="0 12 * * *", task_path=beat_path(), enabled=False
    )
    RecurringTask.objects.create(
        key="qa catch up",
        schedule="0 * * * *",
        task_path="tests.apps.acceptance_recurring_app.tasks.hourly",
        created_at=long_ago,
    )
    RecurringTask.objects.filter(key="qa catch up").update(created_at=long_ago)
    # Two schedulers (for redundancy) never enqueue the same run twice.
    supervisor = steady_queue_command(*QUICK)
    second = steady_queue_command(*QUICK, "--only-dispatchers")
    ready(supervisor, 3)
    ready(second, 2)

    def stored():
        return {task.key: task for task in RecurringTask.objects.all()}

    tasks = wait_until(lambda: stored() if "qa every second" in stored() else None)
    every_second, daily = tasks["qa every second"], tasks["qa daily report"]
    assert "qa removed from code" not in tasks
    assert daily.enabled is False  # a static task keeps its enabled flag
    hourly = "tests.apps.acceptance_recurring_app.tasks.hourly"
    wait_until(lambda: Job.objects.filter(task_path=hourly).count() >= 3)
    caught_up = Job.objects.filter(task_path=hourly).count()
    runs = sorted(
        RecurringExecution.objects.filter(task_key="qa catch up").values_list("run_at", flat=True)
    )
    assert caught_up == 3 and len(runs) == 3
    assert all(run.minute == 0 and run > timezone.now() - timedelta(hours=3) for run in runs)
    assert daily.schedule == "0 12 * * *" and daily.description == "Noon"
    assert daily.schedule_description == "every day at 12:00"
    assert every_second.queue_name == "low" and every_second.priority == 7

    beat = "tests.apps.acceptance_recurring_app.tasks.beat"
    wait_until(lambda: Job.objects.filter(task_path=beat, finished_at__isnull=False).count() >= 2)
    job = Job.objects.filter(task_path=beat).first()
    assert (job.queue_name, job.priority) == ("low", 7)
    wait_until(lambda: RecurringExecution.objects.filter(task_key="qa every second").count() >= 4)
    assert not RecurringExecution.objects.filter(task_key="qa daily report").exists()
    runs = list(
        RecurringExecution.objects.filter(task_key="qa every second").values_list(
            "run_at", flat=True
        )
    )
    assert len(runs) == len(set(runs))
    assert Job.objects.filter(task_path=beat).count() == len(runs)
    result = default_task_backend.get_result(str(job.pk))
    assert result.args == ["tick"]

    every_second.disable()
    disabled_at = timezone.now()
    deadline = disabled_at + timedelta(seconds=2.5)
    wait_until(lambda: timezone.now() > deadline, what="two and a half seconds")
    late = Job.objects.filter(task_path=beat, created_at__gt=disabled_at + timedelta(seconds=1.2))
    assert late.count() == 0

    every_second.enable()
    enabled_at = timezone.now()
    wait_until(lambda: Job.objects.filter(task_path=beat, created_at__gt=enabled_at).exists())

    daily.enable()
    job = daily.enqueue_now()
    assert job.task_path == beat
    assert default_task_backend.get_result(str(job.pk)).kwargs == {"label": "noon"}


def beat_path() -> str:
    return "tests.apps.acceptance_recurring_app.tasks.beat"


def test_hooks_and_job_log_lines(steady_queue_command, tmp_path):
    log = tmp_path / "runs.log"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", "-v", "1", SQ_QA_FAILING_HOOK="1")
    ready(supervisor, 2)
    result = write_line.enqueue(str(log), "logged")  # a failing hook stops nothing
    wait_until(lambda: status(result) == "SUCCESSFUL")
    supervisor.send(signal.SIGTERM)
    supervisor.wait(timeout=20)

    output = supervisor.output()
    job_lines = [line for line in output.splitlines() if result.id in line]
    assert any("steady_queue.jobs" in line and "INFO" in line for line in job_lines), output
    assert len(job_lines) >= 2  # start and finish
    assert "DEBUG" not in output
    # The failing hook was logged, with the process object it received.
    assert "hook failed in worker-" in output and "'threads': 2" in output
    # Polling (every 50 ms here) logs nothing at INFO: a few lines per process and job.
    assert len([line for line in output.splitlines() if " INFO " in line]) < 20, output

    hooks = (tmp_path / "hooks.log").read_text().split("\n")
    events = {" ".join(line.split()[:2]) for line in hooks if line}
    assert {"Supervisor start", "Worker start", "Dispatcher start"} <= events
    assert {"Supervisor stop", "Worker stop", "Dispatcher stop"} <= events


def test_pidfile_refuses_a_second_live_supervisor(steady_queue_command, tmp_path):
    pidfile_path = tmp_path / "supervisor.pid"
    pidfile = str(pidfile_path)
    first = steady_queue_command(*QUICK, "--skip-recurring", SQ_SUPERVISOR_PIDFILE=pidfile)
    ready(first, 2)
    assert int(pidfile_path.read_text().strip()) == first.pid
    second = steady_queue_command(*QUICK, "--skip-recurring", SQ_SUPERVISOR_PIDFILE=pidfile)
    assert second.wait(timeout=30) != 0


def test_second_term_while_stopping_is_quit(steady_queue_command, tmp_path):
    log, release = tmp_path / "runs.log", tmp_path / "never"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", SQ_SHUTDOWN_TIMEOUT="60")
    ready(supervisor, 2)
    result = hold_until.enqueue(str(log), "twice", str(release))
    wait_until(lambda: lines(log, "start") == ["twice"], what="the job to start")
    supervisor.send(signal.SIGTERM)
    wait_until(lambda: "SIGTERM" in supervisor.output(), what="the stop to begin")
    supervisor.send(signal.SIGTERM)
    supervisor.wait(timeout=20)  # far less than the 60 s shutdown_timeout
    assert Job.objects.get(pk=result.id).state == "ready"


def test_signal_to_one_child_stops_it_and_the_supervisor_replaces_it(steady_queue_command):
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", "-v", "0")
    [worker] = [row for row in ready(supervisor, 2) if row.kind == "Worker"]
    os.kill(worker.pid, signal.SIGTERM)
    wait_until(lambda: has_exited(worker.pid), what="the worker to exit")

    def replaced():
        rows = children(supervisor, "Worker")
        return rows if len(rows) == 1 and rows[0].pid != worker.pid else None

    wait_until(replaced, what="a replacement worker")
    assert supervisor.popen.poll() is None
    # -v 0 logs warnings only.
    assert " INFO " not in supervisor.output() and " DEBUG " not in supervisor.output()


def test_maintenance_releases_a_key_blocked_past_its_duration(steady_queue_command):
    from tests.tasks.acceptance import briefly_limited

    holder = briefly_limited.enqueue("holder")  # never runs: no worker; holds the slot
    waiting = briefly_limited.enqueue("waiting")
    assert Job.objects.get(pk=waiting.id).state == "blocked"
    supervisor = steady_queue_command(
        "--config", "tests.acceptance.configs.MAINTENANCE", "--skip-recurring"
    )
    ready(supervisor, 1)
    # duration is one second: the dispatcher's maintenance releases the waiting job.
    wait_until(lambda: Job.objects.get(pk=waiting.id).state == "ready", timeout=15)
    assert Job.objects.get(pk=holder.id).state == "ready"


@pytest.mark.skipif(
    __import__("django.db").db.connection.vendor != "postgresql",
    reason="LISTEN/NOTIFY is PostgreSQL's (DESIGN: polling stays the fallback elsewhere)",
)
def test_postgres_wakes_idle_processes_at_once(steady_queue_command, tmp_path):
    log = tmp_path / "runs.log"
    supervisor = steady_queue_command(
        "--config", "tests.acceptance.configs.SLOW_POLLING", "--skip-recurring"
    )
    ready(supervisor, 2)
    first = write_line.enqueue(str(log), "first")
    wait_until(lambda: status(first) == "SUCCESSFUL", timeout=40)
    # The worker is idle now, sleeping its 30 s polling interval: NOTIFY must wake it.
    second = write_line.enqueue(str(log), "second")
    wait_until(lambda: status(second) == "SUCCESSFUL", timeout=5, what="a woken worker")
    # Same for the dispatcher and a scheduled job coming due.
    later = write_line.using(run_after=timedelta(seconds=1)).enqueue(str(log), "later")
    wait_until(lambda: status(later) == "SUCCESSFUL", timeout=6, what="a woken dispatcher")


def test_frozen_worker_is_pruned_and_its_late_finish_changes_nothing(
    steady_queue_command, tmp_path
):
    log, release = tmp_path / "runs.log", tmp_path / "release"
    supervisor = steady_queue_command(*QUICK, "--skip-recurring", SQ_ALIVE_THRESHOLD="2")
    [worker] = [row for row in ready(supervisor, 2) if row.kind == "Worker"]
    result = hold_until.enqueue(str(log), "frozen", str(release))
    wait_until(lambda: lines(log, "start") == ["frozen"], what="the job to start")

    freeze(worker)  # no more heartbeats
    try:
        wait_until(lambda: status(result) == "FAILED", timeout=20, what="the prune")
    finally:
        release.touch()
        os.kill(worker.pid, signal.SIGCONT)
    error = default_task_backend.get_result(result.id).errors[-1]
    from steady_queue.processes import ProcessPrunedError

    assert error.exception_class is ProcessPrunedError
    assert error.exception_class_path == "steady_queue.processes.ProcessPrunedError"

    # The job function finishes late: the job stays failed.
    wait_until(lambda: lines(log, "end") == ["frozen"], what="the late finish")
    # Pruned, the worker stops once its in-flight job is done: its finish has been tried.
    wait_until(lambda: has_exited(worker.pid), what="the pruned worker to exit")
    late = default_task_backend.get_result(result.id)
    assert late.status == "FAILED" and late.finished_at is not None
    assert Job.objects.get(pk=result.id).state == "failed"
