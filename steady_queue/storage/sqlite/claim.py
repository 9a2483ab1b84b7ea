"""Claim on SQLite: the best ready jobs taken, their claims stored, their rows loaded.

One ``DELETE ... RETURNING`` (SQLite 3.35+) takes the ready rows and returns each job's
row with them (a correlated lookup by primary key per column, evaluated only for the
rows deleted); one multi-row INSERT stores the claims. Both run in the caller's write
transaction (``transaction.write_transaction``): SQLite has one writer at a time, so nothing
needs locking row by row, and a claim is as atomic as the transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from django.utils import timezone

from ... import db
from ...models import ClaimedExecution, Job, Pause, Process, ReadyExecution
from ...models.queue_selector import QueueSelector
from ..sql import poll_order, table
from .values import moment

if TYPE_CHECKING:
    from collections.abc import Iterable


def claim(queues: Sequence[str], limit: int, process: Process | None) -> list[ClaimedExecution]:
    """Claim as ``ReadyExecution.claim`` does; run inside a write transaction.

    ``*`` is one statement while nothing is paused (any list holding ``*`` reads every
    queue, as the portable claim does); exact names are one statement however many,
    read in their order. Wildcards ask for the queue names first (the selector's
    queries); a poll of ``*`` that found nothing asks whether some queue is paused,
    and if one is, claims from the others queue by queue, as the portable claim does.
    """
    queues = list(queues) or ["*"]
    if "*" in queues:
        claimed = _take(None, limit, process)
        if claimed:
            return claimed  # nothing is paused: the statement read every queue
        names = QueueSelector(["*"], ReadyExecution.objects.all()).scoped_queues()
        if names == [None]:
            return []  # nothing paused, nothing ready
    elif any("*" in entry for entry in queues):
        names = QueueSelector(queues, ReadyExecution.objects.all()).scoped_queues()
    else:
        names = list(dict.fromkeys(queues))
    return _take(names, limit, process) if names else []


def _take(names: list[str] | None, limit: int, process: Process | None) -> list[ClaimedExecution]:
    """Take up to ``limit`` ready jobs of ``names`` in order (None: of every queue)."""
    now = timezone.now()
    params: list = [] if names is None else [value for name in names for value in (name, limit)]
    if names is None or len(names) > 1:
        params.append(limit)  # of all the queues together
    params += [] if process is None else [process.pk]
    with db.connection().cursor() as cursor:
        sql = _claim_sql(len(names) if names else 0, process is not None)
        cursor.execute(sql, by_name(params))
        jobs = jobs_from_rows(cursor.fetchall(), names or [])
        if jobs:
            _insert_claims(cursor, [job.pk for job in jobs], process, now)
    return [ClaimedExecution.claimed_for(job, process, now) for job in jobs]


def _insert_claims(cursor, job_ids: list[int], process: Process | None, now) -> None:
    connection = db.connection()
    created_at = moment(now, connection)
    process_id = None if process is None else process.pk
    for chunk in chunks(job_ids, max_rows(connection, 3)):
        values = [value for job_id in chunk for value in (job_id, process_id, created_at)]
        cursor.execute(_insert_claims_sql(len(chunk)), by_name(values))


@functools.lru_cache(maxsize=32)  # by row count: up to a poll's limit
def _insert_claims_sql(count: int) -> str:
    return named(
        f"INSERT INTO {table(ClaimedExecution)} (job_id, process_id, created_at) "
        f"VALUES {', '.join(['(%s, %s, %s)'] * count)}"
    )


@functools.cache
def _claim_sql(queue_count: int, registered: bool) -> str:
    """The DELETE taking the best ready rows and returning their jobs' rows.

    ``queue_count`` 0: every queue while nothing is paused, in POLL_ORDER (the
    ``sq_poll_all`` index's order: no sort). Otherwise each queue's best rows in
    POLL_ORDER (``sq_poll_by_queue``), paused ones left out, then the queues in order.
    ``registered``: only while the claiming process's row exists (a pruned one claims
    nothing more; see Process.row_exists).
    """
    ready, order = table(ReadyExecution), poll_order()
    paused = f"queue_name IN (SELECT queue_name FROM {table(Pause)})"
    if queue_count == 0:
        picked = (
            f"SELECT job_id FROM {ready} WHERE NOT EXISTS (SELECT 1 FROM {table(Pause)}) "
            f"ORDER BY {order} LIMIT %s"
        )
    elif queue_count == 1:
        picked = (
            f"SELECT job_id FROM {ready} WHERE queue_name = %s AND NOT {paused} "
            f"ORDER BY {order} LIMIT %s"
        )
    else:  # sorts at most queue_count * limit rows, in memory
        branches = " UNION ALL ".join(
            f"SELECT * FROM (SELECT job_id, priority, fair_order, {position} AS position "
            f"FROM {ready} WHERE queue_name = %s AND NOT {paused} ORDER BY {order} LIMIT %s)"
            for position in range(queue_count)
        )
        picked = f"SELECT job_id FROM ({branches}) ORDER BY position, {order} LIMIT %s"
    alive = f" AND EXISTS (SELECT 1 FROM {table(Process)} WHERE id = %s)" if registered else ""
    return named(
        f"DELETE FROM {ready} WHERE job_id IN ({picked}){alive} "
        f"RETURNING {job_columns(f'{ready}.job_id')}"
    )


def job_columns(job_id: str) -> str:
    """The job's columns, each looked up by primary key (RETURNING reads one table)."""
    quote, jobs = db.connection().ops.quote_name, table(Job)
    return ", ".join(
        f"(SELECT {quote(field.column)} FROM {jobs} WHERE id = {job_id})"
        for field in Job._meta.concrete_fields
    )


def jobs_from_rows(rows: list[tuple], names: list[str]) -> list[Job]:
    """Jobs from their rows, converted as Django would, in claim order."""
    connection, alias = db.connection(), db.alias()
    attnames, converters = _converters(connection)
    jobs = []
    for row in rows:
        values = list(row)
        for index, column, converter in converters:
            values[index] = converter(values[index], column, connection)
        jobs.append(Job.from_db(alias, attnames, values))
    position = {name: index for index, name in enumerate(names)}
    return sorted(jobs, key=lambda job: (position.get(job.queue_name, 0), -job.priority, job.pk))


@functools.lru_cache(maxsize=64)  # a connection per thread: a worker's threads, and a few
def _converters(connection) -> tuple[list[str], list[tuple]]:
    """The jobs' attribute names, and each column's converters from SQLite's values."""
    fields, converters = Job._meta.concrete_fields, []
    for index, field in enumerate(fields):
        column = field.get_col(Job._meta.db_table)
        every = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        converters += [(index, column, converter) for converter in every]
    return [field.attname for field in fields], converters


def named(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders named ``%(p0)s``, ``%(p1)s``... in order.

    For long statements with few parameters (the claim's returns 20 columns): Django's
    SQLite cursor turns ``%s`` into ``?`` with a regular expression over the whole text
    (30 us for the claim's 2,000 characters, on every execution), named ones with one
    ``%`` formatting (2 us). Run them with ``by_name(params)``.
    """
    pieces = sql.split("%s")
    named_pieces = [f"{piece}%(p{index})s" for index, piece in enumerate(pieces[:-1])]
    return "".join([*named_pieces, pieces[-1]])


def by_name(params: list) -> dict[str, object]:
    """The parameters of a ``named`` statement, in order."""
    return dict(zip(_names(len(params)), params, strict=True))


@functools.lru_cache(maxsize=64)
def _names(count: int) -> tuple[str, ...]:
    return tuple(f"p{index}" for index in range(count))


def max_rows(connection, columns_per_row: int) -> int:
    """How many rows one INSERT may carry within SQLite's limit on parameters."""
    return max(1, connection.features.max_query_params // columns_per_row)


def chunks(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
