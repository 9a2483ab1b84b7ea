"""The overview: counts per status, activity charts, queues and process health."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from .. import adapter, charts
from ..access import guard
from ..listings import LISTINGS
from .queues import queue_rows
from .rendering import render_page


@require_safe
@guard
def overview(request: HttpRequest) -> HttpResponse:
    span = charts.SPANS.get(request.GET.get("span", ""), charts.SPANS["hour"])
    starts = charts.bucket_starts(timezone.now(), span)
    counts = adapter.status_counts()
    context = {
        "tabs": [(listing, counts[listing.status]) for listing in LISTINGS.values()],
        "span": span,
        "spans": charts.SPANS.values(),
        "chart": charts.activity_chart(adapter.activity(starts, span.bucket), span, starts),
        "queues": queue_rows(adapter.queues()),
        "health": adapter.process_health(),
    }
    return render_page(
        request,
        "steady_queue_dashboard/overview.html",
        context,
        fragment="steady_queue_dashboard/_overview.html",
        section="overview",
    )
