"""The Archive: jobs that retention moved out of the live tables, searched, read and restored.

Restoring enqueues a new job of the archived job's task, with its arguments, queue,
priority and labels: a page shows what would be enqueued (masked) and signs a digest of
the archived row it showed (``confirmation``); only that page's button restores. It needs
``steady_queue_dashboard.edit_jobs``, as a duplicate does, and is audited in the
operator's name. A task that no longer imports or an enqueue the engine refuses is a
message on the same page, with nothing written.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_safe

from .. import adapter, confirmation, instances
from ..access import EDIT_PERMISSION, guard
from ..filters import ArchiveFilter
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from .rendering import render_page

FOLDER = "steady_queue_dashboard/archive/"
PAGE_SIZE = 50
RESTORE = "restore"


@require_safe
@guard
def archive_list(request: HttpRequest) -> HttpResponse:
    filterset = ArchiveFilter(request.GET or None, queryset=adapter.archived_jobs())
    keyset = Keyset(filterset.qs, adapter.ARCHIVE_ORDER, PAGE_SIZE)
    page = keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
    context = {"filterset": filterset, "page": page, "rows": adapter.archive_rows(page.rows)}
    return render_page(
        request, FOLDER + "list.html", context, fragment=FOLDER + "_table.html", section="archive"
    )


@require_safe
@guard
def archive_detail(request: HttpRequest, pk: int) -> HttpResponse:
    archived = adapter.find_archived(pk)
    if archived is None:
        raise Http404(f"No archived job {pk}.")
    return render_page(
        request,
        FOLDER + "detail.html",
        _detail_context(archived),
        fragment=FOLDER + "_detail.html",
        section="archive",
    )


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def archive_restore(request: HttpRequest, pk: int) -> HttpResponse:
    archived = adapter.find_archived(pk)
    if archived is None:
        raise Http404(f"No archived job {pk}.")
    facts = {"action": RESTORE, "archived": pk, "seen": adapter.archived_digest(archived)}
    if request.method != "POST" or not confirmation.confirmed(request, **facts):
        return _ask(request, archived, facts)
    try:
        outcome, job_id = adapter.restore_archived(pk, facts["seen"], user=request.user)
    except adapter.Refusal as exc:  # the task is gone, or its enqueue refused: nothing written
        return _ask(request, archived, facts, refused=str(exc))
    if not outcome.succeeded:  # restored meanwhile, or no longer archived
        return _ask(request, archived, facts, refused=outcome.message)
    messages.success(request, outcome.message)
    return redirect(instances.url("job-detail", job_id))


def _ask(request: HttpRequest, archived, facts: dict, refused: str = "") -> HttpResponse:
    """The restore page: what would be enqueued, and why it cannot be, if it cannot."""
    context = {
        **_detail_context(archived),
        "refused": refused or adapter.restore_problem(archived),
        "token": confirmation.token(request, **facts),
        "changed": confirmation.attempted(request) and not refused,
    }
    return render_page(
        request,
        FOLDER + "restore.html",
        context,
        fragment=FOLDER + "_restore.html",
        section="archive",
    )


def _detail_context(archived) -> dict:
    row = adapter.archive_row(archived)
    return {
        "row": row,
        "arguments": adapter.display_archived_arguments(archived),
        "attempts": adapter.archived_attempts(archived),
        "error": row.error,
    }
