"""Actions on jobs, one or in bulk, through the engine's operations API."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, ngettext_lazy

from steady_queue import db
from steady_queue.exceptions import JobStateError
from steady_queue.models import Job


@dataclass(frozen=True)
class Outcome:
    """What an action did, in words for the person who asked for it."""

    succeeded: bool
    message: str
    affected: int = 0


JOB_ACTIONS = {
    "retry": ("retry", _("Job %(id)s will run again.")),
    "discard": ("discard", _("Job %(id)s was discarded.")),
    "dispatch": ("dispatch_now", _("Job %(id)s is ready to run now.")),
    "release": ("release", _("Job %(id)s was released and is ready to run.")),
}
BULK_ACTIONS = {
    "retry": (
        "retry_all",
        ngettext_lazy("%(count)s job will run again.", "%(count)s jobs will run again.", "count"),
    ),
    "discard": (
        "discard_all",
        ngettext_lazy("%(count)s job was discarded.", "%(count)s jobs were discarded.", "count"),
    ),
    "dispatch": (
        "dispatch_all_now",
        ngettext_lazy(
            "%(count)s job is ready to run now.", "%(count)s jobs are ready to run now.", "count"
        ),
    ),
}


def act_on_job(action: str, pk: int) -> Outcome:
    """Run ``action`` on one job; a job that moved on or vanished is reported, not an error."""
    method, done = JOB_ACTIONS[action]
    job = Job.objects.using(db.alias()).filter(pk=pk).first()
    if job is None:
        return Outcome(False, _("Job %(id)s no longer exists.") % {"id": pk})
    try:
        getattr(job, method)()
    except JobStateError as exc:
        return Outcome(False, str(exc))
    return Outcome(True, done % {"id": pk}, affected=1)


def act_on_jobs(action: str, queryset: QuerySet, expected: int | None = None) -> Outcome:
    """Run ``action`` on every job of ``queryset``, in the engine's batches.

    With ``expected`` (the number of rows the user selected), say how many of them
    had meanwhile changed state or vanished.
    """
    method, done = BULK_ACTIONS[action]
    count = getattr(queryset, method)()
    message = done % {"count": count}
    if expected is not None and count < expected:
        skipped = expected - count
        message += " " + ngettext(
            "%(count)s selected job had changed state or no longer exists.",
            "%(count)s selected jobs had changed state or no longer exist.",
            skipped,
        ) % {"count": skipped}
    return Outcome(count > 0 or expected is None, message, affected=count)
