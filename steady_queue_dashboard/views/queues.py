"""Queues: their size, latency and pause state; one queue's pending jobs."""

from __future__ import annotations

from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from steady_queue.models import states

from .. import adapter, audit, charts, instances
from ..access import guard
from ..joblist import JobList
from ..listings import LISTINGS
from .rendering import acted, render_page


@dataclass(frozen=True)
class QueueRow:
    queue: adapter.Queue
    latency_bar: float


def queue_rows(queues: list[adapter.Queue]) -> list[QueueRow]:
    """Pair each queue with a latency bar scaled to the slowest queue."""
    seconds = {q.name: q.latency.total_seconds() if q.latency else 0 for q in queues}
    widths = charts.meter_widths(seconds)
    return [QueueRow(queue, widths[queue.name]) for queue in queues]


@require_safe
@guard
def queue_list(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "steady_queue_dashboard/queues/list.html",
        {"queues": queue_rows(adapter.queues())},
        fragment="steady_queue_dashboard/queues/_table.html",
        section="queues",
    )


@require_safe
@guard
def queue_detail(request: HttpRequest, name: str) -> HttpResponse:
    if not adapter.queue_exists(name):
        return render_page(
            request,
            "steady_queue_dashboard/queues/missing.html",
            {"name": name},
            fragment="steady_queue_dashboard/queues/_missing.html",
            section="queues",
            status=404,
        )
    params = request.GET.copy()
    params["queue"] = name
    listing = LISTINGS[states.READY]
    jobs = JobList(listing, params)
    context = {
        "queue": adapter.queue(name),
        "fair_share": adapter.fair_share(name),
        "listing": listing,
        "jobs": jobs,
        "page": jobs.page(),
    }
    return render_page(
        request,
        "steady_queue_dashboard/queues/detail.html",
        context,
        fragment="steady_queue_dashboard/queues/_detail.html",
        section="queues",
    )


@guard(action=True)
def queue_pause(request: HttpRequest, name: str) -> HttpResponse:
    if not adapter.pausable(name):
        return HttpResponseBadRequest(
            _("No queue has that name: queue names are at most 255 characters."),
            content_type="text/plain; charset=utf-8",
        )
    outcome = adapter.pause_queue(name)
    audit.record(request, "pause", f"queue {name}", outcome)
    return acted(request, outcome, instances.url("queue-list"))


@guard(action=True)
def queue_resume(request: HttpRequest, name: str) -> HttpResponse:
    outcome = adapter.resume_queue(name)
    audit.record(request, "resume", f"queue {name}", outcome)
    return acted(request, outcome, instances.url("queue-list"))
