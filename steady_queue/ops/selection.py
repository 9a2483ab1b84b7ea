"""Which jobs a command acts on: a status and filters, as the dashboard's job lists have."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from ..models import states


class SelectionError(ValueError):
    """Filters that do not make sense together."""


@dataclass(frozen=True, kw_only=True)
class JobSelection:
    """Jobs with ``status`` (None: any), of ``tasks``, in ``queues``, older than, with ``error``.

    ``status`` is a state's word (``states.words()``) or an old spelling of one
    (``states.ALIASES``), kept as its canonical word.
    """

    status: str | None = None
    tasks: Sequence[str] = ()
    queues: Sequence[str] = ()
    ids: Sequence[int] = ()
    older_than: timedelta | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        if self.status is not None:
            if self.status not in states.words(accepting_aliases=True):
                raise SelectionError(
                    f"Unknown status {self.status!r}: use one of {', '.join(states.words())}."
                )
            object.__setattr__(self, "status", states.canonical(self.status))
        if self.error and self.status != states.FAILED:
            raise SelectionError("--error applies to failed jobs only: add --status failed.")

    def jobs(self) -> QuerySet:
        """The matching jobs (a lazy queryset)."""
        from ..models import Job

        jobs = Job.objects.all()
        if self.status is not None:
            jobs = jobs.filter(states.get(self.status).job_condition())
        if self.tasks:
            jobs = jobs.filter(task_path__in=self.tasks)
        if self.queues:
            jobs = jobs.filter(queue_name__in=self.queues)
        if self.ids:
            jobs = jobs.filter(pk__in=self.ids)
        if self.older_than is not None:
            # When the job entered its status (any status: when it was enqueued).
            time_field = states.get(self.status).entered_lookup if self.status else "created_at"
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
