"""Tasks: per-task runs, failure rate and timings over the last hour or day."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from .. import adapter
from ..access import guard
from ..adapter.task_stats import SHOWN_TASKS, WINDOW_HELP
from ..charts import sparkline
from .rendering import render_page


@require_safe
@guard
def task_list(request: HttpRequest) -> HttpResponse:
    # An unknown window is the default one: a hand-edited URL still shows a page.
    window = adapter.WINDOWS.get(
        request.GET.get("window", ""), adapter.WINDOWS[adapter.DEFAULT_WINDOW]
    )
    queue = request.GET.get("queue", "").strip() or None
    # No queue name holds a NUL (PostgreSQL refuses it in a query) or passes 255 characters.
    impossible = queue is not None and ("\x00" in queue or len(queue) > 255)
    stats = [] if impossible else adapter.task_stats(window, queue)
    rows = [(entry, sparkline(entry.hourly)) for entry in stats]
    return render_page(
        request,
        "steady_queue_dashboard/tasks/list.html",
        {
            "rows": rows,
            "window": window,
            "windows": adapter.WINDOWS.values(),
            "queue": (queue or "").replace("\x00", ""),
            "queue_names": adapter.queue_names(),
            "shown_tasks": SHOWN_TASKS,
            "help": WINDOW_HELP,
            "paused_tasks": adapter.paused_tasks(),
            "fair_latencies": adapter.fair_latencies([entry.task_path for entry in stats], queue),
        },
        fragment="steady_queue_dashboard/tasks/_table.html",
        section="tasks",
    )
