"""The portable storage: the hot operations through Django's ORM, on every database.

This is the reference. A database's fast storage (``postgres.PostgresStorage``)
subclasses it, overrides what it can do in fewer statements, and falls back to this
for the rest. A finish's steps are all here (``finish``, with ``finishing``): which way
an outcome is written, the fallback, the slot's hand-on, threads' finishes grouped; a
fast storage gives only its statements (``write_success``, ``write_group``,
``write_hand_on``) and says when they apply. The contract tests (tests/storage) run
every storage against the same assertions on each database that supports it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

import steady_queue

from ..models import ClaimedExecution, Job, ReadyExecution, fair_share
from ..models.execution.claimed_finish import Outcome, Success
from ..models.execution.slot_hand_on import SlotHandOn
from . import finishing
from .finish_group import FinishGroups, Finishing, Shape, claimed_along

if TYPE_CHECKING:
    from ..models import Process
    from ..models.attempt import Attempt

logger = logging.getLogger("steady_queue.claims")


def _always() -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class ClaimNext:
    """Ask a finish to claim up to ``limit`` more jobs of ``queues`` for ``process``.

    ``allowed()`` is asked at most once, just before the claim, and only then: a
    worker that stops (or pauses its claims) in the meantime says no there. For a job
    with a concurrency limit the finish may ask it inside its transaction, to claim the
    job the slot passes to (``models.execution.slot_hand_on``).
    """

    queues: Sequence[str]
    process: Process | None
    limit: int = 1
    allowed: Callable[[], bool] = _always


@dataclasses.dataclass(frozen=True)
class Finished:
    """What a finish did: whether the outcome was recorded, and what it claimed next.

    ``claimed`` is None when no claim was made (none asked, or not allowed);
    ``claim_failed`` says that the claim failed and may have taken jobs all the same
    (the worker releases what it holds but does not run at its next poll).
    """

    recorded: bool
    claimed: list[ClaimedExecution] | None = None
    claim_failed: bool = False


class Storage:
    """Enqueue, claim and finish jobs; announce new work. One instance per database alias."""

    #: Whether idle processes can be woken by this database (LISTEN/NOTIFY).
    wakes_listeners = False
    #: How often an idle worker left at the default polling_interval polls, where a poll
    #: is cheap enough to poll faster than that (None: every polling_interval).
    idle_polling_interval: float | None = None

    def __init__(self, alias: str):
        self.alias = alias
        #: Where worker threads' successes meet to be written together (``finish_group``).
        self.finish_groups = FinishGroups(self._write_group)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.alias!r}>"

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        """Insert ``jobs`` with their executions, all or nothing; set their ids.

        Returns, for each job, the job that stands for it: itself, or for a duplicate of
        a ``@unique`` task, the job holding its key (the duplicate is not inserted).
        """
        return Job.enqueue_all(jobs)

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        """Claim up to ``limit`` ready jobs of ``queues`` (in order, best first) for ``process``.

        A process whose row is gone (pruned: its claims were failed) claims nothing.
        """
        return ReadyExecution.claim(list(queues), limit, process)

    def finish(
        self, claimed: ClaimedExecution, outcome: Outcome, *, then_claim: ClaimNext | None = None
    ) -> Finished:
        """Record ``outcome`` of ``claimed`` (once; see ClaimedExecution.record), then claim.

        A fast storage writes a plain success, and a limited job's success with its
        slot's hand-on, with its own statements (see ``finishing``); every other outcome,
        and everything where those cannot run now, takes the portable finish.
        Raises only what ``record`` raises (the database stayed unreachable).
        """
        # A slot handed on by a fast storage's statement would make the next job ready
        # without its place in the fair order: with @fair tasks, the ORM's hand-on.
        limited = limited_success(claimed, outcome, then_claim)
        if limited and self.hands_slots_on(claimed) and not fair_share.in_use():
            return finishing.finish_handing_on(self, claimed, outcome, then_claim)
        plain = isinstance(outcome, Success) and outcome.hands_nothing_on(claimed)
        if plain and self.writes_successes():
            return finishing.SuccessFinish(self, claimed, outcome, then_claim).finish()
        return self.finish_portably(claimed, outcome, then_claim)

    def finish_portably(
        self, claimed: ClaimedExecution, outcome: Outcome, then_claim: ClaimNext | None
    ) -> Finished:
        """The ORM's finish: one transaction, with the slot's hand-on of ``slot_hand_on``."""
        hand_on = _hand_on(claimed, outcome, then_claim)
        recorded = claimed.record(outcome, hand_on=hand_on)
        if hand_on is not None and hand_on.claimed is not None:
            return Finished(recorded, [hand_on.claimed])  # the job the slot passed to
        allowed = None if hand_on is None else hand_on.answer
        claimed_next, failed = self.claim_next(then_claim, allowed=allowed)
        return Finished(recorded, claimed_next, failed)

    def claim_next(
        self, then_claim: ClaimNext | None, *, allowed: bool | None = None
    ) -> tuple[list | None, bool]:
        """Claim as ``then_claim`` asks, in a statement of its own: (claimed, failed).

        ``allowed``: the answer ``then_claim.allowed()`` already gave, if it was asked.
        """
        if then_claim is None:
            return None, False
        if not (then_claim.allowed() if allowed is None else allowed):
            return None, False
        try:
            return self.claim(then_claim.queues, then_claim.limit, then_claim.process), False
        except Exception as exc:
            # The worker's own poll retries (and logs the outage); this thread goes idle.
            logger.debug("Could not claim a next job: %s", exc)
            return None, True

    # What a fast storage writes with its own statements (``finishing``); the portable
    # storage writes nothing so, and these are never called on it.

    def writes_successes(self) -> bool:
        """Whether a plain success is written by ``write_success`` now."""
        return False

    def hands_slots_on(self, claimed: ClaimedExecution) -> bool:
        """Whether a limited job's success (``limited_success``) goes to ``write_hand_on`` now."""
        return False

    def claims_along(self, then_claim: ClaimNext | None) -> ClaimNext | None:
        """What ``write_success`` can claim in its statement (None: claimed after, apart)."""
        return claimed_along(then_claim)

    def success_values(self, claimed: ClaimedExecution, attempt: Attempt, return_value) -> tuple:
        """(finished_at, return_value, attempts) as the storage's statements take them."""
        raise NotImplementedError

    def write_success(
        self, claimed: ClaimedExecution, values: tuple, along: ClaimNext | None
    ) -> tuple[bool, list[ClaimedExecution] | None]:
        """Record a success alone and claim ``along``: (recorded, claimed; None: it failed)."""
        raise NotImplementedError

    def write_group(self, shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
        """Record two or more threads' successes together; each one's (recorded, claimed)."""
        raise NotImplementedError

    def write_hand_on(
        self, claimed: ClaimedExecution, attempt: Attempt, return_value, then_claim: ClaimNext
    ) -> tuple[bool, ClaimedExecution | None]:
        """Record a limited job's success and claim the job its slot passes to, if it may.

        (recorded, the job handed on; None: the slot went back, the next job to ready).
        """
        raise NotImplementedError

    def _write_group(self, shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
        # A group of one takes the finish's own statement (prepared, and the plainer plan).
        if len(entries) == 1:
            return [entries[0].alone()]
        return self.write_group(shape, entries)

    def notify_ready(self, queue_names: Iterable[str]) -> None:
        """Wake processes waiting for ready jobs of ``queue_names`` (on commit)."""

    def notify_scheduled(self, due_at: datetime) -> None:
        """Wake processes waiting for a job that becomes due at ``due_at`` (on commit)."""

    def notify_ended(self, job_ids: Iterable[int]) -> None:
        """Wake whoever waits for the end of one of ``job_ids`` (on commit)."""


def limited_success(
    claimed: ClaimedExecution, outcome: Outcome, then_claim: ClaimNext | None
) -> bool:
    """Whether a finish is a limited job's plain success whose thread claims one more.

    What a fast storage's hand-on writes its own way (``Storage.write_hand_on``).
    """
    job = claimed.job
    in_group = job.batch_id is not None or job.workflow_run_id is not None
    return (
        isinstance(outcome, Success)
        and then_claim is not None
        and then_claim.limit == 1
        and bool(job.concurrency_key)
        and job.concurrency_limit is not None
        and not (job.unique_key or in_group)
        and steady_queue.preserve_finished_jobs
    )


def _hand_on(
    claimed: ClaimedExecution, outcome: Outcome, then_claim: ClaimNext | None
) -> SlotHandOn | None:
    """The thread's offer to claim the job a concurrency slot passes to, where one may."""
    if then_claim is None or then_claim.limit != 1 or not outcome.hands_off_slot:
        return None
    if not claimed.job.is_concurrency_limited:
        return None
    return SlotHandOn(then_claim.queues, then_claim.process, then_claim.allowed)
