"""Job.edit(), preview_edit(), duplicate() and retry(args=...): the engine's rules."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from steady_queue import storage
from steady_queue.arguments import SerializationError
from steady_queue.compat import InvalidTask
from steady_queue.exceptions import (
    JobNotEditable,
    JobStateError,
    RateLimitKeyError,
    UniqueKeyConflict,
)
from steady_queue.models import (
    BlockedExecution,
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    Semaphore,
    UniqueLock,
)
from steady_queue.ops import audit
from steady_queue.pauses import pause_task, resume_task
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests import tasks
from tests.tasks import features, rate_limited, unique
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db


def job(result) -> Job:
    return Job.objects.get(pk=result.id)


def state(result) -> str:
    return Job.objects.with_execution().get(pk=result.id).state


def snapshot(result) -> tuple:
    """Every column an edit may write, and where the job is."""
    found = Job.objects.with_execution().get(pk=result.id)
    values = Job.objects.filter(pk=result.id).values(
        "arguments", "queue_name", "priority", "scheduled_at", "concurrency_key", "unique_key"
    )
    return found.state, values.get(), list(UniqueLock.objects.values_list("key", "job_id"))


def make(where: str):
    """A job of tests.tasks.echo (or of a task that can be) in the state ``where``."""
    if where == "ready":
        return tasks.echo.enqueue(1)
    if where == "scheduled":
        return tasks.echo.using(run_after=timedelta(hours=1)).enqueue(1)
    if where == "blocked":
        features.exclusive.enqueue(0)
        return features.exclusive.enqueue(1)
    if where == "throttled":
        for n in range(3):
            rate_limited.three_a_minute.enqueue(n)
        return rate_limited.three_a_minute.enqueue(3)
    if where == "paused":
        pause_task(tasks.echo)
        return tasks.echo.enqueue(1)
    if where == "waiting":
        workflow = Workflow("edit")
        first = workflow.add(g.step, args=(1,))
        second = workflow.add(g.step, args=(2,), after=[first])
        return workflow.enqueue()[second]
    if where == "failed":
        result = tasks.explode.enqueue("boom")
        run_ready_jobs()
        return result
    if where == "running":
        result = tasks.echo.enqueue(1)
        storage.claim(["*"], 10, None)
        return result
    if where == "finished":
        result = tasks.echo.enqueue(1)
        run_ready_jobs()
        return result
    if where == "cancelled":
        result = tasks.echo.using(run_after=timedelta(hours=1)).enqueue(1)
        job(result).cancel()
        return result
    raise AssertionError(where)


@pytest.mark.parametrize(
    "where", ["ready", "scheduled", "blocked", "throttled", "paused", "waiting", "failed"]
)
def test_a_job_not_started_or_failed_can_be_edited_and_stays_where_it_was(where):
    result = make(where)
    before = job(result).priority
    assert job(result).edit(priority=7) == {"priority": (before, 7)}
    edited = Job.objects.with_execution().get(pk=result.id)
    assert edited.priority == 7
    assert edited.state == where
    execution = edited.execution
    if hasattr(execution, "priority"):
        assert execution.priority == 7


@pytest.mark.parametrize("where", ["running", "finished", "cancelled"])
def test_a_started_or_ended_job_cannot_be_edited_and_nothing_changes(where):
    result = make(where)
    before = snapshot(result)
    expected = "cancelled" if where == "cancelled" else where
    with pytest.raises(JobNotEditable, match=f"is {expected}: only ready, scheduled") as raised:
        job(result).edit(args=[2], priority=3)
    assert raised.value.state == expected
    assert isinstance(raised.value, JobStateError)
    assert snapshot(result) == before


def test_a_deleted_job_cannot_be_edited():
    result = tasks.echo.enqueue(1)
    stale = job(result)
    stale.discard()
    with pytest.raises(JobNotEditable, match="no longer exists") as raised:
        stale.edit(args=[2])
    assert raised.value.state == "discarded"


def test_the_run_of_an_edited_job_receives_the_new_arguments():
    result = tasks.echo.enqueue(1, 2, mode="old")
    edited = job(result)
    changes = edited.edit(args=[8], kwargs={"full": True})
    assert changes["arguments"] == (
        {"args": [1, 2], "kwargs": {"mode": "old"}},
        {"args": [8], "kwargs": {"full": True}},
    )
    assert edited.arguments == {"args": [8], "kwargs": {"full": True}}  # the object follows
    run_ready_jobs()
    assert tasks.CALLS == [((8,), {"full": True})]


def test_arguments_left_out_are_kept():
    result = tasks.echo.enqueue(1, mode="old")
    job(result).edit(kwargs={"mode": "new"})
    run_ready_jobs()
    assert tasks.CALLS == [((1,), {"mode": "new"})]


def test_a_changed_queue_and_priority_move_the_ready_row():
    result = tasks.echo.enqueue(1)
    job(result).edit(queue_name="low", priority=-5)
    row = ReadyExecution.objects.get(job_id=result.id)
    assert (row.queue_name, row.priority) == ("low", -5)
    assert run_ready_jobs(queues=["default"]) == []
    assert len(run_ready_jobs(queues=["low"])) == 1


def test_run_after_in_the_future_schedules_a_ready_job_and_none_makes_it_ready():
    result = tasks.echo.enqueue(1)
    when = timezone.now() + timedelta(hours=2)
    job(result).edit(run_after=when)
    assert state(result) == "scheduled"
    assert ScheduledExecution.objects.get(job_id=result.id).scheduled_at == when
    job(result).edit(run_after=None)
    assert state(result) == "ready"
    assert job(result).scheduled_at is None


def test_run_after_as_a_delay_counts_from_the_edit():
    result = tasks.echo.enqueue(1)
    before = timezone.now()
    job(result).edit(run_after=timedelta(minutes=30))
    scheduled_at = job(result).scheduled_at
    assert before + timedelta(minutes=30) <= scheduled_at <= timezone.now() + timedelta(minutes=30)


def test_an_edit_that_changes_nothing_writes_nothing():
    result = tasks.echo.enqueue(1)
    updated_at = job(result).updated_at
    assert job(result).edit(args=[1]) == {}
    assert job(result).updated_at == updated_at


def test_preview_edit_shows_the_diff_and_writes_nothing():
    result = tasks.echo.enqueue(1)
    before = snapshot(result)
    diff = job(result).preview_edit(args=[2], priority=4)
    assert diff == {
        "arguments": ({"args": [1], "kwargs": {}}, {"args": [2], "kwargs": {}}),
        "priority": (0, 4),
    }
    assert snapshot(result) == before
    with pytest.raises(JobNotEditable):
        job(make("finished")).preview_edit(args=[2])


# -- The same checks as enqueue() -------------------------------------------------------


def _enqueue_error(call) -> BaseException:
    with pytest.raises(Exception) as raised:
        call()
    return raised.value


@pytest.mark.parametrize(
    ("changes", "enqueue"),
    [
        ({"args": [object()]}, lambda: tasks.echo.enqueue(object())),
        ({"kwargs": {"when": float("nan")}}, lambda: tasks.echo.enqueue(when=float("nan"))),
        ({"priority": 1000}, lambda: tasks.echo.using(priority=1000).enqueue()),
        ({"queue_name": "nowhere"}, lambda: tasks.echo.using(queue_name="nowhere").enqueue()),
        (
            {"run_after": datetime(2030, 1, 1)},  # naive: refused
            lambda: tasks.echo.using(run_after=datetime(2030, 1, 1)).enqueue(),
        ),
    ],
    ids=["unserializable", "nan", "priority", "queue", "naive-run-after"],
)
def test_bad_values_raise_what_enqueue_raises_and_change_nothing(changes, enqueue):
    result = tasks.echo.enqueue(1)
    before = snapshot(result)
    expected = _enqueue_error(enqueue)
    with pytest.raises(type(expected)) as raised:
        job(result).edit(**changes)
    assert str(raised.value) == str(expected)
    assert snapshot(result) == before
    assert Job.objects.count() == 1  # the enqueues above wrote nothing either


def test_args_that_are_not_a_list_are_refused():
    result = tasks.echo.enqueue(1)
    with pytest.raises(SerializationError, match="args must be a list"):
        job(result).edit(args="8")
    with pytest.raises(SerializationError, match="kwargs must be a mapping"):
        job(result).edit(kwargs=[1])
    with pytest.raises(SerializationError, match="str keys"):
        job(result).edit(kwargs={1: 2})


def test_a_key_function_that_raises_raises_as_on_enqueue():
    result = rate_limited.key_divides.enqueue(1)
    with pytest.raises(RateLimitKeyError) as expected:
        rate_limited.key_divides.enqueue(0)
    with pytest.raises(RateLimitKeyError) as raised:
        job(result).edit(args=[0])
    assert str(raised.value) == str(expected.value)
    assert job(result).arguments["args"] == [1]


def test_a_task_that_cannot_be_imported_any_more_is_refused():
    result = tasks.echo.enqueue(1)
    Job.objects.filter(pk=result.id).update(task_path="tests.tasks.gone")
    with pytest.raises(InvalidTask, match="cannot be imported"):
        job(result).edit(args=[2])


# -- Keys computed again --------------------------------------------------------------------


def test_a_changed_concurrency_key_unblocks_a_blocked_job():
    features.per_account.enqueue("a")
    blocked = features.per_account.enqueue("a")
    assert state(blocked) == "blocked"
    job(blocked).edit(args=["b"])
    assert state(blocked) == "ready"
    assert job(blocked).concurrency_key.endswith("/b")


def test_a_changed_concurrency_key_blocks_a_ready_job_and_hands_its_slot_on():
    features.per_account.enqueue("x")
    moving = features.per_account.enqueue("a")
    waiting_for_a = features.per_account.enqueue("a")
    assert [state(moving), state(waiting_for_a)] == ["ready", "blocked"]
    job(moving).edit(args=["x"])
    assert state(moving) == "blocked"
    assert state(waiting_for_a) == "ready"  # the slot of "a" it gave up
    assert BlockedExecution.objects.get(job_id=moving.id).concurrency_key.endswith("/x")


def test_an_edit_of_a_ready_limited_job_keeps_its_slot():
    first = features.exclusive.enqueue(1)
    second = features.exclusive.enqueue(2)
    job(first).edit(priority=5, args=[3])
    assert [state(first), state(second)] == ["ready", "blocked"]
    assert Semaphore.objects.get(key__endswith="/exclusive").value == 0


def test_a_job_scheduled_by_an_edit_gives_its_slot_to_the_next_blocked_job():
    first = features.exclusive.enqueue(1)
    second = features.exclusive.enqueue(2)
    job(first).edit(run_after=timedelta(hours=1))
    assert [state(first), state(second)] == ["scheduled", "ready"]


def test_a_unique_key_held_by_another_job_raises_and_changes_nothing():
    holder = unique.sync_account.enqueue(1)
    other = unique.sync_account.enqueue(2)
    before = snapshot(other)
    with pytest.raises(UniqueKeyConflict, match=f"Job {holder.id} already holds") as raised:
        job(other).edit(args=[1])
    assert raised.value.holder_id == int(holder.id)
    assert isinstance(raised.value, JobNotEditable)
    assert snapshot(other) == before


def test_a_new_unique_key_moves_the_lock():
    result = unique.sync_account.enqueue(2)
    job(result).edit(args=[3])
    assert unique.sync_account.enqueue(3).id == result.id  # the key it holds now
    assert unique.sync_account.enqueue(2).id != result.id  # its old key is free
    assert UniqueLock.objects.filter(job_id=result.id).count() == 1


def test_other_arguments_of_the_same_unique_key_keep_the_lock():
    result = unique.sync_account.enqueue(2)
    job(result).edit(kwargs={"full": True})
    assert unique.sync_account.enqueue(2).id == result.id


def test_a_failed_unique_job_edited_holds_no_key_until_retried():
    unique.FAILURES.append("down")
    result = unique.sync_account.enqueue(5)
    run_ready_jobs()
    job(result).edit(args=[6])
    assert state(result) == "failed"
    assert not UniqueLock.objects.filter(job_id=result.id).exists()
    job(result).retry()
    assert unique.sync_account.enqueue(6).id == result.id


def test_a_changed_rate_limit_key_is_computed_again():
    result = rate_limited.per_customer.enqueue(1, 0)
    job(result).edit(args=[2, 0])
    assert job(result).rate_limit_key == "customer-2"
    for n in range(2):
        rate_limited.per_customer.enqueue(3, n)
    throttled = rate_limited.per_customer.enqueue(3, 2)
    assert state(throttled) == "throttled"
    job(throttled).edit(args=[4, 2])
    assert state(throttled) == "ready"  # a window with room


def test_a_paused_job_edited_stays_paused_then_runs_with_its_new_values():
    result = make("paused")
    job(result).edit(args=[9])
    assert state(result) == "paused"
    resume_task(tasks.echo)
    run_ready_jobs()
    assert tasks.CALLS == [((9,), {})]


def test_a_waiting_workflow_step_edited_runs_with_its_new_values_once_its_turn_comes():
    step = make("waiting")
    job(step).edit(args=[20], priority=2)
    assert state(step) == "waiting"
    run_ready_jobs()
    step.refresh()
    assert step.status == "SUCCESSFUL"
    assert step.return_value == 20
    assert job(step).priority == 2


# -- Failed jobs and retry(args=...) ----------------------------------------------------


def test_editing_a_failed_job_keeps_it_failed():
    result = make("failed")
    job(result).edit(args=["fixed"], queue_name="low")
    assert state(result) == "failed"
    assert FailedExecution.objects.get(job_id=result.id).queue_name == "low"
    assert job(result).arguments["args"] == ["fixed"]


def test_retry_with_changed_arguments_runs_them():
    result = tasks.echo.enqueue(1)
    Job.objects.filter(pk=result.id).update(task_path="tests.tasks.explode")
    run_ready_jobs()
    Job.objects.filter(pk=result.id).update(task_path="tests.tasks.echo")
    job(result).retry(args=[8], kwargs={"full": True})
    run_ready_jobs()
    assert tasks.CALLS == [((8,), {"full": True})]
    result.refresh()
    assert len(result.errors) == 1 and result.status == "SUCCESSFUL"


def test_retry_with_arguments_of_a_job_that_did_not_fail_changes_nothing():
    result = tasks.echo.enqueue(1)
    with pytest.raises(
        JobNotEditable, match="is ready: only failed jobs can be retried with changes"
    ):
        job(result).retry(args=[2])
    assert job(result).arguments["args"] == [1]


def test_retry_with_bad_arguments_leaves_the_job_failed():
    result = make("failed")
    with pytest.raises(SerializationError):
        job(result).retry(args=[object()])
    assert state(result) == "failed"


def test_a_cancelled_job_is_not_retried_with_changes():
    result = make("cancelled")
    with pytest.raises(JobNotEditable, match="is cancelled: only failed jobs") as raised:
        job(result).retry(args=[2])
    assert raised.value.state == "cancelled"
    assert job(result).arguments["args"] == [1]


@pytest.mark.parametrize(
    ("where", "changes"),
    [
        ("ready", {"args": [2], "priority": 3, "queue_name": "low"}),
        ("scheduled", {"run_after": None}),
        ("blocked", {"args": [5]}),
        ("failed", {"args": ["x"]}),
    ],
)
def test_an_edit_takes_a_bounded_number_of_queries(where, changes, django_assert_max_num_queries):
    result = make(where)
    edited = job(result)
    with django_assert_max_num_queries(12):  # 8 to 11 by database, its audit entry included
        edited.edit(**changes)


def test_plain_retry_is_unchanged():
    result = make("failed")
    job(result).retry()
    assert state(result) == "ready"


# -- duplicate() ------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["ready", "failed", "finished", "running"])
def test_duplicate_enqueues_a_new_job_of_the_same_task(where):
    result = make(where)
    original = job(result)
    Job.objects.filter(pk=result.id).update(priority=4)
    copy = job(result).duplicate()
    new = job(copy)
    assert new.pk != original.pk
    assert (new.task_path, new.queue_name, new.priority) == (original.task_path, "default", 4)
    assert new.arguments == original.arguments
    assert state(copy) == "ready"


def test_duplicate_with_new_arguments_checks_them_as_enqueue_does():
    result = tasks.echo.using(queue_name="low").enqueue(1)
    copy = job(result).duplicate(args=[2], kwargs={"k": "v"})
    assert copy.args == [2] and copy.kwargs == {"k": "v"}
    assert job(copy).queue_name == "low"
    with pytest.raises(SerializationError):
        job(result).duplicate(args=[object()])
    assert Job.objects.count() == 2


@pytest.mark.django_db(databases=["default", "billing"])
def test_duplicate_keeps_the_backend_and_its_queue_database():
    from steady_queue import db

    result = tasks.add.using(backend="billing").enqueue(1, 2)
    with db.using_alias("billing"):
        copy = Job.objects.get(pk=result.id).duplicate(args=[3, 4])
    assert copy.backend == "billing"
    copied = Job.objects.using("billing").get(pk=copy.id)
    assert (copied.backend, copied.arguments["args"]) == ("billing", [3, 4])
    assert not Job.objects.using("default").exists()


def test_duplicate_of_a_unique_job_gets_the_holder_as_enqueue_would():
    result = unique.sync_account.enqueue(1)
    assert job(result).duplicate().id == result.id
    assert job(result).duplicate(args=[2]).id != result.id


# -- The audit signal ---------------------------------------------------------------------


@pytest.fixture
def announced():
    seen: list[dict] = []

    def receive(sender, **kwargs):
        seen.append(kwargs)

    audit.operation_performed.connect(receive, dispatch_uid="test_job_edit")
    yield seen
    audit.operation_performed.disconnect(dispatch_uid="test_job_edit")


def test_every_change_is_announced_with_before_and_after(announced):
    result = tasks.echo.enqueue(1)
    when = timezone.now() + timedelta(hours=1)
    job(result).edit(args=[2], run_after=when)
    job(result).edit(args=[2])  # no change: no entry
    copy = job(result).duplicate()
    failed = make("failed")
    job(failed).retry(args=["again"])
    edit, duplicate, retry = announced
    assert edit["action"] == "edit" and edit["target"] == f"job {result.id}"
    assert edit["details"]["before"] == {
        "arguments": {"args": [1], "kwargs": {}},
        "scheduled_at": None,
    }
    assert edit["details"]["after"] == {
        "arguments": {"args": [2], "kwargs": {}},
        "scheduled_at": when.isoformat(),
    }
    assert edit["link_to"] == ("job-detail", str(result.id))
    assert duplicate["action"] == "duplicate"
    assert duplicate["details"]["after"]["job"] == int(copy.id)
    assert retry["action"] == "retry with changes"
    assert retry["details"]["after"]["arguments"]["args"] == ["again"]
    assert all(entry["actor"].startswith("os:") for entry in announced)


def test_acting_as_names_the_actor(announced):
    result = tasks.echo.enqueue(1)
    with audit.acting_as("alice"):
        job(result).edit(args=[2])
    assert announced[0]["actor"] == "alice"


def test_the_audit_log_masks_the_arguments_of_a_masked_task():
    from steady_queue_dashboard.models import AuditEntry
    from tests.tasks.masked import charge

    result = charge.enqueue("4111-1111", 10, note="x")
    job(result).edit(args=["4222-2222", 12])
    entry = AuditEntry.objects.get(action="edit")
    text = str(entry.details)
    assert "4111" not in text and "4222" not in text
    assert entry.details["after"]["arguments"]["args"] == ["[masked]", 12]
    assert entry.details["before"]["arguments"]["args"] == ["[masked]", 10]
