"""An encrypted job's data, opened for a user allowed to reveal it (``views/reveal.py``).

Everything else in the console shows these values as ``masking.ENCRYPTED``; this is the
one place that opens them, and its caller writes the audit entry. The usual masking
(``MASK_PATTERNS``, masked parameters) still applies to what is revealed.
"""

from __future__ import annotations

import dataclasses
import json
import logging

from steady_queue.models import Job, JobLogLine

from .. import masking
from .job_queries import display_value

#: At most this many of the latest attempt's log lines are revealed.
LINES_REVEALED = 200


@dataclasses.dataclass(frozen=True)
class Revealed:
    """What an encrypted job stored, opened and masked, ready to show."""

    arguments: str
    return_value: str | None
    metadata: str
    progress_message: str
    errors: list[tuple[int, str, str, str]]  # attempt, class, message, traceback
    log_lines: list[tuple[int, str, str, str]]  # number, level, logger, message


def is_encrypted_job(job: Job) -> bool:
    """Whether ``job`` holds sealed data (its task is encrypted)."""
    return masking.is_encrypted(job.arguments)


def reveal(job: Job) -> Revealed:
    """Open ``job``'s sealed data (two queries: the job was read, its log lines here)."""
    progress = job.progress if isinstance(job.progress, dict) else {}
    metadata = masking.revealed(job.metadata) or {}
    return Revealed(
        arguments=_arguments(job),
        return_value=display_value(masking.revealed(job.return_value)) if job.finished_at else None,
        metadata=json.dumps(masking.mask_metadata(metadata, job.task_path), indent=2)
        if metadata
        else "",
        progress_message=masking.revealed(progress.get("message") or ""),
        errors=_errors(job),
        log_lines=_log_lines(job),
    )


def _arguments(job: Job) -> str:
    from steady_queue import arguments

    opened = masking.revealed(job.arguments)
    if opened == masking.UNREADABLE:
        return opened
    args, kwargs = masking.mask_call(*arguments.display(opened), job.task_path)
    return json.dumps({"args": args, "kwargs": kwargs}, indent=2, default=str)


def _errors(job: Job) -> list[tuple[int, str, str, str]]:
    found = []
    for number, attempt in enumerate(job.attempts or [], start=1):
        error = attempt.get("error")
        if error:
            message, trace = (masking.revealed(error.get(k, "")) for k in ("message", "traceback"))
            found.append((number, error.get("exception_class", ""), message, trace))
    return found


def _log_lines(job: Job) -> list[tuple[int, str, str, str]]:
    attempt = JobLogLine.last_attempt(job.pk)
    if attempt is None:
        return []
    kept = JobLogLine.of_attempt(job.pk, attempt, limit=LINES_REVEALED)
    return [
        (line.number, logging.getLevelName(line.level), line.logger, masking.revealed(line.message))
        for line in kept
    ]
