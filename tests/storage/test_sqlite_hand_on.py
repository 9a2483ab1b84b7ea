"""SQLite's hand-on of a concurrency slot (storage/sqlite_hand_on.py): what it sends, and
that finishing threads racing for one claim record it, and pass its slot on, once.

test_slot_hand_on.py holds it to the portable hand-on's behaviour.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import BlockedExecution, ClaimedExecution, Job, Semaphore
from steady_queue.models.claimed_finish import Success
from tests.storage.statements import sent
from tests.tasks import features as limited_tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's storage"),
]


def test_a_hand_on_is_one_transaction_of_seven_statements(worker_process):
    enqueue_all([(limited_tasks.exclusive, (i,), {}) for i in range(3)])
    (claimed,) = storage.claim(["default", "beta*"], 1, worker_process)
    then = storage.ClaimNext(["default", "beta*"], worker_process)

    with CaptureQueriesContext(connection) as queries:
        finished = storage.for_alias().finish(claimed, Success([0.0, 0.0]), then_claim=then)

    assert sent(queries) == [
        "BEGIN IMMEDIATE",
        'DELETE FROM "steady_queue_claimed_executions"',
        'UPDATE "steady_queue_jobs" SET',
        'DELETE FROM "steady_queue_blocked_executions"',
        'UPDATE "steady_queue_semaphores" SET',
        'INSERT INTO "steady_queue_claimed_executions"',
        "COMMIT",
    ]
    (following,) = finished.claimed
    assert following.job.arguments["args"] == [1]  # the job's row, loaded as the ORM would
    assert ClaimedExecution.objects.get().job_id == following.job_id
    assert BlockedExecution.objects.count() == 1


def test_threads_finishing_the_same_claim_record_it_and_hand_its_slot_on_once(worker_process):
    enqueue_all([(limited_tasks.exclusive, (i,), {}) for i in range(3)])
    (claimed,) = storage.claim(["*"], 1, worker_process)
    barrier, finished, errors = threading.Barrier(3), [], []

    def finish() -> None:
        try:
            mine = ClaimedExecution.objects.select_related("job", "process").get(
                job_id=claimed.job_id
            )
            then = storage.ClaimNext(["*"], worker_process)
            barrier.wait(timeout=10)
            finished.append(storage.for_alias().finish(mine, Success([0.0, 0.0]), then_claim=then))
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=finish) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert not any(thread.is_alive() for thread in threads), "a thread never finished"
    assert errors == []
    assert sorted(f.recorded for f in finished) == [False, False, True]
    handed = [c.job_id for f in finished for c in f.claimed or []]
    assert len(handed) == 1  # the slot's one job, claimed once
    assert list(ClaimedExecution.objects.values_list("job_id", flat=True)) == handed
    assert BlockedExecution.objects.count() == 1
    assert Semaphore.objects.get().value == 0
    assert len(Job.objects.get(pk=claimed.job_id).attempts) == 1
