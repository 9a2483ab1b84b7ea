"""Record every dashboard action in the audit log, with enough to know what it touched."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from . import adapter
from .adapter import Outcome
from .models import AuditEntry


def record(
    request: HttpRequest,
    action: str,
    target: str,
    outcome: Outcome,
    *,
    link: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Write who ran ``action`` on ``target``, and what came of it."""
    user = request.user
    return record_as(
        user.get_username(), action, target, outcome, user=user, link=link, details=details
    )


def record_as(
    username: str,
    action: str,
    target: str,
    outcome: Outcome,
    *,
    user=None,
    link: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Write an entry for an actor without a request: ``manage.py steady_queue_jobs``'s OS user."""
    return AuditEntry.objects.create(
        user=user,
        username=username[:150],
        action=action,
        target=target[:500],
        affected=outcome.affected,
        succeeded=outcome.succeeded,
        message=str(outcome.message),
        link=link[:500],
        details=details or {},
    )


def job_details(job) -> dict[str, Any]:
    """What an entry keeps of one job: its task, queue, arguments (masked) and state."""
    listing = adapter.listing_for(job)
    return {
        "task": job.task_path,
        "queue": job.queue_name,
        "arguments": adapter.arguments_preview(job.arguments, task_path=job.task_path),
        "state": listing.status if listing else job.state,
    }
