"""The Retention panel: each configured rule beside what it removed and archived lately."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from .rendering import render_page


@require_safe
@guard
def retention(request: HttpRequest) -> HttpResponse:
    context = {"panel": adapter.retention_panel()}
    return render_page(
        request,
        "steady_queue_dashboard/retention/panel.html",
        context,
        fragment="steady_queue_dashboard/retention/_panel.html",
        section="retention",
    )
