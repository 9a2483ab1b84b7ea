"""Concurrency: semaphores and the jobs blocked on each key."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter, audit, instances
from ..access import guard
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
    outcome = adapter.release_next_blocked(key)
    audit.record(request, "release next", f"concurrency key {key}", outcome)
    return acted(request, outcome, instances.url("concurrency"))
