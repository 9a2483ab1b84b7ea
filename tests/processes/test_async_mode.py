"""``manage.py steady_queue --mode async``: the same processes, as threads of one process."""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process, ReadyExecution
from tests.processes.conftest import wait_until
from tests.tasks import in_threads
from tests.tasks import processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

ASYNC = ("--mode", "async")
PRUNED_ERROR = "steady_queue.processes.ProcessPrunedError"


def start_holding_job(start_supervisor, run_log, tmp_path, **env: str):
    supervisor = start_supervisor("WORKER", *ASYNC, children=1, **env)
    release = tmp_path / "release"
    result = tasks.hold.enqueue(str(run_log.path), "held", str(release))
    wait_until(lambda: run_log.entries("start") == ["held"], what="the job to start")
    return supervisor, Job.objects.get(pk=result.id), release


def assert_clean_exit(supervisor) -> None:
    assert supervisor.wait() == 0, supervisor.output()
    assert not Process.objects.exists()
    assert not ClaimedExecution.objects.exists()


def test_every_process_registers_its_own_row_in_the_supervisors_process(start_supervisor):
    supervisor = start_supervisor("FAST", *ASYNC, children=3, recurring=True)

    rows = supervisor.children()
    assert sorted(row.kind for row in rows) == ["Dispatcher", "Scheduler", "Worker"]
    assert {row.pid for row in rows} == {supervisor.pid}
    assert len({row.name for row in rows}) == 3
    assert supervisor.row().metadata["mode"] == "async"
    beats = {row.pk: row.last_heartbeat_at for row in rows}
    wait_until(
        lambda: all(
            Process.objects.get(pk=pk).last_heartbeat_at > beat for pk, beat in beats.items()
        ),
        what="each thread's own heartbeat",
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_graceful_stop_lets_the_running_job_finish_once(
    start_supervisor, run_log, tmp_path, hooks_log, signum
):
    supervisor, job, release = start_holding_job(start_supervisor, run_log, tmp_path)

    supervisor.send(signum)
    wait_until(lambda: "Worker stop" in hooks_log.read_text(), what="the worker to stop")
    late = tasks.record.enqueue(str(run_log.path), "late")
    release.touch()

    assert_clean_exit(supervisor)
    job.refresh_from_db()
    assert job.finished_at is not None and len(job.attempts) == 1
    assert run_log.entries("start") == run_log.entries("end") == ["held"]
    assert ReadyExecution.objects.filter(job_id=late.id).exists()  # claimed by nobody


def test_graceful_stop_past_shutdown_timeout_releases_the_job(start_supervisor, run_log, tmp_path):
    supervisor, job, _ = start_holding_job(
        start_supervisor, run_log, tmp_path, SQ_SHUTDOWN_TIMEOUT="0.5"
    )

    supervisor.send(signal.SIGTERM)

    assert_clean_exit(supervisor)
    assert ReadyExecution.objects.filter(job_id=job.pk).exists()
    job.refresh_from_db()
    assert job.finished_at is None and job.attempts == []


def test_quit_releases_the_running_job_at_once(start_supervisor, run_log, tmp_path):
    supervisor, job, _ = start_holding_job(start_supervisor, run_log, tmp_path)

    supervisor.send(signal.SIGQUIT)

    assert_clean_exit(supervisor)
    assert ReadyExecution.objects.filter(job_id=job.pk).exists()
    assert run_log.entries("end") == []


def test_a_worker_thread_that_crashes_is_restarted_in_place_and_work_goes_on(
    start_supervisor, run_log
):
    supervisor = start_supervisor("WORKER", *ASYNC, children=1)
    [worker] = supervisor.children()

    crash = in_threads.crash_my_worker.enqueue(str(run_log.path), "crash")

    replacement = wait_until(
        lambda: Process.objects.filter(kind=Process.Kind.WORKER).exclude(pk=worker.pk).first(),
        what="a worker in the crashed one's place",
    )
    assert replacement.pid == supervisor.pid == worker.pid  # the same process
    assert replacement.supervisor_id == supervisor.row().pk
    assert "WorkerLoopCrash" in supervisor.output()
    assert not Process.objects.filter(pk=worker.pk).exists()
    assert Job.objects.get(pk=crash.id).finished_at is not None
    later = [tasks.record.enqueue(str(run_log.path), f"later-{n}") for n in range(5)]
    wait_until(
        lambda: (
            Job.objects.filter(pk__in=[r.id for r in later], finished_at__isnull=False).count() == 5
        ),
        what="later jobs to run",
    )
    assert sorted(run_log.entries()) == ["crash", *(f"later-{n}" for n in range(5))]


def test_a_recycled_worker_thread_is_replaced_at_once_and_loses_no_job(start_supervisor, run_log):
    labels = [f"job-{n}" for n in range(40)]
    for label in labels:
        tasks.record.enqueue(str(run_log.path), label)
    supervisor = start_supervisor("RECYCLE_AFTER_JOBS", *ASYNC, children=2)

    # A job's attempt is written when it finishes, after the task wrote its line: wait on that.
    wait_until(
        lambda: Job.objects.filter(finished_at__isnull=False).count() == 40,
        what="every job to finish",
    )

    assert sorted(run_log.entries()) == sorted(labels)  # each once
    assert run_log.pids() == {supervisor.pid}
    runs = Job.objects.values_list("attempts", flat=True)
    per_worker = Counter(attempts[0]["worker_id"] for attempts in runs)
    assert max(per_worker.values()) == 10 and len(per_worker) >= 4, per_worker
    replaced = wait_until(
        lambda: [w for w in supervisor.children(Process.Kind.WORKER) if "replaced" in w.metadata],
        what="a worker that replaced a recycled one",
    )
    assert replaced[0].metadata["replaced"]["reason"] == "recycled after 10 jobs"
    assert replaced[0].pid == supervisor.pid


def test_several_async_supervisors_share_the_jobs_without_running_one_twice(
    start_supervisor, run_log
):
    first = start_supervisor("SCALE", *ASYNC, children=2)
    second = start_supervisor("SCALE", *ASYNC, children=2)
    labels = [f"job-{n}" for n in range(120)]

    for label in labels:
        tasks.record.enqueue(str(run_log.path), label, 0.005)

    wait_until(lambda: len(run_log.entries()) >= len(labels), what="every job to run")
    wait_until(lambda: not ClaimedExecution.objects.exists(), what="every claim to end")
    assert sorted(run_log.entries()) == sorted(labels)  # each once
    assert run_log.pids() <= {first.pid, second.pid}
    assert Job.objects.filter(finished_at__isnull=True).count() == 0


def test_a_killed_async_supervisor_leaves_its_jobs_to_the_next_supervisors_prune(
    start_supervisor, run_log, tmp_path
):
    timings = {"SQ_ALIVE_THRESHOLD": "1.5", "SQ_HEARTBEAT_INTERVAL": "0.2"}
    first, job, _ = start_holding_job(start_supervisor, run_log, tmp_path, **timings)
    [worker] = first.children()

    first.send(signal.SIGKILL)  # every thread dies with the process: nobody deregisters
    first.wait()
    assert ClaimedExecution.objects.filter(job_id=job.pk).exists()

    start_supervisor("WORKER", *ASYNC, children=1, **timings)
    failure = wait_until(
        lambda: FailedExecution.objects.filter(job_id=job.pk).first(), what="the job to fail"
    )
    assert failure.exception_class == PRUNED_ERROR
    assert not Process.objects.filter(pk=worker.pk).exists()
    assert run_log.entries("end") == []
