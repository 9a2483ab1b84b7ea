"""Workflows: steps wait for the steps they depend on; a failure blocks its dependents."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from steady_queue import storage
from steady_queue.compat import TaskResultStatus
from steady_queue.exceptions import WorkflowError
from steady_queue.models import (
    FailedExecution,
    Job,
    ReadyExecution,
    ScheduledExecution,
    WaitingExecution,
    WorkflowDependency,
    WorkflowRun,
    WorkflowStep,
)
from steady_queue.runner.perform import perform
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests import tasks
from tests.at_once import perform_at_once
from tests.tasks import billing, unique
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db

DEPENDENCY_FAILED = "steady_queue.exceptions.DependencyFailed"


def diamond() -> tuple[Workflow, list]:
    wf = Workflow("nightly report")
    a = wf.add(g.extract, args=("2026-11-26",))
    b = wf.add(g.transform, args=("2026-11-26",), after=[a])
    c = wf.add(g.load, args=("2026-11-26",), after=[b])
    d = wf.add(g.email_report, after=[b, c])
    return wf, [a, b, c, d]


def state(result) -> str:
    return Job.objects.with_execution().get(pk=result.id).state


def outcomes(run) -> dict[str, str]:
    steps = WorkflowStep.objects.filter(run_id=run.id)
    return dict(steps.values_list("name", "outcome"))


def test_only_the_steps_without_upstream_are_ready_at_first():
    wf, (a, b, c, d) = diamond()
    run = wf.enqueue()
    assert [state(run[s]) for s in (a, b, c, d)] == ["ready", "waiting", "waiting", "waiting"]
    assert all(run[s].status == TaskResultStatus.READY for s in (a, b, c, d))
    assert d.result is run.results["email_report"] is run["email_report"]
    assert g.email_report.get_result(d.result.id).status == TaskResultStatus.READY


def test_results_pass_downstream_and_each_step_runs_once_after_its_upstream():
    wf, (*_, last) = diamond()
    run = wf.enqueue()
    ran = [r.task.name for r in run_ready_jobs()]
    assert ran == ["extract", "transform", "load", "email_report"]
    assert g.email_report.get_result(run[last].id).return_value == {"transform": 6, "load": 7}
    done = WorkflowRun.objects.get(pk=run.id)
    assert (done.total, done.succeeded, done.failed) == (4, 4, 0) and done.finished_at


def test_a_failed_step_fails_exactly_its_dependents_without_running_them():
    wf = Workflow("branches")
    root = wf.add(g.step, args=(1,))
    bad = wf.add(g.explode, after=[root])
    below_bad = wf.add(g.step, args=(2,), after=[bad])
    further = wf.add(g.step, args=(3,), after=[below_bad])
    other = wf.add(g.step, args=(4,), after=[root])
    cleanup = wf.add(g.step, args=(5,), after=[bad, other], run_if="finished")
    run = wf.enqueue()
    ran = sorted(r.task.name + str(r.args) for r in run_ready_jobs())
    assert ran == ["explode[]", "step[1]", "step[4]", "step[5]"]
    assert outcomes(run) == {
        "step": "succeeded",
        "explode": "failed",
        "step-2": "failed",
        "step-3": "failed",
        "step-4": "succeeded",
        "step-5": "succeeded",
    }
    for blocked in (below_bad, further):
        failed = FailedExecution.objects.get(job_id=run[blocked].id)
        assert failed.exception_class == DEPENDENCY_FAILED
        result = g.step.get_result(run[blocked].id)
        assert result.status == TaskResultStatus.FAILED and not result.worker_ids
        assert result.errors[0].exception_class_path == DEPENDENCY_FAILED
    assert "'explode' failed" in FailedExecution.objects.get(job_id=run[below_bad].id).message
    assert "'step-2' failed" in FailedExecution.objects.get(job_id=run[further].id).message
    assert state(run[cleanup]) == "finished"
    finished = WorkflowRun.objects.get(pk=run.id)
    assert (finished.succeeded, finished.failed) == (3, 3) and finished.finished_at


def test_retrying_the_failed_step_resumes_the_workflow():
    g.FAILING.add(7)
    wf = Workflow("retry")
    first = wf.add(g.import_row, args=(7,))
    second = wf.add(g.step, args=(2,), after=[first])
    third = wf.add(g.step, args=(3,), after=[second])
    run = wf.enqueue()
    run_ready_jobs()
    assert outcomes(run) == {"import_row": "failed", "step": "failed", "step-2": "failed"}

    g.FAILING.clear()
    Job.objects.get(pk=run[first].id).retry()
    assert [state(run[s]) for s in (first, second, third)] == ["ready", "waiting", "waiting"]
    assert WorkflowRun.objects.get(pk=run.id).finished_at is None
    run_ready_jobs()
    assert outcomes(run) == dict.fromkeys(["import_row", "step", "step-2"], "succeeded")
    resumed = WorkflowRun.objects.get(pk=run.id)
    assert (resumed.succeeded, resumed.failed) == (3, 0) and resumed.finished_at


def test_retrying_a_blocked_step_while_its_upstream_is_still_failed_blocks_it_again():
    wf = Workflow()
    bad = wf.add(g.explode)
    blocked = wf.add(g.step, after=[bad])
    run = wf.enqueue()
    run_ready_jobs()
    Job.objects.get(pk=run[blocked].id).retry()
    assert state(run[blocked]) == "failed"
    assert FailedExecution.objects.get(job_id=run[blocked].id).exception_class == DEPENDENCY_FAILED
    assert WorkflowRun.objects.get(pk=run.id).failed == 2


def test_a_cancelled_or_discarded_waiting_step_blocks_its_dependents():
    wf = Workflow()
    root = wf.add(g.step, args=(1,))
    cancelled = wf.add(g.step, args=(2,), after=[root])
    discarded = wf.add(g.step, args=(3,), after=[root])
    below = wf.add(g.step, args=(4,), after=[cancelled])
    below_discarded = wf.add(g.step, args=(5,), after=[discarded])
    run = wf.enqueue()
    Job.objects.get(pk=run[cancelled].id).cancel()
    Job.objects.get(pk=run[discarded].id).discard()
    assert state(run[below]) == state(run[below_discarded]) == "failed"
    run_ready_jobs()
    assert sorted(outcomes(run).values()) == ["failed"] * 4 + ["succeeded"]


def test_a_step_becomes_due_as_any_job_scheduled_for_later_waits_for_its_time():
    wf = Workflow()
    first = wf.add(g.step)
    later = wf.add(g.step.using(run_after=g.timedelta(hours=1)), after=[first])
    run = wf.enqueue()
    run_ready_jobs()
    assert ScheduledExecution.objects.filter(job_id=run[later].id).exists()


def test_fan_out_and_fan_in_cost_the_same_queries_per_finished_step_whatever_the_width():
    def costs(width: int) -> tuple[int, int, int, int]:
        Job.objects.all().delete()
        wf = Workflow("fan")
        root = wf.add(g.step)
        middle = [wf.add(g.step, args=(i,), after=[root]) for i in range(width)]
        wf.add(g.step, after=middle)
        with CaptureQueriesContext(connection) as enqueued:
            run = wf.enqueue()
        runs = []
        for _ in range(3):  # the root (fan-out), then two middle steps (fan-in)
            [claimed] = storage.claim(["*"], 1, None)
            with CaptureQueriesContext(connection) as finished:
                perform(claimed)
            runs.append(len(finished))
        assert ReadyExecution.objects.count() == width - 2
        assert WaitingExecution.objects.filter(job_id=run.results[f"step-{width + 2}"].id).exists()
        return (len(enqueued), *runs)

    assert costs(10) == costs(widest_in_one_statement(1000))


def widest_in_one_statement(width: int) -> int:
    """``width``, or fewer where Django would split a fan's INSERTs by the database's
    parameter limit (999 on SQLite with Django 5.2), as any bulk_create."""
    models = (Job, WorkflowStep, WorkflowDependency, ReadyExecution, WaitingExecution)
    rows = [
        connection.ops.bulk_batch_size(model._meta.concrete_fields, [None] * 2 * width)
        for model in models
    ]
    return min(width, min(rows) // 2 - 2)


@pytest.mark.django_db(transaction=True)
def test_two_upstream_steps_ending_at_once_make_their_dependent_due_once():
    for round_ in range(5):
        wf = Workflow()
        left, right = wf.add(g.step, args=(1,)), wf.add(g.step, args=(2,))
        joined = wf.add(g.step, args=(3,), after=[left, right])
        run = wf.enqueue()
        claims = storage.claim(["*"], 2, None)
        errors = perform_at_once(claims)
        assert not errors, f"round {round_}: {errors}"
        assert state(run[joined]) == "ready", f"round {round_}"
        assert [r.task.name for r in run_ready_jobs()] == ["step"]


def circle(wf: Workflow) -> None:
    wf.add(g.step, name="a", after=["b"])
    wf.add(g.step, name="b", after=["a"])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda wf: None, "no steps"),
        (lambda wf: wf.add(g.step, after=["nowhere"]), "unknown step 'nowhere'"),
        (lambda wf: wf.add(g.step, after=[Workflow().add(g.step)]), "of another workflow"),
        (lambda wf: circle(wf), "in a circle: (a -> b -> a|b -> a -> b)"),
        (lambda wf: [wf.add(g.step), wf.add(billing.invoice, args=(1,))], "every step must use"),
        (lambda wf: wf.add(unique.digest, args=(1,)), "cannot be a @unique task"),
        (lambda wf: wf.add(g.step, args=(object(),)), "JSON"),
    ],
)
def test_a_workflow_refused_at_enqueue_writes_nothing(build, message):
    wf = Workflow("refused")
    build(wf)
    with pytest.raises((WorkflowError, TypeError, ValueError), match=message):
        wf.enqueue()
    assert not Job.objects.exists() and not WorkflowRun.objects.exists()


@pytest.mark.parametrize(
    ("add", "message"),
    [
        (lambda wf: wf.add(print), "must be a task"),
        (lambda wf: wf.add(g.step, run_if="sometimes"), "run_if must be one of"),
        (lambda wf: [wf.add(g.step, name="x"), wf.add(g.step, name="x")], "named 'x' already"),
    ],
)
def test_a_bad_step_is_refused_as_it_is_added(add, message):
    with pytest.raises(WorkflowError, match=message):
        add(Workflow())


def test_default_step_names_are_the_tasks_numbered_when_taken():
    wf = Workflow()
    names = [wf.add(t).name for t in (g.step, g.step, tasks.noop, g.step)]
    assert names == ["step", "step-2", "noop", "step-3"]


def test_a_task_run_outside_any_workflow_has_no_upstream_results():
    result = g.email_report.enqueue()
    [ran] = run_ready_jobs()
    assert ran.id == result.id and ran.return_value == {}
