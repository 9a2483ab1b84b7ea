"""Signals: ``wait_for_signal`` ends the run until ``send_signal`` (or its timeout)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.durable import send_signal
from steady_queue.exceptions import (
    CANCELLED_CLASS,
    DurableStepError,
    SignalNotDeliverable,
)
from steady_queue.models import (
    ClaimedExecution,
    Job,
    JobSignal,
    ReadyExecution,
    WaitingExecution,
    states,
)
from steady_queue.models.durable import MAX_PAYLOAD_BYTES
from steady_queue.models.job.durable import AWAITING_SIGNAL
from steady_queue.testing import dispatch_scheduled, release_expired_waits
from tests.durable.helpers import error_class, expire, job, records, run, state
from tests.tasks import durable as tasks

pytestmark = pytest.mark.django_db

WAIT = [["step", "a"], ["wait", "go", None], ["step", "b"]]


def test_a_wait_ends_the_run_and_the_signal_resumes_the_job():
    result = tasks.scripted.enqueue(WAIT)
    run()
    waiting = job(result)
    assert waiting.state == states.WAITING
    assert waiting.attempts == []
    assert not ClaimedExecution.objects.filter(job_id=result.id).exists()
    status = waiting.durable_status()
    assert (status.kind, status.signal_name, status.until) == (AWAITING_SIGNAL, "go", None)
    awaiting = Job.objects.awaiting_signal().values_list("pk", "awaited_signal", "durable_until")
    assert list(awaiting) == [(int(result.id), "go", None)]
    send_signal(result, "go", {"by": "email"})
    assert state(result) == states.READY
    run()
    done = job(result)
    assert done.state == states.FINISHED
    assert done.return_value == ["a-result", {"by": "email"}, "b-result"]
    assert [name for _, name in tasks.BODIES] == ["a", "b"]
    assert records(result) == [("step", "a"), ("wait", "go"), ("step", "b")]
    assert JobSignal.objects.get(job_id=result.id).consumed_at is not None


def test_a_signal_sent_before_the_wait_is_kept_and_taken_by_it():
    result = tasks.scripted.enqueue(WAIT)
    send_signal(int(result.id), "go", [1, 2])
    assert JobSignal.objects.get(job_id=result.id).consumed_at is None
    run()
    assert job(result).return_value == ["a-result", [1, 2], "b-result"]


def test_the_second_signal_of_a_name_raises_and_the_first_is_delivered():
    result = tasks.scripted.enqueue(WAIT)
    run()
    send_signal(result, "go", "first")
    with pytest.raises(SignalNotDeliverable, match="already received"):
        send_signal(result, "go", "second")
    run()
    assert job(result).return_value[1] == "first"
    assert JobSignal.objects.filter(job_id=result.id).count() == 1


def test_a_signal_to_a_job_that_ended_raises_and_writes_nothing():
    finished = tasks.scripted.enqueue([])
    failed = tasks.scripted.enqueue([["raise_once", "x"]])
    run()
    for result, why in ((finished, "finished"), (failed, "failed")):
        with pytest.raises(SignalNotDeliverable, match=f"has ended \\({why}\\)"):
            send_signal(result, "go", 1)
    with pytest.raises(SignalNotDeliverable, match="does not exist"):
        send_signal(10**9, "go", 1)
    assert not JobSignal.objects.exists()


def test_a_waiting_job_can_be_cancelled_and_then_gets_no_signal():
    result = tasks.scripted.enqueue(WAIT)
    run()
    job(result).cancel()
    assert error_class(result) == CANCELLED_CLASS
    with pytest.raises(SignalNotDeliverable, match="has ended \\(cancelled\\)"):
        send_signal(result, "go", 1)
    assert not WaitingExecution.objects.exists()


@pytest.mark.parametrize(
    "payload, message",
    [
        ("x" * (MAX_PAYLOAD_BYTES + 1), "at most 65536 bytes"),
        ({"when": object()}, "must be JSON"),
        (float("nan"), "must be JSON"),
        ("nul\x00", "NUL"),
    ],
)
def test_a_payload_that_is_no_json_or_too_big_is_refused_with_nothing_written(payload, message):
    result = tasks.scripted.enqueue(WAIT)
    run()
    with pytest.raises(DurableStepError, match=message):
        send_signal(result, "go", payload)
    assert not JobSignal.objects.exists()
    assert state(result) == states.WAITING


def test_a_payload_of_64_kb_is_kept():
    result = tasks.scripted.enqueue(WAIT)
    payload = "x" * (MAX_PAYLOAD_BYTES - 2)  # with its quotes: 64 KB exactly
    send_signal(result, "go", payload)
    run()
    assert job(result).return_value[1] == payload


@pytest.mark.parametrize("target", [None, 1.5, "abc", True])
def test_send_signal_needs_a_result_or_a_job_id(target):
    with pytest.raises(TypeError):
        send_signal(target, "go", 1)


def test_a_timeout_raises_signal_timeout_at_the_wait_which_the_task_may_catch():
    result = tasks.scripted.enqueue([["wait", "go", 3600, True], ["step", "b"]])
    run()
    status = job(result).durable_status()
    assert status.kind == AWAITING_SIGNAL and status.until is not None
    expire(result)
    assert state(result) == states.READY
    run()
    done = job(result)
    assert done.return_value == ["timed out", "b-result"]
    with pytest.raises(SignalNotDeliverable, match="has ended"):
        send_signal(result, "go", 1)


def test_a_timeout_not_caught_fails_the_job_and_a_late_signal_is_refused():
    result = tasks.scripted.enqueue([["wait", "go", 3600], ["step", "b"]])
    run()
    expire(result)
    run()
    assert error_class(result) == "steady_queue.exceptions.SignalTimeout"
    job(result).retry()
    with pytest.raises(SignalNotDeliverable, match="no longer waits"):
        send_signal(result, "go", 1)
    run()  # the timeout is recorded: the retried run meets it again
    assert error_class(result) == "steady_queue.exceptions.SignalTimeout"
    assert tasks.BODIES == []


def test_a_signal_sent_after_the_deadline_but_before_the_run_is_delivered():
    result = tasks.scripted.enqueue([["wait", "go", 3600]])
    run()
    expire(result)
    send_signal(result, "go", "late")
    run()
    assert job(result).return_value == ["late"]


def test_a_zero_timeout_only_looks():
    result = tasks.scripted.enqueue([["wait", "go", 0, True]])
    run()
    assert job(result).return_value == ["timed out"]


def test_a_signal_name_waited_for_twice_in_a_run_raises():
    result = tasks.scripted.enqueue([["wait", "go", None], ["wait", "go", None]])
    send_signal(result, "go", 1)
    run()
    assert error_class(result) == "steady_queue.exceptions.DurableStepError"


def test_a_retried_job_gets_the_payload_its_wait_took():
    result = tasks.scripted.enqueue([["wait", "go", None], ["raise_once", "x"]])
    run()
    send_signal(result, "go", "once")
    run()
    job(result).retry()
    run()
    assert job(result).return_value == ["once"]


def test_a_signal_and_the_deadline_at_once_wake_the_job_once():
    result = tasks.scripted.enqueue([["wait", "go", 3600, True]])
    run()
    WaitingExecution.objects.filter(job_id=result.id).update(
        signal_deadline=timezone.now() - timedelta(seconds=1)
    )
    send_signal(result, "go", "first")  # takes the waiting row: the dispatcher finds none
    assert release_expired_waits() == 0
    assert ReadyExecution.objects.filter(job_id=result.id).count() == 1
    run()
    assert job(result).return_value == ["first"]


def test_a_job_woken_early_from_its_sleep_is_made_ready_by_its_signal():
    result = tasks.scripted.enqueue([["sleep", 3600], ["wait", "go", None]])
    run()
    dispatch_scheduled(all_=True)  # an operator's "run now": scheduled_at stays ahead
    run()
    assert state(result) == states.WAITING
    send_signal(result, "go", 1)
    assert state(result) == states.READY
    run()
    assert job(result).return_value == [1]
