"""Record every dashboard action in the audit log."""

from __future__ import annotations

from django.http import HttpRequest

from .adapter import Outcome
from .models import AuditEntry


def record(request: HttpRequest, action: str, target: str, outcome: Outcome) -> AuditEntry:
    """Write who ran ``action`` on ``target``, and what came of it."""
    user = request.user
    return AuditEntry.objects.create(
        user=user,
        username=user.get_username(),
        action=action,
        target=target[:500],
        affected=outcome.affected,
        succeeded=outcome.succeeded,
        message=str(outcome.message),
    )
