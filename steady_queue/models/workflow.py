"""Workflows: steps (jobs) that wait for the steps they depend on.

``WorkflowRun`` is one enqueued workflow; ``WorkflowStep`` one of its jobs (keyed by the
job's id) with its name, how many of its upstream steps it still waits for, and how it
ended; ``WorkflowDependency`` one edge, "``step`` runs after ``upstream``". Steps and
runs outlive their jobs (no database constraint to the jobs table): a discarded or
cleared job leaves its step, with the outcome and return value its dependents read.
How ends move a workflow on is ``workflow_progress``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import db
from .base import QueueModel

if TYPE_CHECKING:
    from .job import Job

#: A step runs once every upstream step succeeded...
RUN_IF_SUCCEEDED = "succeeded"
#: ... or, added with ``run_if="finished"``, once every one ended, however.
RUN_IF_FINISHED = "finished"
RUN_IF = (RUN_IF_SUCCEEDED, RUN_IF_FINISHED)


class WorkflowRun(QueueModel):
    """One enqueued workflow: its steps' ends counted as they come."""

    name = models.CharField(_("name"), max_length=255, blank=True)
    backend = models.CharField(_("backend"), max_length=100, default="default")
    total = models.IntegerField(_("steps"))
    succeeded = models.IntegerField(_("succeeded"), default=0)
    failed = models.IntegerField(_("failed"), default=0)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        db_table = "steady_queue_workflow_runs"
        verbose_name = _("workflow run")
        verbose_name_plural = _("workflow runs")
        indexes = [models.Index(fields=["created_at"], name="sq_workflow_runs_created_at")]

    def __str__(self) -> str:
        return f"{self.name or 'workflow'} #{self.pk}"

    @property
    def pending(self) -> int:
        return self.total - self.succeeded - self.failed

    @classmethod
    def enqueue(
        cls,
        name: str,
        backend: str,
        steps: Sequence[tuple[Job, str, str, Sequence[str]]],
    ) -> tuple[WorkflowRun, list[Job]]:
        """Store a run with its ``(job, name, run_if, upstream names)`` steps, in order,
        in one transaction: steps without upstream become due, the others wait.

        The caller has checked the graph (names unique, upstreams known, no cycle).
        """
        from .execution.waiting import WaitingExecution
        from .job import Job
        from .label import JobLabel

        with db.atomic():
            run = cls.objects.create(name=name, backend=backend, total=len(steps))
            jobs = [job for job, *_ in steps]
            for job in jobs:
                job.workflow_run_id = run.pk
            jobs = Job.objects.bulk_create(jobs)
            JobLabel.insert_for(jobs)
            run._store_graph(jobs, steps)
            # The others wait first: a root discarded on a concurrency conflict ends
            # failed at once, and its dependents must be waiting to hear of it.
            WaitingExecution.create_all_from_jobs(
                job for job, (*_, upstream) in zip(jobs, steps, strict=True) if upstream
            )
            roots = [job for job, (*_, upstream) in zip(jobs, steps, strict=True) if not upstream]
            Job.prepare_all_for_execution(roots)
        return run, jobs

    def _store_graph(self, jobs: list[Job], steps: Sequence[tuple]) -> None:
        """Store the steps of this run (``jobs``, stored) and the edges between them."""
        by_name = {}
        for position, (job, (_unsaved, step_name, run_if, upstream)) in enumerate(
            zip(jobs, steps, strict=True)
        ):
            by_name[step_name] = WorkflowStep(
                job_id=job.pk,
                run=self,
                name=step_name,
                position=position,
                run_if=run_if,
                waiting_for=len(upstream),
            )
        WorkflowStep.objects.bulk_create(list(by_name.values()))
        WorkflowDependency.objects.bulk_create(
            WorkflowDependency(step_id=by_name[step_name].job_id, upstream_id=by_name[up].job_id)
            for _, step_name, _, upstream in steps
            for up in upstream
        )


class WorkflowStep(QueueModel):
    """One step of a run: a job, and what it waits for."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        primary_key=True,
        related_name="workflow_step",
    )
    run = models.ForeignKey(WorkflowRun, on_delete=models.CASCADE, related_name="steps")
    name = models.CharField(_("name"), max_length=255)
    position = models.IntegerField(_("position"), default=0)
    run_if = models.CharField(_("run if"), max_length=16, default=RUN_IF_SUCCEEDED)
    # Upstream steps that have not ended as this step needs: it becomes due at 0.
    waiting_for = models.IntegerField(_("waiting for"), default=0)
    # "" until the step's job ends: "succeeded" or "failed" (for good).
    outcome = models.CharField(_("outcome"), max_length=16, blank=True, default="")
    # A copy of the job's return value, for its dependents even once the job is cleared.
    return_value = models.JSONField(_("return value"), null=True, blank=True)

    class Meta:
        db_table = "steady_queue_workflow_steps"
        verbose_name = _("workflow step")
        verbose_name_plural = _("workflow steps")
        constraints = [
            models.UniqueConstraint(fields=["run", "name"], name="sq_workflow_step_names")
        ]

    def __str__(self) -> str:
        return self.name


class WorkflowDependency(QueueModel):
    """``step`` runs after ``upstream`` (both of one run)."""

    step = models.ForeignKey(WorkflowStep, on_delete=models.CASCADE, related_name="upstream_links")
    upstream = models.ForeignKey(
        WorkflowStep, on_delete=models.CASCADE, related_name="downstream_links"
    )

    class Meta:
        db_table = "steady_queue_workflow_dependencies"
        constraints = [
            models.UniqueConstraint(fields=["step", "upstream"], name="sq_workflow_dependency")
        ]
        indexes = [models.Index(fields=["upstream", "step"], name="sq_workflow_downstream")]
