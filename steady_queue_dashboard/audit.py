"""Record every dashboard action in the audit log, with enough to know what it touched."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver
from django.http import HttpRequest
from django.urls import NoReverseMatch

from steady_queue.ops.audit import operation_performed

from . import adapter, instances
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


@receiver(operation_performed, dispatch_uid="steady_queue_dashboard.audit.operations")
def record_operation(
    sender, *, actor, action, target, affected, succeeded, message, details, link_to, **kwargs
) -> bool:
    """Record what ``manage.py steady_queue_jobs``/``steady_queue_queues`` did, as the OS user."""
    link = ""
    if link_to:
        try:
            link = instances.url(*link_to)
        except NoReverseMatch:  # the dashboard's URLs are not mounted in this project
            link = ""
    outcome = Outcome(succeeded, message, affected)
    record_as(actor, action, target, outcome, link=link, details=details)
    return True


def job_details(job) -> dict[str, Any]:
    """What an entry keeps of one job: its task, queue, arguments (masked) and state."""
    listing = adapter.listing_for(job)
    return {
        "task": job.task_path,
        "queue": job.queue_name,
        "arguments": adapter.arguments_preview(job.arguments, task_path=job.task_path),
        "state": listing.status if listing else job.state,
    }
