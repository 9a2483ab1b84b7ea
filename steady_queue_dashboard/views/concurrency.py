"""Concurrency: semaphores and the jobs blocked on each key."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from .. import adapter, audit, instances
from ..access import guard
from .job_release import release_job
from .rendering import acted, render_page

SHOWN_KEYS = 200


@require_safe
@guard
def concurrency(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "steady_queue_dashboard/concurrency/list.html",
        {"keys": adapter.concurrency_keys(SHOWN_KEYS), "shown_keys": SHOWN_KEYS},
        fragment="steady_queue_dashboard/concurrency/_table.html",
        section="concurrency",
    )


@guard(action=True)
def concurrency_release(request: HttpRequest, key: str) -> HttpResponse:
    """Release the key's next blocked job as its job page's Release does (free slot, or ask)."""
    job_id = adapter.next_blocked_job(key)
    if job_id is None:
        outcome = adapter.Outcome(False, _("No job is blocked on %(key)s.") % {"key": key})
        audit.record(request, "release next", f"concurrency key {key}", outcome)
        return acted(request, outcome, instances.url("concurrency"))
    return release_job(request, job_id)
