"""The audit log: every action taken from the dashboard, newest first."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from ..access import guard
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from ..models import AuditEntry
from .rendering import render_page

PAGE_SIZE = 50


@require_safe
@guard
def audit_log(request: HttpRequest) -> HttpResponse:
    entries = AuditEntry.objects.select_related(None)
    keyset = Keyset(entries, ("-created_at", "-pk"), PAGE_SIZE)
    page = keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
    return render_page(
        request,
        "steady_queue_dashboard/audit/list.html",
        {"page": page},
        fragment="steady_queue_dashboard/audit/_table.html",
        section="audit",
    )
