"""How a claimed job ends: every outcome goes through ``ClaimedExecution.record``.

One transaction takes the claim (deletes its row: whoever deletes it first records
the outcome, a late or concurrent recorder finds no row and changes nothing), stores
the outcome and hands the job's concurrency slot on to the next blocked job. A crash
at any instant therefore leaves either the claim (the crash path then fails the job
and hands the slot on) or the outcome with its hand-off, never one without the other.

Transient database errors are retried while the claim may still be ours. Anything
else that stops the outcome from being stored (text the database refuses, a value
too long) fails the job with UnstorableOutcome instead, and if even that is refused
a fixed failure ends it: a claimed job never stays claimed because of its outcome.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.db import DatabaseError, InterfaceError, OperationalError
from django.utils import timezone

import steady_queue

from ... import db
from ...exceptions import UnstorableOutcome
from ...observability.log import claim_fields
from ..attempt import Attempt, error_details, storable
from ..task_rollup import WRITTEN_AT_ONCE, count_now, tally
from .outcomes import (  # noqa: F401  (their import path before outcomes.py)
    NOT_STORED,
    Failure,
    LastResort,
    Outcome,
    Paused,
    Release,
    Reschedule,
    Sleep,
    Success,
    Throttle,
    WaitForSignal,
)

if TYPE_CHECKING:
    from . import ClaimedExecution
    from .slot_hand_on import SlotHandOn

logger = logging.getLogger("steady_queue.claims")

TRANSIENT = (OperationalError, InterfaceError)


class OutcomeNotRecorded(DatabaseError):
    """The database stayed unreachable past the alive threshold: the claim is left as is."""


class ClaimedFinish:
    """The one way a claimed job ends: ``record(outcome)``."""

    def record(
        self,
        outcome: Outcome,
        *,
        worker_id: str | None = None,
        write: Callable[[Attempt | None], bool] | None = None,
        hand_on: SlotHandOn | None = None,
    ) -> bool:
        """Record ``outcome`` if the claim is still ours; False if it was lost (nothing changed).

        ``write(attempt)``, given by a storage, writes ``outcome`` its own faster way
        (taking the claim and storing it atomically, True if the claim was ours) instead
        of the transaction here; the fallbacks below never use it. ``hand_on``, given by a
        worker thread, may claim the job the outcome's concurrency slot passes to (see
        slot_hand_on); the fallbacks never do either.
        Raises OutcomeNotRecorded only when the database stays unreachable.
        """
        try:
            return self._retrying(lambda: self._store(outcome, worker_id, write, hand_on))
        except OutcomeNotRecorded:
            raise
        except Exception as refused:
            logger.error(
                "Could not store the outcome of job %s: %r",
                self.job_id,
                refused,
                extra=claim_fields(self),
            )
            kind = type(refused)
            why = storable(f"{NOT_STORED}: {kind.__module__}.{kind.__qualname__}: {refused}")
            if kind.__module__ == "builtins":
                why = storable(f"{NOT_STORED}: {kind.__qualname__}: {refused}")
            unstorable = UnstorableOutcome(why)
            if isinstance(outcome, Failure):  # its traceback, escaped, tells what failed
                unstorable.__cause__ = outcome.exc
            failure = Failure(unstorable, final=True)
        try:
            return self._retrying(lambda: self._store(failure, worker_id, None, None))
        except OutcomeNotRecorded:
            raise
        except Exception:
            logger.exception(
                "Could not store even the failure of job %s",
                self.job_id,
                extra=claim_fields(self),
            )
        return self._retrying(lambda: self._store(LastResort(), worker_id, None, None))

    def _store(
        self: ClaimedExecution,
        outcome: Outcome,
        worker_id: str | None,
        write: Callable[[Attempt | None], bool] | None,
        hand_on: SlotHandOn | None,
    ) -> bool:
        outcome.check()
        job, attempt = self.job, self._attempt(outcome, worker_id)
        due = job.scheduled_at or job.created_at  # before a retry moves scheduled_at
        if write is None:
            counter = self._in_transaction(outcome, attempt, hand_on, due)
        else:  # only a success is written another way
            counter = "succeeded" if write(attempt) else False
        if counter is False:  # the claim was lost: nothing changed
            return False
        if isinstance(outcome, Success):
            outcome.stored(job, attempt)
        job._state.fields_cache["claimed_execution"] = None
        if counter:  # not counted in the transaction (a success, or a count that failed)
            try:
                tally.observe(**self._count_of(counter, attempt, due))
            except Exception:  # counting must never change how a recorded job ended
                logger.exception("Could not count the outcome of job %s", self.job_id)
        return True

    def _count_of(self: ClaimedExecution, counter: str, attempt: Attempt | None, due) -> dict:
        """The arguments of ``tally.observe`` and ``count_now`` for this ending."""
        at, run, wait = timezone.now(), None, None
        if attempt is not None:
            at = attempt.finished_at
            run = (attempt.finished_at - attempt.started_at).total_seconds()
            wait = (attempt.started_at - due).total_seconds() if due else 0.0
        job = self.job
        return {
            "task_path": job.task_path,
            "queue_name": job.queue_name,
            "counter": counter,
            "at": at,
            "run": run,
            "wait": wait,
        }

    def _count_now(self: ClaimedExecution, counter: str, attempt: Attempt | None, due) -> bool:
        """Write a failure's (retry's, cancel's) count in the ending's transaction.

        A killed process must not lose what alerts watch, and a transaction retried
        after a transient error counts once. Only a transient error (the transaction is
        lost) stops the ending; any other leaves it to the tally (False).
        """
        try:
            count_now(**self._count_of(counter, attempt, due))
        except TRANSIENT:
            raise
        except Exception:  # rolled back to its savepoint: the ending stands, counted later
            logger.exception("Could not count the outcome of job %s now", self.job_id)
            return False
        return True

    def _in_transaction(
        self: ClaimedExecution,
        outcome: Outcome,
        attempt: Attempt | None,
        hand_on: SlotHandOn | None = None,
        due=None,
    ) -> str | bool | None:
        """The outcome's TaskRollup counter left to count (None: none, or counted here) if
        the claim was ours, else False."""
        job = self.job
        saved = job.attempts, job.scheduled_at, dict(job._state.fields_cache)
        try:
            with db.atomic():
                if not self._take():
                    return False
                counter = outcome.store(self, attempt)
                if outcome.hands_off_slot:
                    job.unblock_next_blocked_job(hand_on)
                # Last: the rollup rows are the most shared rows of the transaction, and
                # every writer locks them last (and in the same order), after its job's.
                if counter in WRITTEN_AT_ONCE and self._count_now(counter, attempt, due):
                    counter = None
        except BaseException:
            if hand_on is not None:
                hand_on.claimed = None  # rolled back with the rest
            # Rolled back: undo what store() changed in memory before anyone tries again.
            job.attempts, job.scheduled_at = saved[0], saved[1]
            job._state.fields_cache = saved[2]
            raise
        return counter

    def _take(self: ClaimedExecution) -> bool:
        """Delete the claim if it is still ours; the deleted row stays locked until commit.

        A pruned or released job has lost its claim: finishing it late changes nothing.
        A queryset delete leaves this instance (and its job_id) intact for a retry.
        """
        mine = type(self).objects
        return mine.filter(job_id=self.job_id, process_id=self.process_id).delete()[0] > 0

    def _attempt(self: ClaimedExecution, outcome: Outcome, worker_id: str | None) -> Attempt | None:
        if not outcome.is_attempt:
            return None
        error = None
        if isinstance(outcome, Failure):
            error = error_details(outcome.exc)
        return Attempt(
            worker_id=worker_id or self.worker_id,
            started_at=self.created_at,
            finished_at=timezone.now(),
            error=error,
        )

    @property
    def worker_id(self: ClaimedExecution) -> str:
        """The name of the process running this claim (``in-process`` for none)."""
        if self.process_id is None:
            return "in-process"
        process = self._state.fields_cache.get("process")
        if process is None:
            from ..process import Process

            process = Process.objects.filter(pk=self.process_id).first()
        return process.name if process else f"process-{self.process_id}"

    def _retrying(self: ClaimedExecution, store: Callable[[], bool]) -> bool:
        # Retry while the claim may still be ours: past the alive threshold a process that
        # cannot reach the database has been pruned and its claim failed by a supervisor.
        deadline = time.monotonic() + steady_queue.process_alive_threshold.total_seconds()
        retries = 0
        while True:
            try:
                return store()
            except TRANSIENT as exc:
                message = f"Could not record the outcome of job {self.job_id}"
                # Inside a caller's transaction, only the caller can try again.
                if db.connection().in_atomic_block or time.monotonic() >= deadline:
                    raise OutcomeNotRecorded(message) from exc
                logger.warning(
                    "Recording job %s failed (%s); retrying",
                    self.job_id,
                    exc,
                    extra=claim_fields(self),
                )
                db.connection().close()
                time.sleep(min(0.1 * 2**retries, 5))
                retries += 1
