"""Recurring tasks: schedules, next and last runs; run now, enable and disable."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter, audit, instances
from ..access import guard
from ..adapter.overview import scheduler_running
from .rendering import acted, render_page


@require_safe
@guard
def recurring_list(request: HttpRequest) -> HttpResponse:
    return render_page(
        request,
        "steady_queue_dashboard/recurring/list.html",
        {"tasks": adapter.recurring_tasks(), "scheduler_running": scheduler_running()},
        fragment="steady_queue_dashboard/recurring/_table.html",
        section="recurring",
    )


@require_safe
@guard
def recurring_detail(request: HttpRequest, key: str) -> HttpResponse:
    task = adapter.find_recurring_task(key)
    if task is None:
        raise Http404(f"No recurring task {key!r}.")
    return render_page(
        request,
        "steady_queue_dashboard/recurring/detail.html",
        {
            "task": task,
            "runs": adapter.recurring_runs(task),
            "scheduler_running": scheduler_running(),
        },
        fragment="steady_queue_dashboard/recurring/_detail.html",
        section="recurring",
    )


@guard(action=True)
def recurring_run(request: HttpRequest, key: str) -> HttpResponse:
    return _record(request, "run now", key, adapter.run_recurring_task(key))


@guard(action=True)
def recurring_enable(request: HttpRequest, key: str) -> HttpResponse:
    return _record(request, "enable", key, adapter.set_recurring_enabled(key, True))


@guard(action=True)
def recurring_disable(request: HttpRequest, key: str) -> HttpResponse:
    return _record(request, "disable", key, adapter.set_recurring_enabled(key, False))


def _record(request: HttpRequest, action: str, key: str, outcome: adapter.Outcome) -> HttpResponse:
    audit.record(request, action, f"recurring task {key}", outcome)
    return acted(request, outcome, instances.url("recurring-list"))
