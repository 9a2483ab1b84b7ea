"""The hot paths in one round trip each on MySQL/MariaDB: enqueue, claim and finish a job.

The ORM needs a Django transaction for each: ``SET autocommit=0``, two to five
statements, ``COMMIT`` and ``SET autocommit=1``, every one a round trip. Here each is
one transaction sent as one script (``script``), with the same effect and the
same locking as the portable path it replaces: the claim locks the best ready rows
with ``FOR UPDATE SKIP LOCKED`` and keeps their ids in a session variable (a JSON
array) that the claim's insert, delete and job select read through ``JSON_TABLE``;
the finish deletes the claim first (its row lock decides who records the outcome) and
updates the job only if that delete took the row. The uncommon cases (scheduled,
concurrency-limited or unique jobs, failures) and any call inside a transaction take
the portable paths; a concurrency-limited job's success, with its slot's hand-on, is
in hand_on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ... import db
from ...models import ClaimedExecution, Job, Pause, Process
from ..base import ClaimNext, Storage
from ..sql import claim_per_queue, table
from . import enqueue, grouped, hand_on, script, statements
from .script import COMMIT, START

if TYPE_CHECKING:
    from ...models.attempt import Attempt
    from ..finish_group import Finishing, Shape


class MysqlStorage(Storage):
    """One round trip per enqueue, claim and finish (with the next claim)."""

    #: Nothing wakes a MySQL worker: left at the default polling_interval (0.1 s) an idle
    #: one polls every 30 ms (a poll that finds nothing: one round trip, a read-only
    #: transaction), so that a job waits about 15 ms for it instead of 50.
    idle_polling_interval = 0.03

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        fast = all(job.is_ready_on_enqueue and not job.unique_key for job in jobs)
        if not (jobs and fast and script.usable()):
            return super().enqueue(jobs)
        if len(jobs) == 1:
            db.retry_deadlocks(lambda: enqueue.enqueue_ready(jobs[0]))
            return jobs
        if db.retry_deadlocks(lambda: enqueue.enqueue_all_ready(jobs)):
            return jobs
        return super().enqueue(jobs)  # the ids would not be consecutive

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        """Claim as the portable storage does, with the pauses checked in each script.

        While nothing is paused, a poll of ``*`` is one round trip, and a poll of exact
        queue names one per queue. Wildcards, or ``*`` with paused queues, take the
        selector's DISTINCT over the ready queues first.
        """
        if not script.usable():
            return super().claim(queues, limit, process)
        return claim_per_queue(queues, limit, lambda name, n: _claim_from(name, n, process))

    def writes_successes(self) -> bool:
        return script.usable()

    def hands_slots_on(self, claimed: ClaimedExecution) -> bool:
        return claimed.process_id is not None and script.usable()

    def success_values(self, claimed: ClaimedExecution, attempt: Attempt, return_value) -> tuple:
        return statements.success_values(claimed, attempt, return_value)

    def write_success(
        self, claimed: ClaimedExecution, values: tuple, along: ClaimNext | None
    ) -> tuple[bool, list[ClaimedExecution]]:
        """One script: the success, and the next claim when ``along`` asks one."""
        finishing = statements.finishing(claimed, values)
        if along is None:
            results = script.run([START, *finishing, COMMIT])
            return results[1].rowcount == 1, []
        queue_name = None if "*" in along.queues else along.queues[0]
        claiming, read = statements.claiming(queue_name, along.limit, along.process)
        results = script.run([START, *finishing, *claiming, COMMIT])
        return results[1].rowcount == 1, read(results[1 + len(finishing) :])

    def write_group(self, shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
        return grouped.write(shape, entries)

    def write_hand_on(
        self, claimed: ClaimedExecution, attempt: Attempt, return_value, then_claim: ClaimNext
    ) -> tuple[bool, ClaimedExecution | None]:
        return hand_on.finish_and_hand_on(claimed, attempt, return_value, then_claim)


def _claim_from(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[ClaimedExecution], bool]:
    """Claim from one queue (None: all, unless a queue is paused); and whether one is."""
    claiming, read = statements.claiming(queue_name, limit, process)
    if queue_name is not None:
        return read(script.run([START, *claiming, COMMIT])[1:]), False
    paused = (f"SELECT EXISTS (SELECT 1 FROM {table(Pause)})", [])
    results = script.run([START, paused, *claiming, COMMIT])
    return read(results[2:]), bool(results[1].rows[0][0])
