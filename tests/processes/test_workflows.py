"""Workflows with the real ``manage.py steady_queue`` (two worker processes): results go
downstream, a failed step blocks exactly its dependents, and retrying it resumes the run.
"""

from __future__ import annotations

import signal
from collections import Counter

import pytest

from steady_queue.models import FailedExecution, Job, WorkflowRun
from steady_queue.workflows import Workflow
from tests.processes.conftest import wait_until
from tests.tasks import group_processes as tasks

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

DIAMONDS = 20
DEPENDENCY_FAILED = "steady_queue.exceptions.DependencyFailed"


def finished_run(run_id: int, **counts: int) -> WorkflowRun | None:
    run = WorkflowRun.objects.get(pk=run_id)
    ended = run.finished_at is not None and all(getattr(run, k) == v for k, v in counts.items())
    return run if ended else None


def test_diamonds_pass_both_branches_results_to_the_last_step(start_supervisor, run_log):
    supervisor = start_supervisor("GROUPS", children=3, SQ_GROUPS_LOG=str(run_log.path))
    # Many at once, so that b and c of one diamond often end together in two workers.
    enqueued = [diamond(n).enqueue() for n in range(DIAMONDS)]

    for n, each in enumerate(enqueued):
        wait_until(lambda r=each: finished_run(r.id, succeeded=4, failed=0), what=f"diamond {n}")
        assert Job.objects.get(pk=each["d"].id).return_value == {"b": 5 * n + 1, "c": 5 * n * 2}
    runs = Counter(run_log.entries())
    assert len(runs) == 4 * DIAMONDS and set(runs.values()) == {1}
    supervisor.send(signal.SIGTERM)
    assert supervisor.wait() == 0


def diamond(n: int) -> Workflow:
    wf = Workflow(f"diamond {n}")
    a = wf.add(tasks.seed, args=(f"a{n}", 5 * n), name="a")
    b = wf.add(tasks.plus, args=(f"b{n}", "a", 1), after=[a], name="b")
    c = wf.add(tasks.times, args=(f"c{n}", "a", 2), after=[a], name="c")
    wf.add(tasks.collect, args=(f"d{n}",), after=[b, c], name="d")
    return wf


def test_a_failed_step_blocks_exactly_its_dependents_and_its_retry_resumes_the_run(
    start_supervisor, run_log, tmp_path
):
    flag = tmp_path / "fail"
    flag.touch()
    start_supervisor("GROUPS", children=3, SQ_GROUPS_LOG=str(run_log.path))
    wf = Workflow("blocked branch")
    a = wf.add(tasks.step, args=("a",), name="a")
    x = wf.add(tasks.fails_while, args=("x", str(flag)), after=[a], name="x")
    y = wf.add(tasks.step, args=("y",), after=[x], name="y")
    wf.add(tasks.step, args=("z",), after=[y], name="z")  # failed two levels down
    u = wf.add(tasks.step, args=("u",), after=[a], name="u")  # an unrelated branch
    wf.add(tasks.step, args=("v",), after=[u], name="v")
    w = wf.add(tasks.step, args=("w",), after=[x, u], run_if="finished", name="w")
    wf.add(tasks.step, args=("q",), after=[w], name="q")  # after a run_if step that ran
    wf.add(tasks.step, args=("r",), after=[y, u], run_if="finished", name="r")
    enqueued = wf.enqueue()

    run = wait_until(lambda: finished_run(enqueued.id), timeout=30, what="the run to end")
    assert (run.succeeded, run.failed) == (6, 3)
    assert Counter(run_log.entries()) == dict.fromkeys("auvwqrx", 1)
    failures = dict(
        FailedExecution.objects.filter(job__workflow_run_id=run.pk).values_list(
            "job_id", "exception_class"
        )
    )
    assert failures == {
        int(enqueued["x"].id): "builtins.RuntimeError",
        int(enqueued["y"].id): DEPENDENCY_FAILED,
        int(enqueued["z"].id): DEPENDENCY_FAILED,
    }

    flag.unlink()
    Job.objects.get(pk=enqueued["x"].id).retry()

    run = wait_until(
        lambda: finished_run(enqueued.id, succeeded=9, failed=0), timeout=30, what="the resume"
    )
    # x ran again; y and z ran for the first time; nothing that had run ran again.
    assert Counter(run_log.entries()) == dict.fromkeys("auvwqryz", 1) | {"x": 2}
    assert not FailedExecution.objects.filter(job__workflow_run_id=run.pk).exists()
    steps = Job.objects.filter(workflow_run_id=run.pk)
    assert steps.count() == 9 and not steps.filter(finished_at__isnull=True).exists()
