"""Durable jobs with concurrency limits, unique keys, batches and workflows."""

from __future__ import annotations

import pytest

from steady_queue.batches import batch
from steady_queue.durable import send_signal
from steady_queue.models import Batch, JobStep, Semaphore, WaitingExecution, WorkflowRun, states
from steady_queue.workflows import Workflow
from tests.durable.helpers import job, run, state, wake
from tests.tasks import durable as tasks
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db


def one_run() -> None:
    from steady_queue.testing import run_ready_jobs

    run_ready_jobs(max_jobs=1)


def free(result) -> int:
    """The free slots of the job's concurrency key."""
    return Semaphore.objects.get(key=job(result).concurrency_key).value


def test_a_sleeping_or_waiting_job_gives_its_concurrency_slot_back_and_takes_it_to_resume():
    sleeper = tasks.limited.enqueue([["step", "a"], ["sleep", 60], ["step", "b"]])
    waiter = tasks.limited.enqueue([["wait", "go", None], ["step", "c"]])
    assert (state(sleeper), state(waiter)) == (states.READY, states.BLOCKED)
    one_run()  # the sleeper sleeps: its slot is handed on to the waiter
    assert (state(sleeper), state(waiter)) == (states.SCHEDULED, states.READY)
    one_run()  # the waiter waits: the slot is free
    assert (state(sleeper), state(waiter)) == (states.SCHEDULED, states.WAITING)
    assert free(sleeper) == 1
    wake(sleeper)  # takes the slot again
    assert state(sleeper) == states.READY
    assert free(sleeper) == 0
    send_signal(waiter, "go", 1)  # due, but the slot is taken: blocked
    assert state(waiter) == states.BLOCKED
    one_run()  # the sleeper finishes and hands its slot on
    assert (state(sleeper), state(waiter)) == (states.FINISHED, states.READY)
    one_run()
    assert state(waiter) == states.FINISHED
    assert job(waiter).return_value == [1, "c-result"]
    assert free(sleeper) == 1


def test_a_sleeping_unique_job_keeps_its_key_until_it_ends():
    plan = [["sleep", 60], ["step", "a"]]
    first = tasks.unique_scripted.enqueue(plan, key="k")
    run()
    assert state(first) == states.SCHEDULED
    assert tasks.unique_scripted.enqueue(plan, key="k").id == first.id
    wake(first)
    run()
    assert state(first) == states.FINISHED
    assert tasks.unique_scripted.enqueue(plan, key="k").id != first.id


def test_a_batch_of_durable_jobs_ends_when_the_last_one_resumed_and_ended():
    with batch(on_finish=g.summarise) as opened:
        sleeper = tasks.scripted.enqueue([["sleep", 60], ["step", "a"]])
        waiter = tasks.scripted.enqueue([["wait", "go", None], ["step", "b"]])
    run()
    assert Batch.objects.get(pk=opened.id).progress.pending == 2
    wake(sleeper)
    run()
    assert not Batch.objects.get(pk=opened.id).is_finished
    send_signal(waiter, "go", "x")
    run()
    done = Batch.objects.get(pk=opened.id)
    assert done.is_finished and done.progress == (2, 2, 0)


def test_a_workflow_step_may_sleep_and_wait_and_its_upstream_wait_is_no_signal_wait():
    wf = Workflow("durable")
    first = wf.add(
        tasks.scripted, args=([["sleep", 60], ["wait", "go", None], ["step", "a"]],), name="first"
    )
    wf.add(tasks.scripted, args=([["wait", "go", None], ["step", "b"]],), after=[first])
    run_ = wf.enqueue()
    head, tail = run_["first"], run_["scripted"]
    assert state(tail) == states.WAITING  # for its upstream step
    assert job(tail).durable_status() is None
    send_signal(tail, "go", "kept")  # kept for its wait; it still waits for "first"
    assert state(tail) == states.WAITING
    assert WaitingExecution.objects.get(job_id=tail.id).signal_name == ""
    run()
    assert state(head) == states.SCHEDULED
    wake(head)
    run()
    assert state(head) == states.WAITING
    assert job(head).durable_status().signal_name == "go"
    assert state(tail) == states.WAITING
    send_signal(head, "go", "head")
    run()
    assert job(head).return_value == ["head", "a-result"]
    assert job(tail).return_value == ["kept", "b-result"]
    assert WorkflowRun.objects.get(pk=run_.id).finished_at is not None
    assert JobStep.objects.filter(kind="wait").count() == 2
