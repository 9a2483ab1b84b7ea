"""Release blocked jobs by hand: into a free slot of their key, or over its limit.

The engine decides (``Job.release``, ``JobQuerySet.release_all``); this says what came
of it, and which jobs hold the slots of the keys that had none free.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from steady_queue.exceptions import JobStateError
from steady_queue.models import BlockedExecution, ClaimedExecution, Job, ReadyExecution, Semaphore
from steady_queue.task_options.concurrency import limit_for

from .actions import Outcome

logger = logging.getLogger(__name__)
# Keys and holders the release page shows at most (a bulk release may meet many keys).
SHOWN_KEYS = 10
SHOWN_HOLDERS = 20


@dataclass(frozen=True)
class ReleaseOutcome(Outcome):
    #: Jobs left blocked for want of a free slot: the operator may force them.
    left_blocked: int = 0


@dataclass
class KeySlots:
    """A concurrency key: its limit, how many slots are held, and by which jobs."""

    key: str
    limit: int | None
    held: int | None
    holders: list[Job] = field(default_factory=list)


def release_job(pk: int, force: bool = False) -> ReleaseOutcome:
    """Release the blocked job ``pk`` (over its limit with ``force``); never raise."""
    job = Job.objects.filter(pk=pk).first()
    if job is None:
        return ReleaseOutcome(False, _("Job %(id)s no longer exists.") % {"id": pk})
    try:
        released = job.release(force=force)
    except JobStateError as exc:
        return ReleaseOutcome(False, str(exc))
    except Exception as exc:
        logger.exception("Dashboard release of job %s failed", pk)
        return ReleaseOutcome(False, f"{type(exc).__name__}: {exc}")
    if not released:
        message = _("Job %(id)s stays blocked: no slot of its concurrency key is free.")
        return ReleaseOutcome(False, message % {"id": pk}, left_blocked=1)
    if force:
        message = _("Job %(id)s was released over its concurrency limit and is ready to run.")
        return ReleaseOutcome(True, message % {"id": pk}, affected=1)
    message = _("Job %(id)s was released into a free slot and is ready to run.")
    return ReleaseOutcome(True, message % {"id": pk}, affected=1)


def blocked_keys(queryset: QuerySet) -> dict[str, str]:
    """``{concurrency key: task path}`` of the blocked jobs of ``queryset`` (the first keys)."""
    blocked = BlockedExecution.objects.filter(job__in=queryset.values("pk"))
    pairs = blocked.values_list("concurrency_key", "job__task_path").distinct()
    return dict(pairs.order_by("concurrency_key", "job__task_path")[:SHOWN_KEYS])


def key_slots(keys: dict[str, str]) -> list[KeySlots]:
    """Each key of ``{key: task path}`` with its limit, held slots and the jobs holding them.

    Running (claimed) and ready jobs hold the slots; both tables are searched by key
    through the job's row, a few holders per key.
    """
    shown = sorted(keys)[:SHOWN_KEYS]
    semaphores = dict(Semaphore.objects.filter(key__in=shown).values_list("key", "value"))
    entries = []
    for key in shown:
        limit = limit_for(keys[key])
        to = limit.to if limit else None
        free = semaphores.get(key, to)  # no row: nothing holds the key
        held = to - free if to is not None and free is not None else None
        entries.append(KeySlots(key, to, held, _holders(key)))
    return entries


def _holders(key: str) -> list[Job]:
    holders = []
    for model in (ClaimedExecution, ReadyExecution):
        ids = model.objects.filter(job__concurrency_key=key).order_by("job_id")
        ids = list(ids.values_list("job_id", flat=True)[: SHOWN_HOLDERS - len(holders)])
        holders += Job.objects.with_execution().filter(pk__in=ids).order_by("pk")
    return holders
