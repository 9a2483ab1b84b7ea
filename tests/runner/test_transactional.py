"""``@transactional`` runs: the body's writes and the job's success commit together, or neither."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.db.models.signals import post_save

from steady_queue import db, storage
from steady_queue.compat import TaskResultStatus
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    JobLogLine,
    JobStep,
    ReadyExecution,
)
from steady_queue.models.execution.outcomes import Success
from steady_queue.runner import run_logs
from steady_queue.runner.perform import perform
from steady_queue.testing import run_ready_jobs
from tests.models import TransactionalWrite
from tests.processes.conftest import wait_until
from tests.tasks import transactional as tasks

pytestmark = pytest.mark.django_db(transaction=True)


def tokens() -> list[str]:
    return sorted(TransactionalWrite.objects.values_list("token", flat=True))


def failure_of(result) -> FailedExecution:
    return FailedExecution.objects.get(job_id=result.id)


def seen_from_another_connection(job_id: int) -> tuple[int, bool]:
    """(rows written, whether the job is finished) as another connection sees them now."""
    seen: list = []

    def look() -> None:
        try:
            finished = Job.objects.filter(pk=job_id, finished_at__isnull=False).exists()
            seen.append((TransactionalWrite.objects.count(), finished))
        finally:
            connections.close_all()

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()
    return seen[0]


@pytest.fixture
def on_write():
    """Call the given function inside the body, just after it wrote its row."""
    calls = []

    def receiver(sender, instance, **kwargs):
        for call in calls:
            call(instance)

    post_save.connect(receiver, sender=TransactionalWrite)
    yield calls.append
    post_save.disconnect(receiver, sender=TransactionalWrite)


def test_a_success_commits_the_row_and_the_finished_job_together(on_write):
    result = tasks.write.enqueue("paid")
    during, at_commit = [], []

    def inside(row):
        during.append(seen_from_another_connection(int(result.id)))
        # Run right after the commit: the job was finished inside the committed transaction.
        transaction.on_commit(
            lambda: at_commit.append(Job.objects.get(pk=result.id).finished_at),
            using=db.alias(),
        )

    on_write(inside)
    [finished] = run_ready_jobs()

    assert during == [(0, False)]  # nothing of either is visible before the commit
    assert at_commit[0] is not None
    assert finished.status == TaskResultStatus.SUCCESSFUL and finished.return_value == "paid"
    assert tokens() == ["paid"]
    job = Job.objects.get(pk=result.id)
    assert job.finished_at is not None and len(job.attempts) == 1
    assert not ClaimedExecution.objects.exists()


def test_a_task_that_raises_after_writing_leaves_no_row_and_one_failed_attempt():
    result = tasks.write.enqueue("refunded", fail=True)

    [finished] = run_ready_jobs()

    assert finished.status == TaskResultStatus.FAILED
    assert tokens() == []
    job = Job.objects.get(pk=result.id)
    assert job.finished_at is None
    [attempt] = job.attempts
    assert attempt["error"]["exception_class"] == "builtins.ValueError"
    assert failure_of(result).message == "failed after writing refunded"
    assert not ClaimedExecution.objects.exists()


def test_a_return_value_refused_after_the_body_rolls_the_body_back():
    result = tasks.write_then_return_nan.enqueue("nan")

    run_ready_jobs()

    assert tokens() == []
    assert failure_of(result).exception_class == "builtins.ValueError"
    assert len(Job.objects.get(pk=result.id).attempts) == 1


def test_a_success_that_cannot_be_stored_rolls_the_body_back_and_fails_once(monkeypatch):
    def refused(self, claimed, attempt):
        raise DatabaseError("the success was refused")

    monkeypatch.setattr(Success, "store", refused)
    result = tasks.write.enqueue("lost")

    run_ready_jobs()

    assert tokens() == []
    failure = failure_of(result)
    assert failure.exception_class == "django.db.utils.DatabaseError"
    assert failure.message == "the success was refused"
    job = Job.objects.get(pk=result.id)
    assert job.finished_at is None and len(job.attempts) == 1  # the failed attempt only


def test_a_claim_lost_during_the_body_rolls_the_body_back(on_write):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite: the body holds the database's write lock; no prune gets in")
    result = tasks.write.enqueue("pruned")

    def prune_the_claim(row):  # what a supervisor's prune does meanwhile, elsewhere
        def fail_it() -> None:
            try:
                claims = ClaimedExecution.objects.filter(job_id=result.id)
                ClaimedExecution.fail_all_with(claims, RuntimeError("pruned"))
            finally:
                connections.close_all()

        thread = threading.Thread(target=fail_it)
        thread.start()
        thread.join()

    on_write(prune_the_claim)
    assert run_ready_jobs() == []  # the run lost its claim: no result of its own

    assert tokens() == []
    assert failure_of(result).message == "pruned"
    assert Job.objects.get(pk=result.id).finished_at is None


def test_a_timeout_rolls_the_body_back():
    result = tasks.write_then_overrun.enqueue("slow")

    run_ready_jobs()

    assert tokens() == []
    assert failure_of(result).exception_class == "steady_queue.exceptions.JobTimeout"


def test_a_run_cancelled_during_the_body_rolls_it_back(tmp_path: Path):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite: the body holds the database's write lock; the cancel waits for it")
    started = tmp_path / "started"
    result = tasks.write_until_cancelled.enqueue("cancelled", str(started))
    runner = threading.Thread(target=lambda: (run_ready_jobs(), connections.close_all()))
    runner.start()
    wait_until(started.exists, what="the body to write")

    Job.objects.get(pk=result.id).cancel()
    runner.join(timeout=30)

    assert not runner.is_alive()
    assert tokens() == []
    assert failure_of(result).exception_class == "steady_queue.exceptions.JobCancelled"


def test_a_limited_task_hands_its_slot_on_inside_the_transaction():
    first = tasks.write_limited.enqueue("first")
    second = tasks.write_limited.enqueue("second")
    assert BlockedExecution.objects.filter(job_id=second.id).exists()

    run_ready_jobs()

    assert tokens() == ["first", "second"]
    assert Job.objects.filter(pk__in=[first.id, second.id], finished_at__isnull=False).count() == 2
    assert not BlockedExecution.objects.exists() and not ReadyExecution.objects.exists()


def test_a_success_takes_the_portable_finish_never_a_fast_statement(monkeypatch):
    store = storage.for_alias()

    def refused(*args, **kwargs):
        raise AssertionError("a storage statement finished a @transactional job")

    for name in ("write_success", "write_group", "write_hand_on"):
        monkeypatch.setattr(store, name, refused)
    result = tasks.write.enqueue("portable")
    [claimed] = storage.claim(["*"], 1, None)

    assert perform(claimed).status == TaskResultStatus.SUCCESSFUL
    assert tokens() == ["portable"]
    assert Job.objects.get(pk=result.id).finished_at is not None


@pytest.mark.django_db(transaction=True, databases=["default", "billing"])
def test_a_task_run_from_another_queue_database_is_refused_before_its_body():
    result = tasks.write.using(backend="billing").enqueue("elsewhere")

    with db.using_alias("billing"):
        run_ready_jobs()
        failure = failure_of(result)

    assert failure.exception_class == "steady_queue.exceptions.TransactionalTaskError"
    assert "writes to database 'default' but its jobs live in 'billing'" in failure.message
    assert tokens() == []


def test_the_last_log_lines_of_a_rolled_back_body_are_kept():
    run_logs.install()
    try:
        result = tasks.write_log_and_fail.enqueue("logged")
        run_ready_jobs()
    finally:
        run_logs.uninstall()

    assert tokens() == []
    lines = JobLogLine.objects.filter(job_id=int(result.id)).values_list("message", flat=True)
    assert list(lines) == ["wrote logged, failing now"]


def test_a_body_that_sleeps_through_a_helper_is_refused_at_run_time():
    result = tasks.write_then_sleep.enqueue("napping")

    run_ready_jobs()

    failure = failure_of(result)
    assert failure.exception_class == "steady_queue.exceptions.TransactionalTaskError"
    assert "durable.sleep cannot run inside a @transactional task" in failure.message
    assert tokens() == []
    assert not JobStep.objects.filter(job_id=result.id).exists()


def test_a_step_is_recorded_with_the_body_or_rolled_back_with_it():
    failed = tasks.step_then.enqueue("first", fail=True)
    done = tasks.step_then.enqueue("second", fail=False)

    run_ready_jobs()

    assert tokens() == ["second"]
    assert list(JobStep.objects.values_list("job_id", "name")) == [(int(done.id), "write")]
    assert Job.objects.get(pk=failed.id).finished_at is None


def test_a_job_enqueued_by_the_body_commits_or_rolls_back_with_it():
    tasks.write_and_enqueue.enqueue("kept", fail=False)
    tasks.write_and_enqueue.enqueue("dropped", fail=True)

    run_ready_jobs(max_jobs=2)

    assert tokens() == ["kept"]
    assert Job.objects.filter(task_path="tests.tasks.noop").count() == 1
