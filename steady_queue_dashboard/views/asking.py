"""The one confirmation step of every action that destroys jobs or reaches past the page.

An action asks first when it discards or cancels (one job, the selected rows or every
job matching a filter) and when it acts on "all matching" jobs, which the operator
cannot all see. The question states the count and the job ids (the first ``SHOWN_IDS``
of them, then "and N more"), or the filter in words; its form carries what it showed
in hidden fields and a token signing those facts (``confirmation``). Only a POST of that
form acts, and only on what it showed: anything else is asked again.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django_htmx.http import reswap, retarget

from .. import confirmation
from ..adapter import Tally
from .rendering import render_page

# Ids a confirmation lists by number; the rest are counted ("and 480 more").
SHOWN_IDS = 20
FOLDER = "steady_queue_dashboard/jobs/"


def ask(
    request: HttpRequest,
    facts: dict[str, Any],
    *,
    action: str,
    next_url: str,
    hidden: list[tuple[str, Any]] = (),
    ids: list[int] = (),
    total: Any = None,
    **context: Any,
) -> HttpResponse:
    """Render the confirmation of ``action``; its form posts ``hidden`` and the signed ``facts``.

    ``ids``: the jobs it would act on (all of them for a selection; the first few of
    "all matching"), ``total``: how many (a ``Tally``; by default, the ids). ``context``
    adds ``job`` and ``details`` for one job, ``filters`` (in words) for what the jobs
    share, ``note`` for a word on what is left alone.
    """
    total = total if total is not None else Tally(len(ids))
    shown = list(ids)[:SHOWN_IDS]
    context = {
        **context,
        "action": action,
        "total": total,
        "shown_ids": shown,
        "more": max(total.value - len(shown), 0),
        "form_url": context.get("form_url") or request.path,
        "hidden": [*hidden, (confirmation.FIELD, confirmation.token(request, **facts))],
        "next": next_url,
        # A token came back but no longer matches: say so above the question asked again.
        "changed": confirmation.attempted(request),
    }
    return render_question(request, "confirm.html", "_confirm.html", context)


def render_question(request: HttpRequest, page: str, fragment: str, context: dict) -> HttpResponse:
    """A question as a page, or for htmx in the messages area above what the operator sees
    (the list and its ticked rows stay as they are, for "Go back" to return to)."""
    response = render_page(
        request, FOLDER + page, context, fragment=FOLDER + fragment, section="jobs"
    )
    if getattr(request, "htmx", None):
        response = reswap(retarget(response, "#sq-messages"), "outerHTML")
    return response
