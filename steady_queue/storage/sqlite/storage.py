"""The hot paths on SQLite: each one write transaction of as few statements as it can be.

SQLite has one writer at a time and no round trips: what a path costs is its Python
(the ORM's, per statement) and how long it holds the write lock. The portable paths
take a transaction per step: a busy worker thread sends 11 statements per job (its
finish, then the pauses and a claim of five statements), a worker polling for 5 threads
5.4. Here (SQLite >= 3.35, for ``RETURNING``; older ones take the portable paths):

- claim: ``BEGIN IMMEDIATE``, one ``DELETE ... RETURNING`` that takes the best ready
  rows and returns their jobs' rows, one multi-row INSERT of the claims, COMMIT
  (``claim``);
- finish a plain success, and claim the thread's next job with it: one transaction
  deleting the claim, marking the job finished and claiming (6 statements per job;
  ``success``);
- finish a concurrency-limited job's success, and pass its slot to the key's next
  blocked job, claimed for the thread: one transaction of 7 statements (``hand_on``);
- enqueue due, unlimited jobs: the jobs' INSERT ... RETURNING id and their ready rows'
  INSERT, multi-row for many (``enqueue``; the rows' values by ``values``).

The uncommon cases (scheduled, concurrency-limited or unique jobs on enqueue, jobs of a
group, failures) take the portable paths, as on PostgreSQL.

Every transaction here starts with ``BEGIN IMMEDIATE`` (``transaction``), whatever the project's
``transaction_mode``: it takes the write lock at once, waiting for it up to the busy
timeout (the "timeout" OPTION), so a transaction that reads before it writes (a
wildcard's queue names) cannot fail with "database is locked" when it comes to write.
Run the database in WAL mode, with a busy timeout of 10 s or more and IMMEDIATE
transactions for the ORM's paths (system check steady_queue.W001 says how): readers
(the dashboard) then never wait for the writer, nor writers fail for waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.utils import timezone

from ...models import ClaimedExecution, Job
from ..base import ClaimNext, Storage
from . import claim, enqueue, grouped, hand_on, success
from .transaction import available, write_transaction

if TYPE_CHECKING:
    from ...models import Process
    from ...models.attempt import Attempt
    from ..finish_group import Finishing, Shape

logger = logging.getLogger("steady_queue.claims")


class SqliteStorage(Storage):
    """Claim, finish (with the next claim) and enqueue, each one write transaction."""

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        plain = all(job.is_ready_on_enqueue and not job.unique_key for job in jobs)
        if not (jobs and plain and available()):
            return super().enqueue(jobs)
        with write_transaction():
            enqueue.insert_ready(jobs, timezone.now())
        return jobs

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        if not available():
            return super().claim(queues, limit, process)
        with write_transaction():
            return claim.claim(queues, limit, process)

    def writes_successes(self) -> bool:
        return available()

    def hands_slots_on(self, claimed: ClaimedExecution) -> bool:
        return available()

    def claims_along(self, then_claim: ClaimNext | None) -> ClaimNext | None:
        # The finish's transaction claims whatever the thread asks (any queues, any limit).
        return then_claim

    def success_values(self, claimed: ClaimedExecution, attempt: Attempt, return_value) -> tuple:
        return success.values(attempt, return_value)

    def write_success(
        self, claimed: ClaimedExecution, values: tuple, along: ClaimNext | None
    ) -> tuple[bool, list[ClaimedExecution] | None]:
        """One transaction: the success, and the claim ``along`` asks for if any.

        A claim that fails rolls the finish back with it: the finish is written again,
        alone (None: nothing claimed, the claim failed).
        """
        finished = False
        try:
            with write_transaction():
                recorded = success.finish_job(claimed.job_id, claimed.process_id, *values)
                finished = True  # from here on, a failure is the claim's
                if along is None:
                    return recorded, []
                return recorded, self.claim(along.queues, along.limit, along.process)
        except Exception as exc:
            if not finished or along is None:
                raise  # the finish failed: ClaimedExecution.record decides
            logger.debug("Could not claim a next job: %s", exc)
        with write_transaction():  # the claim's failure rolled it all back
            return success.finish_job(claimed.job_id, claimed.process_id, *values), None

    def write_group(self, shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
        return grouped.write(shape, entries)

    def write_hand_on(
        self, claimed: ClaimedExecution, attempt: Attempt, return_value, then_claim: ClaimNext
    ) -> tuple[bool, ClaimedExecution | None]:
        return hand_on.finish_and_hand_on(claimed, attempt, return_value, then_claim)
