"""Which jobs a command acts on: a status and filters, as the dashboard's job lists have."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from ..exceptions import CANCELLED_CLASS

# Each status the dashboard lists: the execution holding its jobs, and the time
# --older-than compares (when the job entered that status, where it is recorded).
# Cancelled jobs are failed executions of their own class: "failed" leaves them out.
STATUSES: dict[str, tuple[str | None, str]] = {
    "pending": ("ready_execution", "ready_execution__created_at"),
    "scheduled": ("scheduled_execution", "created_at"),
    "in-progress": ("claimed_execution", "claimed_execution__created_at"),
    "blocked": ("blocked_execution", "created_at"),
    "throttled": ("throttled_execution", "throttled_execution__created_at"),
    "waiting": ("waiting_execution", "waiting_execution__created_at"),
    "failed": ("failed_execution", "failed_execution__created_at"),
    "cancelled": ("failed_execution", "failed_execution__created_at"),
    "finished": (None, "finished_at"),
}


class SelectionError(ValueError):
    """Filters that do not make sense together."""


@dataclass(frozen=True, kw_only=True)
class JobSelection:
    """Jobs with ``status`` (None: any), of ``tasks``, in ``queues``, older than, with ``error``."""

    status: str | None = None
    tasks: Sequence[str] = ()
    queues: Sequence[str] = ()
    ids: Sequence[int] = ()
    older_than: timedelta | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in STATUSES:
            raise SelectionError(
                f"Unknown status {self.status!r}: use one of {', '.join(STATUSES)}."
            )
        if self.error and self.status != "failed":
            raise SelectionError("--error applies to failed jobs only: add --status failed.")

    def jobs(self) -> QuerySet:
        """The matching jobs (a lazy queryset)."""
        from ..models import Job

        jobs = Job.objects.all()
        if self.status is not None:
            jobs = jobs.filter(self._status_condition())
        if self.tasks:
            jobs = jobs.filter(task_path__in=self.tasks)
        if self.queues:
            jobs = jobs.filter(queue_name__in=self.queues)
        if self.ids:
            jobs = jobs.filter(pk__in=self.ids)
        if self.older_than is not None:
            time_field = STATUSES[self.status][1] if self.status else "created_at"
            jobs = jobs.filter(**{f"{time_field}__lt": timezone.now() - self.older_than})
        if self.error:
            jobs = jobs.filter(
                Q(failed_execution__message__icontains=self.error)
                | Q(failed_execution__exception_class__icontains=self.error)
            )
        return jobs

    def describe(self, count: int | None = None) -> str:
        """The selection in words (after ``count``, if given), for output and the audit log."""
        noun = "job" if count == 1 else "jobs"
        words = [] if count is None else [f"{count:,}"]
        words.append(f"{self.status} {noun}" if self.status else noun)
        if self.ids:
            words.append("with id " + ", ".join(str(pk) for pk in self.ids))
        if self.tasks:
            words.append("of task " + ", ".join(self.tasks))
        if self.queues:
            words.append("in queue " + ", ".join(self.queues))
        if self.older_than is not None:
            words.append(f"older than {_duration(self.older_than)}")
        if self.error:
            words.append(f"whose error contains {self.error!r}")
        return " ".join(words)

    def filters(self) -> dict:
        """The selection as the audit entry's details keep it."""
        return {
            "status": self.status,
            "tasks": list(self.tasks),
            "queues": list(self.queues),
            "ids": list(self.ids),
            "older_than_seconds": self.older_than.total_seconds() if self.older_than else None,
            "error": self.error,
        }

    def _status_condition(self) -> Q:
        execution = STATUSES[self.status][0]
        if execution is None:
            return Q(finished_at__isnull=False)
        present = Q(**{f"{execution}__isnull": False})
        cancelled = Q(failed_execution__exception_class=CANCELLED_CLASS)
        if self.status == "cancelled":
            return present & cancelled
        return present & ~cancelled if self.status == "failed" else present


def id_batches(jobs: QuerySet, size: int) -> Iterator[list[int]]:
    """Yield the ids of ``jobs`` in ascending batches of ``size`` (keyset on the key).

    Only one batch is in memory at a time, and each query starts after the last id
    seen: a million jobs cost a thousand small queries, not one huge one.
    """
    ids = jobs.order_by("pk").values_list("pk", flat=True)
    last = None
    while batch := list((ids if last is None else ids.filter(pk__gt=last))[:size]):
        yield batch
        last = batch[-1]


def _duration(delta: timedelta) -> str:
    total = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if total and total % size == 0:
            return f"{total // size}{unit}"
    return f"{total}s"
