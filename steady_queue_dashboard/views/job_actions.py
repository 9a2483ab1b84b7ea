"""Actions on jobs: one job at a time, the selected rows, or every job matching a filter."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from .. import adapter, audit
from ..access import guard
from ..joblist import JobList
from ..listings import LISTINGS
from .rendering import acted, back, render_page


@guard(action=True)
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "retry", pk)


@guard(action=True)
def job_discard(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "discard", pk)


@guard(action=True)
def job_dispatch(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "dispatch", pk)


@guard(action=True)
def job_release(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "release", pk)


@guard(action=True)
def jobs_retry(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "retry", status)


@guard(action=True)
def jobs_discard(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "discard", status)


@guard(action=True)
def jobs_dispatch(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "dispatch", status)


def _act_on_job(request: HttpRequest, action: str, pk: int) -> HttpResponse:
    outcome = adapter.act_on_job(action, pk)
    audit.record(request, action, f"job {pk}", outcome)
    return acted(request, outcome, reverse("steady_queue_dashboard:job-detail", args=[pk]))


def _act_on_jobs(request: HttpRequest, action: str, status: str) -> HttpResponse:
    """Act on the selected rows, or, once confirmed, on every job matching the filters."""
    listing = LISTINGS[status]
    if action not in listing.bulk_actions:
        raise Http404(f"{action} does not apply to {status} jobs.")
    jobs = JobList(listing, request.POST)
    fallback = back(request, reverse("steady_queue_dashboard:job-list", args=[status]))
    if request.POST.get("scope") != "all":
        return _act_on_selected(request, action, jobs, fallback)
    if not request.POST.get("confirmed"):
        return _confirm(request, action, jobs, fallback)
    outcome = adapter.act_on_jobs(action, jobs.matching())
    audit.record(request, f"{action} all", _describe(jobs), outcome)
    return acted(request, outcome, fallback)


def _act_on_selected(
    request: HttpRequest, action: str, jobs: JobList, fallback: str
) -> HttpResponse:
    ids = sorted({int(pk) for pk in request.POST.getlist("ids") if pk.isdigit()})
    if not ids:
        return acted(request, adapter.Outcome(False, _("No job was selected.")), fallback)
    # Within the list's status and filters: a row that moved on since is left alone.
    selected = jobs.matching().filter(pk__in=ids)
    outcome = adapter.act_on_jobs(action, selected, expected=len(ids))
    audit.record(request, action, _selection(jobs.listing.status, ids), outcome)
    return acted(request, outcome, fallback)


def _confirm(request: HttpRequest, action: str, jobs: JobList, next_url: str) -> HttpResponse:
    context = {
        "action": action,
        "listing": jobs.listing,
        "jobs": jobs,
        "total": adapter.capped_count(jobs.matching()),
        "filters": _describe(jobs),
        "filter_params": [
            (name, value)
            for name in jobs.filterset.filters
            for value in request.POST.getlist(name)
            if value
        ],
        "next": next_url,
    }
    return render_page(
        request,
        "steady_queue_dashboard/jobs/confirm.html",
        context,
        fragment="steady_queue_dashboard/jobs/_confirm.html",
        section="jobs",
    )


def _describe(jobs: JobList) -> str:
    """Say which jobs a filter matched, for the confirm step and the audit log."""
    jobs.filterset.is_valid()
    form = jobs.filterset.form
    terms = [
        f"{form.fields[name].label}={value}"
        for name, value in form.cleaned_data.items()
        if value not in (None, "")
    ]
    label = str(jobs.listing.label).lower()
    if not terms:
        return _("all %(status)s jobs") % {"status": label}
    return _("%(status)s jobs where %(terms)s") % {"status": label, "terms": ", ".join(terms)}


def _selection(status: str, ids: list[int]) -> str:
    shown = ", ".join(f"#{pk}" for pk in ids[:20]) + (" …" if len(ids) > 20 else "")
    return _("%(status)s jobs %(ids)s") % {"status": status, "ids": shown}
