"""A job's story from its row: attempts, errors and the timeline (no queries)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from steady_queue.exceptions import CANCELLED_CLASS
from steady_queue.models import Job, states

from .. import masking


@dataclass(frozen=True)
class Attempt:
    number: int
    worker: str
    started_at: datetime | None
    finished_at: datetime | None = None
    error: dict | None = None
    running: bool = False

    @property
    def cancelled(self) -> bool:
        """Whether this attempt was stopped by a cancel (no error of the task's)."""
        return bool(self.error) and self.error.get("exception_class") == CANCELLED_CLASS

    @property
    def duration(self) -> timedelta | None:
        end = self.finished_at or (timezone.now() if self.running else None)
        return end - self.started_at if end and self.started_at else None


@dataclass(frozen=True)
class Event:
    at: datetime
    label: str
    detail: str = ""
    kind: str = ""


def attempts(job: Job) -> list[Attempt]:
    """Return every attempt of ``job``, the running one last."""
    done = [
        Attempt(
            number=number,
            worker=entry.get("worker_id") or "",
            started_at=_parse_time(entry.get("started_at")),
            finished_at=_parse_time(entry.get("finished_at")),
            error=shown_error(entry.get("error")),
        )
        for number, entry in enumerate(job.attempts or [], start=1)
    ]
    failed = getattr(job, "failed_execution", None)
    # A job cancelled before it ran was never attempted: the timeline says "Cancelled".
    cancelled_unrun = failed is not None and failed.exception_class == CANCELLED_CLASS
    if failed is not None and not (done and done[-1].error) and not cancelled_unrun:
        # A failure recorded outside a run (a dead worker's job) has no attempt entry.
        error = {"exception_class": failed.exception_class, "message": failed.message}
        error = shown_error(error | {"traceback": failed.backtrace})
        done.append(Attempt(len(done) + 1, "", None, failed.created_at, error))
    claimed = getattr(job, "claimed_execution", None)
    if claimed is not None:
        worker = claimed.process.name if claimed.process else _("in-process")
        done.append(Attempt(len(done) + 1, worker, claimed.created_at, running=True))
    return done


def timeline(job: Job) -> list[Event]:
    """Return what happened to ``job`` so far, oldest first."""
    events = [Event(job.created_at, _("Enqueued"), job.queue_name)]
    done = attempts(job)
    if _was_due(job, done):
        events.append(Event(job.scheduled_at, _("Due"), kind=states.SCHEDULED))
    for attempt in done:
        events += _attempt_events(attempt)
    execution = job.execution
    waiting = {
        "ReadyExecution": _("Ready"),
        "BlockedExecution": _("Blocked"),
        "ThrottledExecution": _("Throttled"),
        "WaitingExecution": _("Waiting for upstream steps"),
    }
    if type(execution).__name__ in waiting:
        label = waiting[type(execution).__name__]
        if getattr(execution, "signal_name", ""):  # a durable job's wait_for_signal
            label = _("Waiting for signal %(name)s") % {"name": execution.signal_name}
        events.append(Event(execution.created_at, label))
    if job.finished_at:
        events.append(Event(job.finished_at, _("Finished"), kind=states.FINISHED))
    failed = getattr(job, "failed_execution", None)
    cancelled = failed is not None and failed.exception_class == CANCELLED_CLASS
    # Cancelled before it ran (a running one's last attempt says "cancelled" itself).
    if cancelled and not (done and done[-1].cancelled):
        events.append(Event(failed.created_at, _("Cancelled"), kind=states.CANCELLED))
    return sorted(events, key=lambda event: event.at)


def _was_due(job: Job, done: list[Attempt]) -> bool:
    """Whether the job's due time is an event of its story (to come, or that made it ready).

    A job run early ("Run now", or a retry dispatched before its time) keeps its due time,
    which is no event to come; once that time passes, a run or a failure that came before
    it must not be followed by a "Due" nothing followed.
    """
    if job.scheduled_at is None:
        return False
    if job.state == states.SCHEDULED:
        return True
    if job.scheduled_at > timezone.now():
        return False
    started = [attempt.started_at for attempt in done if attempt.started_at]
    ran_early = bool(started) and started[-1] < job.scheduled_at
    # A job still waiting to run again was made due after its last attempt (a retry).
    return not (ran_early and job.state in (states.RUNNING, states.FAILED, states.FINISHED))


def run_time(job: Job) -> timedelta | None:
    """Return how long the job's last finished attempt ran (from its stored attempts only)."""
    if not job.attempts:
        return None
    last = job.attempts[-1]
    started, finished = _parse_time(last.get("started_at")), _parse_time(last.get("finished_at"))
    return finished - started if started and finished else None


def _attempt_events(attempt: Attempt) -> list[Event]:
    label = _("Attempt %(n)s started") % {"n": attempt.number}
    events = (
        [Event(attempt.started_at, label, attempt.worker, states.RUNNING)]
        if attempt.started_at
        else []
    )
    if attempt.finished_at and attempt.cancelled:
        label = _("Attempt %(n)s cancelled") % {"n": attempt.number}
        events.append(
            Event(attempt.finished_at, label, attempt.error.get("message", ""), states.CANCELLED)
        )
    elif attempt.finished_at:
        failed = attempt.error is not None
        label = _("Attempt %(n)s failed") if failed else _("Attempt %(n)s succeeded")
        detail = attempt.error.get("exception_class", "") if failed else ""
        kind = states.FAILED if failed else states.FINISHED
        events.append(Event(attempt.finished_at, label % {"n": attempt.number}, detail, kind))
    return events


def _parse_time(value: datetime | str | None) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return parse_datetime(value)


def shown_error(error: dict | None) -> dict | None:
    """An error as the console shows it: an encrypted task's message and traceback hidden."""
    if not error:
        return error
    return {key: masking.shown(value) for key, value in error.items()}
