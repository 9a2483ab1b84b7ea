"""Processes: supervisors with their workers, dispatchers and schedulers."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from .rendering import render_page


@require_safe
@guard
def process_list(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "steady_queue_dashboard/processes/list.html",
        {"roots": adapter.process_tree()},
        fragment="steady_queue_dashboard/processes/_tree.html",
        section="processes",
    )
