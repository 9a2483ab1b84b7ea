"""Each database's fast storage writes the successes of threads that finish together at once.

One statement on PostgreSQL (postgres_grouped), one script on MySQL (mysql_grouped),
one write transaction on SQLite (sqlite_grouped).

Each test holds the first thread's write until the others wait behind it, so that the
others' finishes are one group (storage.finish_group), then checks what the database
holds: every job finished once, with its own value and attempt, every thread given a
job of its own, a lost claim finishing nothing, a failed group finishing every job alone.
"""

from __future__ import annotations

import os
import threading

import pytest
from django.db import OperationalError, connection, connections

from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from steady_queue.models.execution.claimed_finish import Success
from steady_queue.storage.finish_group import FinishGroups
from tests import tasks

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 10
THREADS = 4


class Gate:
    """The storage's group write, holding the first write until the others all wait."""

    def __init__(self, store, fail_groups: bool = False):
        self.store, self.fail_groups = store, fail_groups
        self.sizes: list[int] = []
        self.statements: list[str] = []
        self.write = store.finish_groups._write  # the database's own
        store.finish_groups = FinishGroups(self)

    def waiting(self) -> int:
        return sum(len(group._waiting) for group in self.store.finish_groups._groups.values())

    def __call__(self, shape, entries):
        self.sizes.append(len(entries))
        if len(self.sizes) == 1:
            assert wait_until(lambda: self.waiting() == THREADS - 1)
        elif self.fail_groups:
            raise OperationalError("server closed the connection unexpectedly")
        with connection.execute_wrapper(self._log):
            return self.write(shape, entries)

    def _log(self, execute, sql, params, many, context):
        self.statements.append(sql)
        return execute(sql, params, many, context)


def wait_until(condition) -> bool:
    event = threading.Event()
    for _ in range(DEADLINE * 1000):
        if condition():
            return True
        event.wait(0.001)
    return False


@pytest.fixture
def process(db):
    return Process.register(kind=Process.Kind.WORKER, name="grouped", pid=os.getpid())


def claimed_jobs(fast, process, count: int, more_ready: int) -> list[ClaimedExecution]:
    calls = [Job.for_task_call(tasks.add, (i, i), {}, backend="default") for i in range(count)]
    fast.enqueue(calls)
    claimed = fast.claim(["*"], count, process)
    assert len(claimed) == count
    extra = [Job.for_task_call(tasks.add, (0, i), {}, backend="default") for i in range(more_ready)]
    fast.enqueue(extra)
    return claimed


def finish_in_threads(fast, process, claimed, *, allowed=lambda: True) -> list:
    results: list = [None] * len(claimed)
    then = storage.ClaimNext(["*"], process, allowed=allowed)

    def finish(index: int) -> None:
        try:
            results[index] = fast.finish(claimed[index], Success(index * 10), then_claim=then)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finish, args=(i,)) for i in range(len(claimed))]
    threads[0].start()
    assert wait_until(lambda: len(gate_of(fast).sizes) == 1)  # the first one writes
    for thread in threads[1:]:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    return results


def gate_of(fast) -> Gate:
    return fast.finish_groups._write


def test_threads_finishing_together_share_one_statement(fast, process):
    claimed = claimed_jobs(fast, process, THREADS, more_ready=THREADS)
    gate = Gate(fast)

    results = finish_in_threads(fast, process, claimed)

    assert gate.sizes == [1, THREADS - 1]
    # The first alone, then the group of three: a statement each (a script on MySQL), a
    # transaction each on SQLite.
    if connection.vendor == "sqlite":
        assert sum(sql.startswith("BEGIN IMMEDIATE") for sql in gate.statements) == 2
    else:
        assert len(gate.statements) == 2
    for index, execution in enumerate(claimed):
        job = Job.objects.get(pk=execution.job_id)
        assert job.finished_at is not None and job.return_value == index * 10
        assert len(job.attempts) == 1 and job.attempts[0]["finished_at"]
        assert results[index].recorded and not results[index].claim_failed
    next_ids = [finished.claimed[0].job_id for finished in results]
    assert len(set(next_ids)) == THREADS  # a job of its own for each thread
    assert set(ClaimedExecution.objects.values_list("job_id", flat=True)) == set(next_ids)
    assert not ReadyExecution.objects.exists()


def test_a_group_claims_only_what_is_there_and_only_for_threads_allowed(fast, process):
    claimed = claimed_jobs(fast, process, THREADS, more_ready=1)
    Gate(fast)
    answers = iter([True, True, False, True])  # the third thread to ask may not claim
    lock = threading.Lock()

    def allowed() -> bool:
        with lock:
            return next(answers)

    results = finish_in_threads(fast, process, claimed, allowed=allowed)

    assert all(finished.recorded for finished in results)
    taken = [finished.claimed for finished in results if finished.claimed]
    assert len(taken) == 1 and ClaimedExecution.objects.count() == 1  # the one ready job
    not_asking = [finished for finished in results if finished.claimed is None]
    assert len(not_asking) == 1 and not not_asking[0].claim_failed


def test_a_lost_claim_in_a_group_finishes_nothing_and_the_others_finish(fast, process):
    claimed = claimed_jobs(fast, process, THREADS, more_ready=0)
    lost = claimed[2]
    ClaimedExecution.objects.filter(job_id=lost.job_id).delete()  # pruned meanwhile
    Gate(fast)

    results = finish_in_threads(fast, process, claimed)

    assert [finished.recorded for finished in results] == [True, True, False, True]
    assert Job.objects.get(pk=lost.job_id).finished_at is None
    assert Job.objects.filter(finished_at__isnull=False).count() == THREADS - 1


def test_a_failed_group_statement_leaves_each_job_to_finish_alone(fast, process):
    claimed = claimed_jobs(fast, process, THREADS, more_ready=THREADS)
    gate = Gate(fast, fail_groups=True)

    results = finish_in_threads(fast, process, claimed)

    assert gate.sizes == [1, THREADS - 1]
    for index, execution in enumerate(claimed):
        job = Job.objects.get(pk=execution.job_id)
        assert job.return_value == index * 10 and len(job.attempts) == 1
    assert all(finished.recorded and len(finished.claimed) == 1 for finished in results)
    assert ClaimedExecution.objects.count() == THREADS
