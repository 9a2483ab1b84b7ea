"""PostgreSQL's statements of a finish and a claim: their SQL, parameters and rows.

Common table expressions each fast path puts together into one statement: a finish
(``finishing``), a claim (``claiming``), or both; the group finish (``grouped``) and the
hand-on (``hand_on``) build on them too.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from django.db.models import Field

from ... import db
from ...models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from .. import notify
from ..sql import columns, poll_order, table
from .claim_cursor import CURSORS, FROM_HEAD

if TYPE_CHECKING:
    from datetime import datetime

    from ...models.attempt import Attempt


def finish_params(claimed: ClaimedExecution, values: tuple) -> list:
    """The parameters of ``finishing``; ``values`` from ``success_values``."""
    now, return_value, attempt = values
    process = [] if claimed.process_id is None else [claimed.process_id]
    return [claimed.job_id, *process, now, return_value, attempt, now]


def finished_values(attempt: Attempt, return_value: Any) -> tuple[Any, Any]:
    """The job's return value and its attempt to append, prepared for the database."""
    connection, fields = db.connection(), Job._meta
    return (
        fields.get_field("return_value").get_db_prep_save(return_value, connection),
        fields.get_field("attempts").get_db_prep_save([attempt.to_dict()], connection),
    )


@functools.cache
def claim_sql(one_queue: bool, registered: bool) -> str:
    # Claiming from all queues, a row of NULLs says that some queue is paused.
    fields = Job._meta.concrete_fields
    flag = "" if one_queue else f" UNION ALL SELECT {nulls(fields)}, NULL WHERE {paused(False)}"
    return (
        f"WITH {claiming(one_queue, registered)} SELECT {claimed_columns()} FROM claimed "
        f"{claimed_joins()}{flag}"
    )


@functools.cache
def finish_sql(without_process: bool) -> str:
    return f"WITH {finishing(without_process)} SELECT 1 FROM finished"


@functools.cache
def finish_and_claim_sql(without_process: bool, one_queue: bool, registered: bool) -> str:
    # One row, however it went: how many jobs finished (1 or 0), and the claimed job.
    fields = Job._meta.concrete_fields
    finished = "(SELECT count(*) FROM finished)"
    return (
        f"WITH {finishing(without_process)}, {claiming(one_queue, registered)} "
        f"SELECT {finished}, {claimed_columns()} FROM claimed {claimed_joins()} "
        f"UNION ALL SELECT {finished}, {nulls(fields)}, NULL "
        "WHERE NOT EXISTS (SELECT FROM claimed)"
    )


def finishing(without_process: bool) -> str:
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


def claiming(one_queue: bool, registered: bool) -> str:
    """CTEs that lock the best ready jobs, delete them and insert ``claimed``; its
    parameters are ``claim_params``'.

    ``registered``: only while the claiming process's row exists (a pruned one claims
    nothing more; see Process.row_exists). With the process's last claimed key
    (``claim_cursor``), ``higher`` takes the jobs of a higher priority than the key's
    (priorities first, always: the head of the index, empty unless such jobs were made
    ready), ``ahead`` those after the key in its priority (a range scan that starts past
    the index entries of the jobs claimed before), and ``behind`` claims from the head
    of the index only when these were fewer than wanted (one-time filters: a part not
    needed reads nothing). Without a key (NULLs) ``higher`` and ``ahead`` are empty and
    ``behind`` is the claim from the head it always was.
    """
    # A one-time filter on the pauses: the scan of the poll index is the same as without.
    where = f"queue_name = %s AND NOT {paused(True)}" if one_queue else f"NOT {paused(False)}"
    if registered:  # a one-time filter too
        where += f" AND EXISTS (SELECT FROM {table(Process)} WHERE id = %s)"
    ready, order = table(ReadyExecution), poll_order()
    after = "priority = %s AND (fair_order, job_id) > (%s, %s)"  # the index's order
    locking = f"ORDER BY {order} LIMIT %s FOR UPDATE SKIP LOCKED"
    return (
        # MATERIALIZED: each locking SELECT runs exactly once, never inlined twice.
        f"higher AS MATERIALIZED (SELECT job_id FROM {ready} WHERE {where} AND priority > %s "
        f"{locking}), "
        f"ahead AS MATERIALIZED (SELECT job_id FROM {ready} WHERE {where} AND {after} "
        f"AND (SELECT count(*) FROM higher) < %s {locking}), "
        "taken AS (SELECT job_id FROM higher UNION ALL SELECT job_id FROM ahead), "
        # Our own locks do not skip: the jobs taken already are left out by id. Each LIMIT
        # is the whole claim's (a constant: the planner's estimates stay those of a claim
        # of that many), and ``picked`` keeps that many, the best parts first, as
        # PostgreSQL appends (were it not so, still that many, all of them ready).
        f"behind AS MATERIALIZED (SELECT job_id FROM {ready} WHERE {where} "
        "AND (SELECT count(*) FROM taken) < %s AND job_id NOT IN (SELECT job_id FROM taken) "
        f"{locking}), "
        "picked AS MATERIALIZED (SELECT job_id FROM higher UNION ALL SELECT job_id FROM behind "
        "UNION ALL SELECT job_id FROM ahead LIMIT %s), "
        f"ready AS (DELETE FROM {ready} r USING picked WHERE r.job_id = picked.job_id "
        "RETURNING r.job_id, r.fair_order), "
        f"claimed AS (INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        "SELECT job_id, %s, %s FROM ready RETURNING job_id)"
    )


def claim_params(
    queue_name: str | None, process: Process | None, limit: int, now: datetime
) -> list:
    """The parameters of ``claiming``, the claim starting after this process's cursor."""
    where = [] if queue_name is None else [queue_name, queue_name]
    where += [] if process is None else [process.pk]
    # Only a worker process's claims: a claim without one (steady_queue.testing's runs, a
    # script) takes from the head, in the strict poll order, as it always did.
    start = CURSORS.start((db.alias(), queue_name)) if process is not None else FROM_HEAD
    priority, fair_order, job_id = start
    claimer = process.pk if process else None
    return [
        *[*where, priority, limit],  # higher
        *[*where, priority, fair_order, job_id, limit, limit],  # ahead
        *[*where, limit, limit],  # behind
        *[limit, claimer, now],  # picked, claimed
    ]


def claimed_jobs(queue_name: str | None, rows: list[tuple], process: Process | None) -> list[Job]:
    """The jobs of the claimed ``rows`` (a job's columns, then its ``fair_order``), with
    the process's cursor moved past the last of them (none: forgotten)."""
    jobs = jobs_from_rows([row[:-1] for row in rows])
    if process is not None:
        orders = {row[_id_index()]: row[-1] for row in rows}
        CURSORS.advance(
            (db.alias(), queue_name), [(job.priority, orders[job.pk], job.pk) for job in jobs]
        )
    return jobs


@functools.cache
def _id_index() -> int:
    return [field.attname for field in Job._meta.concrete_fields].index("id")


def claimed_columns() -> str:
    """A claimed job's columns, then its ready row's ``fair_order`` (``claimed_jobs``)."""
    return f"{columns(Job._meta.concrete_fields, 'j.')}, k.fair_order"


def claimed_joins() -> str:
    # LATERAL: a lookup by key per claimed job, whatever the planner guesses of their count.
    return (
        "JOIN LATERAL (SELECT fair_order FROM ready WHERE ready.job_id = claimed.job_id) k "
        f"ON TRUE JOIN {table(Job)} j ON j.id = claimed.job_id"
    )


def paused(one_queue: bool) -> str:
    return f"EXISTS (SELECT 1 FROM {table(Pause)}{' WHERE queue_name = %s' if one_queue else ''})"


def nulls(fields: list[Field]) -> str:
    return ", ".join(["NULL"] * len(fields))


def jobs_from_rows(rows: list[tuple]) -> list[Job]:
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
    # The batch was taken in POLL_ORDER; its jobs start together, handed to threads
    # by priority then id (fair_order is not read back: they start at the same time).
    return sorted(jobs, key=lambda job: (-job.priority, job.pk))
