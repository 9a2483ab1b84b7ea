"""Workflow runs: their progress, their steps' states and edges, and a job's place in one."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db.models import Q, QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from steady_queue.exceptions import DependencyFailed
from steady_queue.models import Job, WorkflowDependency, WorkflowRun, WorkflowStep, states

from ..group_progress import ProgressBar

# A run page reads at most this many steps (and their jobs and edges): a workflow of
# 100,000 steps still answers in a few queries; the page says what it left out.
STEP_CAP = 2_000
# A job's page names at most this many upstream and downstream steps.
LINK_CAP = 100
DEPENDENCY_FAILED = f"{DependencyFailed.__module__}.{DependencyFailed.__qualname__}"


@dataclass(frozen=True)
class StepState:
    """How a step shows: its label, and a symbol so that colour is never the only cue."""

    name: str
    label: str | Promise
    symbol: str


STEP_STATES = {
    state.name: state
    for state in [
        StepState(states.WAITING, _("waiting for upstream steps"), "…"),
        StepState(states.SCHEDULED, _("scheduled"), "◷"),
        StepState(states.READY, _("ready"), "○"),
        StepState(states.BLOCKED, _("blocked (concurrency)"), "◌"),
        StepState(states.THROTTLED, _("throttled (rate limit)"), "◌"),
        StepState(states.RUNNING, _("running"), "▶"),
        StepState("succeeded", _("succeeded"), "✓"),
        StepState(states.FAILED, _("failed"), "✗"),
        StepState("dependency-failed", _("not run: an upstream step failed"), "⊘"),
        StepState(states.DISCARDED, _("discarded (job gone)"), "⌫"),
    ]
}
# The states that explain a stuck or failed run: drawn first when a column is collapsed.
PROMINENT = (states.FAILED, states.DISCARDED, "dependency-failed", states.RUNNING)
# Each kind but failed (read with its error): the relation to its table, and its state.
EXECUTION_STATES = tuple(
    (kind.relation, kind.name) for kind in states.kinds() if kind.name != states.FAILED
)


@dataclass(eq=False)
class Step:
    job_id: int
    name: str
    position: int
    run_if: str
    state: str
    error: str = ""
    labels: list[str] = field(default_factory=list)  # its job's (read with its state)
    upstream: list[Step] = field(default_factory=list)
    downstream: list[Step] = field(default_factory=list)

    @property
    def state_info(self) -> StepState:
        return STEP_STATES[self.state]


@dataclass(frozen=True)
class Failure:
    """A step that failed (or was discarded), and the steps its failure kept from running."""

    step: Step
    blocked: list[Step]


@dataclass(frozen=True)
class RunRow:
    run: WorkflowRun
    bar: ProgressBar


@dataclass(frozen=True)
class RunSteps:
    run: WorkflowRun
    bar: ProgressBar
    steps: list[Step]  # in the order they were added
    complete: bool  # False: the run has more than STEP_CAP steps; the first ones are here
    failures: list[Failure]


@dataclass(frozen=True)
class StepLinks:
    """A job's step: its name, run, and the steps it waits for and that wait for it."""

    step: WorkflowStep
    upstream: list[tuple[int, str]]
    downstream: list[tuple[int, str]]
    more: bool


def workflow_runs() -> QuerySet:
    """Every run; the list orders them newest first (sq_workflow_runs_created_at)."""
    return WorkflowRun.objects.all()


def run_rows(rows: list[WorkflowRun]) -> list[RunRow]:
    return [RunRow(run, _bar(run)) for run in rows]


def find_run(pk: int) -> WorkflowRun | None:
    return WorkflowRun.objects.filter(pk=pk).first()


def run_steps(run: WorkflowRun) -> RunSteps:
    """The run's first STEP_CAP steps with their states and edges: three queries."""
    rows = list(
        WorkflowStep.objects.filter(run=run)
        .order_by("pk")
        .values_list("pk", "name", "position", "run_if", "outcome")[: STEP_CAP + 1]
    )
    complete = len(rows) <= STEP_CAP
    rows = rows[:STEP_CAP]
    if not rows:
        return RunSteps(run, _bar(run), [], complete, [])
    jobs = _job_states(run, rows[0][0], rows[-1][0])
    steps = {}
    for pk, name, position, run_if, outcome in rows:
        job = jobs.get(pk)
        state, error = _state(outcome, job[:-1] if job else None)
        labels = job[-1] if job else []
        steps[pk] = Step(pk, name, position, run_if, state, error, labels or [])
    _link(steps, run, rows[-1][0])
    ordered = sorted(steps.values(), key=lambda step: (step.position, step.job_id))
    return RunSteps(run, _bar(run), ordered, complete, _failures(ordered))


def step_links(job: Job) -> StepLinks | None:
    """The job's place in its workflow, or None for a job of no workflow (no query then)."""
    step = getattr(job, "workflow_step", None) if job.workflow_run_id else None
    if step is None:
        return None
    links = WorkflowDependency.objects.filter(Q(step_id=job.pk) | Q(upstream_id=job.pk))
    rows = list(
        links.order_by("pk").values_list("step_id", "step__name", "upstream_id", "upstream__name")[
            : LINK_CAP + 1
        ]
    )
    upstream = [(up, up_name) for down, _name, up, up_name in rows[:LINK_CAP] if down == job.pk]
    downstream = [(down, name) for down, name, up, _name in rows[:LINK_CAP] if up == job.pk]
    return StepLinks(step, upstream, downstream, len(rows) > LINK_CAP)


def _bar(run: WorkflowRun) -> ProgressBar:
    return ProgressBar(run.total, run.succeeded, run.failed)


def _job_states(run: WorkflowRun, first: int, last: int) -> dict[int, tuple]:
    # Every job of the run is one of its steps: the id range bounds the rows read.
    columns = [f"{relation}__job_id" for relation, _state in EXECUTION_STATES]
    jobs = Job.objects.filter(workflow_run_id=run.pk, pk__gte=first, pk__lte=last)
    rows = jobs.values_list(
        "pk",
        "finished_at",
        *columns,
        "failed_execution__job_id",
        "failed_execution__exception_class",
        "failed_execution__message",
        "labels",  # on the job's row: the steps' chips cost no query of their own
    )
    return {row[0]: row[1:] for row in rows}


def _state(outcome: str, job: tuple | None) -> tuple[str, str]:
    """A step's state and error message, from its job's row (None: the job is gone).

    ``job`` holds the columns of ``_job_states`` but the labels."""
    if job is None:
        # Cleared after it succeeded, or discarded (which counts as failing it).
        return ("succeeded" if outcome == "succeeded" else states.DISCARDED), ""
    finished_at, *executions, failed, exception_class, message = job
    if finished_at is not None:
        return "succeeded", ""
    if failed is not None:
        dependency = exception_class == DEPENDENCY_FAILED
        return ("dependency-failed" if dependency else states.FAILED), message or exception_class
    for (_relation, state), present in zip(EXECUTION_STATES, executions, strict=True):
        if present is not None:
            return state, ""
    return states.DISCARDED, ""


def _link(steps: dict[int, Step], run: WorkflowRun, last: int) -> None:
    edges = WorkflowDependency.objects.filter(step__run=run, step_id__lte=last)
    for down, up in edges.order_by("step_id", "upstream_id").values_list("step_id", "upstream_id"):
        if down in steps and up in steps:
            steps[down].upstream.append(steps[up])
            steps[up].downstream.append(steps[down])


def _failures(steps: list[Step]) -> list[Failure]:
    """Each failed step with the steps that did not run because of it (transitively)."""
    failures = []
    for step in steps:
        if step.state not in (states.FAILED, states.DISCARDED):
            continue
        blocked: dict[int, Step] = {}
        frontier = [step]
        while frontier:
            frontier = [
                down
                for up in frontier
                for down in up.downstream
                if down.state == "dependency-failed" and down.job_id not in blocked
            ]
            blocked |= {down.job_id: down for down in frontier}
        if step.state == states.FAILED or blocked:
            failures.append(Failure(step, sorted(blocked.values(), key=_order)))
    return failures


def _order(step: Step) -> tuple[int, int]:
    return step.position, step.job_id


def by_state(steps: list[Step]) -> dict[str, int]:
    """How many of ``steps`` are in each state, in the order of STEP_STATES."""
    counts: dict[str, int] = defaultdict(int)
    for step in steps:
        counts[step.state] += 1
    return {name: counts[name] for name in STEP_STATES if counts[name]}
