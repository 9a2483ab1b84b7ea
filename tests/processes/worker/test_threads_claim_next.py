"""A worker thread that finishes a job claims its next one itself, without a poll."""

from __future__ import annotations

import os

import pytest
from django.db import OperationalError, connection

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from steady_queue.processes.worker import Worker
from steady_queue.storage.mysql import script as mysql_script
from steady_queue.storage.postgres import storage as postgres
from tests import tasks
from tests.processes.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker():
    """A worker in this process: its pool threads run, its polling loop does not."""
    worker = Worker(queues=["*"], threads=2)
    worker.open_wakeup_pipe()
    worker.process = Process.register(kind=Process.Kind.WORKER, name=worker.name, pid=os.getpid())
    worker.pool.start()
    yield worker
    worker.stop()
    worker.pool.shutdown()
    worker.pool.join(timeout=5)
    worker.close_wakeup_pipe()


def finished() -> int:
    return Job.objects.filter(finished_at__isnull=False).count()


def test_one_poll_drains_the_queue(worker):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(20)])

    worker.poll()  # claims two jobs, one per thread; the threads claim the rest

    wait_until(lambda: finished() == 20, what="all twenty jobs")
    assert not ReadyExecution.objects.exists() and not ClaimedExecution.objects.exists()
    wait_until(lambda: worker.pool.idle_threads == 2, what="the threads to go idle")


def test_threads_claim_nothing_while_claims_are_paused(worker):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(6)])

    with worker.ledger.no_new_claims():
        worker.poll()
        wait_until(lambda: finished() == 2, what="the two polled jobs")
        wait_until(lambda: worker.pool.idle_threads == 2, what="the threads to go idle")
        assert ReadyExecution.objects.count() == 4

    worker.poll()
    wait_until(lambda: finished() == 6, what="the rest, once claims resume")


def test_a_stopping_worker_claims_no_more(worker):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(6)])
    worker.stopping = True

    worker._hand_out(storage.claim(["*"], 1, worker.process))

    wait_until(lambda: finished() == 1, what="the posted job")
    wait_until(lambda: worker.pool.idle_threads == 2, what="the thread to go idle")
    assert ReadyExecution.objects.count() == 5


@pytest.mark.skipif(
    connection.vendor not in ("postgresql", "mysql"),
    reason="only PostgreSQL and MySQL claim in the success statement (script)",
)
def test_a_success_statement_lost_after_its_commit_runs_every_job_once(worker, monkeypatch):
    """The statement recording a success committed, with the next job's claim, but the
    connection broke before the answer came back: that claim is released, never run twice."""
    lost = lose_the_answer_after_commit(monkeypatch)
    enqueue_all([(tasks.echo, (i,), {}) for i in range(8)])

    worker.poll()
    wait_until(lambda: lost and worker.pool.idle_threads == 2, what="the lost answer")
    assert ClaimedExecution.objects.filter(job_id=lost[0]).exists()  # claimed, not running

    def poll_until_idle() -> bool:  # the next poll releases the lost claim, then runs it
        worker.poll()
        wait_until(lambda: worker.pool.idle_threads == 2, what="the threads to go idle")
        return finished() == 8

    wait_until(poll_until_idle, what="every job, the lost claim's too")

    assert sorted(args for (args, _) in tasks.CALLS) == [(i,) for i in range(8)]
    assert not ClaimedExecution.objects.exists() and not ReadyExecution.objects.exists()


def lose_the_answer_after_commit(monkeypatch) -> list[int]:
    """Make the first success that claims a next job commit, then fail as a broken
    connection would; the list gets the id of the job that claim took."""
    lost: list[int] = []
    if connection.vendor == "postgresql":
        made = postgres._finish_and_claim

        def commit_then_lose_the_answer(claimed, params, then_claim):
            recorded, claimed_next = made(claimed, params, then_claim)
            if not lost and claimed_next:
                lost.append(claimed_next[0].job_id)
                raise OperationalError("server closed the connection unexpectedly")
            return recorded, claimed_next

        monkeypatch.setattr(postgres, "_finish_and_claim", commit_then_lose_the_answer)
        return lost
    run = mysql_script.run

    def run_then_lose_the_answer(statements):
        results = run(statements)
        finishing = statements[1][0].startswith(f"DELETE FROM {claims_table()}")
        claimed_jobs = results[-2].rows  # a finish that claims: its last select, the jobs
        if not lost and finishing and claimed_jobs:
            lost.append(claimed_jobs[0][0])
            raise OperationalError("server closed the connection unexpectedly")
        return results

    monkeypatch.setattr(mysql_script, "run", run_then_lose_the_answer)
    return lost


def claims_table() -> str:
    return connection.ops.quote_name(ClaimedExecution._meta.db_table)
