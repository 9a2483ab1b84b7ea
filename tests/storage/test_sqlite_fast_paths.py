"""SQLite's fast storage: what each path sends, its write lock, and its one writer.

The contract tests (test_contract.py) hold it to the portable storage's behaviour; these
pin down its statements (BEGIN IMMEDIATE and COMMIT counted, as Django logs them), and
that concurrent claims and finishes of real threads each take a job exactly once.
"""

from __future__ import annotations

import sqlite3
import threading

import pytest
from django.db import OperationalError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, Job, ReadyExecution
from steady_queue.models.execution.claimed_finish import Success
from steady_queue.processes.worker import Worker
from steady_queue.runner.perform import perform
from steady_queue.storage import file_changes
from steady_queue.storage.sqlite import SqliteStorage
from steady_queue.storage.sqlite import claim as sqlite_claim
from tests import tasks
from tests.storage.statements import sent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's storage"),
]


def test_the_queue_database_uses_it():
    assert type(storage.for_alias()) is SqliteStorage


def test_a_claim_of_five_is_one_transaction_of_two_statements(worker_process):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])

    with CaptureQueriesContext(connection) as queries:
        claimed = storage.claim(["*"], 5, worker_process)

    assert len(claimed) == 5
    assert sent(queries) == [
        "BEGIN IMMEDIATE",
        'DELETE FROM "steady_queue_ready_executions"',
        'INSERT INTO "steady_queue_claimed_executions"',
        "COMMIT",
    ]


def test_claim_then_run_costs_four_statements_to_claim_five_and_four_per_finish(
    worker_process, django_assert_num_queries
):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])

    # The portable path: 7 + 5 * 4 (the pauses, then BEGIN, lock, insert claims, load
    # jobs, delete ready, COMMIT). Each finish: BEGIN, delete the claim, update the job,
    # COMMIT.
    with django_assert_num_queries(4 + 5 * 4):
        for claimed in storage.claim(["*"], 5, worker_process):
            perform(claimed)

    assert Job.objects.filter(finished_at__isnull=False).count() == 5
    assert not ClaimedExecution.objects.exists()


def test_a_busy_thread_finishes_and_claims_in_one_transaction_of_six_statements(
    worker_process,
):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(5)])
    worker = Worker(queues=["*"], threads=1)
    worker.process = worker_process
    first = storage.claim(["*"], 1, worker_process)[0]

    with CaptureQueriesContext(connection) as queries:
        worker._run(first)  # as a worker thread does, until nothing is left

    # The portable path: 11 per job (its finish, 4, and the pauses and a claim, 7).
    finish_and_claim = [
        "BEGIN IMMEDIATE",
        'DELETE FROM "steady_queue_claimed_executions"',
        'UPDATE "steady_queue_jobs" SET',
        'DELETE FROM "steady_queue_ready_executions"',
        'INSERT INTO "steady_queue_claimed_executions"',
        "COMMIT",
    ]
    # The last claim finds nothing, and asks whether that is because of a pause.
    last = [*finish_and_claim[:4], 'SELECT "steady_queue_pauses"."queue_name" AS', "COMMIT"]
    assert sent(queries) == finish_and_claim * 4 + last
    assert Job.objects.filter(finished_at__isnull=False).count() == 5
    assert not ClaimedExecution.objects.exists() and not ReadyExecution.objects.exists()


def test_a_claim_of_several_exact_queues_is_one_statement(worker_process):
    for queue in ("default", "real_time", "low"):
        enqueue_all([(tasks.add.using(queue_name=queue, priority=len(queue)), (1, 1), {})] * 2)

    with CaptureQueriesContext(connection) as queries:
        claimed = storage.claim(["real_time", "low", "default"], 5, worker_process)

    assert [c.job.queue_name for c in claimed] == ["real_time"] * 2 + ["low"] * 2 + ["default"]
    assert len(queries) == 4


def test_a_single_enqueue_is_two_inserts_in_one_transaction():
    with CaptureQueriesContext(connection) as queries:
        result = tasks.add.enqueue(1, 2)

    assert sent(queries) == [
        "BEGIN IMMEDIATE",
        'INSERT INTO "steady_queue_jobs"',
        'INSERT INTO "steady_queue_ready_executions"',
        "COMMIT",
    ]
    assert ReadyExecution.objects.get().job_id == int(result.id)


def test_a_bulk_enqueue_is_one_insert_per_table():
    with CaptureQueriesContext(connection) as queries:
        results = enqueue_all([(tasks.add, (i, i), {}) for i in range(40)])

    assert len(queries) == 4
    ids = [int(result.id) for result in results]
    assert ids == sorted(ids) and len(set(ids)) == 40
    stored = dict(Job.objects.values_list("pk", "arguments"))
    assert [stored[pk]["args"] for pk in ids] == [[i, i] for i in range(40)]
    assert sorted(ReadyExecution.objects.values_list("job_id", flat=True)) == ids


def test_it_takes_the_write_lock_first_whatever_the_settings_say(worker_process):
    tasks.add.enqueue(1, 2)
    connection.ensure_connection()
    configured, connection.transaction_mode = connection.transaction_mode, None  # DEFERRED
    try:
        with CaptureQueriesContext(connection) as queries:
            storage.claim(["*"], 1, worker_process)
            with transaction.atomic():
                Job.objects.count()
        assert connection.transaction_mode is None  # put back once the BEGIN was sent
    finally:
        connection.transaction_mode = configured

    begins = [sql for sql in sent(queries) if sql.startswith("BEGIN")]
    assert begins == ["BEGIN IMMEDIATE", "BEGIN"]


def test_an_older_sqlite_takes_the_portable_paths(worker_process, monkeypatch):
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 34, 1))
    enqueue_all([(tasks.add, (i, i), {}) for i in range(2)])

    with CaptureQueriesContext(connection) as queries:
        (claimed,) = storage.claim(["*"], 1, worker_process)
        finished = storage.for_alias().finish(claimed, Success(2))

    assert finished.recorded
    assert not any("RETURNING" in query["sql"] for query in queries.captured_queries)
    assert len(queries) == 7 + 4  # the portable claim and finish


def test_an_empty_claim_leaves_the_files_alone_and_wakes_no_idle_worker(worker_process):
    # Idle workers watch the database's files (storage.file_changes): a poll that finds
    # nothing takes the write lock but must write nothing, or polls would wake each other.
    files = file_changes.for_database(connection.settings_dict)

    for _ in range(20):
        assert storage.claim(["*"], 3, worker_process) == []
        assert storage.claim(["beta*", "default"], 3, worker_process) == []

    assert not files.changed()


def test_a_claim_failing_halfway_is_rolled_back_and_the_success_recorded_alone(
    worker_process, monkeypatch
):
    first, second = enqueue_all([(tasks.add, (i, i), {}) for i in range(2)])
    (claimed,) = storage.claim(["*"], 1, worker_process)

    def fail_after_the_delete(*args, **kwargs):
        raise OperationalError("disk I/O error")  # the ready row is deleted by now

    monkeypatch.setattr(sqlite_claim, "_insert_claims", fail_after_the_delete)
    then = storage.ClaimNext(["*"], worker_process)
    finished = storage.for_alias().finish(claimed, Success(2), then_claim=then)

    assert finished.recorded and finished.claimed is None and finished.claim_failed
    assert not connection.connection.in_transaction  # rolled back, then committed alone
    job = Job.objects.get(pk=claimed.job_id)
    assert job.finished_at is not None and len(job.attempts) == 1
    assert not ClaimedExecution.objects.exists()
    left = second if claimed.job_id == int(first.id) else first
    assert list(ReadyExecution.objects.values_list("job_id", flat=True)) == [int(left.id)]


def test_a_lost_claim_still_claims_the_threads_next_job(worker_process):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(2)])
    (claimed,) = storage.claim(["*"], 1, worker_process)
    ClaimedExecution.objects.filter(job_id=claimed.job_id).delete()  # pruned meanwhile

    then = storage.ClaimNext(["*"], worker_process)
    finished = storage.for_alias().finish(claimed, Success(2), then_claim=then)

    assert not finished.recorded and len(finished.claimed) == 1
    assert Job.objects.get(pk=claimed.job_id).finished_at is None
    assert ClaimedExecution.objects.get().job_id == finished.claimed[0].job_id


def test_threads_claiming_at_once_take_each_job_once(worker_process):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(60)])
    barrier, taken, errors = threading.Barrier(4), [], []

    def claim_until_empty() -> None:
        try:
            barrier.wait(timeout=10)
            while claimed := storage.claim(["*", "default"], 3, worker_process):
                taken.extend(c.job_id for c in claimed)
        except Exception as exc:  # "database is locked" would land here
            errors.append(exc)
        finally:
            connections.close_all()

    run_threads(claim_until_empty, 4)

    assert errors == []
    assert sorted(taken) == sorted(Job.objects.values_list("pk", flat=True))
    assert ClaimedExecution.objects.count() == 60 and not ReadyExecution.objects.exists()


def test_threads_claiming_through_a_wildcard_never_find_the_database_locked(
    worker_process, monkeypatch
):
    # A wildcard's claim reads the queue names before it writes: begun DEFERRED (the
    # settings' transaction_mode unset, in the threads' new connections), the write would
    # fail with "database is locked" whenever another thread wrote in between.
    monkeypatch.delitem(connection.settings_dict["OPTIONS"], "transaction_mode")
    enqueue_all([(tasks.add.using(queue_name="beta_one"), (i, i), {}) for i in range(80)])
    barrier, taken, errors = threading.Barrier(4), [], []

    def claim_until_empty() -> None:
        try:
            assert connection.settings_dict["OPTIONS"].get("transaction_mode") is None
            barrier.wait(timeout=10)
            while claimed := storage.claim(["beta*"], 1, worker_process):
                taken.extend(c.job_id for c in claimed)
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    run_threads(claim_until_empty, 4)

    assert errors == []
    assert sorted(taken) == sorted(Job.objects.values_list("pk", flat=True))


def test_threads_finishing_the_same_claim_record_it_once(worker_process):
    (job,) = [Job.objects.get(pk=int(tasks.add.enqueue(1, 2).id))]
    storage.claim(["*"], 1, worker_process)
    barrier, recorded, errors = threading.Barrier(3), [], []

    def finish() -> None:
        try:
            mine = ClaimedExecution.objects.select_related("job", "process").get(job_id=job.pk)
            barrier.wait(timeout=10)
            recorded.append(storage.for_alias().finish(mine, Success(3)).recorded)
        except Exception as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    run_threads(finish, 3)

    assert errors == [] and sorted(recorded) == [False, False, True]
    stored = Job.objects.get(pk=job.pk)
    assert stored.return_value == 3 and len(stored.attempts) == 1


def run_threads(target, count: int) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not any(thread.is_alive() for thread in threads), "a thread never finished"
