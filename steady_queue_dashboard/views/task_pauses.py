"""Pause and resume a task (every queue), in two steps: a question stating what the pause
holds back, then its signed confirmation; audited, behind the action permission."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django_htmx.http import reswap, retarget

from .. import adapter, audit, confirmation, instances
from ..access import guard
from .rendering import acted, back, render_page

QUESTION = "steady_queue_dashboard/tasks/pause_confirm.html"
FRAGMENT = "steady_queue_dashboard/tasks/_pause_confirm.html"


@guard(action=True)
def task_pause(request: HttpRequest, task: str) -> HttpResponse:
    return _two_steps(request, "pause", task)


@guard(action=True)
def task_resume(request: HttpRequest, task: str) -> HttpResponse:
    return _two_steps(request, "resume", task)


def _two_steps(request: HttpRequest, action: str, task: str) -> HttpResponse:
    fallback = back(request, instances.url("tasks"))
    refused = adapter.task_pause_check(task, resuming=action == "resume")
    if refused is not None:
        return acted(request, adapter.Outcome(False, refused), fallback)
    facts = {"action": f"{action}-task", "task": task}
    if not confirmation.confirmed(request, **facts):
        return _ask(request, action, task, facts, fallback)
    outcome = adapter.pause_task(task) if action == "pause" else adapter.resume_task(task)
    audit.record(request, action, f"task {task}", outcome, link=instances.url("tasks"))
    return acted(request, outcome, fallback)


def _ask(request: HttpRequest, action: str, task: str, facts: dict, fallback: str) -> HttpResponse:
    context = {
        "action": action,
        "task": task,
        "paused": adapter.is_paused(task),
        "ready": adapter.ready_count(task) if action == "pause" else None,
        "form_url": request.path,
        "token": confirmation.token(request, **facts),
        "next": fallback,
        "changed": confirmation.attempted(request),
    }
    response = render_page(request, QUESTION, context, fragment=FRAGMENT, section="tasks")
    if getattr(request, "htmx", None):
        response = reswap(retarget(response, "#sq-messages"), "outerHTML")
    return response
