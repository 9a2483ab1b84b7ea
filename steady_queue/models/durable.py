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

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

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
