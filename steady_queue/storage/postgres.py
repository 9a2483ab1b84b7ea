"""The hot paths in one statement each on PostgreSQL: enqueue, claim and finish a job.

The ORM needs a transaction of several statements for each (BEGIN, two or three
writes, COMMIT): every one a round trip, plus Python overhead. PostgreSQL runs
data-modifying CTEs as one atomic statement, so in autocommit each path here is a
single round trip with the same all-or-nothing effect, and the same locking as the
portable path it replaces (SKIP LOCKED for the claim; a row lock on the claim to
finish). The uncommon cases (scheduled, concurrency-limited or unique jobs, failures)
take the portable paths. Enqueue, one job or many, is in postgres_enqueue.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.db.models import Field
from django.utils import timezone

from .. import db
from ..models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from ..models.claimed_finish import Outcome, Success
from . import notify, postgres_enqueue
from .base import ClaimNext, Finished, Storage
from .finish_group import FinishGroups, Finishing, claimed_along, shape_of
from .postgres_cursor import prepared_cursor
from .sql import claim_per_queue, columns, poll_order, table

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from ..models.attempt import Attempt


class PostgresStorage(Storage):
    """One statement per enqueue, claim and finish (with the next claim); NOTIFY wake-ups."""

    wakes_listeners = True

    def __init__(self, alias: str):
        super().__init__(alias)
        from . import postgres_grouped  # it builds on this module's statements

        self._groups = FinishGroups(postgres_grouped.write)

    def enqueue(self, jobs: list[Job]) -> list[Job]:
        # A unique job's key is taken through the ORM (UniqueLock): the portable path.
        if not jobs or not all(job.is_ready_on_enqueue and not job.unique_key for job in jobs):
            return super().enqueue(jobs)
        if len(jobs) == 1:
            postgres_enqueue.enqueue_ready(jobs[0], timezone.now())  # one round trip, as atomic
        else:
            postgres_enqueue.enqueue_all_ready(jobs, timezone.now())
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

    def finish(
        self, claimed: ClaimedExecution, outcome: Outcome, *, then_claim: ClaimNext | None = None
    ) -> Finished:
        """A plain success in one statement, which also claims the next job when asked."""
        from . import postgres_hand_on  # it builds on this module's statements

        if postgres_hand_on.applies(claimed, outcome, then_claim):
            return postgres_hand_on.finish(self, claimed, outcome, then_claim)
        if not (isinstance(outcome, Success) and outcome.hands_nothing_on(claimed)):
            return super().finish(claimed, outcome, then_claim=then_claim)
        along = claimed_along(then_claim)
        # A worker thread's finish may share a statement with its neighbours' (see
        # postgres_grouped); not inside a caller's transaction, which is its own.
        shape = shape_of(claimed, then_claim, along)
        asked: list[bool] = []  # along.allowed()'s one answer
        made: list[list[ClaimedExecution]] = []  # what the statement claimed

        def write(attempt: Attempt) -> bool:
            values = _finished_values(attempt, outcome.return_value)
            params = _finish_params(claimed, attempt, values)

            def alone(claims: bool) -> tuple[bool, list[ClaimedExecution]]:
                if not claims:
                    with prepared_cursor() as cursor:
                        cursor.execute(_finish_sql(claimed.process_id is None), params)
                        return cursor.rowcount == 1, []
                return _finish_and_claim(claimed, params, along)

            if asked:  # retried after a failure: finish only, alone
                return alone(False)[0]
            asked.append(along is not None and along.allowed())
            entry = Finishing(
                claimed.job_id,
                attempt.finished_at,
                *values,
                claims=asked[0],
                alone=functools.partial(alone, asked[0]),
            )
            recorded, claimed_next = self._groups.finish(shape, entry)
            if asked[0]:
                made.append(claimed_next)
            return recorded

        recorded = claimed.record(outcome, write=write)
        if along is None:
            claimed_next, failed = self.claim_next(then_claim)
            return Finished(recorded, claimed_next, failed)
        if asked and asked[0]:
            # Asked and made, or asked and failed (it may have claimed all the same).
            return Finished(recorded, made[0] if made else None, claim_failed=not made)
        return Finished(recorded)

    def notify_ready(self, queue_names: Iterable[str]) -> None:
        notify.jobs_ready(queue_names)

    def notify_scheduled(self, due_at: datetime) -> None:
        notify.jobs_scheduled(due_at)

    def notify_ended(self, job_ids: Iterable[int]) -> None:
        notify.jobs_ended(job_ids)


def _finish_params(claimed: ClaimedExecution, attempt: Attempt, values: tuple[Any, Any]) -> list:
    """The parameters of ``_finishing``; ``values`` from ``_finished_values``."""
    now = attempt.finished_at
    process = [] if claimed.process_id is None else [claimed.process_id]
    return [claimed.job_id, *process, now, *values, now]


def _finished_values(attempt: Attempt, return_value: Any) -> tuple[Any, Any]:
    """The job's return value and its attempt to append, prepared for the database."""
    connection, fields = db.connection(), Job._meta
    return (
        fields.get_field("return_value").get_db_prep_save(return_value, connection),
        fields.get_field("attempts").get_db_prep_save([attempt.to_dict()], connection),
    )


def _finish_and_claim(
    claimed: ClaimedExecution, params: list, then_claim: ClaimNext
) -> tuple[bool, list[ClaimedExecution]]:
    queues, process, now = list(then_claim.queues), then_claim.process, timezone.now()
    queue_name = None if "*" in queues else queues[0]  # all queues, while none is paused
    params += [] if queue_name is None else [queue_name, queue_name]
    params += [] if process is None else [process.pk]
    params += [1, process.pk if process else None, now]
    sql = _finish_and_claim_sql(
        claimed.process_id is None, queue_name is not None, process is not None
    )
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    jobs = _jobs_from_rows([row[1:] for row in rows if row[1] is not None])
    return rows[0][0] == 1, [ClaimedExecution.claimed_for(job, process, now) for job in jobs]


def _claim_from(
    queue_name: str | None, limit: int, process: Process | None
) -> tuple[list[ClaimedExecution], bool]:
    """Claim from one queue (None: all, unless a queue is paused); and whether one is."""
    now = timezone.now()
    params = [] if queue_name is None else [queue_name, queue_name]
    params += [] if process is None else [process.pk]
    params += [limit, process.pk if process else None, now]
    with prepared_cursor() as cursor:
        cursor.execute(_claim_sql(queue_name is not None, process is not None), params)
        rows = cursor.fetchall()
    jobs = _jobs_from_rows([row for row in rows if row[0] is not None])
    claimed = [ClaimedExecution.claimed_for(job, process, now) for job in jobs]
    return claimed, len(jobs) < len(rows)


@functools.cache
def _claim_sql(one_queue: bool, registered: bool) -> str:
    # Claiming from all queues, a row of NULLs says that some queue is paused.
    fields = Job._meta.concrete_fields
    flag = "" if one_queue else f" UNION ALL SELECT {_nulls(fields)} WHERE {_paused(False)}"
    return (
        f"WITH {_claiming(one_queue, registered)} SELECT {columns(fields, 'j.')} FROM claimed "
        f"JOIN {table(Job)} j ON j.id = claimed.job_id{flag}"
    )


@functools.cache
def _finish_sql(without_process: bool) -> str:
    return f"WITH {_finishing(without_process)} SELECT 1 FROM finished"


@functools.cache
def _finish_and_claim_sql(without_process: bool, one_queue: bool, registered: bool) -> str:
    # One row, however it went: how many jobs finished (1 or 0), and the claimed job.
    fields = Job._meta.concrete_fields
    finished = "(SELECT count(*) FROM finished)"
    return (
        f"WITH {_finishing(without_process)}, {_claiming(one_queue, registered)} "
        f"SELECT {finished}, {columns(fields, 'j.')} FROM claimed "
        f"JOIN {table(Job)} j ON j.id = claimed.job_id "
        f"UNION ALL SELECT {finished}, {_nulls(fields)} WHERE NOT EXISTS (SELECT FROM claimed)"
    )


def _finishing(without_process: bool) -> str:
    """CTEs ``claim`` (our claim, deleted) and ``finished`` (its job, marked finished).

    ``finished`` tells a waiter of the job (steady_queue.wait), if there is one, in its
    RETURNING: computed for each updated row whether or not the query reads it.
    """
    process = "process_id IS NULL" if without_process else "process_id = %s"
    return (
        f"claim AS (DELETE FROM {table(ClaimedExecution)} WHERE job_id = %s AND {process} "
        "RETURNING job_id), "
        f"finished AS (UPDATE {table(Job)} SET finished_at = %s, return_value = %s, "
        "attempts = attempts || %s, updated_at = %s WHERE id IN (SELECT job_id FROM claim) "
        f"RETURNING id, {notify.ended_call('id')})"
    )


def _claiming(one_queue: bool, registered: bool) -> str:
    """CTEs that lock the best ready jobs, delete them and insert ``claimed``.

    ``registered``: only while the claiming process's row exists (a pruned one claims
    nothing more; see Process.row_exists).
    """
    # A one-time filter on the pauses: the scan of the poll index is the same as without.
    where = f"queue_name = %s AND NOT {_paused(True)}" if one_queue else f"NOT {_paused(False)}"
    if registered:  # a one-time filter too
        where += f" AND EXISTS (SELECT FROM {table(Process)} WHERE id = %s)"
    return (
        # MATERIALIZED: the locking SELECT runs exactly once, never inlined twice.
        f"picked AS MATERIALIZED (SELECT job_id FROM {table(ReadyExecution)} "
        f"WHERE {where} ORDER BY {poll_order()} LIMIT %s FOR UPDATE SKIP LOCKED), "
        f"ready AS (DELETE FROM {table(ReadyExecution)} r USING picked "
        "WHERE r.job_id = picked.job_id RETURNING r.job_id), "
        f"claimed AS (INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        "SELECT job_id, %s, %s FROM ready RETURNING job_id)"
    )


def _paused(one_queue: bool) -> str:
    return f"EXISTS (SELECT 1 FROM {table(Pause)}{' WHERE queue_name = %s' if one_queue else ''})"


def _nulls(fields: list[Field]) -> str:
    return ", ".join(["NULL"] * len(fields))


def _jobs_from_rows(rows: list[tuple]) -> list[Job]:
    fields, connection = Job._meta.concrete_fields, db.connection()
    names = [field.attname for field in fields]
    converters = [
        (index, field, converter)
        for index, field in enumerate(fields)
        for converter in field.get_db_converters(connection)
    ]
    jobs = []
    for row in rows:
        values = list(row)
        for index, field, converter in converters:
            values[index] = converter(values[index], field, connection)
        jobs.append(Job.from_db(db.alias(), names, values))
    return sorted(jobs, key=lambda job: (-job.priority, job.pk))  # POLL_ORDER
