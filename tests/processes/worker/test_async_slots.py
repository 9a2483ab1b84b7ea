"""A worker's event loop for async jobs (``processes.worker.async_slots``), run in this process.

The worker's threads, loop and helper threads run for real against the test database;
only its main loop does not: the tests poll it themselves (``drive``).
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
from asgiref.sync import SyncToAsync
from opentelemetry.trace import SpanKind

import steady_queue
from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.compat import task_finished, task_started
from steady_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    Process,
    ReadyExecution,
    ScheduledExecution,
)
from steady_queue.processes.outages import close_connections
from steady_queue.processes.worker import Worker
from steady_queue.processes.worker.async_claims import REPROBE_INTERVAL, ClaimRoom, sort_claims
from steady_queue.runner import deadlines
from tests.observability.test_tracing import EXPORTER
from tests.processes.conftest import RunLog, wait_until
from tests.tasks import async_tasks as tasks

pytestmark = pytest.mark.django_db(transaction=True)


def make_worker(**options) -> Worker:
    worker = Worker(queues=["*"], **{"threads": 2, "async_concurrency": 50, **options})
    worker.open_wakeup_pipe()
    worker.process = Process.register(kind=Process.Kind.WORKER, name=worker.name, pid=os.getpid())
    worker.pool.start()
    worker.async_slots.start()
    deadlines.watchdog().on_abandon = worker._abandoned
    return worker


@pytest.fixture
def worker():
    """A worker in this process: its threads and loop run, its polling loop does not."""
    worker = make_worker()
    yield worker
    stop(worker)


def stop(worker: Worker) -> None:
    worker.stop()
    worker.pool.shutdown()
    worker.async_slots.shutdown()
    worker.pool.join(timeout=5)
    worker.async_slots.join(timeout=5)
    worker.close_wakeup_pipe()
    deadlines.watchdog().on_abandon = None
    # sync_to_async (acancelled) runs on asgiref's one thread: close its connection too.
    SyncToAsync.single_thread_executor.submit(close_connections).result()


def drive(worker: Worker, condition, *, timeout: float = 20.0, what: str = ""):
    """Poll as the worker's own loop would (without its waits) until ``condition()``."""

    def polled():
        worker.poll()
        return condition()

    return wait_until(polled, timeout=timeout, what=what)


def ended() -> int:
    return Job.objects.filter(finished_at__isnull=False).count() + FailedExecution.objects.count()


def failure(result) -> FailedExecution:
    return FailedExecution.objects.get(job_id=result.id)


def test_async_jobs_share_the_loop_and_each_ends_once(worker):
    enqueue_all([(tasks.nap, (0.5,), {}) for _ in range(40)])

    started = time.monotonic()
    drive(worker, lambda: ended() == 40, what="forty naps")
    span = time.monotonic() - started

    # One at a time per thread, forty naps of 0.5 s would take 10 s.
    assert span < 4, f"forty naps of 0.5 s took {span:.2f} s"
    jobs = Job.objects.all()
    assert {len(attempts) for attempts in jobs.values_list("attempts", flat=True)} == {1}
    assert {job.finished_at is not None for job in jobs} == {True}
    assert not ClaimedExecution.objects.exists()
    wait_until(lambda: not worker.running_job_ids, what="the slots to empty")
    assert worker.async_slots.free_slots == 50 and worker.jobs_run == 40


def test_failures_are_recorded_as_on_a_thread(worker):
    raised = tasks.raises.enqueue("kaboom")
    unstorable = tasks.returns_a_set.enqueue()
    cancelled_inside = tasks.ends_itself_cancelled.enqueue()
    own_timeout = tasks.times_out_by_itself.enqueue()

    drive(worker, lambda: ended() == 4, what="four failures")

    assert failure(raised).exception_class == "builtins.ValueError"
    assert failure(raised).message == "kaboom"
    assert failure(unstorable).exception_class == "builtins.TypeError"
    assert failure(cancelled_inside).exception_class == "asyncio.exceptions.CancelledError"
    assert failure(cancelled_inside).message == "from inside"
    assert failure(own_timeout).exception_class == "builtins.TimeoutError"
    for result in (raised, unstorable, cancelled_inside):
        assert len(Job.objects.get(pk=result.id).attempts) == 1
    wait_until(lambda: worker.async_slots.free_slots == 50, what="the slots to empty")


def test_retries_and_reschedules_are_as_on_a_thread(worker):
    retried = tasks.fails_then_retries.enqueue()
    rescheduled = tasks.reschedules.enqueue()

    drive(worker, lambda: ScheduledExecution.objects.count() == 2, what="both to be scheduled")

    [attempt] = Job.objects.get(pk=retried.id).attempts
    assert attempt["error"]["exception_class"] == "builtins.ValueError"
    assert Job.objects.get(pk=rescheduled.id).attempts == []  # not an attempt
    assert not FailedExecution.objects.exists() and not ClaimedExecution.objects.exists()
    wait_until(lambda: worker.async_slots.free_slots == 50, what="the slots to empty")


def test_a_timeout_cancels_the_coroutine(worker):
    result = tasks.oversleeps.enqueue()

    drive(worker, lambda: ended() == 1, what="the timeout")

    assert failure(result).exception_class == "steady_queue.exceptions.JobTimeout"
    assert failure(result).message == f"Job {result.id} ran past its timeout of 0.3 s"
    wait_until(lambda: worker.async_slots.free_slots == 50, what="the slot to empty")
    assert not worker._stuck  # the coroutine stopped: nothing was given up on


def test_a_coroutine_blocking_the_loop_has_its_job_ended_for_it_once(worker):
    result = tasks.blocks_the_loop.enqueue(1.0)
    quick = tasks.nap.enqueue(0.01)

    drive(worker, lambda: failure_or_none(result), what="the watchdog to end the job")

    assert failure(result).exception_class == "steady_queue.exceptions.JobTimeout"
    assert "Where the task was:" in failure(result).backtrace
    # The watchdog records the failure, then gives the loop up: the job leaves the ledger.
    drive(
        worker,
        lambda: worker._stuck and result.id not in [str(i) for i in worker.running_job_ids],
        what="the loop to be given up",
    )
    assert worker._stuck and worker.async_slots.stuck()
    # Once the C call returns, the late success finds no claim, and changes nothing.
    drive(worker, lambda: not worker.async_slots.stuck(), what="the loop to come back")
    drive(worker, lambda: Job.objects.get(pk=quick.id).finished_at, what="the next job")
    job = Job.objects.get(pk=result.id)
    assert job.finished_at is None and len(job.attempts) == 1
    assert FailedExecution.objects.filter(job_id=result.id).count() == 1


def failure_or_none(result) -> FailedExecution | None:
    return FailedExecution.objects.filter(job_id=result.id).first()


def test_a_task_that_looks_ends_cancelled(worker):
    result = tasks.until_cancelled.enqueue()
    drive(worker, lambda: worker.running_job_ids, what="the job to start")
    assert worker.live_metadata()["async_running"] == 1

    Job.objects.get(pk=result.id).cancel()

    drive(worker, lambda: ended() == 1, what="the cancelled job to end")
    assert failure(result).exception_class == "steady_queue.exceptions.JobCancelled"
    assert Job.objects.get(pk=result.id).finished_at is None


def test_a_task_that_does_not_look_is_interrupted_after_its_grace(worker, monkeypatch):
    monkeypatch.setattr(steady_queue, "cancel_grace", timedelta(seconds=0.2))
    result = tasks.ignores_cancellation.enqueue()
    drive(worker, lambda: worker.running_job_ids, what="the job to start")

    Job.objects.get(pk=result.id).cancel()
    worker._cancellations._next_check = 0  # ask now rather than in two seconds

    drive(worker, lambda: ended() == 1, what="the interrupt")
    assert failure(result).exception_class == "steady_queue.exceptions.JobCancelled"
    assert "was cancelled and did not stop in time" in failure(result).message
    wait_until(lambda: worker.async_slots.free_slots == 50, what="the slot to empty")
    assert not worker._stuck


def test_signals_and_the_span_of_an_async_run(worker, tmp_path):
    log = RunLog(tmp_path / "where.log")
    started, finished = [], []

    def on_started(sender, task_result, **kwargs):
        started.append(task_result.id)

    def on_finished(sender, task_result, **kwargs):
        finished.append((task_result.id, task_result.status))

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    EXPORTER.clear()
    try:
        result = tasks.where.enqueue(str(log.path), "here")
        drive(worker, lambda: ended() == 1, what="the run")
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)

    assert started == [result.id]
    assert [(job_id, status.name) for job_id, status in finished] == [(result.id, "SUCCESSFUL")]
    [(_, thread, span_id)] = [line.split() for line in log.path.read_text().splitlines()]
    assert thread == f"{worker.name}-loop"
    (consumer,) = [s for s in EXPORTER.get_finished_spans() if s.kind == SpanKind.CONSUMER]
    assert f"{consumer.context.span_id:x}" == span_id  # current while the coroutine ran
    assert consumer.attributes["steady_queue.outcome"] == "succeeded"


def test_a_claim_beyond_the_idle_threads_gives_sync_jobs_back(tmp_path):
    worker = make_worker(threads=1)
    log = str(tmp_path / "runs.log")
    try:
        enqueue_all([(tasks.sync_record, (log, str(i)), {}) for i in range(3)])
        enqueue_all([(tasks.nap, (0.01,), {}) for _ in range(2)])
        claimed = storage.claim(["*"], 5, worker.process)

        to_loop, to_threads, surplus = sort_claims(claimed, 1, worker.async_slots)
        assert [len(to_loop), len(to_threads), len(surplus)] == [2, 1, 2]
        assert {e.job.task_path for e in to_loop} == {"tests.tasks.async_tasks.nap"}

        with worker.ledger.no_new_claims():  # the thread claims no next job: see what is left
            worker._hand_out(claimed)
            wait_until(lambda: ended() == 3, what="the three jobs handed out")
            assert ReadyExecution.objects.count() == 2  # given back, not waiting for a thread
    finally:
        stop(worker)


def test_a_thread_hands_an_async_job_it_claimed_to_the_loop(tmp_path):
    worker = make_worker(threads=1)
    log = RunLog(tmp_path / "where.log")
    try:
        tasks.sync_record.enqueue(str(tmp_path / "runs.log"), "first")
        tasks.where.enqueue(str(log.path), "next")
        worker._hand_out(storage.claim(["*"], 1, worker.process))  # the first, to a thread
        wait_until(lambda: ended() == 2, what="both jobs, without a poll")
    finally:
        stop(worker)
    [(_, thread, _)] = [line.split() for line in log.path.read_text().splitlines()]
    assert thread == f"{worker.name}-loop"


def test_recycle_after_jobs_counts_async_jobs(tmp_path):
    worker = make_worker(recycle_after_jobs=5)
    try:
        enqueue_all([(tasks.nap, (0.05,), {}) for _ in range(20)])
        drive(worker, lambda: worker.stopping, what="the worker to recycle itself")
    finally:
        stop(worker)
    assert Job.objects.filter(finished_at__isnull=False).count() == 5
    assert ReadyExecution.objects.count() == 15
    assert worker.recycling.reason == "after 5 jobs"


def test_claims_for_the_slots_follow_what_the_last_claims_found():
    room = ClaimRoom(100)
    assert room.room(free=100) == 1  # a first look

    room.found(3)
    assert room.room(free=100) == 6 and room.room(free=4) == 4
    room.found(80)
    assert room.room(free=100) == 100  # never more than the slots
    for expected in (50, 25, 12, 6, 3, 1, 0):
        room.found(0, gave_back=2)  # only sync jobs, some given back
        assert room.room(free=100) == expected
    assert 0 < room.probe_delay(100, 60.0) <= REPROBE_INTERVAL
    assert room.probe_delay(0, 60.0) == 60.0  # no slot free: nothing to look for

    room._reprobe_at = time.monotonic()  # REPROBE_INTERVAL later: one look again
    assert room.room(free=100) == 1 and room.probe_delay(100, 60.0) == 60.0
