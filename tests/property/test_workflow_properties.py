"""Any workflow graph, run in-process, ends as its upstream outcomes say it must:

- every step ends (finished, or failed);
- a step ran iff every upstream step succeeded, or, added with ``run_if="finished"``,
  iff every upstream step ended (always, then: every step ends);
- a step that did not run failed with DependencyFailed, and only those did;
- no step ran more than once;
- the run's counts (total, succeeded, failed) and ``finished_at`` agree with the steps;
- retrying the failed steps, one at a time, once they succeed, resumes the run: every
  step ends succeeded, those that never ran run once, and none that succeeded runs again.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue.models import FailedExecution, Job, WorkflowRun
from steady_queue.models.workflow import RUN_IF, RUN_IF_FINISHED
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from tests.tasks import groups as tasks

pytestmark = pytest.mark.django_db

MAX_STEPS = 12
DEPENDENCY_FAILED = "steady_queue.exceptions.DependencyFailed"
EXPLODED = "builtins.ValueError"


@st.composite
def graphs(draw) -> list[tuple[list[int], str, bool]]:
    """Steps as ``(upstream indexes, run_if, fails)``; upstream steps come earlier: a DAG."""
    steps = []
    for index in range(draw(st.integers(min_value=1, max_value=MAX_STEPS))):
        after = draw(st.sets(st.integers(0, index - 1), max_size=3)) if index else set()
        steps.append((sorted(after), draw(st.sampled_from(RUN_IF)), draw(st.booleans())))
    return steps


def expected_outcomes(graph: list[tuple[list[int], str, bool]]) -> list[str]:
    """What each step must end as: "succeeded", "failed" (it ran) or "dependency"."""
    outcomes: list[str] = []
    for after, run_if, fails in graph:
        runs = run_if == RUN_IF_FINISHED or all(outcomes[u] == "succeeded" for u in after)
        outcomes.append(("failed" if fails else "succeeded") if runs else "dependency")
    return outcomes


@pytest.fixture
def failing():
    """The row ids for which ``import_row`` fails (until the test removes them)."""
    yield tasks.FAILING
    tasks.FAILING.clear()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(graph=graphs())
def test_every_step_ends_as_its_upstream_steps_say_and_retries_resume_the_run(graph, failing):
    failing.clear()
    wf = Workflow("random")
    steps = []
    for index, (after, run_if, fails) in enumerate(graph):
        if fails:
            failing.add(index)
        upstream = [steps[u] for u in after]
        steps.append(
            wf.add(tasks.import_row, args=(index,), after=upstream, run_if=run_if, name=f"s{index}")
        )
    enqueued = wf.enqueue()

    run_ready_jobs(max_jobs=2 * MAX_STEPS)

    expected = expected_outcomes(graph)
    jobs = {job.pk: job for job in Job.objects.filter(workflow_run_id=enqueued.id)}
    failures = dict(
        FailedExecution.objects.filter(job_id__in=list(jobs)).values_list(
            "job_id", "exception_class"
        )
    )
    for index, outcome in enumerate(expected):
        job = jobs[int(enqueued[f"s{index}"].id)]
        ran = len(job.attempts)
        if outcome == "succeeded":
            assert (ran, job.finished_at is not None, job.pk in failures) == (1, True, False)
        elif outcome == "failed":
            assert (ran, failures.get(job.pk)) == (1, EXPLODED), (index, graph)
        else:  # never ran: failed because an upstream step it needed failed
            assert (ran, failures.get(job.pk)) == (0, DEPENDENCY_FAILED), (index, graph)
    run = WorkflowRun.objects.get(pk=enqueued.id)
    assert run.total == len(graph)
    assert run.succeeded == expected.count("succeeded")
    assert run.failed == len(graph) - run.succeeded
    assert run.finished_at is not None and run.pending == 0

    failing.clear()
    ran_and_failed = [i for i, outcome in enumerate(expected) if outcome == "failed"]
    for index in ran_and_failed:
        Job.objects.get(pk=enqueued[f"s{index}"].id).retry()
        run_ready_jobs(max_jobs=2 * MAX_STEPS)
    for index, outcome in enumerate(expected):
        job = Job.objects.get(pk=enqueued[f"s{index}"].id)
        assert job.finished_at is not None and job.return_value == index * 10, (index, graph)
        assert len(job.attempts) == (2 if outcome == "failed" else 1), (index, graph)
    run = WorkflowRun.objects.get(pk=enqueued.id)
    assert (run.succeeded, run.failed) == (len(graph), 0)
    assert run.finished_at is not None
