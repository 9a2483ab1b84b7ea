"""Unique jobs: a duplicate enqueue returns the job holding its key and writes nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from steady_queue import storage
from steady_queue.backend import enqueue_all
from steady_queue.compat import Task, TaskResultStatus, task, task_enqueued
from steady_queue.exceptions import UniqueKeyError
from steady_queue.models import (
    ClaimedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    UniqueLock,
)
from steady_queue.processes.errors import ProcessExitError
from steady_queue.task_options.uniqueness import Unique, lock_key, unique, unique_for
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from tests.tasks import features
from tests.tasks import unique as tasks

pytestmark = pytest.mark.django_db(transaction=True)

WRITES = ("INSERT", "UPDATE", "DELETE")


def rows() -> tuple[int, ...]:
    """Every table an enqueue may write, counted."""
    return tuple(
        model.objects.count()
        for model in (Job, ReadyExecution, ScheduledExecution, FailedExecution, UniqueLock)
    )


def writes(captured: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if q["sql"].lstrip().startswith(WRITES)]


def holder_of(task: Task, job_key: str) -> int | None:
    lock = UniqueLock.objects.filter(key=lock_key(task.module_path, job_key)).first()
    return lock.job_id if lock else None


# A duplicate is the same job, and costs two reads


def test_a_duplicate_returns_the_job_holding_the_key_and_writes_nothing():
    first = tasks.sync_account.enqueue(7)
    before = rows()

    with CaptureQueriesContext(connection) as captured:
        again = tasks.sync_account.enqueue(7, full=True)  # the key ignores "full"

    assert again.id == first.id
    assert rows() == before == (1, 1, 0, 0, 1)
    assert writes(captured) == []
    # The locks read, and the job that holds the key with its execution.
    reads = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT")]
    assert len(reads) == 2


def test_the_duplicate_result_describes_the_existing_job():
    first = tasks.sync_account.enqueue(7)
    again = tasks.sync_account.using(priority=3).enqueue(7, full=True)

    assert again.args == [7] and again.kwargs == {}
    assert again.status == TaskResultStatus.READY
    assert again.task.priority == 0  # the holder's, not the duplicate call's
    assert again.enqueued_at == first.enqueued_at


def test_only_a_stored_job_is_announced_as_enqueued():
    announced = []

    def receive(sender, task_result, **kwargs):
        announced.append(task_result.id)

    task_enqueued.connect(receive)
    try:
        first = tasks.sync_account.enqueue(7)
        tasks.sync_account.enqueue(7)
    finally:
        task_enqueued.disconnect(receive)
    assert announced == [first.id]


def test_different_keys_are_different_jobs():
    assert tasks.sync_account.enqueue(7).id != tasks.sync_account.enqueue(8).id
    assert Job.objects.count() == 2


def test_the_key_is_combined_with_the_task_path():
    assert tasks.sync_account.enqueue(7).id != tasks.other_sync.enqueue(7).id
    assert UniqueLock.objects.count() == 2


def test_the_key_is_stored_on_the_job():
    result = tasks.sync_account.enqueue(7)
    job = Job.objects.get(pk=result.id)
    assert job.unique_key == "7"
    assert holder_of(tasks.sync_account, "7") == job.pk


def test_the_default_key_is_every_argument_bound_to_the_parameters():
    first = tasks.by_arguments.enqueue(7)

    assert tasks.by_arguments.enqueue(account_id=7).id == first.id
    assert tasks.by_arguments.enqueue(7, full=False).id == first.id
    assert tasks.by_arguments.enqueue(7, full=True).id != first.id
    assert tasks.by_arguments.enqueue(7, region="eu").id != first.id
    assert tasks.by_arguments.enqueue(8).id != first.id
    # A digest: the dashboard must not show, through the key, arguments it masks.
    assert Job.objects.get(pk=first.id).unique_key.startswith("sha256:")


def test_keys_that_differ_only_in_case_or_trailing_spaces_are_different():
    # MySQL's default collations compare "a" = "A" = "a ": the lock is keyed by a digest.
    ids = {tasks.long_key.enqueue(text).id for text in ("key", "KEY", "key ")}
    assert len(ids) == 3


def test_a_long_key_is_kept_as_its_digest_and_still_tells_keys_apart():
    long_a, long_b = "a" * 300, "a" * 299 + "b"
    first = tasks.long_key.enqueue(long_a)

    assert tasks.long_key.enqueue(long_a).id == first.id
    assert tasks.long_key.enqueue(long_b).id != first.id
    stored = Job.objects.get(pk=first.id).unique_key
    assert stored.startswith("sha256:") and len(stored) == len("sha256:") + 64


def test_a_model_instance_keys_by_its_identity():
    from tests.models import Account

    key = Unique(key=lambda account: account)
    account = Account.objects.create(name="first")
    assert key.key_for(tasks.sync_account, [account], {}) == f"tests.account:{account.pk}"


def test_a_task_that_is_not_unique_takes_no_lock():
    from tests import tasks as plain

    first, second = plain.add.enqueue(1, 2), plain.add.enqueue(1, 2)
    assert first.id != second.id
    assert not UniqueLock.objects.exists()
    assert set(Job.objects.values_list("unique_key", flat=True)) == {""}


# period=None: one job per key until it ends


def test_the_key_is_free_once_the_job_succeeded():
    first = tasks.sync_account.enqueue(7)
    run_ready_jobs()

    again = tasks.sync_account.enqueue(7)

    assert again.id != first.id
    assert holder_of(tasks.sync_account, "7") == int(again.id)


def test_the_key_is_free_once_the_job_succeeded_and_was_deleted(monkeypatch):
    import steady_queue

    monkeypatch.setattr(steady_queue, "preserve_finished_jobs", False)
    first = tasks.sync_account.enqueue(7)
    run_ready_jobs()

    assert not Job.objects.exists() and not UniqueLock.objects.exists()
    assert tasks.sync_account.enqueue(7).id != first.id


def test_the_key_is_free_once_the_job_failed_for_good():
    first = tasks.sync_account.enqueue(7)
    tasks.FAILURES.append("down")
    run_ready_jobs()
    assert Job.objects.get(pk=first.id).state == "failed"

    assert tasks.sync_account.enqueue(7).id != first.id


def test_the_key_is_held_while_the_job_waits_for_a_retry_then_freed_when_it_fails():
    first = tasks.flaky_sync.enqueue(7)
    run_ready_jobs()
    assert Job.objects.get(pk=first.id).state == "scheduled"  # a retry in 5 minutes

    assert tasks.flaky_sync.enqueue(7).id == first.id

    dispatch_scheduled(all_=True)
    run_ready_jobs()  # the second and last attempt fails too
    assert Job.objects.get(pk=first.id).state == "failed"
    assert tasks.flaky_sync.enqueue(7).id != first.id


def test_the_key_is_held_while_the_job_is_scheduled_blocked_or_running():
    scheduled = tasks.sync_account.using(run_after=timedelta(hours=1)).enqueue(1)
    assert tasks.sync_account.enqueue(1).id == scheduled.id

    tasks.limited_sync.enqueue(2)
    blocked = tasks.limited_sync.enqueue(3)
    assert Job.objects.get(pk=blocked.id).state == "blocked"
    assert tasks.limited_sync.enqueue(3).id == blocked.id

    running = tasks.sync_account.enqueue(4)
    storage.claim(["*"], 10, None)
    assert Job.objects.get(pk=running.id).state == "running"
    assert tasks.sync_account.enqueue(4).id == running.id


def test_a_job_failed_by_a_crash_frees_its_key():
    first = tasks.sync_account.enqueue(7)
    storage.claim(["*"], 1, None)
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("killed"))
    assert Job.objects.get(pk=first.id).state == "failed"

    assert tasks.sync_account.enqueue(7).id != first.id


def test_a_discarded_job_frees_its_key():
    first = tasks.sync_account.using(run_after=timedelta(hours=1)).enqueue(7)
    Job.objects.get(pk=first.id).discard()

    assert not UniqueLock.objects.exists()
    assert tasks.sync_account.enqueue(7).id != first.id


def test_a_job_discarded_by_its_concurrency_limit_takes_no_key():
    tasks.discarding_sync.enqueue(1)
    tasks.discarding_sync.enqueue(2)  # the slot is taken: discarded as it is enqueued

    assert list(Job.objects.values_list("unique_key", flat=True)) == ["1"]
    assert holder_of(tasks.discarding_sync, "2") is None


def test_a_job_cancelled_before_it_started_frees_its_key():
    first = tasks.sync_account.using(run_after=timedelta(hours=1)).enqueue(7)
    Job.objects.get(pk=first.id).cancel()
    assert Job.objects.get(pk=first.id).state == "failed"

    assert tasks.sync_account.enqueue(7).id != first.id


def test_a_running_job_asked_to_cancel_holds_its_key_until_its_run_ends():
    first = tasks.sync_account.enqueue(7)
    storage.claim(["*"], 1, None)
    Job.objects.get(pk=first.id).cancel()
    assert tasks.sync_account.enqueue(7).id == first.id  # still running

    ClaimedExecution.release_all(ClaimedExecution.objects.all())  # given back: ends cancelled

    assert Job.objects.get(pk=first.id).state == "failed"
    assert tasks.sync_account.enqueue(7).id != first.id


def test_clearing_finished_jobs_deletes_their_locks():
    tasks.digest.enqueue(1)
    run_ready_jobs()
    later = timezone.now() + timedelta(seconds=1)

    assert Job.objects.clear_finished_in_batches(finished_before=later) == 1
    assert not UniqueLock.objects.exists()


# Retrying a failed job by hand (dashboard, job.retry())


def fail_for_good(result) -> Job:
    tasks.FAILURES.append("down")
    run_ready_jobs()
    return Job.objects.get(pk=result.id)


def test_a_retried_job_takes_its_key_again_when_it_is_free():
    job = fail_for_good(tasks.sync_account.enqueue(7))

    job.retry()

    assert holder_of(tasks.sync_account, "7") == job.pk
    assert tasks.sync_account.enqueue(7).id == str(job.pk)


def test_a_retried_job_runs_without_the_key_a_newer_duplicate_holds():
    job = fail_for_good(tasks.sync_account.enqueue(7))
    newer = tasks.sync_account.enqueue(7)

    job.retry()

    assert Job.objects.get(pk=job.pk).state == "ready"
    assert holder_of(tasks.sync_account, "7") == int(newer.id)
    assert tasks.sync_account.enqueue(7).id == newer.id


def test_a_retried_job_takes_the_key_of_a_newer_duplicate_that_ended():
    job = fail_for_good(tasks.sync_account.enqueue(7))
    newer = tasks.sync_account.enqueue(7)
    run_ready_jobs()  # the newer one succeeds
    assert Job.objects.get(pk=newer.id).state == "finished"

    Job.objects.filter(pk=job.pk).retry_all()

    assert tasks.sync_account.enqueue(7).id == str(job.pk)


# period=timedelta: one job per key enqueued within the period


def expire_locks(ago: timedelta = timedelta(seconds=1)) -> None:
    """Move the clock past every lock's period, without sleeping."""
    UniqueLock.objects.update(expires_at=timezone.now() - ago)


def test_a_period_lock_expires_a_period_after_the_enqueue():
    before = timezone.now()
    first = tasks.digest.enqueue(1)
    lock = UniqueLock.objects.get(job_id=first.id)
    assert before + timedelta(hours=1) <= lock.expires_at <= timezone.now() + timedelta(hours=1)


def test_within_the_period_a_duplicate_returns_the_job_whatever_its_state():
    first = tasks.digest.enqueue(1)
    assert tasks.digest.enqueue(1).id == first.id  # ready

    run_ready_jobs()
    assert Job.objects.get(pk=first.id).state == "finished"
    again = tasks.digest.enqueue(1)

    assert again.id == first.id
    assert again.status == TaskResultStatus.SUCCESSFUL
    assert Job.objects.count() == 1


def test_after_the_period_the_key_is_taken_over_by_a_new_job():
    first = tasks.digest.enqueue(1)
    expire_locks()

    again = tasks.digest.enqueue(1)

    assert again.id != first.id
    assert UniqueLock.objects.get().job_id == int(again.id)
    assert tasks.digest.enqueue(1).id == again.id  # the new lock holds for a new period


def test_a_lock_whose_period_ends_later_still_holds():
    first = tasks.digest.enqueue(1)
    UniqueLock.objects.update(expires_at=timezone.now() + timedelta(seconds=30))
    assert tasks.digest.enqueue(1).id == first.id


def test_a_failed_period_job_keeps_its_key_until_the_period_ends():
    first = tasks.digest.enqueue(1)
    storage.claim(["*"], 1, None)
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("killed"))

    assert tasks.digest.enqueue(1).id == first.id
    expire_locks()
    assert tasks.digest.enqueue(1).id != first.id


# enqueue_all: duplicates collapse in the batch and against the table


def test_enqueue_all_collapses_duplicates_inside_the_batch():
    results = enqueue_all(
        [
            (tasks.sync_account, (7,), {}),
            (tasks.sync_account, (7,), {"full": True}),
            (tasks.sync_account, (8,), {}),
            (tasks.digest, (7,), {}),
        ]
    )

    ids = [r.id for r in results]
    assert ids[0] == ids[1] and len(set(ids)) == 3
    assert Job.objects.count() == 3 and UniqueLock.objects.count() == 3
    assert results[1].kwargs == {}  # the first call's job


def test_enqueue_all_collapses_duplicates_against_the_table():
    existing = tasks.sync_account.enqueue(7)

    results = enqueue_all(
        [
            (tasks.sync_account, (8,), {}),
            (tasks.sync_account, (7,), {}),
            (features.tick, ("plain",), {}),
        ]
    )

    assert results[1].id == existing.id
    assert len({r.id for r in results}) == 3
    assert Job.objects.count() == 3


def queries_for(calls) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        enqueue_all(calls)
    return len(captured.captured_queries), len(writes(captured))


@pytest.mark.parametrize("existing", [False, True], ids=["new keys", "keys in the table"])
def test_enqueue_all_costs_the_same_queries_for_1_or_40_unique_jobs(existing):
    if existing:
        enqueue_all([(tasks.sync_account, (i,), {}) for i in range(100)])

    one = queries_for([(tasks.sync_account, (0,), {})])
    # 40: Django 5.2 splits an SQLite INSERT of jobs past 999 parameters (43 jobs).
    fifty = queries_for([(tasks.sync_account, (i,), {}) for i in range(1, 41)])
    mixed = queries_for(
        [(tasks.sync_account, (i % 60,), {}) for i in range(51, 151)]  # duplicates in the batch
    )

    assert one == fifty
    if existing:
        assert one[1] == 0  # nothing written for duplicates
    else:
        assert mixed[1] == one[1]


def test_a_batch_of_only_duplicates_writes_nothing():
    enqueue_all([(tasks.sync_account, (i,), {}) for i in range(50)])
    before = rows()
    _, written = queries_for([(tasks.sync_account, (i,), {}) for i in range(50)])
    assert written == 0 and rows() == before


# Bad keys and bad declarations


def test_a_key_function_that_raises_names_the_task_and_enqueues_nothing():
    with pytest.raises(UniqueKeyError, match=r"tests\.tasks\.unique\.fragile_key") as raised:
        enqueue_all([(tasks.sync_account, (1,), {}), (tasks.fragile_key, (0,), {})])

    assert isinstance(raised.value.__cause__, ZeroDivisionError)
    assert rows() == (0, 0, 0, 0, 0)


def test_a_single_enqueue_whose_key_raises_writes_nothing():
    with pytest.raises(UniqueKeyError, match="fragile_key"):
        tasks.fragile_key.enqueue(0)
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"period": timedelta(0)}, ValueError, "must be positive"),
        ({"period": timedelta(seconds=-5)}, ValueError, "must be positive"),
        ({"period": 60}, TypeError, "timedelta"),
        ({"key": "account"}, TypeError, "function of the task's arguments"),
    ],
)
def test_bad_declarations_are_refused_when_decorating(options, error, message):
    with pytest.raises(error, match=message):
        unique(**options)
    with pytest.raises(error, match=message):
        Unique(**options)


def test_unique_must_go_above_task():
    with pytest.raises(TypeError, match="above @task"):
        unique()(lambda: None)


@pytest.mark.skipif(not features.TASK_TAKES_OPTIONS, reason="@task(**options) needs Django 6.1+")
def test_the_declaration_can_be_given_to_the_task_decorator():
    first = tasks.unique_by_option.enqueue(1)

    assert tasks.unique_by_option.enqueue(1).id == first.id
    assert unique_for(tasks.unique_by_option.module_path).period is None


@pytest.mark.skipif(not features.TASK_TAKES_OPTIONS, reason="@task(**options) needs Django 6.1+")
def test_the_task_decorator_refuses_anything_but_a_unique():
    with pytest.raises(TypeError, match=r"Unique\(\.\.\.\)"):

        @task(unique=True)
        def wrongly_declared() -> None:
            pass


# Inside a caller's transaction, and a lost race


def test_duplicates_are_seen_inside_the_callers_transaction():
    from django.db import transaction

    with transaction.atomic():
        first = tasks.sync_account.enqueue(7)
        assert tasks.sync_account.enqueue(7).id == first.id
    assert Job.objects.count() == 1


def test_a_rolled_back_enqueue_leaves_the_key_free():
    from django.db import transaction

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        tasks.sync_account.enqueue(7)
        raise Abandon
    assert not UniqueLock.objects.exists()
    assert tasks.sync_account.enqueue(7).id == str(Job.objects.get().pk)


@pytest.mark.parametrize("in_transaction", [False, True], ids=["alone", "in a transaction"])
def test_an_enqueue_that_loses_the_race_for_its_key_returns_the_winners_job(
    monkeypatch, in_transaction
):
    from contextlib import nullcontext

    from django.db import transaction
    from django.db.models import QuerySet

    winner = tasks.sync_account.enqueue(7)
    in_bulk, reads = QuerySet.in_bulk, []

    def stale_first_read(self, *args, **kwargs):
        found = in_bulk(self, *args, **kwargs)
        reads.append(self.model)
        # The first read of the locks misses the winner's, as if it had not committed yet.
        return {} if self.model is UniqueLock and reads.count(UniqueLock) == 1 else found

    monkeypatch.setattr(QuerySet, "in_bulk", stale_first_read)
    with transaction.atomic() if in_transaction else nullcontext():
        loser = tasks.sync_account.enqueue(7, full=True)

    assert reads.count(UniqueLock) == 2  # the insert failed, and the retry read again
    assert loser.id == winner.id
    assert rows() == (1, 1, 0, 0, 1)
