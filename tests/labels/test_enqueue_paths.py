"""Every way a job is inserted writes its labels: on the row (``Job.labels``) and in the
label index (``JobLabel``), in the same transaction.

The paths: the storage's single and bulk fast paths of the database under test (a
PostgreSQL CTE and COPY, SQLite's and MySQL's multi-row INSERTs), the portable ORM
path (scheduled, concurrency-limited and unique jobs), batches, workflows and
recurring runs. A retry keeps them (same row); deleting a job deletes its rows.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue import db, storage
from steady_queue.backend import enqueue_all
from steady_queue.batches import batch
from steady_queue.labels import labels
from steady_queue.models import Job, JobLabel, RecurringTask
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests.tasks import labelled as t

pytestmark = pytest.mark.django_db

BLOCK = ("tenant:7", "import-42")
# The storage's fast paths run in autocommit only (MySQL's script, SQLite's write
# transaction): a test inside the test case's transaction would take the ORM path.
FAST = pytest.mark.django_db(transaction=True)


def stored(job_id) -> tuple[list[str], set[str]]:
    """The job's labels as its row has them, and as the label index has them."""
    row = Job.objects.get(pk=job_id).labels
    index = set(JobLabel.objects.filter(job_id=job_id).values_list("label", flat=True))
    return row, index


def assert_labelled(job_id, expected: list[str]) -> None:
    assert stored(job_id) == (expected, set(expected))


@FAST
def test_a_single_enqueue_takes_the_storage_fast_path_with_its_labels():
    with labels(*BLOCK):
        result = t.charge.enqueue(1)
    assert_labelled(result.id, ["billing", *BLOCK])
    assert Job.objects.with_execution().get(pk=result.id).state == "ready"


@FAST
def test_a_bulk_enqueue_takes_the_fast_path_and_writes_every_jobs_labels():
    calls = [(t.charge if i % 2 else t.plain, (i,), {}) for i in range(250)]
    with labels(*BLOCK):
        results = enqueue_all(calls)
    for index, result in enumerate(results):
        assert_labelled(result.id, (["billing"] if index % 2 else []) + list(BLOCK))
    assert JobLabel.objects.count() == 250 * 2 + 125
    assert Job.objects.labelled(all=["billing", "tenant:7"]).count() == 125


@FAST
def test_a_bulk_enqueue_of_jobs_some_without_labels_writes_rows_only_for_the_others():
    results = enqueue_all([(t.plain, (1,), {}), (t.charge, (2,), {}), (t.plain, (3,), {})])
    assert [stored(r.id)[0] for r in results] == [[], ["billing"], []]
    assert JobLabel.objects.count() == 1


@FAST
def test_more_jobs_than_a_chunk_all_get_their_labels():
    # MySQL's chunks are 1,000 jobs; SQLite's follow its parameter limit.
    with labels("big"):
        results = enqueue_all([(t.plain, (i,), {}) for i in range(1_100)])
    ids = {int(r.id) for r in results}
    assert set(Job.objects.labelled(all=["big"]).values_list("pk", flat=True)) == ids


@pytest.mark.parametrize("path", ["scheduled", "limited", "unique"])
def test_the_portable_path_writes_labels_too(path):
    with labels(*BLOCK):
        if path == "scheduled":
            result = t.charge.using(run_after=timedelta(hours=1)).enqueue(1)
            expected = ["billing", *BLOCK]
        elif path == "limited":
            result = t.limited.enqueue(1)
            expected = ["limited", *BLOCK]
        else:
            result = t.unique_one.enqueue(1)
            expected = ["unique", *BLOCK]
    assert_labelled(result.id, expected)


def test_a_duplicate_of_a_unique_job_writes_no_labels():
    first = t.unique_one.enqueue(1)
    with labels("second"):
        again = t.unique_one.enqueue(1)
    assert again.id == first.id
    assert_labelled(first.id, ["unique"])


def test_the_portable_storage_writes_labels_on_every_database():
    portable = storage.Storage(db.alias())
    with labels(*BLOCK):
        jobs = [
            Job.for_task_call(t.charge, (i,), {}, backend=t.charge.get_backend()) for i in range(3)
        ]
    portable.enqueue(jobs)
    for job in jobs:
        assert_labelled(job.pk, ["billing", *BLOCK])


def test_the_jobs_of_a_batch_carry_the_blocks_labels():
    with labels(*BLOCK), batch(description="import"):
        first, second = t.charge.enqueue(1), t.plain.enqueue(2)
    assert_labelled(first.id, ["billing", *BLOCK])
    assert_labelled(second.id, list(BLOCK))


def test_the_steps_of_a_workflow_carry_their_labels():
    wf = Workflow("labelled")
    a = wf.add(t.charge, args=(1,))
    b = wf.add(t.plain, args=(2,), after=[a])
    with labels(*BLOCK):
        run = wf.enqueue()
    assert_labelled(run[a].id, ["billing", *BLOCK])
    assert_labelled(run[b].id, list(BLOCK))


def test_a_recurring_run_carries_its_tasks_static_labels(declared):
    from steady_queue.task_options.recurring_task import recurring

    recurring(schedule="@yearly", key="yearly-charge", args=[9])(t.charge)
    RecurringTask.objects.sync_static(declared)
    job = RecurringTask.objects.get(key="yearly-charge").enqueue_now()
    assert_labelled(job.pk, ["billing"])


def test_a_retried_job_keeps_its_labels_on_the_same_row():
    with labels("tenant:7"):
        result = t.fails.enqueue(1)
    run_ready_jobs(include_scheduled=True)  # three attempts: the retries are due at once
    job = Job.objects.with_execution().get(pk=result.id)
    assert len(job.attempts) == 3 and job.state == "failed"
    assert_labelled(result.id, ["flaky", "tenant:7"])
    job.retry()
    assert_labelled(result.id, ["flaky", "tenant:7"])
    assert Job.objects.labelled(all=["flaky", "tenant:7"]).get().pk == int(result.id)


def test_discarding_a_job_deletes_its_label_rows():
    with labels("gone"):
        doomed = t.charge.enqueue(1)
    kept = t.charge.enqueue(2)
    Job.objects.get(pk=doomed.id).discard()
    assert list(JobLabel.objects.values_list("job_id", "label")) == [(int(kept.id), "billing")]


def test_clearing_finished_jobs_deletes_their_label_rows():
    with labels("old"):
        result = t.charge.enqueue(1)
    run_ready_jobs()
    cleared = Job.objects.clear_finished_in_batches(finished_before=timezone.now())
    assert cleared == 1
    assert not JobLabel.objects.filter(job_id=result.id).exists()


def _queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


def _single_enqueue_queries() -> tuple[int, int]:
    t.plain.enqueue(0)  # warm: the SQL texts are built and cached
    with labels("warm"):
        t.plain.enqueue(0)
    plain = _queries(lambda: t.plain.enqueue(1))
    with labels(*BLOCK):
        labelled = _queries(lambda: t.charge.enqueue(1))
    return plain, labelled


@FAST
def test_a_labelled_single_enqueue_on_the_fast_path_costs_no_round_trip_more_but_on_sqlite():
    """PostgreSQL: the same one statement (a CTE more); MySQL: the same one script (an
    INSERT more in it); SQLite: one INSERT more in its write transaction."""
    plain, labelled = _single_enqueue_queries()
    assert labelled == plain + (1 if connection.vendor == "sqlite" else 0)


def test_a_labelled_single_enqueue_on_the_orm_path_costs_one_insert_more():
    plain, labelled = _single_enqueue_queries()
    assert labelled <= plain + 1


@FAST
@pytest.mark.parametrize("count", [10, 500])
def test_a_labelled_bulk_enqueue_is_constant_in_queries(count):
    calls = [(t.charge, (i,), {}) for i in range(count)]
    plain = _queries(lambda: enqueue_all([(t.plain, (i,), {}) for i in range(count)]))
    with labels(*BLOCK):
        labelled = _queries(lambda: enqueue_all(calls))
    # One statement (or COPY) more for the label rows, per chunk of the database (one
    # but where Django 5.2 splits SQLite statements past 999 parameters).
    rows = count * (1 + len(BLOCK))  # "billing", and the block's
    fields = [JobLabel._meta.get_field("label"), JobLabel._meta.get_field("job")]
    chunks = -(-rows // connection.ops.bulk_batch_size(fields, [None] * rows))
    assert labelled <= plain + 1 + chunks
