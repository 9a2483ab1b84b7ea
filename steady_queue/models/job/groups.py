"""Where a job's end reaches its batch or workflow: one call from each place a job ends.

``Success.store`` and ``Job.fail`` end one job they hold (``job_ended``: no query for a
job of no batch or workflow), as does a conflict's discard (``job_discarded``);
cancelling and discarding end jobs by the hundred
(``jobs_failed``: one query finds those of a group); retrying failed jobs reopens their
groups (``jobs_reopened``). Each runs in the transaction that changes the jobs, so a
group moves on exactly when its jobs' ends commit.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from .. import batch, workflow_progress

if TYPE_CHECKING:
    from . import Job


def job_ended(job: Job, *, succeeded: bool, return_value: Any = None) -> None:
    """``job`` ended for good (in this transaction): succeeded, or failed."""
    if job.batch_id is not None:
        batch.count_ends({job.batch_id: (1, 0) if succeeded else (0, 1)})
    if job.workflow_run_id is not None:
        if succeeded:
            workflow_progress.steps_ended({job.pk: "succeeded"}, {job.pk: return_value})
        else:
            workflow_progress.steps_ended({job.pk: workflow_progress.FAILED})


def job_discarded(job: Job) -> None:
    """``job`` is discarded as it became due (``on_conflict="discard"``), in this transaction.

    It ends failed, as any discarded job does: its batch counts it, and its workflow's
    dependents go on as after a failure. A job discarded while its batch's block still
    runs never joins the batch: the block's total counts the jobs it kept.
    """
    if (
        job.batch_id is not None
        and batch.Batch.objects.filter(pk=job.batch_id, total__isnull=False).exists()
    ):
        batch.count_ends({job.batch_id: (0, 1)})
    if job.workflow_run_id is not None:
        workflow_progress.steps_ended({job.pk: workflow_progress.FAILED})


def jobs_failed(job_ids: Iterable[int]) -> None:
    """The jobs of ``job_ids`` ended without succeeding: cancelled, or discarded unfinished.

    Before a discard deletes them: their batch is read from their rows.
    """
    from . import Job

    grouped = Job.objects.filter(pk__in=list(job_ids)).filter(
        Q(batch__isnull=False) | Q(workflow_run__isnull=False)
    )
    rows = list(grouped.values_list("pk", "batch_id", "workflow_run_id"))
    batches = Counter(batch_id for _, batch_id, _ in rows if batch_id is not None)
    if batches:
        batch.count_ends({batch_id: (0, count) for batch_id, count in batches.items()})
    steps = [pk for pk, _, run_id in rows if run_id is not None]
    if steps:
        workflow_progress.steps_ended(dict.fromkeys(steps, workflow_progress.FAILED))


def jobs_reopened(jobs: list[Job]) -> list[Job]:
    """Failed ``jobs`` retried: reopen their groups; return those to queue again now.

    A workflow step whose upstream steps have not all succeeded waits for them instead.
    """
    batches = Counter(job.batch_id for job in jobs if job.batch_id is not None)
    if batches:
        batch.reopen(batches)
    steps = [job.pk for job in jobs if job.workflow_run_id is not None]
    if not steps:
        return jobs
    waiting = workflow_progress.steps_reopened(steps)
    return [job for job in jobs if job.pk not in waiting]
