"""Render a page in full, or only its fragment for htmx; answer actions with a message."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import trigger_client_event

from ..access import can_edit, can_manage
from ..adapter import Outcome
from ..listings import LISTINGS

MESSAGES = "steady_queue_dashboard/includes/messages.html"
# Sent after every action: lists, tables and counts listening for it reload themselves.
CHANGED_EVENT = "sq:changed"


def render_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    fragment: str,
    section: str,
    status: int = 200,
) -> HttpResponse:
    """Render ``template``, or just ``fragment`` (plus pending messages) for htmx requests."""
    fragment_only = _wants_fragment(request)
    context = {
        **context,
        "section": section,
        "can_manage": can_manage(request.user),
        "can_edit": can_edit(request.user),
        "listings": LISTINGS.values(),
        # Parts outside the fragment that it refreshes too (hx-swap-oob) check this.
        "fragment": fragment_only,
    }
    if not fragment_only:
        return render(request, template, context, status=status)
    body = render_to_string(fragment, context, request)
    if messages.get_messages(request):
        body += render_to_string(MESSAGES, {"oob": True}, request)
    return HttpResponse(body, status=status)


def acted(request: HttpRequest, outcome: Outcome, fallback: str) -> HttpResponse:
    """Answer an action: a message and a change event for htmx, else a redirect back."""
    level = messages.SUCCESS if outcome.succeeded else messages.WARNING
    messages.add_message(request, level, outcome.message)
    if _htmx(request):
        return trigger_client_event(render(request, MESSAGES), CHANGED_EVENT)
    return redirect(back(request, fallback))


def back(request: HttpRequest, fallback: str) -> str:
    """Return the page the action came from (the form's ``next``), if it is ours to send to."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    # A path of ours only: "0" or "name" would be taken for a URL name by redirect().
    safe = target.startswith("/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return target if safe else fallback


def _wants_fragment(request: HttpRequest) -> bool:
    # A history restore after a cache miss needs the whole page back.
    htmx = _htmx(request)
    return bool(htmx) and not htmx.history_restore_request


def _htmx(request: HttpRequest):
    """The request's htmx details; without HtmxMiddleware (a check error) plain pages still work."""
    return getattr(request, "htmx", None)
