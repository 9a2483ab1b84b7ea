"""``durable.step``: the body at least once, its record exactly once, across runs."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db.models.signals import pre_save

from steady_queue.compat import TaskContext
from steady_queue.durable import step
from steady_queue.exceptions import DurableStepError
from steady_queue.models import JobStep, states
from steady_queue.runner import durable_run
from tests.durable.helpers import error_class, job, records, run, state
from tests.tasks import durable as tasks

pytestmark = pytest.mark.django_db

PLAN = [["step", "a"], ["raise_once", "x"], ["step", "b"]]


def test_a_retried_job_keeps_its_completed_steps():
    result = tasks.scripted.enqueue(PLAN)
    run()
    assert state(result) == states.FAILED
    assert [(int(result.id), "a")] == tasks.BODIES
    job(result).retry()
    run()
    done = job(result)
    assert done.state == states.FINISHED
    assert done.return_value == ["a-result", "b-result"]
    assert [(int(result.id), "a"), (int(result.id), "b")] == tasks.BODIES
    assert records(result) == [("step", "a"), ("step", "b")]


def test_retry_with_reset_steps_runs_them_again():
    result = tasks.scripted.enqueue(PLAN)
    run()
    job(result).retry(reset_steps=True)
    assert records(result) == []
    run()
    assert state(result) == states.FINISHED
    assert [name for _, name in tasks.BODIES] == ["a", "a", "b"]
    assert records(result) == [("step", "a"), ("step", "b")]


def test_a_crash_between_the_body_and_its_record_runs_the_body_again_and_records_once():
    def killed(sender, instance, **kwargs):
        if instance.kind == "step" and instance.name == "b":
            raise RuntimeError("killed before the record of b")

    result = tasks.scripted.enqueue([["step", "a"], ["step", "b"]])
    pre_save.connect(killed, sender=JobStep)
    try:
        run()
    finally:
        pre_save.disconnect(killed, sender=JobStep)
    assert state(result) == states.FAILED
    assert records(result) == [("step", "a")]
    job(result).retry()
    run()
    assert state(result) == states.FINISHED
    # b's body ran twice (the crash fell between its return and its record), a's once.
    assert [name for _, name in tasks.BODIES] == ["a", "b", "b"]
    assert records(result) == [("step", "a"), ("step", "b")]


def test_a_value_it_cannot_store_fails_the_step_with_a_clear_error():
    result = tasks.returns_unstorable.enqueue()
    run()
    failed = job(result).failed_execution
    assert failed.exception_class == "steady_queue.exceptions.DurableStepError"
    assert "'bad' returned a value it cannot store" in failed.message
    assert records(result) == []


def test_a_step_name_used_twice_in_a_run_raises():
    result = tasks.twice.enqueue()
    run()
    assert error_class(result) == "steady_queue.exceptions.DurableStepError"
    assert "used twice" in job(result).failed_execution.message
    assert records(result) == [("step", "same")]


def test_the_stored_value_comes_back_as_the_argument_serializer_gives_it():
    result = tasks.scripted.enqueue([])
    context = TaskContext(task_result=result)
    value = {"when": datetime(2026, 1, 2, 3, 4, tzinfo=UTC), "amount": Decimal("1.50")}
    durable_run.forget(int(result.id))
    assert step(context, "v", lambda: value) == value
    durable_run.forget(int(result.id))  # a later run
    assert step(context, "v", lambda: pytest.fail("ran twice")) == value


@pytest.mark.parametrize("name", ["", "x" * 201, 7])
def test_a_bad_step_name_is_refused_before_anything_runs(name):
    result = tasks.scripted.enqueue([])
    context = TaskContext(task_result=result)
    with pytest.raises(DurableStepError):
        step(context, name, lambda: pytest.fail("ran"))
    assert records(result) == []


def test_a_step_costs_bounded_statements(django_assert_max_num_queries):
    result = tasks.scripted.enqueue([])
    context = TaskContext(task_result=result)
    durable_run.forget(int(result.id))
    with django_assert_max_num_queries(2):  # the run's records read once, one INSERT
        step(context, "one", lambda: 1)
    with django_assert_max_num_queries(1):  # one INSERT
        step(context, "two", lambda: 2)
    durable_run.forget(int(result.id))  # the next run replays both
    with django_assert_max_num_queries(1):
        assert step(context, "one", lambda: 0) == 1
        assert step(context, "two", lambda: 0) == 2
    with django_assert_max_num_queries(0), pytest.raises(DurableStepError):
        step(context, "two", lambda: 0)


def test_a_retry_with_new_arguments_may_reset_the_steps_too():
    result = tasks.scripted.enqueue(PLAN)
    run()
    job(result).retry(args=[[["step", "a"], ["step", "c"]]], reset_steps=True)
    run()
    assert job(result).return_value == ["a-result", "c-result"]
    assert [name for _, name in tasks.BODIES] == ["a", "a", "c"]
