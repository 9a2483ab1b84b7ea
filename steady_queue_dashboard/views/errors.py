"""Failed jobs grouped by error; retry or discard one group, after a confirmation."""

from __future__ import annotations

import re

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from .. import adapter, audit, confirmation, error_groups, instances
from ..access import guard
from .asking import ask
from .rendering import acted, render_page

GROUP_ACTIONS = ("retry", "discard")
# A job id as a form sends it: ASCII digits that fit a 64-bit key.
JOB_ID = re.compile(r"[0-9]{1,18}")


@require_safe
@guard
def error_group_list(request: HttpRequest) -> HttpResponse:
    groups = error_groups.error_groups()
    return render_page(
        request,
        "steady_queue_dashboard/errors/list.html",
        {"groups": groups.groups, "partial": groups.partial, "scan_limit": error_groups.SCAN_LIMIT},
        fragment="steady_queue_dashboard/errors/_table.html",
        section="jobs",
    )


@guard
def error_group_action(request: HttpRequest, key: str, action: str) -> HttpResponse:
    """GET: say which jobs the action would touch. POST (that form): act on exactly those."""
    if action not in GROUP_ACTIONS:
        raise Http404(_("No such action."))
    if request.method == "POST":
        return _act(request, key, action)
    group = error_groups.error_groups().find(key)
    if group is None:
        raise Http404(_("No failed job has this error any more."))
    # The jobs' question, as every other action asks it: count, ids, what they share.
    return ask(
        request,
        _facts(action, key, group.job_ids),
        action=action,
        next_url=instances.url("error-groups"),
        hidden=[("ids", pk) for pk in group.job_ids],
        ids=group.job_ids,
        filters=_("failed with %(error)s") % {"error": _error(group)},
        note=_("Exactly these jobs: a job that failed with this error afterwards is left alone."),
    )


@guard(action=True)
def _act(request: HttpRequest, key: str, action: str) -> HttpResponse:
    fallback = instances.url("error-groups")
    asked = sorted({int(pk) for pk in request.POST.getlist("ids") if JOB_ID.fullmatch(pk)})
    # Only jobs still failed with this group's error: a crafted or stale id is left alone.
    if not confirmation.confirmed(request, **_facts(action, key, asked)):
        # Only the confirmation page's own form acts, for exactly the jobs it listed.
        refused = _("This action was not confirmed on its page, so nothing was done.")
        return acted(request, adapter.Outcome(False, refused), fallback)
    ids, error = error_groups.members(key, asked)
    if not ids:
        outcome = adapter.Outcome(False, _("None of these jobs is still failed with this error."))
    else:
        jobs = adapter.failed_jobs_by_ids(ids)
        outcome = adapter.act_on_jobs(action, jobs, expected=len(asked))
    shown = ", ".join(f"#{pk}" for pk in ids[:20]) + (" …" if len(ids) > 20 else "")
    target = _("failed jobs with %(error)s: %(ids)s") % {"error": error or key, "ids": shown or "—"}
    link = instances.url("error-groups")
    details = {"group": key, "error": error, "jobs": ids[:100], "asked": len(asked)}
    audit.record(request, f"{action} error group", target, outcome, link=link, details=details)
    return acted(request, outcome, fallback)


def _error(group: error_groups.ErrorGroup) -> str:
    return f"{group.exception_class}: {group.message}" if group.message else group.exception_class


def _facts(action: str, key: str, ids: list[int]) -> dict:
    return {"action": f"error-group {action}", "group": key, "ids": sorted(ids)}
