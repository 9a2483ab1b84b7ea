"""Set or clear a fairness key's weight at runtime, in two steps: a question stating the
weight now and the one asked for, then its signed confirmation; audited (by the engine's
``set_weight`` / ``clear_weight``, as the dashboard's user), behind the action
permission. A weight that is no positive whole number is a form error, never a change
and never a 500."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django_htmx.http import reswap, retarget

from .. import adapter, confirmation, instances
from ..access import guard
from ..fair_weight_form import FairWeightForm
from .rendering import acted, back, render_page

QUESTION = "steady_queue_dashboard/queues/fair_weight_confirm.html"
FRAGMENT = "steady_queue_dashboard/queues/_fair_weight_confirm.html"


@guard(action=True)
def fair_weight_set(request: HttpRequest, key: str) -> HttpResponse:
    return _two_steps(request, key, clearing=False)


@guard(action=True)
def fair_weight_clear(request: HttpRequest, key: str) -> HttpResponse:
    return _two_steps(request, key, clearing=True)


def _two_steps(request: HttpRequest, key: str, *, clearing: bool) -> HttpResponse:
    fallback = back(request, instances.url("queue-list"))
    form = FairWeightForm(request.POST, key=key, clearing=clearing)
    if not form.is_valid():
        return _ask(request, key, form, None, fallback)
    task, weight = form.cleaned_data["task"], form.cleaned_data.get("weight")
    facts = {"action": "fair-weight", "key": key, "task": task, "weight": weight}
    if not confirmation.confirmed(request, **facts):
        return _ask(request, key, form, confirmation.token(request, **facts), fallback)
    # The engine's set_weight and clear_weight write the audit entry (as this user).
    actor = request.user.get_username()
    if clearing:
        outcome = adapter.clear_fair_weight(key, task or None, actor)
    else:
        outcome = adapter.set_fair_weight(key, weight, task or None, actor)
    return acted(request, outcome, fallback)


def _ask(
    request: HttpRequest, key: str, form: FairWeightForm, token: str | None, fallback: str
) -> HttpResponse:
    """The question (with a token), or the form again with its errors (without one)."""
    task = form.cleaned_data.get("task") if form.is_valid() else None
    context = {
        "key": key,
        "form": form,
        "clearing": form.clearing,
        "weight": form.cleaned_data.get("weight") if token else None,
        "task": task,
        "current": adapter.fair_weight_of(key, task or None) if token else None,
        "form_url": request.path,
        "token": token,
        "next": fallback,
        "changed": confirmation.attempted(request),
    }
    response = render_page(request, QUESTION, context, fragment=FRAGMENT, section="queues")
    if getattr(request, "htmx", None):
        response = reswap(retarget(response, "#sq-messages"), "outerHTML")
    return response
