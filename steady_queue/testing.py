"""Helpers for your own test suite: run queued jobs in-process, without a worker."""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from . import storage
from .compat import TaskResult
from .models import ScheduledExecution, ThrottledExecution, WaitingExecution
from .models.task_rollup import tally
from .runner.perform import perform


def run_ready_jobs(
    *, queues: list[str] | None = None, include_scheduled: bool = False, max_jobs: int | None = None
) -> list[TaskResult]:
    """Run every ready job in this process until none is left; return their results.

    Jobs enqueued by the jobs being run are run too. With ``include_scheduled``,
    jobs of ``queues`` scheduled for later are made ready first, whatever their time.
    ``max_jobs`` counts every run, rescheduled ones included, so that a task that
    keeps rescheduling itself cannot loop forever.
    """
    results: list[TaskResult] = []
    runs = 0
    while max_jobs is None or runs < max_jobs:
        if include_scheduled:
            dispatch_scheduled(all_=True, queues=queues)
        claimed = storage.claim(queues or ["*"], 1, None)
        if not claimed:
            break
        runs += 1
        result = perform(claimed[0])
        if result is not None:
            results.append(result)
    if runs:
        tally.flush()  # no heartbeat writes this process's counts
    return results


def dispatch_scheduled(*, all_: bool = False, queues: list[str] | None = None) -> int:
    """Move scheduled jobs that are due (or all of them) to ready; return how many.

    ``queues`` takes names and ``prefix*`` wildcards, as workers do; ``None`` is all queues.
    """
    scheduled = ScheduledExecution.objects.filter(_in_queues(queues))
    if not all_:
        scheduled = scheduled.filter(scheduled_at__lte=timezone.now())
    return ScheduledExecution.dispatch_jobs(list(scheduled.values_list("job_id", flat=True)))


def release_throttled() -> int:
    """Make ready the throttled jobs whose rate limit window has room now; return how many.

    What a dispatcher does when a window's turn comes; the windows still count every
    start, so a test sees its limits hold as a worker would.
    """
    released = 0
    while count := ThrottledExecution.release_due(500)[0]:
        released += count
    return released


def release_expired_waits() -> int:
    """Make due the jobs whose signal wait (``durable.wait_for_signal``) timed out; return
    how many. What a dispatcher does each poll."""
    released = 0
    while count := WaitingExecution.release_expired(500):
        released += count
    return released


def _in_queues(queues: list[str] | None) -> Q:
    if not queues or "*" in queues:
        return Q()
    condition = Q(pk__in=[])
    for name in queues:
        if name.endswith("*"):
            condition |= Q(queue_name__startswith=name[:-1])
        else:
            condition |= Q(queue_name=name)
    return condition
