"""Rate limits: each window's use, its throttled jobs, and when it next has room."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from .rendering import render_page

SHOWN_WINDOWS = 200


@require_safe
@guard
def rate_limits(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "steady_queue_dashboard/rate_limits/list.html",
        {"windows": adapter.rate_limit_windows(SHOWN_WINDOWS), "shown_windows": SHOWN_WINDOWS},
        fragment="steady_queue_dashboard/rate_limits/_table.html",
        section="rate-limits",
    )
