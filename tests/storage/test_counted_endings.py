"""Failures, retries and cancels are counted in the transaction that ends the job (issue 25, 6).

Every storage (the portable one and the database's fast one) and the crash paths: the
TaskRollup rows hold the count as soon as the ending committed, with no flush of the
tally, and the tally holds nothing more (``flush() == 0``): nothing is counted twice.
Successes stay batched in the tally.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError, transaction

from steady_queue.models import ClaimedExecution, FailedExecution, Job, TaskRollup, claimed_finish
from steady_queue.models.execution.claimed_finish import Failure, Success
from steady_queue.models.task_rollup import tally
from tests import tasks
from tests.tasks import acceptance

pytestmark = pytest.mark.django_db(transaction=True)


def job_for(task, *args) -> Job:
    return Job.for_task_call(task, args, {}, backend="default")


def claim_one(store, process, task, *args) -> ClaimedExecution:
    (job,) = store.enqueue([job_for(task, *args)])
    (claimed,) = store.claim(["*"], 1, process)
    assert claimed.job_id == job.pk
    return claimed


def totals(task) -> TaskRollup | None:
    rows = TaskRollup.objects.filter(task_path=task.module_path, period=TaskRollup.all_time())
    return rows.first()


def hours(task) -> list[TaskRollup]:
    rows = TaskRollup.objects.filter(task_path=task.module_path)
    return list(rows.exclude(period=TaskRollup.all_time()))


def test_a_failure_is_counted_when_its_ending_commits(store, process):
    claimed = claim_one(store, process, tasks.explode, "boom")

    assert store.finish(claimed, Failure(ValueError("boom"))).recorded

    row = totals(tasks.explode)  # no flush: written with the failure
    assert (row.failed, row.retried, row.succeeded, row.runs) == (1, 0, 0, 1)
    assert sum(row.run_buckets()) == 1 and sum(row.wait_buckets()) == 1
    assert [(hour.failed, hour.runs) for hour in hours(tasks.explode)] == [(1, 1)]
    assert tally.flush() == 0  # and not a second time by the tally
    assert totals(tasks.explode).failed == 1


def test_a_retry_is_counted_when_its_ending_commits(store, process):
    claimed = claim_one(store, process, acceptance.policy_in_decorator)

    assert store.finish(claimed, Failure(ConnectionError("once more"))).recorded

    assert Job.objects.with_execution().get(pk=claimed.job_id).state == "scheduled"
    row = totals(acceptance.policy_in_decorator)
    assert (row.retried, row.failed, row.runs) == (1, 0, 1)
    assert tally.flush() == 0


def test_a_success_stays_batched_until_the_flush(store, process):
    claimed = claim_one(store, process, tasks.add, 1, 2)

    assert store.finish(claimed, Success(3)).recorded

    assert totals(tasks.add) is None  # the hot path writes no count of its own
    assert tally.flush() == 2
    assert (totals(tasks.add).succeeded, totals(tasks.add).runs) == (1, 1)


def test_a_crash_failure_is_counted_with_it(store, process):
    claimed = claim_one(store, process, tasks.noop)
    mine = ClaimedExecution.objects.filter(job_id=claimed.job_id)

    assert ClaimedExecution.fail_all_with(mine, RuntimeError("process died")) == 1

    assert (totals(tasks.noop).failed, totals(tasks.noop).runs) == (1, 1)
    assert tally.flush() == 0


def test_a_cancelled_claim_given_back_is_counted_with_its_end(store, process):
    claimed = claim_one(store, process, tasks.noop)
    Job.objects.get(pk=claimed.job_id).cancel()  # running: asked to stop

    assert ClaimedExecution.release_all(ClaimedExecution.objects.all()) == 1

    assert FailedExecution.objects.get(job_id=claimed.job_id)
    row = totals(tasks.noop)
    assert (row.cancelled, row.failed, row.runs) == (1, 0, 1)  # its run was cut short
    assert tally.flush() == 0


def test_an_ending_rolled_back_takes_its_count_with_it(store, process):
    claimed = claim_one(store, process, tasks.explode, "boom")

    with pytest.raises(RuntimeError), transaction.atomic():
        assert claimed.record(Failure(ValueError("boom")))
        assert totals(tasks.explode).failed == 1
        raise RuntimeError("the caller's transaction fails")

    assert totals(tasks.explode) is None
    assert ClaimedExecution.objects.filter(job_id=claimed.job_id).exists()
    assert tally.flush() == 0


def test_an_ending_retried_after_a_transient_error_counts_once(store, process, monkeypatch):
    claimed = claim_one(store, process, tasks.explode, "boom")
    real, calls = claimed_finish.count_now, []

    def count_then_lose_the_connection(**kwargs):
        real(**kwargs)
        calls.append(kwargs["counter"])
        if len(calls) == 1:  # written, then the transaction is lost: rolled back
            raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(claimed_finish, "count_now", count_then_lose_the_connection)

    assert store.finish(claimed, Failure(ValueError("boom"))).recorded

    assert calls == ["failed", "failed"]
    assert (totals(tasks.explode).failed, totals(tasks.explode).runs) == (1, 1)
    assert tally.flush() == 0


def test_a_count_the_database_refuses_leaves_the_failure_to_the_tally(store, process, monkeypatch):
    claimed = claim_one(store, process, tasks.explode, "boom")

    def refused(**kwargs):
        raise ValueError("a value the database refuses")

    monkeypatch.setattr(claimed_finish, "count_now", refused)

    assert store.finish(claimed, Failure(ValueError("boom"))).recorded

    failure = FailedExecution.objects.get(job_id=claimed.job_id)
    assert failure.exception_class == "builtins.ValueError"  # the job's own failure stands
    assert totals(tasks.explode) is None
    assert tally.flush() == 2
    assert totals(tasks.explode).failed == 1
