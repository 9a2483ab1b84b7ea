"""A job's log lines (polled while it runs) and its live stack, on the job page.

Shown only to staff with the view permission of log lines (``VIEW_LOGS``): a log may
hold what the arguments' masking does not catch. Asking for a stack writes one
request row (no job changes), so it needs that permission too, not ``manage_jobs``.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from .. import adapter
from ..access import guard
from .rendering import render_page

VIEW_LOGS = "steady_queue.view_joblogline"
LOG_FRAGMENT = "steady_queue_dashboard/jobs/_run_log.html"
STACK_FRAGMENT = "steady_queue_dashboard/jobs/_live_stack.html"


@require_safe
@guard
def job_logs(request: HttpRequest, pk: int) -> HttpResponse:
    _may_view_logs(request)
    job = adapter.find_job(pk)
    attempt = _attempt(request)
    context = {"job": job, "job_id": pk}
    if job is not None:
        context["run_log"] = adapter.run_log_of(job, attempt)
    return render_page(
        request,
        "steady_queue_dashboard/jobs/run_log.html",
        context,
        fragment=LOG_FRAGMENT,
        section="jobs",
        status=404 if job is None and not getattr(request, "htmx", None) else 200,
    )


@require_POST
@guard
def job_stack(request: HttpRequest, pk: int) -> HttpResponse:
    _may_view_logs(request)
    job = adapter.find_job(pk)
    asked = adapter.request_stack(job) if job is not None else None
    if not getattr(request, "htmx", None) and asked is not None:
        return redirect(reverse("steady_queue_dashboard:job-stack-answer", args=[pk, asked.pk]))
    return _stack(request, pk, asked, not_running=asked is None)


@require_safe
@guard
def job_stack_answer(request: HttpRequest, pk: int, request_id: int) -> HttpResponse:
    _may_view_logs(request)
    return _stack(request, pk, adapter.stack_request(pk, request_id))


def _stack(request: HttpRequest, pk: int, asked, not_running: bool = False) -> HttpResponse:
    context = {
        "job_id": pk,
        "stack_request": asked,
        "waiting": asked is not None and adapter.still_waiting(asked),
        "not_running": not_running,
    }
    return render_page(
        request,
        "steady_queue_dashboard/jobs/live_stack.html",
        context,
        fragment=STACK_FRAGMENT,
        section="jobs",
    )


def _may_view_logs(request: HttpRequest) -> None:
    if not request.user.has_perm(VIEW_LOGS):
        raise PermissionDenied


def _attempt(request: HttpRequest) -> int | None:
    value = request.GET.get("attempt", "")
    return int(value) if value.isdigit() and 0 < int(value) < 2**31 else None
