"""Actions on jobs: one job at a time, the selected rows, or every job matching a filter.

Discarding is confirmed first (a signed step, see ``confirmation``); so is every action
on "all matching" jobs, which also refuses filters it could not read rather than
widening to the whole list.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django_htmx.http import reswap, retarget

from .. import adapter, audit, confirmation, instances
from ..access import guard
from ..joblist import JobList
from ..listings import LISTINGS
from . import job_release as job_release_flow
from .rendering import acted, back, render_page

# A job id as a form sends it: ASCII digits that fit a 64-bit key ("²" is a digit too).
JOB_ID = re.compile(r"[0-9]{1,18}")
# Actions on one job that destroy or end it, and so ask first.
CONFIRMED_JOB_ACTIONS = frozenset({"discard", "cancel"})


@guard(action=True)
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "retry", pk)


@guard(action=True)
def job_discard(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "discard", pk)


@guard(action=True)
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "cancel", pk)


@guard(action=True)
def job_dispatch(request: HttpRequest, pk: int) -> HttpResponse:
    return _act_on_job(request, "dispatch", pk)


@guard(action=True)
def job_release(request: HttpRequest, pk: int) -> HttpResponse:
    return job_release_flow.release_job(request, pk)


@guard(action=True)
def jobs_retry(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "retry", status)


@guard(action=True)
def jobs_discard(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "discard", status)


@guard(action=True)
def jobs_cancel(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "cancel", status)


@guard(action=True)
def jobs_dispatch(request: HttpRequest, status: str) -> HttpResponse:
    return _act_on_jobs(request, "dispatch", status)


@guard(action=True)
def jobs_release(request: HttpRequest, status: str) -> HttpResponse:
    return job_release_flow.release_jobs(request, status)


def _act_on_job(request: HttpRequest, action: str, pk: int) -> HttpResponse:
    link = instances.url("job-detail", pk)
    job = adapter.find_job(pk)
    details = audit.job_details(job) if job is not None else {}
    if job is not None and action in CONFIRMED_JOB_ACTIONS:
        facts = {"action": action, "job": pk, "details": details}
        if not confirmation.confirmed(request, **facts):
            return _confirm(
                request,
                {
                    "action": action,
                    "job": job,
                    "details": details,
                    "form_url": request.path,
                    "hidden": [(confirmation.FIELD, confirmation.token(request, **facts))],
                    "next": back(request, link),
                    "changed": confirmation.attempted(request),
                },
            )
    outcome = adapter.act_on_job(action, pk)
    audit.record(request, action, f"job {pk}", outcome, link=link, details=details)
    return acted(request, outcome, link)


def _act_on_jobs(request: HttpRequest, action: str, status: str) -> HttpResponse:
    """Act on the selected rows, or, once confirmed, on every job matching the filters."""
    listing = LISTINGS[status]
    if action not in listing.bulk_actions:
        raise Http404(f"{action} does not apply to {status} jobs.")
    jobs = JobList(listing, request.POST)
    fallback = back(request, instances.url("job-list", status))
    if not jobs.valid:
        # An invalid filter is ignored when listing; acting without it would act on more.
        refused = _("Some filters are not valid, so nothing was done: correct them and retry.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    if request.POST.get("scope") != "all":
        return _act_on_selected(request, action, jobs, fallback)
    total = adapter.capped_count(jobs.matching())
    described = _describe(jobs)
    facts = {
        "action": action,
        "status": status,
        "filters": jobs.filter_params,
        "total": [total.value, total.capped],
    }
    if not confirmation.confirmed(request, **facts):
        return _confirm(
            request,
            {
                "action": action,
                "listing": listing,
                "total": total,
                "filters": described,
                "form_url": request.path,
                "hidden": [
                    *jobs.filter_params,
                    ("scope", "all"),
                    (confirmation.FIELD, confirmation.token(request, **facts)),
                ],
                "next": fallback,
                "changed": confirmation.attempted(request),
            },
        )
    outcome = adapter.act_on_jobs(action, jobs.matching())
    link = instances.url("job-list", status)
    query = urlencode(jobs.filter_params)
    audit.record(
        request,
        f"{action} all",
        described,
        outcome,
        link=f"{link}?{query}" if query else link,
        details={"status": status, "filters": jobs.filter_params, "confirmed": total.value},
    )
    return acted(request, outcome, fallback)


def _act_on_selected(
    request: HttpRequest, action: str, jobs: JobList, fallback: str
) -> HttpResponse:
    given = request.POST.getlist("ids")
    ids = sorted({int(pk) for pk in given if JOB_ID.fullmatch(pk)})
    if len(ids) < len(set(given)):
        refused = _("Some selected ids are not job ids, so nothing was done.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    if not ids:
        return acted(request, adapter.Outcome(False, _("No job was selected.")), fallback)
    # Within the list's status and filters: a row that moved on since is left alone.
    selected = jobs.matching().filter(pk__in=ids)
    outcome = adapter.act_on_jobs(action, selected, expected=len(ids))
    audit.record(
        request,
        action,
        _selection(jobs.listing.status, ids),
        outcome,
        link=instances.url("job-list", jobs.listing.status),
        details={"status": jobs.listing.status, "ids": ids[:100]},
    )
    return acted(request, outcome, fallback)


def _confirm(request: HttpRequest, context: dict) -> HttpResponse:
    """Ask before acting: the page (or, for htmx, the messages area) holds the question."""
    response = render_page(
        request,
        "steady_queue_dashboard/jobs/confirm.html",
        context,
        fragment="steady_queue_dashboard/jobs/_confirm.html",
        section="jobs",
    )
    if getattr(request, "htmx", None):
        response = reswap(retarget(response, "#sq-messages"), "outerHTML")
    return response


def _describe(jobs: JobList) -> str:
    """Say which jobs a filter matched, for the confirm step and the audit log."""
    label = str(jobs.listing.label).lower()
    if not (terms := jobs.description):
        return _("all %(status)s jobs") % {"status": label}
    return _("%(status)s jobs where %(terms)s") % {"status": label, "terms": terms}


def _selection(status: str, ids: list[int]) -> str:
    shown = ", ".join(f"#{pk}" for pk in ids[:20]) + (" …" if len(ids) > 20 else "")
    return _("%(status)s jobs %(ids)s") % {"status": status, "ids": shown}
