"""Jobs enqueued while a real supervisor runs get processed, in the configured order."""

from __future__ import annotations

import signal
from datetime import timedelta

import pytest

from steady_queue.models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]


def test_jobs_in_several_queues_and_scheduled_jobs_run_once(start_supervisor, run_log, hooks_log):
    supervisor = start_supervisor("FAST", children=2)
    for queue in ("default", "real_time", "background", "low"):
        for index in range(3):
            tasks.record.using(queue_name=queue).enqueue(str(run_log.path), f"{queue}-{index}")
    later = tasks.record.using(run_after=timedelta(seconds=0.5)).enqueue(
        str(run_log.path), "scheduled"
    )

    wait_until(lambda: finished_count() == 13, what="13 finished jobs")

    assert sorted(run_log.entries()) == sorted(
        [f"{q}-{i}" for q in ("default", "real_time", "background", "low") for i in range(3)]
        + ["scheduled"]
    )
    assert later.status == "READY"  # the enqueued snapshot; the stored job is done
    assert Job.objects.get(pk=later.id).attempts[0]["worker_id"].startswith("worker-")
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
    assert not Process.objects.exists()
    events = hooks_log.read_text().split("\n")
    for kind in ("Supervisor", "Worker", "Dispatcher"):
        assert any(line.startswith(f"{kind} start") for line in events)
        assert any(line.startswith(f"{kind} stop") for line in events)


def test_processes_are_registered_with_their_metadata(start_supervisor, hooks_log):
    supervisor = start_supervisor("FAST", children=3, recurring=True)

    row = supervisor.row()
    worker, dispatcher, scheduler = (
        Process.objects.get(supervisor=row, kind=kind)
        for kind in (Process.Kind.WORKER, Process.Kind.DISPATCHER, Process.Kind.SCHEDULER)
    )
    assert row.name.startswith("supervisor-") and row.hostname
    assert worker.name.startswith("worker-") and worker.pid not in (row.pid, 0)
    configured = {key: worker.metadata[key] for key in ("queues", "threads", "polling_interval")}
    assert configured == {"queues": ["*"], "threads": 3, "polling_interval": 0.05}
    # Each heartbeat adds what the worker did so far.
    worker = wait_until(
        lambda: Process.objects.filter(pk=worker.pk, metadata__has_key="jobs_run").first(),
        what="a heartbeat with the worker's job count",
    )
    assert worker.metadata["jobs_run"] == 0 and worker.metadata["memory_mib"] > 10
    assert dispatcher.metadata["batch_size"] == 500
    assert dispatcher.metadata["polling_interval"] == 0.1
    assert scheduler.name.startswith("scheduler-")
    wait_until(lambda: "Scheduler start" in hooks_log.read_text(), what="the scheduler's hook")


def test_one_thread_runs_queues_in_the_configured_order(start_supervisor, run_log):
    for label, queue in [("b1", "background"), ("r1", "real_time"), ("b2", "background")]:
        tasks.record.using(queue_name=queue).enqueue(str(run_log.path), label)
    tasks.record.using(queue_name="real_time", priority=5).enqueue(str(run_log.path), "r2")

    start_supervisor("QUEUE_ORDER", children=1)
    wait_until(lambda: finished_count() == 4, what="4 finished jobs")

    assert run_log.entries() == ["r2", "r1", "b1", "b2"]


def test_one_thread_runs_higher_priorities_first(start_supervisor, run_log):
    for label, priority in [("low", -10), ("normal", 0), ("urgent", 50), ("normal-2", 0)]:
        tasks.record.using(priority=priority).enqueue(str(run_log.path), label)

    start_supervisor("ONE_THREAD", children=1)
    wait_until(lambda: finished_count() == 4, what="4 finished jobs")

    assert run_log.entries() == ["urgent", "normal", "normal-2", "low"]


def test_a_paused_queue_is_skipped_until_resumed(start_supervisor, run_log):
    Pause.objects.create(queue_name="low")
    paused = tasks.record.using(queue_name="low").enqueue(str(run_log.path), "paused")
    start_supervisor("WORKER", children=1)
    tasks.record.enqueue(str(run_log.path), "first")
    tasks.record.using(queue_name="background").enqueue(str(run_log.path), "second")

    # Both jobs enqueued after the paused one ran, several polls later: it was skipped.
    wait_until(lambda: finished_count() == 2, what="the unpaused jobs")
    assert ReadyExecution.objects.filter(job_id=paused.id).exists()

    Pause.objects.filter(queue_name="low").delete()
    wait_until(lambda: finished_count() == 3, what="the resumed job")
    assert sorted(run_log.entries()[:2]) == ["first", "second"]
    assert run_log.entries()[2:] == ["paused"]
    assert not ClaimedExecution.objects.exists()


def test_worker_threads_keep_their_database_connection_between_jobs(start_supervisor, run_log):
    start_supervisor("ONE_THREAD", children=1)
    for index in range(5):
        tasks.remember_connection.enqueue(str(run_log.path), str(index))

    wait_until(lambda: finished_count() == 5, what="5 finished jobs")

    assert len({entry.split("@")[1] for entry in run_log.entries()}) == 1
