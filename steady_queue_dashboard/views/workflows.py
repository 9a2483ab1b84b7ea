"""Workflow runs: a list with each run's progress, and a page per run with its graph."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from ..filters import WorkflowRunFilter
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from ..workflow_graph import layout
from .rendering import render_page

PAGE_SIZE = 50


@require_safe
@guard
def workflow_list(request: HttpRequest) -> HttpResponse:
    filterset = WorkflowRunFilter(request.GET or None, queryset=adapter.workflow_runs())
    keyset = Keyset(filterset.qs, ("-created_at", "-pk"), PAGE_SIZE)
    page = keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
    return render_page(
        request,
        "steady_queue_dashboard/workflows/list.html",
        {"filterset": filterset, "page": page, "rows": adapter.run_rows(page.rows)},
        fragment="steady_queue_dashboard/workflows/_table.html",
        section="workflows",
    )


@require_safe
@guard
def workflow_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = adapter.find_run(pk)
    if run is None:
        raise Http404("No such workflow run.")
    steps = adapter.run_steps(run)
    counts = adapter.steps_by_state(steps.steps)
    context = {
        "run": run,
        "steps": steps,
        "graph": layout(steps.steps),
        "legend": [(state, counts.get(name, 0)) for name, state in adapter.STEP_STATES.items()],
        "live": run.finished_at is None,
    }
    return render_page(
        request,
        "steady_queue_dashboard/workflows/detail.html",
        context,
        fragment="steady_queue_dashboard/workflows/_detail.html",
        section="workflows",
    )
