"""MySQL/MariaDB's fast storage: one round trip per path, and a transaction kept whole.

The contract tests (test_contract.py) check what it does; these check how: a script
per enqueue, claim and finish, none of Django's autocommit switches, the portable path
inside a caller's transaction, a failed script rolled back, the exactly-once finish
against a concurrent recorder, and the same results without multiple statements.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.models import ClaimedExecution, Job, Process, ReadyExecution
from steady_queue.models.execution.claimed_finish import Success
from steady_queue.processes.worker import Worker
from steady_queue.runner.perform import perform
from steady_queue.storage.mysql import script as mysql_script
from tests import tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's fast storage"),
]


@pytest.fixture
def process() -> Process:
    return Process.register(kind=Process.Kind.WORKER, name="worker-mysql", pid=os.getpid())


def job_for(task, *args) -> Job:
    return Job.for_task_call(task, args, {}, backend="default")


def test_a_single_enqueue_is_one_script(fast):
    with CaptureQueriesContext(connection) as queries:
        (job,) = fast.enqueue([job_for(tasks.add, 1, 2)])

    # One round trip: START TRANSACTION, the job, its ready row (LAST_INSERT_ID()), COMMIT.
    assert [q["sql"].split(None, 2)[:2] for q in queries] == [["START", "TRANSACTION;"]]
    assert ReadyExecution.objects.get().job_id == job.pk
    assert Job.objects.get(pk=job.pk).arguments == job.arguments


def test_statements_per_job_on_the_worker_path(fast, process):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(10)])
    worker = Worker(queues=["*"], threads=1)
    worker.process = process

    with CaptureQueriesContext(connection) as queries:
        worker._run(storage.claim(["*"], 1, process)[0])

    # A busy thread: one script claims the first job, then one per job records it and
    # claims the next (the last finds none). No BEGIN: Django's autocommit stays on.
    assert len(queries) == 1 + 10
    assert not [q for q in queries if q["sql"] in ("BEGIN", "COMMIT")]
    assert Job.objects.filter(finished_at__isnull=False).count() == 10


def test_inside_a_callers_transaction_the_portable_path_keeps_it_whole(fast, process):
    class Undo(Exception):
        pass

    with pytest.raises(Undo), transaction.atomic():
        (job,) = fast.enqueue([job_for(tasks.add, 1, 2)])
        assert fast.claim(["*"], 1, process)[0].job_id == job.pk
        raise Undo  # START TRANSACTION would have committed the enqueue already

    assert not Job.objects.exists() and not ClaimedExecution.objects.exists()


def test_a_failing_script_is_rolled_back_and_the_connection_stays_usable(fast):
    (job,) = fast.enqueue([job_for(tasks.add, 1, 2)])
    insert = f"INSERT INTO {ClaimedExecution._meta.db_table} (job_id, created_at) VALUES (%s, %s)"
    now = connection.ops.adapt_datetimefield_value(job.created_at)

    with pytest.raises(IntegrityError):  # the second insert repeats the claim's key
        twice = [(insert, [job.pk, now]), (insert, [job.pk, now])]
        mysql_script.run([mysql_script.START, *twice, mysql_script.COMMIT])

    assert connection.get_autocommit() and not ClaimedExecution.objects.exists()
    assert len(fast.claim(["*"], 1, None)) == 1


def test_a_concurrent_recorder_wins_and_the_late_finish_changes_nothing(fast, process):
    (job,) = fast.enqueue([job_for(tasks.add, 1, 2)])
    (claimed,) = fast.claim(["*"], 1, process)
    taken, release, outcome = threading.Event(), threading.Event(), {}

    def supervisor():
        # Fails the claim (as a prune does): its delete holds the row until commit.
        try:
            with transaction.atomic():
                ClaimedExecution.objects.filter(job_id=job.pk).delete()
                taken.set()
                release.wait(10)
        finally:
            connections.close_all()

    def late_finish():
        try:
            outcome["finished"] = fast.finish(claimed, Success(3))
        finally:
            connections.close_all()

    holder = threading.Thread(target=supervisor)
    holder.start()
    assert taken.wait(10)
    finisher = threading.Thread(target=late_finish)
    finisher.start()
    wait_for(lambda: deleting_claims() == 1)  # the finish waits on the claim's row lock
    release.set()
    holder.join(10)
    finisher.join(10)

    assert outcome["finished"].recorded is False
    stored = Job.objects.get(pk=job.pk)
    assert stored.finished_at is None and stored.attempts == []


def test_without_multiple_statements_the_same_scripts_run_one_by_one(fast, process):
    options = connection.settings_dict.setdefault("OPTIONS", {})
    connection.close()
    options["multi_statements"] = False
    try:
        enqueue_all([(tasks.add, (i, i), {}) for i in range(3)])
        (single,) = fast.enqueue([job_for(tasks.add, 9, 9)])
        with CaptureQueriesContext(connection) as queries:
            claimed = fast.claim(["*"], 2, process)
        for each in claimed:
            perform(each)
    finally:
        del options["multi_statements"]
        connection.close()

    # START, the pauses, room for the ids, lock, insert the claims, delete the ready rows,
    # the jobs, COMMIT.
    assert len(queries) == 8
    assert Job.objects.filter(finished_at__isnull=False).count() == 2
    assert ReadyExecution.objects.filter(job_id=single.pk).exists()


def deleting_claims() -> int:
    """The connections whose statement now is a claim's delete (blocked on its row)."""
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE command = 'Query' "
            "AND info LIKE 'DELETE FROM `steady_queue_claimed_executions`%%'"
        )
        return cursor.fetchone()[0]


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_a_claim_of_many_jobs_is_not_cut_by_the_servers_group_concat_limit(fast, process):
    enqueue_all([(tasks.add, (i, i), {}) for i in range(60)])
    with connection.cursor() as cursor:
        cursor.execute("SET SESSION group_concat_max_len = 16")  # room for a few ids only

    assert len(fast.claim(["*"], 10, process)) == 10
    assert len(fast.claim(["*"], 50, process)) == 50
    assert not ReadyExecution.objects.exists() and ClaimedExecution.objects.count() == 60


def test_a_claim_deletes_and_loads_by_primary_key_on_tables_believed_tiny(fast, process):
    from tests.storage.test_query_plans import captured, explain

    # New tables: the optimizer's statistics say one row, where it would rather scan.
    enqueue_all([(tasks.add, (i, i), {}) for i in range(3)])

    statements = captured(lambda: fast.claim(["*"], 2, process))

    joins = [(sql, params) for sql, params in statements if "JSON_TABLE" in sql]
    plans = {sql.split(None, 1)[0]: explain(sql, params) for sql, params in joins}
    assert set(plans) == {"DELETE", "SELECT"}
    for plan in plans.values():
        table_rows = [line for line in plan.splitlines() if not line.startswith("table=picked")]
        assert table_rows and all("type=eq_ref key=PRIMARY" in line for line in table_rows), plan
