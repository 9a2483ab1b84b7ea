"""Batches: jobs enqueued together, callbacks enqueued exactly once when all have ended."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.batches import Batch, batch
from steady_queue.compat import TaskResultStatus
from steady_queue.exceptions import BatchError
from steady_queue.models import ClaimedExecution, FailedExecution, Job, Process
from steady_queue.runner.perform import perform
from steady_queue.testing import run_ready_jobs
from tests.at_once import perform_at_once
from tests.tasks import billing
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db

SUMMARISE, CELEBRATE, ALERT = (
    "tests.tasks.groups.summarise",
    "tests.tasks.groups.celebrate",
    "tests.tasks.groups.alert",
)


@pytest.fixture(autouse=True)
def _no_failing_rows():
    g.FAILING.clear()
    yield
    g.FAILING.clear()


def callbacks_of(batch_id: int) -> list[tuple[str, int]]:
    """Each callback job of the batch: (task path, finish), by job id."""
    refs = Batch.objects.get(pk=batch_id).callback_jobs
    paths = dict(Job.objects.filter(batch__isnull=True).values_list("pk", "task_path"))
    return [(paths[ref["job_id"]], ref["finish"]) for ref in refs]


def open_batch(rows, **callbacks):
    callbacks.setdefault("on_finish", g.summarise)
    callbacks.setdefault("on_success", g.celebrate)
    callbacks.setdefault("on_failure", g.alert)
    with batch(description="import", **callbacks) as opened:
        for row in rows:
            g.import_row.enqueue(row)
    return opened


def test_the_jobs_of_the_block_join_it_and_the_total_is_known_when_it_exits():
    opened = open_batch([1, 2, 3])
    assert opened.id is not None and opened.total == 3
    assert set(Job.objects.values_list("batch_id", flat=True)) == {opened.id}
    assert Batch.objects.get(pk=opened.id).progress == (3, 0, 0)
    assert Batch.objects.get(pk=opened.id).progress.pending == 3


def test_when_every_job_succeeded_on_finish_and_on_success_get_the_batch_id():
    opened = open_batch([1, 2, 3])
    ran = run_ready_jobs()
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (CELEBRATE, 1)]
    callback_runs = [r for r in ran if r.task.func in (g.summarise.func, g.celebrate.func)]
    assert [r.return_value for r in callback_runs] == [opened.id, opened.id]
    done = Batch.objects.get(pk=opened.id)
    assert done.is_finished and done.progress == (3, 3, 0) and done.progress.pending == 0


def test_a_job_failed_for_good_makes_on_failure_run_instead_of_on_success():
    opened = open_batch([1, -2, 3])
    run_ready_jobs()
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (ALERT, 1)]
    assert Batch.objects.get(pk=opened.id).progress == (3, 2, 1)


def test_nothing_is_called_back_before_the_last_job_ends():
    opened = open_batch([1, 2, 3])
    run_ready_jobs(max_jobs=2)
    assert Batch.objects.get(pk=opened.id).callback_jobs == []
    assert not Batch.objects.get(pk=opened.id).is_finished


def test_a_job_retried_by_its_policy_counts_only_when_it_ends_for_good():
    g.FAILING.add(2)
    with batch(on_finish=g.summarise) as opened:
        g.flaky_row.enqueue(1)
        g.flaky_row.enqueue(2)
    run_ready_jobs(include_scheduled=True)
    assert Batch.objects.get(pk=opened.id).progress == (2, 2, 0)
    assert callbacks_of(opened.id) == [(SUMMARISE, 1)]


def test_a_block_that_raises_enqueues_nothing():
    with pytest.raises(RuntimeError), batch(on_finish=g.summarise):
        g.import_row.enqueue(1)
        raise RuntimeError("changed my mind")
    assert not Job.objects.exists() and not Batch.objects.exists()


def test_an_empty_batch_calls_back_as_it_exits():
    with batch(on_finish=g.summarise, on_success=g.celebrate) as opened:
        pass
    assert opened.total == 0
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (CELEBRATE, 1)]


def test_enqueue_all_inside_the_block_joins_it_in_a_constant_number_of_queries():
    def enqueue(count: int) -> int:
        with CaptureQueriesContext(connection) as queries, batch(on_finish=g.summarise):
            enqueue_all([(g.import_row, [row], {}) for row in range(count)])
        return len(queries)

    # Within one INSERT statement's rows: Django splits bigger ones by the database's
    # parameter limit (999 on SQLite with Django 5.2), as any bulk_create.
    many = min(300, connection.ops.bulk_batch_size(Job._meta.concrete_fields, [Job()] * 300))
    assert enqueue(10) == enqueue(many)
    assert Job.objects.filter(batch__isnull=False).count() == 10 + many


def test_finishing_a_job_costs_the_same_queries_whatever_the_batch_size():
    def queries_to_finish_one(size: int) -> int:
        with batch(on_finish=g.summarise):
            enqueue_all([(g.import_row, [row], {}) for row in range(size)])
        [claimed] = storage.claim(["*"], 1, None)
        with CaptureQueriesContext(connection) as queries:
            perform(claimed)
        return len(queries)

    assert queries_to_finish_one(5) == queries_to_finish_one(500)


def test_retrying_a_failed_job_reopens_the_batch_and_calls_back_for_the_new_outcome():
    opened = open_batch([1, 2, 3])
    g.FAILING.add(2)
    run_ready_jobs()
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (ALERT, 1)]

    g.FAILING.clear()
    failed = Job.objects.get(failed_execution__isnull=False)
    failed.retry()
    reopened = Batch.objects.get(pk=opened.id)
    assert not reopened.is_finished and reopened.progress == (3, 2, 0)
    run_ready_jobs()
    assert callbacks_of(opened.id) == [
        (SUMMARISE, 1),
        (ALERT, 1),
        (SUMMARISE, 2),
        (CELEBRATE, 2),
    ]
    assert Batch.objects.get(pk=opened.id).finishes == 2


def test_cancelled_and_discarded_jobs_count_as_failed_and_a_failed_one_only_once():
    opened = open_batch([1, 2, -3, 4])
    jobs = list(Job.objects.filter(batch_id=opened.id).order_by("pk"))
    jobs[0].cancel()
    jobs[1].discard()
    run_ready_jobs()  # -3 fails, 4 succeeds
    assert Batch.objects.get(pk=opened.id).progress == (4, 1, 3)
    failed = Job.objects.get(pk=jobs[2].pk)
    failed.discard()  # counted when it failed
    assert Batch.objects.get(pk=opened.id).progress == (4, 1, 3)
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (ALERT, 1)]


def test_a_job_failed_by_a_crash_counts_as_failed():
    opened = open_batch([1])
    process = Process.objects.create(kind="Worker", pid=1, hostname="h", name="gone")
    storage.claim(["*"], 1, process)
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), RuntimeError("died"))
    assert Batch.objects.get(pk=opened.id).progress == (1, 0, 1)
    assert callbacks_of(opened.id) == [(SUMMARISE, 1), (ALERT, 1)]


def test_a_callback_that_raises_is_a_failed_job_like_any_other():
    with batch(on_finish=g.explode) as opened:
        g.import_row.enqueue(1)
    results = run_ready_jobs()
    [callback] = [r for r in results if r.task.func is g.explode.func]
    assert callback.status == TaskResultStatus.FAILED
    assert FailedExecution.objects.filter(job_id=callback.id).exists()
    assert Batch.objects.get(pk=opened.id).is_finished


@pytest.mark.parametrize(
    ("callbacks", "message"),
    [
        ({"on_finish": print}, "must be a task"),
        ({"on_finish": g.no_arguments}, "must take the batch id"),
        ({"on_finish": billing.invoice, "backend": "default"}, "uses backend 'billing'"),
        ({"backend": "nowhere"}, "No task backend"),
        ({"description": "x" * 256}, "at most 255"),
    ],
)
def test_a_batch_refused_as_it_opens_writes_nothing(callbacks, message):
    with pytest.raises(BatchError, match=message), batch(**callbacks):
        g.import_row.enqueue(1)
    assert not Job.objects.exists() and not Batch.objects.exists()


def test_batches_do_not_nest():
    with batch(), pytest.raises(BatchError, match="do not nest"), batch():
        pass


@pytest.mark.django_db(databases=["default", "billing"])
def test_a_job_of_another_queue_database_cannot_join_and_the_whole_block_is_undone():
    with pytest.raises(BatchError, match="cannot join"), batch(on_finish=g.summarise):
        g.import_row.enqueue(1)
        billing.invoice.enqueue(2)
    assert not Job.objects.exists() and not Batch.objects.exists()
    assert not Job.objects.db_manager("billing").exists()


def test_an_enqueue_after_the_block_joins_nothing():
    with batch():
        pass
    g.import_row.enqueue(1)
    assert Job.objects.get().batch_id is None


@pytest.mark.django_db(transaction=True)
def test_the_last_jobs_finishing_at_once_call_back_exactly_once():
    for round_ in range(5):
        opened = open_batch(range(4))
        claims = storage.claim(["*"], 4, None)
        assert len(claims) == 4
        errors = perform_at_once(claims)
        assert not errors, f"round {round_}: {errors}"
        assert callbacks_of(opened.id) == [(SUMMARISE, 1), (CELEBRATE, 1)], f"round {round_}"
        Job.objects.filter(batch__isnull=True).delete()  # the callbacks: not claimed next round
