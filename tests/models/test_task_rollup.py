"""TaskRollup and the tally: every ended attempt counted once, in hourly and all-time rows."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections

from steady_queue import storage
from steady_queue.models import ClaimedExecution, Job, TaskRollup
from steady_queue.models.task_rollup import BUCKETS, Tally, tally
from steady_queue.testing import run_ready_jobs
from tests import tasks
from tests.observability.conftest import unreachable_database  # noqa: F401 (a fixture)
from tests.tasks import acceptance, features

AT = datetime(2026, 11, 24, 10, 17, 3, tzinfo=UTC)


def rows(**filters) -> dict:
    return {
        (row.task_path, row.queue_name, row.period): row
        for row in TaskRollup.objects.filter(**filters)
    }


def test_a_flush_adds_to_the_hour_and_all_time_rows_and_keeps_maxima(db):
    counted = Tally()
    counted.observe("app.t", "default", "succeeded", at=AT, run=0.02, wait=3.0)
    counted.observe("app.t", "default", "failed", at=AT, run=7.0, wait=0.001)
    counted.observe("app.t", "default", "failed", at=AT, run=3600.0, wait=86400.0)  # +Inf
    assert counted.flush() == 2
    counted.observe("app.t", "default", "succeeded", at=AT + timedelta(hours=1), run=0.5, wait=0)
    assert counted.flush() == 2
    assert counted.flush() == 0  # nothing pending: no query either

    hour = TaskRollup.objects.get(period=datetime(2026, 11, 24, 10, tzinfo=UTC))
    assert (hour.runs, hour.succeeded, hour.failed, hour.retried) == (3, 1, 2, 0)
    assert hour.run_max == 3600.0 and hour.wait_max == 86400.0
    assert hour.run_seconds == pytest.approx(3607.02)
    buckets = hour.run_buckets()
    assert buckets[BUCKETS.index(0.025)] == 1 and buckets[BUCKETS.index(10.0)] == 1
    assert buckets[-1] == 1 and sum(buckets) == 3  # the last: +Inf
    assert hour.wait_buckets()[-1] == 1
    total = TaskRollup.objects.get(period=TaskRollup.all_time())
    assert (total.runs, total.succeeded, total.failed) == (4, 2, 2)
    assert total.run_max == 3600.0


def test_a_flush_that_fails_keeps_its_counts_for_the_next(db, unreachable_database):  # noqa: F811
    import steady_queue

    counted = Tally()
    counted.observe("app.t", "default", "succeeded", at=AT, run=1.0, wait=1.0)
    with pytest.raises(Exception):  # noqa: B017 (whatever the driver raises)
        counted.flush()
    counted.observe("app.t", "default", "succeeded", at=AT, run=0.5, wait=2.0)
    with pytest.raises(Exception):  # noqa: B017 (the kept counts merge with new ones)
        counted.flush()
    steady_queue.database = "default"  # the fixture puts it back afterwards
    assert counted.flush() == 2
    total = TaskRollup.objects.get(period=TaskRollup.all_time())
    assert (total.runs, total.succeeded, total.run_seconds) == (2, 2, 1.5)
    assert (total.run_max, total.wait_max) == (1.0, 2.0)  # maxima, not sums


def test_outcomes_count_once_each_and_a_reschedule_not_at_all(db):
    tasks.noop.enqueue()
    acceptance.fail.enqueue("boom")
    acceptance.policy_in_decorator.enqueue()
    features.reschedules_once.enqueue(3600)  # asks to run later: no attempt, no count
    run_ready_jobs()  # flushes: it is its own process's writer
    totals = {row.task_path: row for row in TaskRollup.objects.filter(period=TaskRollup.all_time())}
    assert totals["tests.tasks.noop"].succeeded == 1
    assert totals["tests.tasks.acceptance.fail"].failed == 1
    assert totals["tests.tasks.acceptance.policy_in_decorator"].retried == 1
    assert sum(row.runs for row in totals.values()) == 3
    assert "tests.tasks.features.reschedules_once" not in totals
    assert len(rows()) == 6  # three tasks, each an hour row and an all-time row


def test_a_crash_failure_counts_as_failed(db):
    result = tasks.noop.enqueue()
    claimed = storage.claim(["*"], 1, None)
    assert [c.job_id for c in claimed] == [int(result.id)]
    failed = ClaimedExecution.fail_all_with(
        ClaimedExecution.objects.filter(job_id=result.id), RuntimeError("process died")
    )
    assert failed == 1
    tally.flush()
    assert TaskRollup.objects.get(period=TaskRollup.all_time()).failed == 1


def test_discarding_pending_jobs_counts_them_discarded_but_not_failed_ones(db):
    for _ in range(3):
        tasks.add.enqueue(1, 2)
    acceptance.fail.enqueue("boom")
    acceptance.fail.enqueue("again")
    run_ready_jobs()  # 3 adds succeed, two failures
    tasks.add.enqueue(1, 2)
    tasks.add.using(run_after=timedelta(hours=1)).enqueue(1, 2)
    assert Job.objects.filter(finished_at__isnull=True).discard_all() == 4  # 2 failed, 2 pending
    totals = {r.task_path: r for r in TaskRollup.objects.filter(period=TaskRollup.all_time())}
    assert (totals["tests.tasks.add"].discarded, totals["tests.tasks.add"].cancelled) == (2, 0)
    assert totals["tests.tasks.acceptance.fail"].discarded == 0
    assert totals["tests.tasks.acceptance.fail"].failed == 2


def test_cancelling_jobs_not_started_counts_them_cancelled_at_once(db):
    tasks.add.enqueue(1, 2)
    tasks.add.using(run_after=timedelta(hours=1)).enqueue(1, 2)
    assert Job.objects.all().cancel_all() == 2
    totals = TaskRollup.objects.get(period=TaskRollup.all_time())  # no flush: in the cancel's
    assert (totals.cancelled, totals.discarded, totals.failed, totals.runs) == (2, 0, 0, 0)
    assert tally.flush() == 0


@pytest.mark.django_db(transaction=True)
def test_processes_flushing_the_same_rows_at_once_lose_nothing():
    # Each thread stands for a process: its own tally, its own connection, same rows.
    barrier, errors = threading.Barrier(4), []

    def process() -> None:
        counted = Tally()
        try:
            for _ in range(25):
                counted.observe("app.t", "default", "succeeded", at=AT, run=0.1, wait=0.1)
            barrier.wait(timeout=10)
            for _ in range(20):  # a failed flush keeps its counts: try until written
                try:
                    counted.flush()
                    return
                except Exception as exc:  # a deadlock victim or SQLite's busy database
                    errors.append(exc)
            raise AssertionError("never flushed")
        finally:
            connections.close_all()

    threads = [threading.Thread(target=process) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    total = TaskRollup.objects.get(period=TaskRollup.all_time())
    assert (total.runs, total.succeeded) == (100, 100)
    assert TaskRollup.objects.count() == 2
