"""Where a durable job is (``steady_queue.durable``): sleeping, waiting for a signal.

A sleeping job is ``scheduled`` (its ``ScheduledExecution`` due at its sleep's wake
time); a job waiting for a signal is ``waiting`` (its ``WaitingExecution`` names the
signal and the deadline). Both hold no worker, no claim and no concurrency slot. What
the dashboard and the metrics read:

- ``job.durable_status()``: a ``DurableStatus`` (``"sleeping"`` until ``until``, or
  ``"awaiting_signal"`` for ``signal_name`` until ``until``, None for no deadline), or
  None. On a job read with ``with_execution()``: one query for a scheduled job (its
  sleep record), none otherwise;
- ``job.steps.all()``: its ``JobStep`` records in order (steps, sleeps, waits), and
  ``job.received_signals.all()``: its ``JobSignal`` rows;
- ``Job.objects.sleeping()`` / ``Job.objects.awaiting_signal()``: the jobs in either
  case, as querysets (annotated ``durable_until``, and ``awaited_signal`` for the
  second), for lists and per-task counts (``.values("task_path").annotate(Count("pk"))``).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import models
from django.db.models import Exists, F, OuterRef

from .. import states

if TYPE_CHECKING:
    from . import Job

SLEEPING, AWAITING_SIGNAL = "sleeping", "awaiting_signal"


@dataclasses.dataclass(frozen=True)
class DurableStatus:
    """What a durable job is waiting for: ``kind`` is ``"sleeping"`` or ``"awaiting_signal"``."""

    kind: str
    until: datetime | None
    signal_name: str = ""


class DurableJob:
    """The durable state of one job (sleeping, waiting for a signal)."""

    def durable_status(self: Job) -> DurableStatus | None:
        """Whether this job sleeps (and until when) or waits for a signal (which, until when).

        Read from its execution rows (loaded ones are used) and, for a scheduled job,
        its last sleep record: a job scheduled at its sleep's wake time is sleeping (a
        retry's delay schedules it at another time).
        """
        from ..durable import SLEEP, JobStep

        state = self.state
        if state == states.WAITING:
            waiting = self.waiting_execution
            if waiting.signal_name:
                return DurableStatus(AWAITING_SIGNAL, waiting.signal_deadline, waiting.signal_name)
            return None
        if state == states.SCHEDULED:
            at = self.scheduled_execution.scheduled_at
            if JobStep.objects.filter(job_id=self.pk, kind=SLEEP, until=at).exists():
                return DurableStatus(SLEEPING, at)
        return None


class DurableQuerySet(models.QuerySet):
    """``Job.objects.sleeping()`` and ``awaiting_signal()``: durable jobs off the workers."""

    def sleeping(self) -> models.QuerySet:
        """Jobs sleeping (``durable.sleep``), annotated ``durable_until`` (their wake time)."""
        from ..durable import SLEEP, JobStep

        slept = JobStep.objects.filter(
            job_id=OuterRef("pk"), kind=SLEEP, until=OuterRef("scheduled_execution__scheduled_at")
        )
        return (
            self.filter(scheduled_execution__isnull=False, finished_at__isnull=True)
            .filter(Exists(slept))
            .annotate(durable_until=F("scheduled_execution__scheduled_at"))
        )

    def awaiting_signal(self) -> models.QuerySet:
        """Jobs waiting for a signal, annotated ``awaited_signal`` and ``durable_until``
        (the deadline, None for none)."""
        return (
            self.filter(waiting_execution__isnull=False)
            .exclude(waiting_execution__signal_name="")
            .annotate(
                awaited_signal=F("waiting_execution__signal_name"),
                durable_until=F("waiting_execution__signal_deadline"),
            )
        )
