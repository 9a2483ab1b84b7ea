"""What the overview's problem list reads: live processes, recent failures, known queues."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import FailedExecution, Process, RecurringTask

from .processes import Health


@dataclass(frozen=True)
class ProcessState:
    kind: str
    name: str
    queues: tuple[str, ...]
    last_heartbeat_at: datetime
    alive: bool


def process_states(now: datetime | None = None) -> list[ProcessState]:
    """Every registered process with its queues and whether its heartbeat is recent."""
    now = now or timezone.now()
    rows = Process.objects.values_list("kind", "name", "metadata", "last_heartbeat_at")
    return [
        ProcessState(
            kind,
            name,
            tuple(_queues(metadata)),
            heartbeat,
            Process.heartbeat_is_alive(heartbeat, now),
        )
        for kind, name, metadata, heartbeat in rows.order_by("kind", "pk")
    ]


def health_of(states: list[ProcessState]) -> list[Health]:
    """Count processes by kind, and those whose heartbeat is overdue (no query)."""
    kinds = sorted({state.kind for state in states})
    return [
        Health(
            kind,
            sum(1 for s in states if s.kind == kind),
            sum(1 for s in states if s.kind == kind and not s.alive),
        )
        for kind in kinds
    ]


def failure_counts(window: timedelta, baseline: timedelta) -> tuple[int, int]:
    """Failures in the last ``window``, and in the ``baseline`` before it, in one query.

    Cancelled jobs are no failures: a bulk cancel must not raise a "Failure spike".
    """
    now = timezone.now()
    start = now - window
    failures = FailedExecution.objects.exclude(exception_class=CANCELLED_CLASS)
    counts = failures.filter(created_at__gte=start - baseline).aggregate(
        recent=Count("pk", filter=Q(created_at__gte=start)),
        before=Count("pk", filter=Q(created_at__lt=start)),
    )
    return counts["recent"] or 0, counts["before"] or 0


def scheduler_running() -> bool:
    """Whether a scheduler process is alive (recurring tasks run only then)."""
    processes = Process.objects.filter(kind=Process.Kind.SCHEDULER)
    return processes.filter(Process.alive_condition()).exists()


def recurring_enabled() -> bool:
    """Whether any recurring task is enabled (and so needs a scheduler)."""
    return RecurringTask.objects.filter(enabled=True).exists()


def _queues(metadata) -> list[str]:
    # Workers record their queues; a row without them (written by hand or by an older
    # version) is taken to poll every queue rather than raise a false alarm.
    queues = metadata.get("queues", ["*"]) if isinstance(metadata, dict) else ["*"]
    if isinstance(queues, str):
        return [q.strip() for q in queues.split(",") if q.strip()]
    return [q for q in queues or [] if isinstance(q, str)]
