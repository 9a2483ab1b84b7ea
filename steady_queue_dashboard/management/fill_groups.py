"""Batches and workflow runs for ``steady_queue_dashboard_fill``: rows as the engine leaves them.

A mixin of the fill command (``self._job()``, ``self.random``, ``self.now``): each batch
gets a few jobs, some ended, and its callbacks once every job ended; each workflow run
has one shape (extract, three transforms, load, report, an audit that runs whatever
happens) and one of three fates: succeeded, a transform failed (load and report never
ran), or still going (steps ready and waiting).
"""

from __future__ import annotations

from datetime import timedelta

from steady_queue import db
from steady_queue.models import (
    Batch,
    FailedExecution,
    Job,
    ReadyExecution,
    WaitingExecution,
    WorkflowDependency,
    WorkflowRun,
    WorkflowStep,
    states,
)
from steady_queue.models.workflow_progress import dependency_error

# (name, upstream steps, run_if)
WORKFLOW = [
    ("extract", [], "succeeded"),
    ("transform-1", ["extract"], "succeeded"),
    ("transform-2", ["extract"], "succeeded"),
    ("transform-3", ["extract"], "succeeded"),
    ("load", ["transform-1", "transform-2", "transform-3"], "succeeded"),
    ("report", ["load"], "succeeded"),
    ("audit", ["extract"], "finished"),
]
# Each run's fate: the state of each step that did not succeed.
FATES = [
    {},
    {"transform-2": "failed", "load": "dependency-failed", "report": "dependency-failed"},
    {
        "transform-2": states.READY,
        "transform-3": states.READY,
        "load": states.WAITING,
        "report": states.WAITING,
    },
]
ERROR = ("reports.exceptions.SourceUnavailable", "warehouse replica is read-only")
CALLBACK = {"queue_name": "default", "priority": 0}


class GroupsFill:
    def _fill_batches(self, count: int) -> None:
        for number in range(count):
            with db.atomic():
                self._batch(number)
        self.stdout.write(f"{count:>9,} batches")

    def _fill_workflows(self, count: int) -> None:
        for number in range(count):
            with db.atomic():
                self._workflow_run(number)
        self.stdout.write(f"{count:>9,} workflow runs")

    def _batch(self, number: int) -> None:
        created = self.now - timedelta(minutes=self.random.uniform(1, 600))
        size = self.random.randint(3, 12)
        # Every fourth batch is still running; the others finished, some with failures.
        choices = ["finished"] * 5 + ["failed"] + (["ready"] * 3 if number % 4 == 0 else [])
        states = [self.random.choice(choices) for _ in range(size)]
        batch = Batch.objects.create(
            description=f"import {created:%Y-%m-%d} part {number + 1}",
            total=size,
            succeeded=states.count("finished"),
            failed=states.count("failed"),
            on_finish={"task_path": "reports.tasks.summarise_import", **CALLBACK},
            on_failure={"task_path": "mail.tasks.alert_operations", **CALLBACK},
            created_at=created,
        )
        jobs = [self._job() for _ in states]
        executions = []
        for job, state in zip(jobs, states, strict=True):
            job.batch_id, job.created_at = batch.pk, created
            executions += self._ended(job, state, created)
        if "ready" not in states:
            callbacks = ["on_finish"] + (["on_failure"] if batch.failed else [])
            jobs += self._callbacks(batch, callbacks, executions)
        Job.objects.bulk_create(jobs)
        self._create(executions)
        batch.save()

    def _callbacks(self, batch: Batch, names: list[str], executions: list) -> list[Job]:
        jobs = []
        for name in names:
            job = self._job()
            job.task_path = getattr(batch, name)["task_path"]
            job.arguments = {"args": [batch.pk], "kwargs": {}}
            executions += self._ended(job, "ready", job.created_at)
            batch.callback_jobs.append({"callback": name, "job_id": job.pk, "finish": 1})
            jobs.append(job)
        batch.finishes, batch.finished_at = 1, self.now - timedelta(seconds=30)
        return jobs

    def _workflow_run(self, number: int) -> None:
        fate = FATES[number % len(FATES)]
        created = self.now - timedelta(minutes=self.random.uniform(1, 600))
        outcomes = {name: _outcome(fate.get(name, "succeeded")) for name, _, _ in WORKFLOW}
        run = WorkflowRun.objects.create(
            name=f"nightly report {number + 1}",
            total=len(WORKFLOW),
            succeeded=list(outcomes.values()).count("succeeded"),
            failed=list(outcomes.values()).count("failed"),
            finished_at=None if "" in outcomes.values() else self.now,
            created_at=created,
        )
        jobs, steps, executions = {}, [], []
        for position, (name, upstream, run_if) in enumerate(WORKFLOW):
            job = jobs[name] = self._job()
            job.workflow_run_id, job.created_at = run.pk, created
            job.task_path = f"reports.tasks.{name.split('-')[0]}"
            state = fate.get(name, "succeeded")
            waits = sum(outcomes[up] != "succeeded" for up in upstream)
            steps.append(
                WorkflowStep(
                    job_id=job.pk,
                    run=run,
                    name=name,
                    position=position,
                    run_if=run_if,
                    waiting_for=waits if state == states.WAITING else 0,
                    outcome=outcomes[name],
                )
            )
            failed_upstream = next((up for up in upstream if fate.get(up) == "failed"), "")
            executions += self._ended(job, state, created, failed_upstream)
        Job.objects.bulk_create(jobs.values())
        WorkflowStep.objects.bulk_create(steps)
        WorkflowDependency.objects.bulk_create(
            WorkflowDependency(step_id=jobs[name].pk, upstream_id=jobs[up].pk)
            for name, upstream, _ in WORKFLOW
            for up in upstream
        )
        self._create(executions)

    def _ended(self, job: Job, state: str, created, upstream: str = "") -> list:
        """Put ``job`` in ``state``; return its execution rows."""
        row = {"job": job, "queue_name": job.queue_name, "priority": job.priority}
        if state in ("finished", "succeeded"):
            job.finished_at = created + timedelta(seconds=self.random.uniform(1, 60))
            return []
        if state == "ready":
            return [ReadyExecution(**row)]
        if state == states.WAITING:
            return [WaitingExecution(**row)]
        if state == "dependency-failed":
            error = dependency_error(upstream)
            error = (error["exception_class"], error["message"])
        else:
            error = ERROR
        return [
            FailedExecution(
                job=job,
                exception_class=error[0],
                message=error[1],
                backtrace="",
                created_at=created,
            )
        ]

    def _create(self, executions: list) -> None:
        for model in {type(row) for row in executions}:
            model.objects.bulk_create([row for row in executions if type(row) is model])


def _outcome(state: str) -> str:
    if state == "succeeded":
        return "succeeded"
    return "failed" if state in ("failed", "dependency-failed") else ""
