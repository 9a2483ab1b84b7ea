"""Jobs waiting: workflow steps for their upstream steps, durable jobs for a signal.

Out of the ready table, like throttled and blocked jobs: no worker looks at them. A
workflow step (``signal_name`` empty) leaves it when the last step it waits for ends
(``workflow_progress``), for the ready table (or scheduled, throttled, blocked, as any
job becoming due), or for the failed table with ``DependencyFailed`` when one of them
failed for good. A job waiting for a signal (``signal_name`` set, by
``durable.wait_for_signal``) leaves it when the signal is sent (``send_signal``) or when
its deadline passes (``release_expired``, the dispatcher's), becoming due the same way.
The two never mix: the workflow's calls take only rows without a signal name.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db import models
from django.utils import timezone

from ...compat import TaskResultStatus
from .. import states
from . import Execution

if TYPE_CHECKING:
    from ..job import Job


class WaitingExecution(
    Execution,
    state=states.WAITING,
    task_status=TaskResultStatus.READY,
    discardable=True,
    cancellable=True,
):
    """A workflow step whose upstream steps have not all ended yet."""

    job = models.OneToOneField(
        "steady_queue.Job",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="waiting_execution",
    )
    queue_name = models.CharField(max_length=255)
    priority = models.SmallIntegerField(default=0)
    # The signal a durable job waits for (empty: a workflow step waiting upstream).
    signal_name = models.CharField(max_length=200, blank=True, default="", db_default="")
    # When that wait times out (None: never); the dispatcher wakes the job then.
    signal_deadline = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "steady_queue_waiting_executions"
        indexes = [models.Index(fields=["signal_deadline"], name="sq_waiting_signal_deadline")]

    @classmethod
    def create_all_from_jobs(cls, jobs: Iterable[Job]) -> None:
        rows = [cls(job=job, queue_name=job.queue_name, priority=job.priority) for job in jobs]
        if rows:
            cls.objects.bulk_create(rows)

    @classmethod
    def take(cls, job_ids: Iterable[int]) -> list[int]:
        """Delete the waiting rows of ``job_ids`` still here; return whose (in this transaction).

        A blocking lock, in id order: two steps' ends racing for one dependent both see
        it, one after the other, and only the first finds it still waiting.
        """
        ids = sorted(set(job_ids))
        if not ids:
            return []
        upstream = cls.objects.filter(job_id__in=ids, signal_name="")  # no signal wait
        rows = upstream.order_by("job_id").locked(skip_locked=False)
        taken = list(rows.values_list("job_id", flat=True))
        if taken:
            cls.objects.filter(job_id__in=taken).delete()
        return taken

    @classmethod
    def release_expired(cls, batch_size: int = 500) -> int:
        """Make due the jobs whose signal wait passed its deadline; return how many.

        The dispatcher's, each poll: one indexed read when none is due. Their next run
        raises ``SignalTimeout`` at the wait (unless the signal came meanwhile). Rows
        locked by a ``send_signal`` right now are skipped: that signal wakes the job.
        """
        from ... import db
        from ..job import Job

        expired = cls.objects.filter(signal_deadline__lte=timezone.now()).exclude(signal_name="")
        if not expired.exists():
            return 0
        with db.atomic():
            rows = expired.order_by("signal_deadline", "job_id").locked()
            ids = list(rows.values_list("job_id", flat=True)[:batch_size])
            if ids:
                cls.objects.filter(job_id__in=ids).delete()
                Job.dispatch_all(list(Job.objects.filter(pk__in=ids).order_by("pk")))
        return len(ids)
