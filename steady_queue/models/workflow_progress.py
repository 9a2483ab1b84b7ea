"""How ends move a workflow on, inside the transaction that ends the steps' jobs.

When steps end (``steps_ended``), their outcome is stored on the step, their run counts
them, and each step depending on them is told, in a few statements whatever the fan-out:
- a dependent that this end satisfies (the upstream succeeded, or it runs whatever
  happened: ``run_if="finished"``) waits for one step fewer; those left waiting for none
  become due, as any job does (ready, scheduled, throttled or blocked);
- a dependent that needed the upstream to succeed can never run: it fails with
  ``DependencyFailed`` without running, and its own dependents are told in turn.

Each dependent's ``waiting_for`` is updated by one UPDATE per level (locking its row),
so two upstream steps ending at the same moment count down one after the other, and
only the end that brings it to zero makes it due. ``steps_reopened`` undoes a failure
when an operator retries a failed step: the step and the dependents that its failure
failed wait again, and the workflow resumes.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import F
from django.utils import timezone

from ..exceptions import DependencyFailed
from .signals import jobs_ended
from .workflow import RUN_IF_FINISHED, WorkflowDependency, WorkflowRun, WorkflowStep

SUCCEEDED, FAILED = "succeeded", "failed"


def dependency_error(upstream_name: str) -> dict[str, str]:
    """The stored error of a step that never ran because ``upstream_name`` failed."""
    kind = DependencyFailed
    return {
        "exception_class": f"{kind.__module__}.{kind.__qualname__}",
        "message": f"step {upstream_name!r} failed",
        "traceback": "",
    }


def steps_ended(outcomes: Mapping[int, str], return_values: Mapping[int, Any] = {}) -> None:
    """Move the workflows on after their steps ended: ``{job id: "succeeded" | "failed"}``."""
    while outcomes:
        _store(outcomes, return_values)
        outcomes, return_values = _tell_dependents(outcomes), {}


def _store(outcomes: Mapping[int, str], return_values: Mapping[int, Any]) -> None:
    now = timezone.now()
    for job_id, value in return_values.items():
        WorkflowStep.objects.filter(pk=job_id).update(outcome=SUCCEEDED, return_value=value)
    for outcome in (SUCCEEDED, FAILED):
        ids = [i for i, o in outcomes.items() if o == outcome and i not in return_values]
        if ids:
            WorkflowStep.objects.filter(pk__in=ids).update(outcome=outcome)
    runs: dict[int, Counter] = defaultdict(Counter)
    for run_id, job_id in WorkflowStep.objects.filter(pk__in=list(outcomes)).values_list(
        "run_id", "pk"
    ):
        runs[run_id][outcomes[job_id]] += 1
    for run_id in sorted(runs):
        WorkflowRun.objects.filter(pk=run_id).update(
            succeeded=F("succeeded") + runs[run_id][SUCCEEDED],
            failed=F("failed") + runs[run_id][FAILED],
            updated_at=now,
        )
        WorkflowRun.objects.filter(pk=run_id, finished_at__isnull=True).filter(
            total__lte=F("succeeded") + F("failed")
        ).update(finished_at=now)


def _tell_dependents(outcomes: Mapping[int, str]) -> dict[int, str]:
    """Count down or fail the dependents of steps that ended; return the steps failed."""
    from .execution.waiting import WaitingExecution
    from .job import Job

    links = WorkflowDependency.objects.filter(upstream_id__in=list(outcomes)).values_list(
        "step_id", "upstream_id", "upstream__name", "step__run_if"
    )
    satisfied: Counter = Counter()
    doomed: dict[int, str] = {}  # a dependent that can never run: the failed step's name
    for step_id, upstream_id, upstream_name, run_if in links.order_by("step_id"):
        if outcomes[upstream_id] == SUCCEEDED or run_if == RUN_IF_FINISHED:
            satisfied[step_id] += 1
        else:
            doomed.setdefault(step_id, upstream_name)
    by_count: dict[int, list[int]] = defaultdict(list)
    for step_id, count in satisfied.items():
        by_count[count].append(step_id)
    for count, ids in by_count.items():
        WorkflowStep.objects.filter(pk__in=ids).update(waiting_for=F("waiting_for") - count)
    failed = _fail_waiting(doomed)
    candidates = [i for i in satisfied if i not in doomed]
    if candidates:
        # A locking read: the newest counts, whatever the isolation level.
        free = WorkflowStep.objects.filter(pk__in=candidates, waiting_for__lte=0)
        due = WaitingExecution.take(free.locked(skip_locked=False).values_list("pk", flat=True))
        if due:
            Job.prepare_all_for_execution(Job.objects.filter(pk__in=due).order_by("pk"))
    return dict.fromkeys(failed, FAILED)


def _fail_waiting(doomed: Mapping[int, str]) -> list[int]:
    """Fail the still waiting steps of ``doomed`` with DependencyFailed; return which."""
    from .execution import FailedExecution
    from .execution.waiting import WaitingExecution

    taken = WaitingExecution.take(doomed)
    if not taken:
        return []
    errors = {job_id: dependency_error(doomed[job_id]) for job_id in taken}
    FailedExecution.create_never_ran(errors, timezone.now())
    jobs_ended.send(WaitingExecution, job_ids=taken)
    return taken


def steps_reopened(job_ids: Iterable[int]) -> set[int]:
    """Failed steps retried by an operator: undo their failure; return those that wait.

    The retried steps, and the dependents their failure failed with DependencyFailed
    (transitively), lose their outcome and are taken off their run's ``failed``; each
    waits again for the upstream steps that have not ended as it needs (a dependent
    with another failed upstream step fails again at once). A retried step with nothing
    to wait for becomes due as any retried job (the caller does it); the ids returned are
    the retried steps left waiting. A dependent that already ran is left as it is.
    """
    from .execution import FailedExecution
    from .execution.waiting import WaitingExecution
    from .job import Job

    retried = set(WorkflowStep.objects.filter(pk__in=list(job_ids)).values_list("pk", flat=True))
    if not retried:
        return set()
    reset = _failed_by_dependency(retried)
    FailedExecution.objects.filter(job_id__in=reset).delete()
    reopened = retried | reset
    counts = Counter(
        WorkflowStep.objects.filter(pk__in=reopened, outcome=FAILED).values_list(
            "run_id", flat=True
        )
    )
    WorkflowStep.objects.filter(pk__in=reopened).update(outcome="", return_value=None)
    for run_id in sorted(counts):
        WorkflowRun.objects.filter(pk=run_id).update(
            failed=F("failed") - counts[run_id], finished_at=None, updated_at=timezone.now()
        )
    # Every step that may now wait for one of these again: recount what it waits for.
    waiting = set(
        WaitingExecution.objects.filter(
            job__workflow_step__upstream_links__upstream_id__in=reopened, signal_name=""
        ).values_list("job_id", flat=True)
    )
    waits = _recount(reopened | waiting)
    parked = reset | {job_id for job_id in retried if waits[job_id] > 0}
    WaitingExecution.create_all_from_jobs(Job.objects.filter(pk__in=parked).order_by("pk"))
    doomed = dict(
        WorkflowDependency.objects.filter(step_id__in=parked, upstream__outcome=FAILED)
        .exclude(step__run_if=RUN_IF_FINISHED)
        .order_by("step_id", "upstream_id")
        .values_list("step_id", "upstream__name")
        .reverse()  # dict() keeps the last: the first upstream of each step, by id
    )
    steps_ended(dict.fromkeys(_fail_waiting(doomed), FAILED))
    return parked & retried


def _failed_by_dependency(retried: set[int]) -> set[int]:
    """The dependents failed, directly or not, by the failure of ``retried`` steps."""
    from .execution import FailedExecution

    kind = f"{DependencyFailed.__module__}.{DependencyFailed.__qualname__}"
    found: set[int] = set()
    frontier = retried
    while frontier:
        dependents = WorkflowDependency.objects.filter(upstream_id__in=frontier).values("step_id")
        frontier = (
            set(
                FailedExecution.objects.filter(
                    job_id__in=dependents, exception_class=kind
                ).values_list("job_id", flat=True)
            )
            - found
            - retried
        )
        found |= frontier
    return found


def _recount(step_ids: set[int]) -> dict[int, int]:
    """Set each step's ``waiting_for`` from its upstream steps' outcomes; return them."""
    waits = dict.fromkeys(step_ids, 0)
    links = WorkflowDependency.objects.filter(step_id__in=step_ids).values_list(
        "step_id", "step__run_if", "upstream__outcome"
    )
    for step_id, run_if, upstream_outcome in links:
        ended_as_needed = upstream_outcome == SUCCEEDED or (
            run_if == RUN_IF_FINISHED and upstream_outcome == FAILED
        )
        if not ended_as_needed:
            waits[step_id] += 1
    by_count: dict[int, list[int]] = defaultdict(list)
    for step_id, count in waits.items():
        by_count[count].append(step_id)
    for count, ids in by_count.items():
        WorkflowStep.objects.filter(pk__in=ids).update(waiting_for=count)
    return waits
