"""A job discarded on a concurrency conflict (``on_conflict="discard"``) ends in its group.

Its batch counts it as failed and finishes; its workflow's dependents go on as after a
failure (``DependencyFailed``, or run for ``run_if="finished"``), so nothing waits forever.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from steady_queue.batches import Batch, batch
from steady_queue.models import Job, WorkflowRun
from steady_queue.testing import dispatch_scheduled, run_ready_jobs
from steady_queue.workflows import Workflow
from tests.tasks import features
from tests.tasks import groups as g

pytestmark = pytest.mark.django_db

# The holder of the "dedupe" key waits on a queue no test runs, so the key stays taken.
HELD = "other"


def hold_the_key() -> int:
    return int(features.deduplicated.using(queue_name=HELD).enqueue(0).id)


def batch_row(opened) -> Batch:
    return Batch.objects.get(pk=opened.id)


def test_a_batch_job_discarded_when_it_becomes_due_counts_as_failed_and_the_batch_finishes():
    hold_the_key()
    with batch(on_finish=g.summarise, on_failure=g.alert) as opened:
        g.import_row.enqueue(1)
        features.deduplicated.using(run_after=timedelta(hours=1)).enqueue(1)
    assert opened.total == 2

    assert dispatch_scheduled(all_=True) == 1  # the key is taken: the job is discarded
    run_ready_jobs(queues=["default"])

    row = batch_row(opened)
    assert row.progress == (2, 1, 1)
    assert row.is_finished
    callbacks = [ref["callback"] for ref in row.callback_jobs]
    assert callbacks == ["on_finish", "on_failure"]


def test_a_job_discarded_while_the_block_runs_never_joins_the_batch():
    hold_the_key()
    with batch(on_finish=g.summarise) as opened:
        g.import_row.enqueue(1)
        features.deduplicated.enqueue(1)  # discarded at once

    assert opened.total == 1
    run_ready_jobs(queues=["default"])
    row = batch_row(opened)
    assert row.progress == (1, 1, 0) and row.is_finished


def workflow_with_a_discarded_step(first_upstream: bool):
    wf = Workflow("conflict")
    upstream = [wf.add(g.step, args=(1,))] if first_upstream else []
    dedupe = wf.add(features.deduplicated, args=(2,), after=upstream)
    doomed = wf.add(g.step, args=(3,), after=[dedupe], name="doomed")
    anyway = wf.add(g.step, args=(4,), after=[dedupe], run_if="finished", name="anyway")
    return wf.enqueue(), doomed, anyway


@pytest.mark.parametrize("first_upstream", [True, False], ids=["later", "at-enqueue"])
def test_a_workflow_step_discarded_on_conflict_fails_its_dependents_and_the_run_ends(
    first_upstream,
):
    hold_the_key()
    enqueued, doomed, anyway = workflow_with_a_discarded_step(first_upstream)

    run_ready_jobs(queues=["default"])

    jobs = Job.objects.with_execution().in_bulk([int(r.id) for r in enqueued.results.values()])
    doomed_job = jobs[int(enqueued[doomed].id)]
    assert doomed_job.state == "failed"
    assert doomed_job.failed_execution.exception_class.endswith("DependencyFailed")
    assert jobs[int(enqueued[anyway].id)].state == "finished"
    run = WorkflowRun.objects.get(pk=enqueued.id)
    assert run.finished_at is not None and run.pending == 0
