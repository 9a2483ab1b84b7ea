"""A job's log lines and its live stack, as the job page shows them."""

from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

from django.utils import timezone

from steady_queue.models import Job, JobLogLine, StackRequest, states

from .. import masking
from ..log_masking import log_masker

#: The most lines a page shows of an attempt (the newest).
LINES_SHOWN = 2000
#: How long the dashboard waits for a worker to answer a stack request.
STACK_WAIT = timedelta(seconds=5)
#: Stack requests older than this are deleted when another is made.
STACK_REQUESTS_KEPT = timedelta(minutes=10)


@dataclasses.dataclass(frozen=True)
class LogLine:
    number: int
    logged_at: object
    level: str
    logger: str
    message: str


@dataclasses.dataclass(frozen=True)
class RunLog:
    """An attempt's kept lines (masked), and how many older ones the cap dropped."""

    attempt: int | None
    dropped: int
    lines: list[LogLine]
    running: bool


def run_log_of(job: Job, attempt: int | None = None) -> RunLog:
    """The lines of ``attempt`` (the latest with lines: None) of ``job``; two queries."""
    running = job.state == states.RUNNING
    if attempt is None:
        attempt = len(job.attempts) + 1 if running else JobLogLine.last_attempt(job.pk)
    if attempt is None:
        return RunLog(None, 0, [], running)
    kept = JobLogLine.of_attempt(job.pk, attempt, limit=LINES_SHOWN)
    masked = log_masker(job.task_path, job.arguments)
    lines = [
        LogLine(
            line.number,
            line.logged_at,
            logging.getLevelName(line.level),
            line.logger,
            masked(masking.shown(line.message)),
        )
        for line in kept
    ]
    dropped = kept[0].number - 1 if kept else 0
    return RunLog(attempt, dropped, lines, running)


def request_stack(job: Job) -> StackRequest | None:
    """Ask the worker running ``job`` for its stack; None if the job is not running."""
    if job.state != states.RUNNING:
        return None
    StackRequest.objects.filter(requested_at__lt=timezone.now() - STACK_REQUESTS_KEPT).delete()
    return StackRequest.objects.create(job_id=job.pk)


def stack_request(job_id: int, request_id: int) -> StackRequest | None:
    """The stack request ``request_id`` for job ``job_id``, answered or not (None: none)."""
    return StackRequest.objects.filter(pk=request_id, job_id=job_id).first()


def still_waiting(request: StackRequest) -> bool:
    """Whether an unanswered request may still be answered (asked under STACK_WAIT ago)."""
    return request.answer is None and timezone.now() - request.requested_at < STACK_WAIT
