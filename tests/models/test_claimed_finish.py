"""Every claimed job ends exactly once with a recorded reason (issue 9, defects 1, 2, 4)."""

from __future__ import annotations

import logging

import pytest
from django.db import DataError

from steady_queue import storage
from steady_queue.compat import task_finished, task_started
from steady_queue.models import (
    BlockedExecution,
    ClaimedExecution,
    FailedExecution,
    Job,
    Semaphore,
)
from steady_queue.processes import ProcessExitError
from steady_queue.runner import perform as perform_module
from steady_queue.runner.perform import perform
from steady_queue.testing import run_ready_jobs
from tests.tasks import finish as finish_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quiet_task_log(caplog):
    # Django logs a failed task's exception as is; pytest-xdist cannot carry a captured
    # log holding a lone surrogate back to the controller (it crashes the worker).
    # The logger is django.tasks on Django 6, django_tasks in the backport (Django 5.2).
    for name in ("django.tasks", "django_tasks"):
        caplog.set_level(logging.CRITICAL + 1, logger=name)


def ended(result_id: str) -> Job:
    """The job, checked to have ended: neither claimed nor waiting to run again."""
    job = Job.objects.with_execution().get(pk=int(result_id))
    assert job.state in ("finished", "failed"), job.state
    assert not ClaimedExecution.objects.exists()
    assert run_ready_jobs(include_scheduled=True) == []  # nothing runs again
    return job


# Defect 1: an outcome the database refuses.


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("returns_nul", "a NUL character"),
        ("returns_surrogate", "a lone surrogate (undecodable bytes, as from os.fsdecode)"),
    ],
)
def test_a_return_value_the_database_refuses_fails_the_job_saying_why(name, refused):
    result = getattr(finish_tasks, name).enqueue()
    run_ready_jobs()

    job = ended(result.id)
    failed = FailedExecution.objects.get(job=job)
    assert failed.exception_class == "steady_queue.exceptions.UnstorableOutcome"
    assert (
        failed.message
        == f"outcome could not be stored: ValueError: the return value contains {refused}"
    )
    assert job.finished_at is None and job.return_value is None
    assert len(job.attempts) == 1
    assert job.attempts[0]["error"]["exception_class"] == failed.exception_class


def test_an_unstorable_return_value_is_not_retried():
    result = finish_tasks.retried_returns_nul.enqueue()
    run_ready_jobs(include_scheduled=True)

    job = ended(result.id)
    assert job.state == "failed" and len(job.attempts) == 1


@pytest.mark.parametrize(
    ("name", "stored"),
    [("raises_nul", "a\\x00b"), ("raises_surrogate", "cannot open caf\\udcff")],
)
def test_an_error_the_database_refuses_is_stored_escaped(name, stored):
    result = getattr(finish_tasks, name).enqueue()
    run_ready_jobs()

    job = ended(result.id)
    failed = FailedExecution.objects.get(job=job)
    assert failed.message == stored
    assert stored in failed.backtrace
    assert job.attempts[0]["error"]["message"] == stored


def test_any_other_refusal_records_a_plain_failure(monkeypatch):
    from steady_queue.models import claimed_finish

    def refuse(*args, **kwargs):
        raise DataError("value too long for type character varying(255) \x00")

    monkeypatch.setattr(claimed_finish.Success, "check", refuse)
    result = finish_tasks.fine.enqueue()
    run_ready_jobs()

    job = ended(result.id)
    failed = FailedExecution.objects.get(job=job)
    assert failed.exception_class == "steady_queue.exceptions.UnstorableOutcome"
    assert failed.message == (
        "outcome could not be stored: django.db.utils.DataError: "
        "value too long for type character varying(255) \\x00"
    )


def test_when_even_the_plain_failure_is_refused_the_job_still_ends(monkeypatch):
    from steady_queue.models import claimed_finish

    def refuse(*args, **kwargs):
        raise DataError("refused")

    monkeypatch.setattr(claimed_finish.Success, "check", refuse)
    monkeypatch.setattr(claimed_finish.Failure, "check", refuse)
    result = finish_tasks.fine.enqueue()
    run_ready_jobs()

    job = ended(result.id)
    failed = FailedExecution.objects.get(job=job)
    assert failed.exception_class == "steady_queue.exceptions.UnstorableOutcome"
    assert failed.message == "outcome could not be stored"


# Defect 2: any exception escaping a run.


@pytest.fixture
def raising_receiver():
    connected = []

    def connect(signal):
        def receiver(sender, task_result, **kwargs):
            raise RuntimeError(f"receiver of {signal is task_started and 'started'} broke")

        signal.connect(receiver, weak=False)
        connected.append((signal, receiver))

    yield connect
    for signal, receiver in connected:
        signal.disconnect(receiver)


def test_a_raising_task_started_receiver_fails_the_job(raising_receiver):
    raising_receiver(task_started)
    result = finish_tasks.fine.enqueue()
    run_ready_jobs()

    job = ended(result.id)
    failed = FailedExecution.objects.get(job=job)
    assert failed.exception_class == "builtins.RuntimeError"
    assert failed.message == "receiver of started broke"


def test_a_raising_task_finished_receiver_leaves_the_job_successful(raising_receiver):
    raising_receiver(task_finished)
    result = finish_tasks.fine.enqueue("done")
    run_ready_jobs()

    job = ended(result.id)
    assert job.state == "finished" and job.return_value == "done"


@pytest.mark.parametrize(
    ("name", "error_class"),
    [
        ("cancelled", "asyncio.exceptions.CancelledError"),
        ("interrupted", "tests.tasks.finish.Interrupted"),
    ],
)
def test_a_base_exception_from_the_task_fails_the_job(name, error_class):
    result = getattr(finish_tasks, name).enqueue()
    run_ready_jobs()

    job = ended(result.id)
    assert FailedExecution.objects.get(job=job).exception_class == error_class


def test_an_error_building_the_result_fails_the_job(monkeypatch):
    def broken(*args, **kwargs):
        raise LookupError("no result")

    monkeypatch.setattr(perform_module, "result_for", broken)
    result = finish_tasks.fine.enqueue()
    run_ready_jobs()

    job = ended(result.id)
    assert FailedExecution.objects.get(job=job).exception_class == "builtins.LookupError"


# Defect 4: the slot hand-off is part of the finish.


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs, and nothing catches it."""


def kill_in(monkeypatch, model, name):
    def die(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(model, name, classmethod(die))


@pytest.mark.parametrize("where", ["signal", "release_one"])
def test_a_crash_during_the_hand_off_loses_no_slot(monkeypatch, where):
    first = finish_tasks.limited.enqueue("k")
    second = finish_tasks.limited.enqueue("k")
    assert BlockedExecution.objects.filter(job_id=int(second.id)).exists()
    (claimed,) = storage.claim(["*"], 1, None)
    kill_in(monkeypatch, Semaphore if where == "signal" else BlockedExecution, where)

    with pytest.raises(Killed):
        perform(claimed)
    monkeypatch.undo()
    # The crash path: the supervisor fails what the dead process still held.
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("killed"))

    assert Job.objects.with_execution().get(pk=int(first.id)).state in ("finished", "failed")
    (ran,) = run_ready_jobs()
    assert ran.id == second.id
    assert Semaphore.objects.get(key=Job.objects.get(pk=int(first.id)).concurrency_key).value == 1


def test_a_crash_while_failing_a_crashed_job_loses_no_slot(monkeypatch):
    finish_tasks.limited.enqueue("k")
    second = finish_tasks.limited.enqueue("k")
    storage.claim(["*"], 1, None)
    kill_in(monkeypatch, BlockedExecution, "release_one")

    with pytest.raises(Killed):
        ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("x"))
    monkeypatch.undo()
    assert ClaimedExecution.objects.count() == 1  # rolled back with the hand-off
    ClaimedExecution.fail_all_with(ClaimedExecution.objects.all(), ProcessExitError("x"))

    (ran,) = run_ready_jobs()
    assert ran.id == second.id
