"""Actions on jobs: one job at a time, the selected rows, or every job matching a filter.

Discarding and cancelling ask first, for one job, the selected rows or all matching;
so does every action on "all matching" jobs, which the operator cannot all see (one
question and one signed step for all of them: ``asking``). Retry and dispatch of one
job or of the selected rows act at once: they destroy nothing, and the rows are in
view. "All matching" also refuses filters it could not read rather than widening to
the whole list.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from .. import adapter, audit, confirmation, instances
from ..access import guard
from ..joblist import JobList
from ..listings import LISTINGS
from . import job_release as job_release_flow
from .asking import SHOWN_IDS, ask
from .rendering import acted, back

# A job id as a form sends it: ASCII digits that fit a 64-bit key ("²" is a digit too).
JOB_ID = re.compile(r"[0-9]{1,18}")
# Actions that destroy jobs or end them: they ask first, for one job or many.
DESTRUCTIVE = frozenset({"discard", "cancel"})


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
    if job is not None and action in DESTRUCTIVE:
        facts = {"action": action, "job": pk, "details": details}
        if not confirmation.confirmed(request, **facts):
            return ask(
                request,
                facts,
                action=action,
                next_url=back(request, link),
                ids=[pk],
                job=job,
                details=details,
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
    # The first rows in the list's own order: the ones at the top of the page.
    first = list(
        jobs.matching().order_by(*listing.ordering).values_list("pk", flat=True)[:SHOWN_IDS]
    )
    described = _describe(jobs)
    facts = {
        "action": action,
        "status": status,
        "filters": jobs.filter_params,
        "total": [total.value, total.capped],
        "first": first,
    }
    if not confirmation.confirmed(request, **facts):
        return ask(
            request,
            facts,
            action=action,
            next_url=fallback,
            hidden=[*jobs.filter_params, ("scope", "all")],
            ids=first,
            total=total,
            listing=listing,
            filters=described,
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
    """Act on the ticked rows; a destructive action first lists them and asks.

    The question lists the selected jobs still in this list (and its filters); its
    confirmation acts on exactly those ids, still in this status, whatever the filters
    match by then (a relative time range may have moved on). A row that changed state
    in between is left alone and counted.
    """
    given = request.POST.getlist("ids")
    ids = sorted({int(pk) for pk in given if JOB_ID.fullmatch(pk)})
    if len(ids) < len(set(given)):
        refused = _("Some selected ids are not job ids, so nothing was done.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    if not ids:
        return acted(request, adapter.Outcome(False, _("No job was selected.")), fallback)
    listing = jobs.listing
    if action in DESTRUCTIVE:
        facts = {"action": action, "status": listing.status, "ids": ids}
        if not confirmation.confirmed(request, **facts):
            return _ask_selected(request, action, jobs, ids, fallback)
        selected = adapter.jobs(listing).order_by().select_related(None).filter(pk__in=ids)
    else:
        # Within the list's status and filters: a row that moved on since is left alone.
        selected = jobs.matching().filter(pk__in=ids)
    outcome = adapter.act_on_jobs(action, selected, expected=len(ids))
    audit.record(
        request,
        action,
        _selection(listing.status, ids),
        outcome,
        link=instances.url("job-list", listing.status),
        details={"status": listing.status, "ids": ids[:100]},
    )
    return acted(request, outcome, fallback)


def _ask_selected(
    request: HttpRequest, action: str, jobs: JobList, given: list[int], fallback: str
) -> HttpResponse:
    """List the selected jobs still shown by the list and ask; the others are named apart."""
    present = jobs.matching().filter(pk__in=given).order_by("pk").values_list("pk", flat=True)
    ids = list(present)
    status = str(jobs.listing.label).lower()
    if not ids:
        refused = _("None of the selected jobs is %(status)s any more, so nothing was done.")
        return acted(request, adapter.Outcome(False, refused % {"status": status}), fallback)
    facts = {"action": action, "status": jobs.listing.status, "ids": ids}
    return ask(
        request,
        facts,
        action=action,
        next_url=fallback,
        hidden=[*jobs.filter_params, ("scope", "selected"), *(("ids", pk) for pk in ids)],
        ids=ids,
        listing=jobs.listing,
        gone=len(given) - len(ids),
    )


def _describe(jobs: JobList) -> str:
    """Say which jobs a filter matched, for the confirm step and the audit log."""
    label = str(jobs.listing.label).lower()
    if not (terms := jobs.description):
        return _("all %(status)s jobs") % {"status": label}
    return _("%(status)s jobs where %(terms)s") % {"status": label, "terms": terms}


def _selection(status: str, ids: list[int]) -> str:
    shown = ", ".join(f"#{pk}" for pk in ids[:20]) + (" …" if len(ids) > 20 else "")
    return _("%(status)s jobs %(ids)s") % {"status": status, "ids": shown}
