"""A worker's pool never loses a thread silently (issue 9, defect 2)."""

from __future__ import annotations

import functools
import threading

import pytest

from steady_queue import storage
from steady_queue.models import Job
from steady_queue.processes.worker.pool import Pool
from steady_queue.runner.perform import perform
from tests.processes.conftest import wait_until
from tests.tasks import finish as finish_tasks

pytestmark = pytest.mark.django_db(transaction=True)


def claim_one():
    """The work of running the one ready job, as a worker hands it to its pool."""
    (claimed,) = storage.claim(["*"], 1, None)
    return functools.partial(perform, claimed)


def finished(result) -> bool:
    return Job.objects.filter(pk=int(result.id), finished_at__isnull=False).exists()


@pytest.fixture
def pools():
    started = []
    yield started
    for pool in started:
        pool.shutdown()
        pool.join(timeout=5)


def test_a_job_raising_a_base_exception_leaves_the_thread_running_jobs(pools):
    pool = Pool(1, on_idle=lambda: None, name="test")
    pools.append(pool)
    pool.start()
    broken = finish_tasks.interrupted.enqueue()
    pool.submit(claim_one())
    wait_until(lambda: Job.objects.get(pk=int(broken.id)).state == "failed", what="a failure")

    later = finish_tasks.fine.enqueue()
    pool.submit(claim_one())

    wait_until(lambda: finished(later), what="the next job to run")
    wait_until(lambda: pool.idle_threads == 1, what="the thread to be idle")


def test_a_thread_that_dies_anyway_is_replaced(pools):
    calls = []

    def on_idle():
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            raise finish_tasks.Interrupted("the pool's own bookkeeping broke")

    pool = Pool(1, on_idle=on_idle, name="test")
    pools.append(pool)
    pool.start()
    first = finish_tasks.fine.enqueue("first")
    pool.submit(claim_one())
    wait_until(lambda: finished(first) and calls, what="the first job")

    later = finish_tasks.fine.enqueue("later")
    pool.submit(claim_one())

    wait_until(lambda: finished(later), what="the next job to run")
    wait_until(lambda: pool.idle_threads == 1, what="the thread to be idle")


def test_work_that_raises_leaves_the_pool_its_threads(pools):
    def broken():
        raise finish_tasks.Interrupted("a bug in the work itself")

    pool = Pool(1, on_idle=lambda: None, name="test")
    pools.append(pool)
    pool.start()
    pool.submit(broken)
    wait_until(lambda: pool.idle_threads == 1, what="the thread to be counted idle again")

    later = finish_tasks.fine.enqueue("later")
    pool.submit(claim_one())

    wait_until(lambda: finished(later), what="the next job to run on the replacement thread")
