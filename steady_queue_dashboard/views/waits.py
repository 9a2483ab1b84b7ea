"""Waits: the durable jobs that sleep, and those that wait for a signal, soonest deadline first.

One page with a tab for each (``adapter.WAIT_KINDS``), apart from the job lists by state:
a sleeping job is scheduled and a signal-waiting one is waiting, beside jobs that are so
for other reasons (a run_after, a workflow step's upstream steps); here they are on their
own, with what wakes them and when.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from .rendering import render_page

PAGE_SIZE = 50


@require_safe
@guard
def wait_list(request: HttpRequest) -> HttpResponse:
    kind = adapter.wait_kind(request.GET.get("kind", ""))
    task = request.GET.get("task", "").strip()
    keyset = Keyset(adapter.waiting_jobs(kind, task=task), kind.ordering, PAGE_SIZE)
    page = keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
    counts = adapter.wait_counts()
    context = {
        "kind": kind,
        "task": task,
        "page": page,
        "rows": adapter.wait_rows(kind, page.rows),
        "next_deadline": adapter.next_deadline(kind, task=task),
        "tabs": [(tab, counts[tab.name]) for tab in adapter.WAIT_KINDS.values()],
    }
    return render_page(
        request,
        "steady_queue_dashboard/waits/list.html",
        context,
        fragment="steady_queue_dashboard/waits/_table.html",
        section="waits",
    )
