"""Batches: a list with each one's progress and callbacks, and a page per batch."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from ..filters import BatchFilter
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from ..listings import LISTINGS
from .rendering import render_page

PAGE_SIZE = 50


@require_safe
@guard
def batch_list(request: HttpRequest) -> HttpResponse:
    filterset = BatchFilter(request.GET or None, queryset=adapter.batches())
    page = _page(request, filterset.qs, ("-created_at", "-pk"))
    return render_page(
        request,
        "steady_queue_dashboard/batches/list.html",
        {"filterset": filterset, "page": page, "rows": adapter.batch_rows(page.rows)},
        fragment="steady_queue_dashboard/batches/_table.html",
        section="batches",
    )


@require_safe
@guard
def batch_detail(request: HttpRequest, pk: int) -> HttpResponse:
    row = adapter.find_batch(pk)
    if row is None:
        raise Http404("No such batch.")
    page = _page(request, adapter.batch_jobs(pk), ("pk",))
    context = {"row": row, "batch": row.batch, "page": page, "job_lists": LISTINGS.values()}
    return render_page(
        request,
        "steady_queue_dashboard/batches/detail.html",
        context,
        fragment="steady_queue_dashboard/batches/_detail.html",
        section="batches",
    )


def _page(request: HttpRequest, queryset, ordering: tuple[str, ...]):
    keyset = Keyset(queryset, ordering, PAGE_SIZE)
    return keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
