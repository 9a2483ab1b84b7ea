"""Semaphores and blocked jobs, by concurrency key."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count
from django.utils.translation import gettext_lazy as _

from steady_queue.models import BlockedExecution, ClaimedExecution, Semaphore
from steady_queue.task_options.concurrency import limit_for

from .actions import Outcome, act_on_job


@dataclass
class ConcurrencyKey:
    key: str
    semaphore: Semaphore | None = None
    blocked: int = 0
    limit: int | None = None


def concurrency_keys(limit: int = 200) -> list[ConcurrencyKey]:
    """Return semaphores and blocked-job counts by key (the first ``limit`` keys)."""
    keys: dict[str, ConcurrencyKey] = {}
    for semaphore in Semaphore.objects.order_by("key")[:limit]:
        keys[semaphore.key] = ConcurrencyKey(semaphore.key, semaphore=semaphore)
    blocked = BlockedExecution.objects.values("concurrency_key")
    for row in blocked.annotate(count=Count("pk")).order_by("concurrency_key")[:limit]:
        entry = keys.setdefault(row["concurrency_key"], ConcurrencyKey(row["concurrency_key"]))
        entry.blocked = row["count"]
    for key, task_path in _task_paths_holding(list(keys)):
        limit_ = limit_for(task_path)
        keys[key].limit = limit_.to if limit_ else None
    return sorted(keys.values(), key=lambda entry: entry.key)[:limit]


def _task_paths_holding(keys: list[str]) -> set[tuple[str, str]]:
    # The registry is keyed by task: find the tasks behind each key among the small
    # claimed and blocked tables rather than scanning jobs.
    pairs: set[tuple[str, str]] = set()
    for model in (ClaimedExecution, BlockedExecution):
        rows = model.objects.filter(job__concurrency_key__in=keys)
        pairs |= set(rows.values_list("job__concurrency_key", "job__task_path").distinct())
    return pairs


def next_blocked_job(key: str) -> int | None:
    """The id of the job that would be released next on ``key``, if any is blocked."""
    blocked = BlockedExecution.objects.filter(concurrency_key=key)
    return blocked.order_by("-priority", "job_id").values_list("job_id", flat=True).first()


def release_next_blocked(key: str) -> Outcome:
    """Release the job that would be released next on ``key``, if a slot of it is free."""
    job_id = next_blocked_job(key)
    if job_id is None:
        return Outcome(False, _("No job is blocked on %(key)s.") % {"key": key})
    return act_on_job("release", job_id)
