"""Actions on jobs, one or in bulk, through the engine's operations API."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, ngettext_lazy

from steady_queue.exceptions import JobStateError
from steady_queue.models import Job

logger = logging.getLogger(__name__)
# Jobs handed to the engine per call. Each call commits before the next starts, so a
# failure part-way leaves the earlier batches done, and the count says how many.
BATCH_SIZE = 500


@dataclass(frozen=True)
class Outcome:
    """What an action did, in words for the person who asked for it."""

    succeeded: bool
    message: str
    affected: int = 0


JOB_ACTIONS = {
    "retry": ("retry", _("Job %(id)s will run again.")),
    "discard": ("discard", _("Job %(id)s was discarded.")),
    # A running job ends when its task next looks (cancelled(), report_progress).
    "cancel": ("cancel", _("Job %(id)s was cancelled (a running job is asked to stop).")),
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
    "cancel": (
        "cancel_all",
        ngettext_lazy(
            "%(count)s job was cancelled (running jobs are asked to stop).",
            "%(count)s jobs were cancelled (running jobs are asked to stop).",
            "count",
        ),
    ),
    "dispatch": (
        "dispatch_all_now",
        ngettext_lazy(
            "%(count)s job is ready to run now.", "%(count)s jobs are ready to run now.", "count"
        ),
    ),
    # Into a free slot of the job's key only: the others stay blocked.
    "release": (
        "release_all",
        ngettext_lazy(
            "%(count)s job was released into a free slot and is ready to run.",
            "%(count)s jobs were released into free slots and are ready to run.",
            "count",
        ),
    ),
    "release-over-limit": (
        lambda queryset, batch_size: queryset.release_all(force=True, batch_size=batch_size),
        ngettext_lazy(
            "%(count)s job was released over its concurrency limit and is ready to run.",
            "%(count)s jobs were released over their concurrency limit and are ready to run.",
            "count",
        ),
    ),
}


def act_on_job(action: str, pk: int) -> Outcome:
    """Run ``action`` on one job; a job that moved on or vanished is reported, not an error."""
    if action == "release":  # which may leave the job blocked: release.py says so
        from .release import release_job

        return release_job(pk)
    method, done = JOB_ACTIONS[action]
    job = Job.objects.filter(pk=pk).first()
    if job is None:
        return Outcome(False, _("Job %(id)s no longer exists.") % {"id": pk})
    try:
        getattr(job, method)()
    except JobStateError as exc:
        return Outcome(False, str(exc))
    except Exception as exc:
        logger.exception("Dashboard %s of job %s failed", action, pk)
        return Outcome(False, f"{type(exc).__name__}: {exc}")
    return Outcome(True, done % {"id": pk}, affected=1)


def act_on_jobs(action: str, queryset: QuerySet, expected: int | None = None) -> Outcome:
    """Run ``action`` on every job of ``queryset``, a batch at a time; never raise.

    With ``expected`` (the number of rows the user selected), say how many of them
    had meanwhile changed state or vanished. An error part-way stops the action and
    is reported with the number of jobs already done, which stay done.
    """
    method, done = BULK_ACTIONS[action]
    count = 0
    try:
        for batch in _batches(queryset):
            count += _run(method, queryset.filter(pk__in=batch))
    except Exception as exc:
        logger.exception("Dashboard %s stopped after %s jobs", action, count)
        message = (
            done % {"count": count}
            + " "
            + _("Then an error stopped the action, leaving the other jobs as they were: %(error)s")
            % {"error": f"{type(exc).__name__}: {exc}"}
        )
        return Outcome(False, message, affected=count)
    message = done % {"count": count}
    if expected is not None and count < expected:
        skipped = expected - count
        message += " " + ngettext(
            "%(count)s selected job had changed state or no longer exists.",
            "%(count)s selected jobs had changed state or no longer exist.",
            skipped,
        ) % {"count": skipped}
    return Outcome(count > 0 or expected is None, message, affected=count)


def _run(method, queryset: QuerySet) -> int:
    """Call the engine's bulk method (a queryset method's name, or a function of one)."""
    if callable(method):
        return method(queryset, batch_size=BATCH_SIZE)
    return getattr(queryset, method)(batch_size=BATCH_SIZE)


def _batches(queryset: QuerySet):
    """Yield the ids of ``queryset`` in ascending batches (keyset on the primary key)."""
    ids = queryset.order_by("pk").values_list("pk", flat=True)
    last = None
    while batch := list((ids if last is None else ids.filter(pk__gt=last))[:BATCH_SIZE]):
        yield batch
        last = batch[-1]
