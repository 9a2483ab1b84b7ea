"""Job lists by status, and one job's detail page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from steady_queue.models import states

from .. import adapter
from ..access import can_reveal, guard
from ..joblist import JobList
from ..listings import LISTINGS
from .rendering import render_page


@require_safe
@guard
def job_list(request: HttpRequest, status: str) -> HttpResponse:
    listing = LISTINGS[status]
    jobs = JobList(listing, request.GET)
    counts = adapter.status_counts()
    context = {
        "listing": listing,
        "jobs": jobs,
        "page": jobs.page(),
        # Called by the template only when the full page (with the filter form) renders.
        "queue_names": adapter.queue_names,
        "tabs": [(tab, counts[tab.status]) for tab in LISTINGS.values()],
        "history_shown": adapter.history_shown(),  # a setting and the vendor: no query
    }
    return render_page(
        request,
        "steady_queue_dashboard/jobs/list.html",
        context,
        fragment="steady_queue_dashboard/jobs/_list.html",
        section="jobs",
    )


@require_safe
@guard
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = adapter.find_job(pk)
    if job is None and (moved := adapter.find_in_history(pk)) is not None:
        # Moved to the finished history: shown read-only, as the Archive shows its rows.
        return render_page(
            request,
            "steady_queue_dashboard/archive/detail.html",
            adapter.history_context(moved),
            fragment="steady_queue_dashboard/archive/_detail.html",
            section="jobs",
        )
    context = {"job": job, "job_id": pk}
    if job is not None:
        attempts = adapter.attempts(job)
        failures = [attempt.number for attempt in attempts if attempt.error]
        context |= {
            "listing": adapter.listing_for(job),
            "cancellation": adapter.cancellation_of(job),
            "arguments": adapter.display_arguments(job),
            "metadata": adapter.display_metadata(job),
            "return_value": adapter.display_value(job.return_value),
            "timeline": adapter.timeline(job),
            "uniqueness": adapter.uniqueness_of(job),
            "rate_limit": adapter.rate_limit_of(job),
            "workflow_step": adapter.step_links(job),
            "durable": adapter.durable_of(job),
            "attempts": attempts,
            "open_error": failures[-1] if failures and job.finished_at is None else None,
            "editable": adapter.is_editable(job),
            "live": job.finished_at is None and job.state != states.FAILED,
            "encrypted": adapter.is_encrypted_job(job),
            "can_reveal": can_reveal(request.user),
        }
    return render_page(
        request,
        "steady_queue_dashboard/jobs/detail.html",
        context,
        fragment="steady_queue_dashboard/jobs/_detail.html",
        section="jobs",
        # Gone (discarded or cleared): a plain request says 404; htmx swaps the notice in.
        status=404 if job is None and not getattr(request, "htmx", None) else 200,
    )
