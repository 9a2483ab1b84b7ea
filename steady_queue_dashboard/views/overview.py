"""The overview: what is wrong first, then counts per status, activity, queues and processes."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from steady_queue.health import horizon
from steady_queue.models import states

from .. import adapter, charts, error_groups, problems
from ..access import guard
from ..adapter import overview as reading
from ..conf import setting
from ..listings import LISTINGS
from .queues import queue_rows
from .rendering import render_page

# Error groups listed on the overview; the failures page lists them all.
TOP_ERRORS = 5


@require_safe
@guard
def overview(request: HttpRequest) -> HttpResponse:
    span = charts.SPANS.get(request.GET.get("span", ""), charts.SPANS["hour"])
    starts = charts.bucket_starts(timezone.now(), span)
    counts = adapter.status_counts()
    queues = adapter.queues()
    processes = reading.process_states()
    failures = reading.failure_counts(
        setting("FAILURE_SPIKE_WINDOW"), setting("FAILURE_SPIKE_BASELINE")
    )
    groups = (
        error_groups.error_groups()
        if counts[states.FAILED].value
        else error_groups.Groups([], False)
    )
    context = {
        "problems": problems.find_problems(
            queues, processes, failures, reading.recurring_enabled, horizon.old_transactions()
        ),
        "tabs": [(listing, counts[listing.status]) for listing in LISTINGS.values()],
        "span": span,
        "spans": charts.SPANS.values(),
        "chart": charts.activity_chart(adapter.activity(starts, span.bucket), span, starts),
        "queues": queue_rows([q for q in queues if q.size or q.is_paused]),
        "health": reading.health_of(processes),
        "error_groups": groups.groups[:TOP_ERRORS],
        "more_error_groups": len(groups.groups) > TOP_ERRORS,
        "paused_tasks": adapter.paused_tasks(),
    }
    return render_page(
        request,
        "steady_queue_dashboard/overview.html",
        context,
        fragment="steady_queue_dashboard/_overview.html",
        section="overview",
    )
