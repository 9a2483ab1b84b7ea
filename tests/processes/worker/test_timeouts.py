"""Timeouts in a real worker: the thread is interrupted and reused, or replaced and recycled."""

from __future__ import annotations

import signal

import pytest

from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process
from tests.processes.conftest import finished_count, wait_until
from tests.tasks import timing_out as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

TIMEOUT = "steady_queue.exceptions.JobTimeout"


def test_a_task_in_python_code_times_out_and_its_thread_takes_the_next_job(start_supervisor):
    supervisor = start_supervisor("ONE_THREAD", children=1)
    spun = tasks.spins.enqueue()
    after = tasks.quick.enqueue()

    wait_until(lambda: finished_count() == 1, timeout=10, what="the job after the timeout")

    assert FailedExecution.objects.get(job_id=spun.id).exception_class == TIMEOUT
    [timed_out] = Job.objects.get(pk=spun.id).attempts
    [done] = Job.objects.get(pk=after.id).attempts
    assert done["worker_id"] == timed_out["worker_id"]  # the same one-thread worker
    assert "recycled" not in supervisor.output()
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def test_a_task_stuck_in_a_c_call_keeps_its_claim_its_thread_replaced_and_its_worker_recycled(
    start_supervisor,
):
    supervisor = start_supervisor("ONE_THREAD", children=1, SQ_TIMEOUT_GRACE="2")
    first = supervisor.children(Process.Kind.WORKER)[0]
    stuck = tasks.sleeps.enqueue(60.0)
    wait_until(
        lambda: ClaimedExecution.objects.filter(job_id=stuck.id).exists(),
        timeout=10,
        what="the stuck job to start",
    )
    # One thread, and it is stuck: only its replacement can run this.
    after = tasks.quick.enqueue()
    wait_until(lambda: finished_count() == 1, timeout=10, what="a job on the replacement thread")
    assert Job.objects.get(pk=after.id).attempts[0]["worker_id"] == first.name
    # While its thread lives, the stuck job keeps its claim: no slot handed on, no retry.
    assert ClaimedExecution.objects.filter(job_id=stuck.id).exists()
    assert not FailedExecution.objects.filter(job_id=stuck.id).exists()

    replacement = wait_until(
        lambda: [w for w in supervisor.children(Process.Kind.WORKER) if w.pk != first.pk],
        timeout=20,
        what="the worker that replaced the recycled one",
    )[0]
    assert replacement.metadata["replaced"]["reason"] == (
        "recycled with a job stuck past its timeout"
    )
    # Ended as the recycled worker exited, with where the thread was, and never run again.
    failed = FailedExecution.objects.get(job_id=stuck.id)
    assert failed.exception_class == TIMEOUT and "time.sleep" in failed.backtrace
    assert len(Job.objects.get(pk=stuck.id).attempts) == 1
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0
