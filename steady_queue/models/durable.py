"""What durable execution records (``steady_queue.durable``): ``JobStep`` and ``JobSignal``.

``JobStep`` is one row per completed durable call of a job, kept across its runs,
retries and crashes, so that a later run of the task returns what an earlier one did
instead of doing it again:

- ``kind="step"``: ``step(context, name, fn)`` returned; ``result`` is ``fn``'s value
  as the argument serializer stored it (``steady_queue.arguments``);
- ``kind="sleep"``: the run's n-th ``sleep`` (``name`` is n, "1", "2"...) ended a
  run; ``until`` is when the job wakes;
- ``kind="wait"``: ``wait_for_signal(context, name)`` ended a run; ``until`` is its
  deadline (None: none). ``completed_at`` is set once the wait is over, with
  ``result`` ``{"payload": ...}`` (delivered) or ``{"timed_out": true}``.

``JobSignal`` is one row per signal sent to a job (``send_signal``), kept until the job
is deleted: ``consumed_at`` says when a wait took it. One per (job, name).

Both are deleted with their job (the cascade, and ``clear_finished_in_batches`` /
discards, which delete them first). ``Job.retry(reset_steps=True)`` deletes a job's
``JobStep`` rows (its signals stay: a signal that arrived is a fact of the world).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .. import db
from ..exceptions import CANCELLED_CLASS, DurableStepError, SignalNotDeliverable
from . import states
from .attempt import refused_text
from .base import QueueModel

STEP, SLEEP, WAIT = "step", "sleep", "wait"
#: ``JobStep.name`` and ``JobSignal.name`` are CharField(max_length=NAME_LENGTH).
NAME_LENGTH = 200
#: A signal's payload, as JSON, is at most this many bytes (UTF-8).
MAX_PAYLOAD_BYTES = 64 * 1024


class JobStep(QueueModel):
    """One completed durable call of a job: a step's result, a sleep, a signal wait."""

    KINDS = ((STEP, _("step")), (SLEEP, _("sleep")), (WAIT, _("wait for signal")))

    job = models.ForeignKey("steady_queue.Job", on_delete=models.CASCADE, related_name="steps")
    kind = models.CharField(_("kind"), max_length=10, choices=KINDS, default=STEP)
    name = models.CharField(_("name"), max_length=NAME_LENGTH)
    # A step's result (serialized by steady_queue.arguments); a wait's outcome.
    result = models.JSONField(_("result"), null=True, blank=True)
    # A sleep's wake time; a wait's deadline (None: it waits for ever).
    until = models.DateTimeField(_("until"), null=True, blank=True)
    created_at = models.DateTimeField(_("recorded at"), default=timezone.now)
    # When the call was over: a step's or a sleep's record time; a wait's delivery or timeout.
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    class Meta:
        db_table = "steady_queue_job_steps"
        verbose_name = _("job step")
        verbose_name_plural = _("job steps")
        ordering = ("id",)
        constraints = [
            models.UniqueConstraint(fields=["job", "kind", "name"], name="sq_job_step_name")
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} {self.kind} {self.name}"

    @property
    def timed_out(self) -> bool:
        """A wait whose deadline passed before its signal came."""
        return self.kind == WAIT and bool((self.result or {}).get("timed_out"))


class JobSignal(QueueModel):
    """A signal sent to a job (``send_signal``): kept for the job's wait of that name."""

    job = models.ForeignKey(
        "steady_queue.Job", on_delete=models.CASCADE, related_name="received_signals"
    )
    name = models.CharField(_("name"), max_length=NAME_LENGTH)
    payload = models.JSONField(_("payload"), null=True, blank=True)
    sent_at = models.DateTimeField(_("sent at"), default=timezone.now)
    # When the job's wait took it (None: sent before the wait, not taken yet).
    consumed_at = models.DateTimeField(_("consumed at"), null=True, blank=True)

    class Meta:
        db_table = "steady_queue_job_signals"
        verbose_name = _("job signal")
        verbose_name_plural = _("job signals")
        constraints = [models.UniqueConstraint(fields=["job", "name"], name="sq_job_signal_name")]

    def __str__(self) -> str:
        return f"job {self.job_id} signal {self.name}"


def checked_name(name: str, what: str) -> str:
    """``name`` if a step, wait or signal may be called so; else DurableStepError."""
    if not isinstance(name, str) or not name:
        raise DurableStepError(f"A {what} name must be a non-empty string, not {name!r}.")
    if len(name) > NAME_LENGTH:
        raise DurableStepError(f"A {what} name has at most {NAME_LENGTH} characters.")
    return name


def checked_payload(payload: Any) -> Any:
    """``payload`` as JSON will give it back (tuples become lists); else DurableStepError.

    At most ``MAX_PAYLOAD_BYTES`` bytes of UTF-8 JSON, with no text a database refuses.
    """
    try:
        text = json.dumps(payload, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise DurableStepError(f"A signal's payload must be JSON: {exc}") from exc
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PAYLOAD_BYTES:
        raise DurableStepError(
            f"A signal's payload is at most {MAX_PAYLOAD_BYTES} bytes as JSON, not {size}."
        )
    if refused := refused_text(payload):
        raise DurableStepError(f"A signal's payload cannot contain {refused}.")
    return json.loads(text)


def send(job_id: int, name: str, payload: Any) -> None:
    """Keep the signal ``name`` for job ``job_id``; wake the job if it waits for it.

    One transaction under the job row's lock, the lock a run's ``WaitForSignal``
    outcome takes: either that outcome sees this signal (and makes the job due), or
    this call finds the job waiting and makes it due, through the job's dispatch
    (rate limit, concurrency limit, paused task). Raises SignalNotDeliverable, with
    nothing written, for a job that does not exist or has ended (finished, failed,
    cancelled), a name already sent, or a wait of that name already over.
    """
    from .execution.waiting import WaitingExecution
    from .job import Job

    with db.atomic():
        jobs = Job.objects.select_related("failed_execution").filter(pk=job_id)
        job = jobs.locked(skip_locked=False, only_self=True).first()
        if job is None:
            raise SignalNotDeliverable(f"Job {job_id} does not exist.")
        failed = job._state.fields_cache.get("failed_execution")
        if job.finished_at is not None or failed is not None:
            ended = states.FINISHED if failed is None else states.FAILED
            if failed is not None and failed.exception_class == CANCELLED_CLASS:
                ended = states.CANCELLED
            raise SignalNotDeliverable(f"Job {job_id} has ended ({ended}).")
        if JobSignal.objects.filter(job_id=job_id, name=name).exists():
            raise SignalNotDeliverable(f"Job {job_id} already received the signal {name!r}.")
        over = JobStep.objects.filter(
            job_id=job_id, kind=WAIT, name=name, completed_at__isnull=False
        )
        if over.exists():
            raise SignalNotDeliverable(f"Job {job_id} no longer waits for the signal {name!r}.")
        JobSignal.objects.create(job_id=job_id, name=name, payload=payload)
        if WaitingExecution.objects.filter(job_id=job_id, signal_name=name).delete()[0]:
            Job.dispatch_all([job])  # due now, whatever its scheduled_at (a sleep woken early)


def end_wait(job_id: int, name: str, deadline: datetime | None, record: JobStep | None):
    """End the wait for ``name`` if it can end now: the completed record, or None.

    Under the job row's lock (as ``send`` takes it): the signal, if sent, is consumed
    and its payload recorded; else a deadline passed records the timeout. None: the
    job must wait (the run ends with ``WaitForSignal``).
    """
    from .job import Job

    with db.atomic():
        Job.objects.filter(pk=job_id).locked(skip_locked=False).values_list("pk").first()
        signals = JobSignal.objects.filter(job_id=job_id, name=name)
        signal = signals.locked(skip_locked=False).first()
        now = timezone.now()
        if signal is not None:
            if signal.consumed_at is None:
                signals.update(consumed_at=now)
            result = {"payload": signal.payload}
        elif deadline is not None and deadline <= now:
            result = {"timed_out": True}
        else:
            return None
        if record is None:
            return JobStep.objects.create(
                job_id=job_id, kind=WAIT, name=name, until=deadline, result=result, completed_at=now
            )
        JobStep.objects.filter(pk=record.pk).update(result=result, completed_at=now)
        record.result, record.completed_at = result, now
        return record
