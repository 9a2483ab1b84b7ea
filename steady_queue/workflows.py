"""Workflows: steps that run once the steps they depend on have succeeded.

::

    from steady_queue.workflows import Workflow, upstream_results

    wf = Workflow("nightly report")
    a = wf.add(extract, args=(day,))
    b = wf.add(transform.using(queue_name="cpu"), args=(day,), after=[a])
    c = wf.add(load, args=(day,), after=[b])
    d = wf.add(email_report, after=[b, c])
    run = wf.enqueue()          # every step stored in one transaction
    run.results["email_report"]  # each step's TaskResult (also run[d], d.result)

A step becomes due when every step it depends on has succeeded. When one fails for
good, its dependents fail with ``steady_queue.exceptions.DependencyFailed`` without
running, except steps added with ``run_if="finished"``, which run once their upstream
steps ended, however. Retrying the failed step (dashboard, ``Job.retry()``) resumes
the workflow. How the database moves a workflow on: ``steady_queue.models.workflow_progress``.
"""

from __future__ import annotations

import dataclasses
import graphlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import db, encryption, ours
from .compat import Task, TaskResult, task_backends, task_enqueued
from .exceptions import WorkflowError
from .models import Job, WorkflowDependency, WorkflowRun, WorkflowStep
from .models.workflow import RUN_IF, RUN_IF_SUCCEEDED

__all__ = ["EnqueuedWorkflow", "Step", "Workflow", "WorkflowRun", "upstream_results"]


@dataclasses.dataclass(eq=False)
class Step:
    """One step of a ``Workflow``: a task call, and the steps it runs after."""

    workflow: Workflow
    name: str
    task: Task
    args: tuple
    kwargs: dict[str, Any]
    after: tuple[Step | str, ...]
    run_if: str
    #: The step's TaskResult, once its workflow is enqueued.
    result: TaskResult | None = None

    def __repr__(self) -> str:
        return f"<Step {self.name!r} of {self.workflow!r}>"


@dataclasses.dataclass(frozen=True)
class EnqueuedWorkflow:
    """What ``Workflow.enqueue()`` returns: the stored run and each step's TaskResult."""

    run: WorkflowRun
    results: dict[str, TaskResult]

    @property
    def id(self) -> int:
        return self.run.pk

    def __getitem__(self, step: Step | str) -> TaskResult:
        return self.results[step.name if isinstance(step, Step) else step]


class Workflow:
    """A graph of steps to enqueue together; build it with ``add()``, then ``enqueue()``."""

    def __init__(self, name: str = "", *, backend: str | None = None):
        if len(name) > WorkflowRun._meta.get_field("name").max_length:
            raise WorkflowError("A workflow's name is at most 255 characters long.")
        self.name = name
        self.backend = backend
        self.steps: list[Step] = []

    def __repr__(self) -> str:
        return f"<Workflow {self.name!r}>"

    def add(
        self,
        task: Task,
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        after: Iterable[Step | str] = (),
        run_if: str = RUN_IF_SUCCEEDED,
        name: str | None = None,
    ) -> Step:
        """Add a call of ``task`` that runs after the steps ``after`` (Steps or names).

        ``name`` (by default the task's, numbered when taken: ``load``, ``load-2``) keys
        the step in ``upstream_results`` and on the dashboard. ``run_if="finished"``
        runs the step once its upstream steps ended, even if some failed.
        """
        if not isinstance(task, Task):
            raise WorkflowError(f"A step must be a task (decorated with @task), not {task!r}.")
        if run_if not in RUN_IF:
            raise WorkflowError(f"run_if must be one of {', '.join(RUN_IF)}, not {run_if!r}.")
        taken = {step.name for step in self.steps}
        if name is None:
            name, number = task.name, 1
            while name in taken:
                number += 1
                name = f"{task.name}-{number}"
        elif name in taken:
            raise WorkflowError(f"The workflow has a step named {name!r} already.")
        if not name or len(name) > WorkflowStep._meta.get_field("name").max_length:
            raise WorkflowError("A step's name is 1 to 255 characters long.")
        step = Step(self, name, task, tuple(args), dict(kwargs or {}), tuple(after), run_if)
        self.steps.append(step)
        return step

    def enqueue(self) -> EnqueuedWorkflow:
        """Store every step in one transaction; return the run with each step's TaskResult.

        Raises WorkflowError, with nothing written, for an empty workflow, a step after
        an unknown step, a cycle, a step whose task is on another backend (or a
        ``@unique`` task), and whatever the backend refuses of a call's arguments.
        """

        backend, alias = self._backend()
        upstream = {step.name: self._upstream_names(step) for step in self.steps}
        try:
            tuple(graphlib.TopologicalSorter(upstream).static_order())
        except graphlib.CycleError as exc:
            cycle = " -> ".join(exc.args[1])
            raise WorkflowError(
                f"The workflow's steps depend on each other in a circle: {cycle}."
            ) from None
        jobs = [Job.for_task_call(s.task, s.args, s.kwargs, backend=backend) for s in self.steps]
        if any(job.unique_key for job in jobs):
            raise WorkflowError("A workflow's step cannot be a @unique task.")
        with db.using_alias(backend.database):
            run, jobs = WorkflowRun.enqueue(
                self.name,
                alias,
                [
                    (job, step.name, step.run_if, upstream[step.name])
                    for job, step in zip(jobs, self.steps, strict=True)
                ],
            )
        results = {}
        for job, step in zip(jobs, self.steps, strict=True):
            step.result = results[step.name] = backend._new_result(job, step.task)
            task_enqueued.send(type(backend), task_result=step.result)
        return EnqueuedWorkflow(run, results)

    def _backend(self):
        if not self.steps:
            raise WorkflowError("The workflow has no steps.")
        alias = self.backend or self.steps[0].task.backend
        for step in self.steps:
            if step.task.backend != alias:
                raise WorkflowError(
                    f"Step {step.name!r} uses backend {step.task.backend!r}; the workflow "
                    f"runs on backend {alias!r}: every step must use it."
                )
        backend = task_backends[alias]
        if not ours.is_ours(backend):
            raise WorkflowError(f"Backend {alias!r} is no Steady Queue backend.")
        return backend, alias

    def _upstream_names(self, step: Step) -> list[str]:
        names = []
        known = {s.name for s in self.steps}
        for upstream in step.after:
            if isinstance(upstream, Step):
                if upstream.workflow is not self:
                    raise WorkflowError(
                        f"Step {step.name!r} runs after {upstream!r}, a step of another workflow."
                    )
                upstream = upstream.name
            if upstream not in known:
                raise WorkflowError(f"Step {step.name!r} runs after an unknown step {upstream!r}.")
            if upstream not in names:
                names.append(upstream)
        return names


def upstream_results(context) -> dict[str, Any]:
    """``{step name: return value}`` of the steps the running step depends on.

    ``context`` is the task's context (``@task(takes_context=True)``). A step that
    failed (for a step added with ``run_if="finished"``) gives None; a task run outside
    any workflow gets ``{}``.
    """
    result = context.task_result
    backend = task_backends[result.backend]
    with db.using_alias(getattr(backend, "database", None)):
        links = WorkflowDependency.objects.filter(step_id=int(result.id)).order_by("upstream_id")
        found = links.values_list("upstream__name", "upstream__return_value")
        # An encrypted step's copy is sealed: the running step holds the keys.
        return {name: encryption.opened(value) for name, value in found}
