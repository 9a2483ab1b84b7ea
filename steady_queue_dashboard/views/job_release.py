"""Release blocked jobs by hand: into a free slot of their key, or over its limit once asked.

Release never runs a job over its concurrency limit unasked: a job without a free slot
stays blocked, and the answer shows which jobs hold the key's slots, with a separate
"Run over the limit" step. That step is signed (``confirmation``) for exactly the job,
the selection or the filter shown, so no link or form can force a release by itself.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from .. import adapter, audit, confirmation, instances
from ..joblist import JobList
from ..listings import LISTINGS
from .asking import SHOWN_IDS, ask, render_question
from .rendering import acted, back

FORCE = "release-over-limit"
FORCED = "release over the limit"


def release_job(request: HttpRequest, pk: int) -> HttpResponse:
    """Release one job; where no slot is free, offer to run it over the limit."""
    link = instances.url("job-detail", pk)
    job = adapter.find_job(pk)
    details = audit.job_details(job) if job is not None else {}
    facts = {"action": FORCE, "job": pk}
    # A force without its signed step (or with a stale one) is a plain release.
    force = _forcing(request) and confirmation.confirmed(request, **facts)
    outcome = adapter.release_job(pk, force=force)
    audit.record(
        request, FORCED if force else "release", f"job {pk}", outcome, link=link, details=details
    )
    if not outcome.left_blocked:
        return acted(request, outcome, link)
    context = {
        "outcome": outcome,
        "job": job,
        "keys": adapter.key_slots({job.concurrency_key: job.task_path}),
        "hidden": [("force", "1"), (confirmation.FIELD, confirmation.token(request, **facts))],
        # The job's own address: "Release next" on a key may pick another job next time.
        "form_url": instances.url("job-release", pk),
    }
    return _ask(request, context, back(request, link))


def release_jobs(request: HttpRequest, status: str) -> HttpResponse:
    """Release the selected rows, or every job matching the filters (confirmed first)."""
    listing = LISTINGS[status]
    if "release" not in listing.bulk_actions:
        raise Http404(f"release does not apply to {status} jobs.")
    jobs = JobList(listing, request.POST)
    fallback = back(request, instances.url("job-list", status))
    if not jobs.valid:
        refused = _("Some filters are not valid, so nothing was done: correct them and retry.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    if request.POST.get("scope") == "all":
        return _release_matching(request, jobs, fallback)
    ids = _selected_ids(request)
    if not ids:
        refused = _("No job was selected, or some selected ids are not job ids: nothing was done.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    selected = jobs.matching().filter(pk__in=ids)
    target = _("%(status)s jobs %(ids)s") % {"status": status, "ids": _shown(ids)}
    scope = {"ids": ids}
    force = _may_force(request, jobs, selected, scope)
    hidden = [("ids", pk) for pk in ids]
    return _release_bulk(request, jobs, selected, target, scope, hidden, force)


def _release_matching(request: HttpRequest, jobs: JobList, fallback: str) -> HttpResponse:
    """Every job matching the filters: the count is confirmed first, as for any action."""
    total = adapter.capped_count(jobs.matching())
    first = list(
        jobs.matching().order_by(*jobs.listing.ordering).values_list("pk", flat=True)[:SHOWN_IDS]
    )
    described = _describe(jobs)
    facts = {
        "action": "release",
        "status": jobs.listing.status,
        "filters": jobs.filter_params,
        "total": [total.value, total.capped],
        "first": first,
    }
    hidden = [*jobs.filter_params, ("scope", "all")]
    scope = {"filters": jobs.filter_params}
    # The signed force step stands for this one; an unsigned force asks it again.
    forced = _may_force(request, jobs, jobs.matching(), scope)
    if not forced and not confirmation.confirmed(request, **facts):
        return ask(
            request,
            facts,
            action="release",
            next_url=fallback,
            hidden=hidden,
            ids=first,
            total=total,
            listing=jobs.listing,
            filters=described,
        )
    return _release_bulk(request, jobs, jobs.matching(), described, scope, hidden, forced)


def _release_bulk(
    request, jobs: JobList, chosen, target: str, scope: dict, hidden: list, force: bool
) -> HttpResponse:
    """Release ``chosen``: into free slots, or over the limit (``force``: the step was signed)."""
    status = jobs.listing.status
    facts = _force_facts(jobs, scope)
    blocked = chosen.filter(blocked_execution__isnull=False)
    outcome = adapter.act_on_jobs(FORCE if force else "release", chosen)
    link = instances.url("job-list", status)
    query = urlencode(jobs.filter_params)
    audit.record(
        request,
        FORCED if force else "release",
        target,
        outcome,
        link=f"{link}?{query}" if query else link,
        details={"status": status, **scope},
    )
    left = adapter.capped_count(blocked)
    if not left.value:
        return acted(request, outcome, back(request, link))
    token = confirmation.token(request, **facts, left=[left.value, left.capped])
    context = {
        "outcome": outcome,
        "left": left,
        "keys": adapter.key_slots(adapter.blocked_keys(chosen)),
        "hidden": [*hidden, ("force", "1"), (confirmation.FIELD, token)],
    }
    return _ask(request, context, back(request, link))


def _ask(request: HttpRequest, context: dict, next_url: str) -> HttpResponse:
    """Say what stays blocked and who holds the slots; offer "Run over the limit"."""
    context = {
        "form_url": request.path,
        **context,
        "next": next_url,
        "changed": _forcing(request),  # a force whose signed step no longer matched
    }
    return render_question(request, "release.html", "_release.html", context)


def _force_facts(jobs: JobList, scope: dict) -> dict:
    return {"action": FORCE, "status": jobs.listing.status, **scope}


def _may_force(request: HttpRequest, jobs: JobList, chosen, scope: dict) -> bool:
    """Whether the POST carries the force step signed for these jobs and their count.

    Signed with the count it showed: more jobs blocked since are asked about again.
    """
    if not _forcing(request):
        return False
    tally = adapter.capped_count(chosen.filter(blocked_execution__isnull=False))
    left = [tally.value, tally.capped]
    return confirmation.confirmed(request, **_force_facts(jobs, scope), left=left)


def _forcing(request: HttpRequest) -> bool:
    return request.POST.get("force") == "1"


def _selected_ids(request: HttpRequest) -> list[int]:
    """The selected job ids; none at all when any of them is not an id."""
    given = set(request.POST.getlist("ids"))
    if not all(pk.isascii() and pk.isdigit() and len(pk) <= 18 for pk in given):
        return []
    return sorted(int(pk) for pk in given)


def _describe(jobs: JobList) -> str:
    label = str(jobs.listing.label).lower()
    if not (terms := jobs.description):
        return _("all %(status)s jobs") % {"status": label}
    return _("%(status)s jobs where %(terms)s") % {"status": label, "terms": terms}


def _shown(ids: list[int]) -> str:
    return ", ".join(f"#{pk}" for pk in ids[:20]) + (" …" if len(ids) > 20 else "")
