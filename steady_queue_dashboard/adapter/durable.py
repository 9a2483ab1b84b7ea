"""Durable jobs (``steady_queue.durable``): their steps, what they wait for, sending a signal.

Reads the engine's own answers: ``Job.durable_status()`` (sleeping until when, or waiting
for which signal until when), ``Job.objects.sleeping()`` / ``awaiting_signal()`` for the
Waits page, and the job's ``JobStep`` / ``JobSignal`` rows for its page. Values a task
stored (a step's result, a signal's payload) are masked as its arguments are.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, QuerySet
from django.utils.functional import Promise
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from steady_queue import arguments
from steady_queue.durable import send_signal
from steady_queue.exceptions import DurableStepError, SignalNotDeliverable
from steady_queue.models import Job, JobSignal, JobStep, states
from steady_queue.models.durable import (
    MAX_PAYLOAD_BYTES,
    NAME_LENGTH,
    SLEEP,
    STEP,
    WAIT,
    checked_payload,
)
from steady_queue.models.job.durable import AWAITING_SIGNAL
from steady_queue.ops import audit as ops_audit

from .. import masking
from .actions import Outcome
from .job_edits import Refusal
from .job_queries import Tally, capped_count

logger = logging.getLogger(__name__)
SIGNAL_PAYLOAD_LIMIT = MAX_PAYLOAD_BYTES
SIGNAL_NAME_LENGTH = NAME_LENGTH
# A job's page lists at most this many of its durable records (a loop of steps may make
# thousands); it says when there are more.
STEP_CAP = 200
PREVIEW_LENGTH = 120
SIGNAL, SLEEPING = "signal", "sleep"


@dataclass(frozen=True)
class DurableWait:
    """What a job waits for: ``kind`` "sleep" (until ``until``) or "signal" (``signal``,
    until ``until``; None: no deadline)."""

    kind: str
    until: datetime | None
    signal: str = ""


@dataclass(frozen=True)
class StepRecord:
    """One line of a job's durable record, as its page shows it (the value masked)."""

    kind: str
    name: str
    completed_at: datetime | None
    preview: str


@dataclass(frozen=True)
class Durable:
    """A durable job's page section: its records (steps, sleeps, waits) and its wait now."""

    steps: list[StepRecord]
    more: bool
    wait: DurableWait | None


@dataclass(frozen=True)
class WaitKind:
    """A tab of the Waits page: which jobs, in which order (keyset), which state they are in."""

    name: str
    label: str | Promise
    state: str
    ordering: tuple[str, ...]
    empty: str | Promise


@dataclass(frozen=True)
class WaitRow:
    job: Job
    wait: DurableWait
    steps: int


WAIT_KINDS = {
    kind.name: kind
    for kind in [
        WaitKind(
            name=SIGNAL,
            label=gettext_lazy("Waiting for a signal"),
            state=states.WAITING,
            # Oldest waits first, by the waiting table's primary key: a deadline may be
            # null, which a keyset cursor cannot hold (the page names the next deadline).
            ordering=("waiting_execution__job_id",),
            empty=gettext_lazy("No job is waiting for a signal."),
        ),
        WaitKind(
            name=SLEEPING,
            label=gettext_lazy("Sleeping"),
            state=states.SCHEDULED,
            # Soonest wake first: the dispatcher's order, served by the sq_dispatch_all index.
            ordering=("scheduled_execution__scheduled_at", "scheduled_execution__job_id"),
            empty=gettext_lazy("No job is sleeping."),
        ),
    ]
}


def wait_kind(name: str) -> WaitKind:
    """The Waits tab called ``name``; the signal waits (what an operator can act on) else."""
    return WAIT_KINDS.get(name, WAIT_KINDS[SIGNAL])


def durable_wait_of(job: Job) -> DurableWait | None:
    """What the job sleeps or waits for now (None: neither); at most one query."""
    status = job.durable_status()
    if status is None:
        return None
    if status.kind == AWAITING_SIGNAL:
        return DurableWait(SIGNAL, status.until, status.signal_name)
    return DurableWait(SLEEPING, status.until)


def durable_of(job: Job) -> Durable | None:
    """The job's durable section (None: it made no durable call); one query, and one more
    for a scheduled job (whether it sleeps)."""
    records = list(job.steps.order_by("pk")[: STEP_CAP + 1])
    wait = durable_wait_of(job)
    if not records and wait is None:
        return None
    steps = [_record(job, record) for record in records[:STEP_CAP]]
    return Durable(steps=steps, more=len(records) > STEP_CAP, wait=wait)


def signal_refusal(job: Job, name: str) -> str | None:
    """Why the job cannot take the signal ``name``, as far as can be told without writing
    (the engine checks again as it delivers)."""
    if job.finished_at is not None or job.state == states.FAILED:
        return _("Job %(id)s has ended: it takes no more signals. Nothing was sent.") % {
            "id": job.pk
        }
    if JobSignal.objects.filter(job_id=job.pk, name=name).exists():
        return _(
            "Job %(id)s already received a signal %(name)r; a signal of one name is delivered "
            "once. Nothing was sent."
        ) % {"id": job.pk, "name": name}
    over = JobStep.objects.filter(job_id=job.pk, kind=WAIT, name=name, completed_at__isnull=False)
    if over.exists():
        return _(
            "Job %(id)s no longer waits for %(name)r: that wait is over (delivered or timed "
            "out). Nothing was sent."
        ) % {"id": job.pk, "name": name}
    return None


def payload_refusal(payload: Any) -> str | None:
    """Why the engine would not keep ``payload`` (not JSON it can store, past 64 KB), if so."""
    try:
        checked_payload(payload)
    except DurableStepError as exc:
        return str(exc)
    return None


def send_job_signal(job: Job, name: str, payload: Any, *, user: str) -> Outcome:
    """Send the signal through the engine, and audit it in ``user``'s name; raise
    ``Refusal`` (nothing written) when the engine refuses it."""
    try:
        with ops_audit.acting_as(user):
            send_signal(job.pk, name, payload)
    except (SignalNotDeliverable, DurableStepError) as exc:
        raise Refusal(str(exc)) from exc
    except Exception as exc:  # a message on the form, not a 500
        logger.exception("Sending a signal from the dashboard failed")
        raise Refusal(f"{type(exc).__name__}: {exc}") from exc
    message = _("Signal %(name)r was sent to job %(id)s.") % {"name": name, "id": job.pk}
    shown = masking.mask_metadata(payload, job.task_path)
    details = {"task": job.task_path, "job": job.pk, "signal": name, "payload": shown}
    with ops_audit.acting_as(user):
        ops_audit.announce(
            "signal",
            f"job {job.pk}",
            message=message,
            details=details,
            link_to=("job-detail", str(job.pk)),
            backend=job.backend,
        )
    return Outcome(True, message, affected=1)


def waiting_jobs(kind: WaitKind, *, task: str = "") -> QuerySet:
    """The jobs of one Waits tab, narrowed to one task path if ``task``."""
    queryset = Job.objects.awaiting_signal() if kind.name == SIGNAL else Job.objects.sleeping()
    if "\x00" in task:  # no task path holds one (and PostgreSQL refuses it in a query)
        return queryset.none()
    queryset = queryset.filter(task_path=task) if task else queryset
    relation = "waiting_execution" if kind.name == SIGNAL else "scheduled_execution"
    return queryset.select_related(relation)


def wait_counts() -> dict[str, Tally]:
    """How many jobs each Waits tab holds, up to the dashboard's count cap."""
    return {
        SIGNAL: capped_count(Job.objects.awaiting_signal()),
        SLEEPING: capped_count(Job.objects.sleeping()),
    }


def next_deadline(kind: WaitKind, *, task: str = "") -> Job | None:
    """The signal-waiting job whose deadline comes first (sq_waiting_signal_deadline)."""
    if kind.name != SIGNAL:
        return None
    timed = waiting_jobs(kind, task=task).filter(waiting_execution__signal_deadline__isnull=False)
    return timed.order_by("waiting_execution__signal_deadline", "pk").first()


def wait_rows(kind: WaitKind, jobs: list[Job]) -> list[WaitRow]:
    """A page's rows with their wait and how many steps each has done: one query."""
    done = dict(
        JobStep.objects.filter(job_id__in=[job.pk for job in jobs], kind=STEP)
        .values_list("job_id")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return [WaitRow(job, _wait_of_row(kind, job), done.get(job.pk, 0)) for job in jobs]


def _wait_of_row(kind: WaitKind, job: Job) -> DurableWait:
    # Read from the queryset's annotations: no query per row.
    if kind.name == SIGNAL:
        return DurableWait(SIGNAL, job.durable_until, job.awaited_signal)
    return DurableWait(SLEEPING, job.durable_until)


def _record(job: Job, record: JobStep) -> StepRecord:
    if record.kind == SLEEP:
        return StepRecord(
            SLEEP,
            _("sleep %(n)s") % {"n": record.name},
            record.completed_at,
            _("until %(at)s") % {"at": record.until.isoformat() if record.until else "—"},
        )
    if record.kind == WAIT:
        name = _("signal %(name)s") % {"name": record.name}
        return StepRecord(WAIT, name, record.completed_at, _wait_outcome(job, record))
    return StepRecord(STEP, record.name, record.completed_at, _preview(job, _stored(record.result)))


def _wait_outcome(job: Job, record: JobStep) -> str:
    if record.completed_at is None:
        return _("waiting")
    if record.timed_out:
        return _("timed out")
    return _preview(job, (record.result or {}).get("payload"))


def _stored(result: Any) -> Any:
    """A step's value as the task got it back, JSON-safe (models and times as text)."""
    args, _kwargs = arguments.display({"args": [result]})
    return args[0]


def _preview(job: Job, value: Any) -> str:
    shown = masking.mask_metadata(value, job.task_path)
    text = json.dumps(shown, default=str, ensure_ascii=False, sort_keys=True)
    return Truncator(text).chars(PREVIEW_LENGTH)
