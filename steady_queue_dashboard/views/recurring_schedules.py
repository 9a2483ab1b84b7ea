"""Recurring schedules made at run time: new, edit (previewed, then confirmed) and delete.

Each change is two steps: the form posts, the page answers with the schedule in words and
its next fire times and a signed token of exactly those values (``confirmation``); only
"Save" with that token writes, and the write is audited. A schedule declared with
``@recurring`` belongs to the code: it is run, paused and resumed, never edited here.
Everything needs ``steady_queue_dashboard.edit_jobs`` besides staff.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_http_methods, require_POST

from .. import adapter, audit, confirmation, instances
from ..access import EDIT_PERMISSION, guard
from ..schedule_form import ScheduleForm
from .rendering import acted, render_page

FOLDER = "steady_queue_dashboard/recurring/"
CHANGE = "schedule"
DELETE = "unschedule"


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def recurring_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _posted(request, ScheduleForm(request.POST), editing=False)
    return _form_page(request, ScheduleForm(), editing=False)


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def recurring_edit(request: HttpRequest, key: str) -> HttpResponse:
    task = _dynamic(key)
    values = adapter.schedule_values(task)
    if request.method == "POST":
        return _posted(request, ScheduleForm(request.POST, key=key, initial=values), editing=True)
    form = ScheduleForm(key=key, initial=values or {"key": key})
    return _form_page(request, form, editing=True, unreadable=values is None)


@require_POST
@guard(permission=EDIT_PERMISSION)
def recurring_delete(request: HttpRequest, key: str) -> HttpResponse:
    task = _dynamic(key)
    facts = {"action": DELETE, "key": key, "task": task.task_path, "cron": task.schedule}
    if not confirmation.confirmed(request, **facts):
        token = confirmation.token(request, **facts)
        context = {"task": task, "token": token, "changed": confirmation.attempted(request)}
        return render_page(
            request,
            FOLDER + "delete.html",
            context,
            fragment=FOLDER + "_delete.html",
            section="recurring",
        )
    outcome = adapter.delete_schedule(key)
    details = {"task": task.task_path, "cron": task.schedule, "timezone": task.timezone}
    audit.record(request, DELETE, f"recurring task {key}", outcome, details=details)
    return acted(request, outcome, instances.url("recurring-list"))


def _posted(request: HttpRequest, form: ScheduleForm, *, editing: bool) -> HttpResponse:
    """Show the form again (errors inline, or "Edit" pressed), the preview, or save."""
    if "edit" in request.POST or not form.is_valid():
        return _form_page(request, form, editing=editing)
    facts = {"action": CHANGE, **form.facts()}
    if not confirmation.confirmed(request, **facts):
        token = confirmation.token(request, **facts)
        changed = confirmation.attempted(request)
        return _form_page(request, form, editing=editing, token=token, changed=changed)
    return _save(request, form)


def _save(request: HttpRequest, form: ScheduleForm) -> HttpResponse:
    key = form.preview.recurrence.key
    outcome = adapter.save_schedule(form.preview)
    details = {**form.facts(), "created": not form.preview.exists}
    link = instances.url("recurring-detail", key) if outcome.succeeded else ""
    audit.record(request, CHANGE, f"recurring task {key}", outcome, link=link, details=details)
    return acted(request, outcome, link or instances.url("recurring-list"))


def _form_page(
    request: HttpRequest, form: ScheduleForm, *, editing: bool, **context
) -> HttpResponse:
    context = {"form": form, "editing": editing, "preview": None, **context}
    if context.get("token"):
        context["preview"] = form.preview
    return render_page(
        request,
        FOLDER + "schedule_form.html",
        context,
        fragment=FOLDER + "_schedule_form.html",
        section="recurring",
    )


def _dynamic(key: str):
    task = adapter.find_recurring_task(key)
    if task is None or task.static:
        # A declared schedule has no edit page: its settings live in the code.
        raise Http404(f"No recurring schedule {key!r} made at run time.")
    return task
