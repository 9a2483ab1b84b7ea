"""What a running job wrote to its log, and the requests for a running job's live stack.

``JobLogLine`` holds the records a task emitted while it ran (``runner.run_logs``
captures and writes them in batches), one row a line, numbered per attempt from 1.
Capped per attempt, the oldest lines are deleted: the first line kept then says how
many came before it (``dropped_before``), which the reader turns into its marker.

``StackRequest`` is how the dashboard asks the worker holding a job's claim for the
job's current stack without a network port: a row the worker finds between polls
(``runner.live_stack``) and answers into.
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .base import QueueModel

# JobLogLine.logger is a CharField(max_length=LOGGER_LENGTH).
LOGGER_LENGTH = 200


class JobLogLine(QueueModel):
    """One line a job's attempt logged (``logging`` at the capture level, or ``print``)."""

    # Deleted with its job, by Django's cascade and by clear_finished_in_batches.
    job = models.ForeignKey("steady_queue.Job", on_delete=models.CASCADE, related_name="log_lines")
    attempt = models.PositiveIntegerField(_("attempt"))
    number = models.PositiveIntegerField(_("line number"))
    logged_at = models.DateTimeField(_("logged at"))
    level = models.PositiveSmallIntegerField(_("level"))
    logger = models.CharField(_("logger"), max_length=LOGGER_LENGTH)
    message = models.TextField(_("message"))

    class Meta:
        db_table = "steady_queue_job_log_lines"
        verbose_name = _("job log line")
        verbose_name_plural = _("job log lines")
        constraints = [
            models.UniqueConstraint(
                fields=["job", "attempt", "number"], name="sq_job_log_line_number"
            )
        ]

    def __str__(self) -> str:
        return f"job {self.job_id} attempt {self.attempt} line {self.number}"

    @classmethod
    def of_attempt(cls, job_id: int, attempt: int, *, limit: int) -> list[JobLogLine]:
        """The last ``limit`` lines kept of the attempt, oldest first (one query)."""
        lines = cls.objects.filter(job_id=job_id, attempt=attempt).order_by("-number")
        return list(reversed(lines[:limit]))

    @classmethod
    def last_attempt(cls, job_id: int) -> int | None:
        """The latest attempt of the job with lines, or None."""
        found = cls.objects.filter(job_id=job_id).order_by("-attempt").values_list("attempt")
        return next(iter(found[:1]), (None,))[0]


class StackRequest(QueueModel):
    """A request for the live stack of running job ``job_id``, and its answer."""

    # Not a foreign key: a request outlives a job that ends meanwhile, and is read once.
    job_id = models.BigIntegerField(_("job id"), db_index=True)
    requested_at = models.DateTimeField(_("requested at"), default=timezone.now)
    answered_at = models.DateTimeField(_("answered at"), null=True, blank=True)
    # {"frames": [{"file", "line", "function", "code"}], "in_c": bool, "note": str}
    answer = models.JSONField(_("answer"), null=True, blank=True)

    class Meta:
        db_table = "steady_queue_stack_requests"
        verbose_name = _("stack request")
        verbose_name_plural = _("stack requests")
        indexes = [models.Index(fields=["answered_at", "job_id"], name="sq_stack_req_pending")]

    def __str__(self) -> str:
        return f"stack of job {self.job_id}"
