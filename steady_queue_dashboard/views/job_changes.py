"""Change jobs: edit one, retry a failed one with changes, duplicate one, enqueue a new one.

Each is two steps, as a schedule's form: the form posts, the page answers with the diff
(before -> after for each changed field, masked) and a signed token of a digest of
exactly those values and of the job as it was (``confirmation``); only the button with
that token acts, and what it did is audited with before and after. A job that changed or
started in between no longer matches its token: the page says so and shows the new
diff, and nothing is changed. Everything needs ``steady_queue_dashboard.edit_jobs``
besides staff.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from steady_queue.models import states

from .. import adapter, audit, confirmation, instances
from ..access import EDIT_PERMISSION, guard
from ..adapter.job_edits import Refusal
from ..job_forms import ArgumentsForm, JobEditForm, NewJobForm
from .rendering import acted, render_page

FOLDER = "steady_queue_dashboard/jobs/"
EDIT, RETRY, DUPLICATE, NEW = "edit", "retry with changes", "duplicate", "enqueue"


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def job_edit(request: HttpRequest, pk: int) -> HttpResponse:
    return _change(request, pk, EDIT)


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def job_retry_changed(request: HttpRequest, pk: int) -> HttpResponse:
    return _change(request, pk, RETRY)


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def job_duplicate(request: HttpRequest, pk: int) -> HttpResponse:
    return _change(request, pk, DUPLICATE)


@require_http_methods(["GET", "HEAD", "POST"])
@guard(permission=EDIT_PERMISSION)
def job_new(request: HttpRequest) -> HttpResponse:
    data = request.POST if request.method == "POST" else None
    chosen = (data or request.GET).get("task") or None
    form = NewJobForm(data, tasks=adapter.known_tasks(), chosen=chosen, initial={"task": chosen})
    if data is None or "edit" in data or not form.is_valid():
        return _page(request, form, NEW, None)
    facts = {"action": NEW, **form.facts()}
    if not confirmation.confirmed(request, **facts):
        return _page(request, form, NEW, None, diff=form.diff(), facts=facts)
    return _enqueue(request, form)


def _change(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    job = adapter.find_job(pk)
    if job is None:
        raise Http404(f"No job {pk}.")
    before = adapter.values_of(job)
    data = request.POST if request.method == "POST" else None
    form = _form(action, data, job, before)
    # The engine's own dry run: what it would refuse shows on the form.
    if action == DUPLICATE:
        form.engine_check = lambda changes: adapter.plan_duplicate(job, **changes)
    else:
        form.engine_check = lambda changes: adapter.preview_edit(job, changes)
    if refused := _refused(job, action):
        return _page(request, form, action, job, refused=refused)
    if data is None or "edit" in data or not form.is_valid():
        return _page(request, form, action, job)
    if action in (EDIT, RETRY) and not form.diff():
        form.add_error(None, _("Nothing was changed: change a value, or cancel."))
        return _page(request, form, action, job)
    facts = _facts(action, job, form)
    if not confirmation.confirmed(request, **facts):
        return _page(request, form, action, job, diff=form.diff(), facts=facts)
    return _act(request, action, job, form, facts)


def _form(action: str, data, job, before: adapter.Values):
    form_class = JobEditForm if action == EDIT else ArgumentsForm
    form = form_class(data, task_path=job.task_path, before=before)
    args, kwargs = form.masked_json(before.args, before.kwargs)
    form.initial = {"args": args, "kwargs": kwargs}
    if action == EDIT:
        form.initial |= {
            "priority": before.priority,
            "queue_name": before.queue_name,
            "run_after": before.run_after,
            "labels": "\n".join(before.labels),
        }
    return form


def _refused(job, action: str) -> str | None:
    """Why ``action`` does not apply to the job in its state now, if it does not."""
    if adapter.is_encrypted_job(job):
        # Its form would show (and post back) arguments the console never holds in clear.
        return _(
            "Job %(id)s's task is encrypted: its arguments cannot be changed or copied from "
            "the console (Job.edit() and duplicate() do it from code). Nothing was changed."
        ) % {"id": job.pk}
    listing = adapter.listing_for(job)
    status = listing.status if listing else job.state
    if action == EDIT and not adapter.is_editable(job):
        return _(
            "Job %(id)s is %(state)s: only jobs that have not started, and failed jobs, can be "
            "edited. Nothing was changed."
        ) % {"id": job.pk, "state": status}
    if action == RETRY and status != states.FAILED:
        return _(
            "Job %(id)s is %(state)s: only failed jobs can be retried. Nothing was changed."
        ) % {"id": job.pk, "state": status}
    return None


def _facts(action: str, job, form) -> dict:
    # Digests, not values: a signed token is readable, and masked values must not travel.
    seen = adapter.digest(job.arguments) if action == DUPLICATE else adapter.fingerprint(job)
    return {
        "action": action,
        "job": job.pk,
        "before": seen,
        "after": adapter.digest(form.changes()),
    }


def _act(request: HttpRequest, action: str, job, form, facts: dict) -> HttpResponse:
    """Make the change through the engine, which audits it in the operator's name."""
    link = instances.url("job-detail", job.pk)
    changes, user = form.changes(), request.user.get_username()
    try:
        if action == EDIT:
            outcome = adapter.edit_job(job.pk, facts["before"], changes, user=user)
        elif action == RETRY:
            args, kwargs = changes["args"], changes["kwargs"]
            outcome = adapter.retry_job(job.pk, facts["before"], args, kwargs, user=user)
        else:
            args, kwargs = changes["args"], changes["kwargs"]
            outcome, copy = adapter.duplicate_job(job.pk, args, kwargs, user=user)
            link = instances.url("job-detail", copy) if copy else link
    except Refusal as exc:  # the engine refused: shown on the form, nothing written
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return _page(request, form, action, job)
    return acted(request, outcome, link)


def _enqueue(request: HttpRequest, form: NewJobForm) -> HttpResponse:
    data = form.cleaned_data
    try:
        outcome, job_id = adapter.enqueue_job(
            form.task,
            *form.call,
            queue_name=data.get("queue_name") or None,
            priority=data.get("priority"),
            run_after=data.get("run_after"),
        )
    except Refusal as exc:
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return _page(request, form, NEW, None)
    link = instances.url("job-detail", job_id)
    details = {"task": data["task"], "job": job_id, "after": form.audited()}
    audit.record(request, NEW, f"job {job_id}", outcome, link=link, details=details)
    return acted(request, outcome, link)


def _page(request: HttpRequest, form, action: str, job, **context) -> HttpResponse:
    facts = context.pop("facts", None)
    if facts is not None:
        context["token"] = confirmation.token(request, **facts)
        context["changed"] = confirmation.attempted(request)
    context = {"form": form, "action": action, "job": job, "diff": None, **context}
    return render_page(
        request,
        FOLDER + "change_form.html",
        context,
        fragment=FOLDER + "_change_form.html",
        section="jobs",
    )
