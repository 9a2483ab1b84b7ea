"""Record every dashboard action in the audit log, with enough to know what it touched."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver
from django.http import HttpRequest
from django.urls import NoReverseMatch, get_resolver, reverse

from steady_queue import arguments
from steady_queue.ops.audit import operation_performed

from . import adapter, instances, masking
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
    """Record what an ops command (``manage.py steady_queue_jobs`` …) did, as the OS user."""
    link = _link(link_to, kwargs.get("backend"))
    outcome = Outcome(succeeded, message, affected)
    record_as(actor, action, target, outcome, link=link, details=masked_details(details))
    return True


def masked_details(details: dict[str, Any]) -> dict[str, Any]:
    """``details`` with the arguments of its ``before`` / ``after`` masked.

    The engine announces its own changes (``Job.edit()``, ``duplicate()``) with the
    arguments as stored, for the task ``details["task"]``: what the dashboard hides of
    that task's arguments is hidden here too, as on the job's page.
    """
    task_path = details.get("task")
    masked = dict(details)
    for side in ("before", "after"):
        values = details.get(side)
        if isinstance(values, dict) and isinstance(values.get("arguments"), dict):
            args, kwargs = masking.mask_call(*arguments.display(values["arguments"]), task_path)
            masked[side] = {**values, "arguments": {"args": args, "kwargs": kwargs}}
    return masked


def _link(link_to: tuple[str, ...], backend: str | None) -> str:
    """The page of what a command acted on, in the mount of its backend's database.

    No link when that database has no mount: another mount's page would show other jobs.
    """
    if not link_to:
        return ""
    namespace = None
    if backend is not None:
        namespace = _mount_of(backend)
        if namespace is None:
            return ""
    try:
        return reverse(f"{instances.APP}:{link_to[0]}", args=link_to[1:], current_app=namespace)
    except NoReverseMatch:  # the dashboard's URLs are not mounted in this project
        return ""


def _mount_of(backend: str) -> str | None:
    """The namespace of the mount showing ``backend``'s queue database, if any."""
    import steady_queue

    namespaces = get_resolver().app_dict.get(instances.APP, [])
    if backend in namespaces:
        return backend
    database = instances.instance(backend).database
    if database == steady_queue.database and instances.APP in namespaces:
        return instances.APP
    return None


def job_details(job) -> dict[str, Any]:
    """What an entry keeps of one job: its task, queue, arguments (masked) and state."""
    listing = adapter.listing_for(job)
    return {
        "task": job.task_path,
        "queue": job.queue_name,
        "arguments": adapter.arguments_preview(job.arguments, task_path=job.task_path),
        "state": listing.status if listing else job.state,
    }
