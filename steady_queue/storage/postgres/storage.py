"""The hot paths in one statement each on PostgreSQL: enqueue, claim and finish a job.

The ORM needs a transaction of several statements for each (BEGIN, two or three
writes, COMMIT): every one a round trip, plus Python overhead. PostgreSQL runs
data-modifying CTEs as one atomic statement, so in autocommit each path here is a
single round trip with the same all-or-nothing effect, and the same locking as the
portable path it replaces (SKIP LOCKED for the claim; a row lock on the claim to
finish). The uncommon cases (scheduled, concurrency-limited or unique jobs, failures)
take the portable paths. Enqueue, one job or many, is in ``enqueue``; the statements'
SQL in ``statements``; a limited job's finish in ``hand_on``, threads' finishes
together in ``grouped``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.utils import timezone

from ...models import ClaimedExecution, Job, Process
from .. import notify
from ..base import ClaimNext, Storage
from ..sql import claim_per_queue
from . import enqueue, grouped, hand_on
from .cursor import prepared_cursor
from .statements import (
    claim_params,
    claim_sql,
    claimed_jobs,
    finish_and_claim_sql,
    finish_params,
    finish_sql,
    finished_values,
)

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from ...models.attempt import Attempt
    from ..finish_group import Finishing, Shape


class PostgresStorage(Storage):
    """One statement per enqueue, claim and finish (with the next claim); NOTIFY wake-ups."""

    wakes_listeners = True

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        if not jobs or not all(job.is_ready_on_enqueue and not job.unique_key for job in jobs):
            return super().enqueue(jobs)
        if len(jobs) == 1:
            enqueue.enqueue_ready(jobs[0], timezone.now())  # one round trip, as atomic
        else:
            enqueue.enqueue_all_ready(jobs, timezone.now())
        return jobs

    def claim(
        self, queues: Sequence[str], limit: int, process: Process | None
    ) -> list[ClaimedExecution]:
        """Claim as the portable storage does, with the pauses checked inside each statement.

        While nothing is paused, a poll of ``*`` is one statement, and a poll of exact
        queue names one per queue. Wildcards, or ``*`` with paused queues, take the
        selector's DISTINCT over the ready queues first.
        """
        return claim_per_queue(queues, limit, lambda name, n: _claim_from(name, n, process))

    def writes_successes(self) -> bool:
        return True

    def hands_slots_on(self, claimed: ClaimedExecution) -> bool:
        return claimed.process_id is not None

    def success_values(self, claimed: ClaimedExecution, attempt: Attempt, return_value) -> tuple:
        return (attempt.finished_at, *finished_values(attempt, return_value))

    def write_success(
        self, claimed: ClaimedExecution, values: tuple, along: ClaimNext | None
    ) -> tuple[bool, list[ClaimedExecution]]:
        """One statement: the success, and the next claim when ``along`` asks one."""
        params = finish_params(claimed, values)
        if along is None:
            with prepared_cursor() as cursor:
                cursor.execute(finish_sql(claimed.process_id is None), params)
                return cursor.rowcount == 1, []
        return _finish_and_claim(claimed, params, along)

    def write_group(self, shape: Shape, entries: list[Finishing]) -> list[tuple[bool, list]]:
        return grouped.write(shape, entries)

    def write_hand_on(
        self, claimed: ClaimedExecution, attempt: Attempt, return_value, then_claim: ClaimNext
    ) -> tuple[bool, ClaimedExecution | None]:
        return hand_on.finish_and_hand_on(claimed, attempt, return_value, then_claim)

    def notify_ready(self, queue_names: Iterable[str]) -> None:
        notify.jobs_ready(queue_names)

    def notify_scheduled(self, due_at: datetime) -> None:
        notify.jobs_scheduled(due_at)

    def notify_ended(self, job_ids: Iterable[int]) -> None:
        notify.jobs_ended(job_ids)


def _finish_and_claim(
    claimed: ClaimedExecution, params: list, then_claim: ClaimNext
) -> tuple[bool, list[ClaimedExecution]]:
    queues, process, now = list(then_claim.queues), then_claim.process, timezone.now()
    queue_name = None if "*" in queues else queues[0]  # all queues, while none is paused
    params += claim_params(queue_name, process, 1, now)
    sql = finish_and_claim_sql(
        claimed.process_id is None, queue_name is not None, process is not None
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    jobs = claimed_jobs(queue_name, [row[1:] for row in rows if row[1] is not None], process)
    return rows[0][0] == 1, [ClaimedExecution.claimed_for(job, process, now) for job in jobs]


def _claim_from(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[ClaimedExecution], bool]:
    """Claim from one queue (None: all, unless a queue is paused); and whether one is."""
    now = timezone.now()
    params = claim_params(queue_name, process, limit, now)
    with prepared_cursor() as cursor:
        cursor.execute(claim_sql(queue_name is not None, process is not None), params)
        rows = cursor.fetchall()
    jobs = claimed_jobs(queue_name, [row for row in rows if row[0] is not None], process)
    claimed = [ClaimedExecution.claimed_for(job, process, now) for job in jobs]
    return claimed, len(jobs) < len(rows)
