"""The finished history's list: succeeded jobs that maintenance moved out of the jobs
table (``steady_queue.partition_finished_by``, PostgreSQL), newest finished first.

Keyset pages along each day partition's (finished_at, id) index: a page reads its 51
rows whatever the history holds. A row opens the job's own page, which shows the
history row read-only (``jobs.job_detail``).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from ..keyset import PAGE_AFTER, PAGE_BEFORE, Keyset
from .rendering import render_page

FOLDER = "steady_queue_dashboard/finished_history/"
PAGE_SIZE = 50


@require_safe
@guard
def history_list(request: HttpRequest) -> HttpResponse:
    shown = adapter.history_shown()
    context = {"shown": shown, "page": None, "rows": []}
    if shown:
        keyset = Keyset(adapter.history_rows(), adapter.HISTORY_ORDER, PAGE_SIZE)
        page = keyset.page(after=request.GET.get(PAGE_AFTER), before=request.GET.get(PAGE_BEFORE))
        context |= {"page": page, "rows": adapter.history_list_rows(page.rows)}
    return render_page(
        request, FOLDER + "list.html", context, fragment=FOLDER + "_table.html", section="jobs"
    )
