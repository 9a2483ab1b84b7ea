"""Exceptions raised by Steady Queue's operations and context API."""

from __future__ import annotations

from datetime import datetime


class JobStateError(Exception):
    """The action does not apply to the job in its current state (the message says why)."""


class RescheduleJob(BaseException):
    """Raised by ``steady_queue.context.reschedule()`` to run the job again later.

    A ``BaseException`` so that a task's own ``except Exception`` does not swallow it.
    """

    def __init__(self, run_at: datetime):
        super().__init__(f"Rescheduled for {run_at.isoformat()}")
        self.run_at = run_at


class UnstorableOutcome(Exception):
    """A job's outcome the database refused to store; the job fails with this instead.

    Its message starts ``outcome could not be stored:`` and says what was refused.
    """
