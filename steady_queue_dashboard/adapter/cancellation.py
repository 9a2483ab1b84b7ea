"""A cancelled job's story: when it was cancelled, why, and who did it (when audited)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import Job

from .. import masking

# An action is audited right after it ran: its entry is written within this of the cancel.
AUDIT_DELAY = timedelta(minutes=1)
# Entries read at most within that minute (a bulk cancel of many jobs writes one entry).
AUDIT_ENTRIES_READ = 50


@dataclass(frozen=True)
class Cancellation:
    at: datetime
    message: str
    by: str = ""


def is_cancelled(job: Job) -> bool:
    """Whether ``job`` ended as cancelled: its failure is a JobCancelled."""
    failed = getattr(job, "failed_execution", None)
    return failed is not None and failed.exception_class == CANCELLED_CLASS


def cancellation_of(job: Job) -> Cancellation | None:
    """When and how ``job`` was cancelled, and by whom if an audit entry names it."""
    if not is_cancelled(job):
        return None
    failed = job.failed_execution
    asked = job.cancel_requested_at or failed.created_at
    message = masking.shown(failed.message)
    return Cancellation(asked, message, _audited_actor(job.pk, asked))


def _audited_actor(pk: int, asked: datetime) -> str:
    from ..models import AuditEntry

    # A range of the indexed created_at, a few rows: never a scan of the whole audit log.
    entries = AuditEntry.objects.filter(
        action="cancel", created_at__gte=asked, created_at__lte=asked + AUDIT_DELAY
    ).order_by("created_at", "pk")[:AUDIT_ENTRIES_READ]
    for target, details, username in entries.values_list("target", "details", "username"):
        ids = details.get("ids", []) if isinstance(details, dict) else []
        if target == f"job {pk}" or pk in ids:
            return username
    return ""
