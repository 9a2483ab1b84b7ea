"""Enqueue on SQLite: due, unlimited jobs and their ready executions, in multi-row INSERTs.

The jobs go in one ``INSERT ... RETURNING id`` (several when SQLite's limit on
parameters needs it), their ready rows in another (and their labels' rows in the label
index in a third, when they have any), inside the caller's write transaction; the
rows are built straight from the fields (``values``), without the ORM's
``bulk_create`` machinery. While fair share is in use, the ready rows carry their
fairness key and their place in the fair order (``fair_share.orders``: two reads, in
the same write transaction, so no other writer moves the bounds they were read
from). Scheduled, concurrency-limited and unique jobs take the ORM path. Nobody is
told: SQLite's idle workers watch the database's files.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from django.db.models import Field

from ... import db
from ...models import Job, JobLabel, ReadyExecution, fair_share
from ...models.execution import READY_COPIED_FIELDS
from ..sql import columns, table
from .claim import by_name, chunks, max_rows, named
from .values import job_rows, moment, plan_for

if TYPE_CHECKING:
    from datetime import datetime

# The ready row of a job: its id, what it copies from the job, and when.
READY_COLUMNS = ["job_id", *READY_COPIED_FIELDS, "created_at"]
# ... and, while fair share is in use, its key and place in the fair order.
FAIR_READY_COLUMNS = [*READY_COLUMNS, "fairness_key", "fair_order"]


def insert_ready(jobs: list[Job], now: datetime) -> None:
    """Insert ``jobs`` (due, not limited, not unique) and their ready rows; set their ids.

    Runs inside a transaction; the ids are set on the jobs only once every row is in.
    """
    connection, fields = db.connection(), _job_fields()
    fair = fair_share.orders(jobs) if fair_share.needed(jobs) else None
    rows = job_rows(jobs, _job_plan(), connection)
    ids: list[int] = []
    with connection.cursor() as cursor:
        for chunk in chunks(rows, max_rows(connection, len(fields))):
            _insert(cursor, _insert_jobs_sql(len(chunk)), chunk)
            # One writer: the ids of one statement are consecutive, in the order of its rows.
            ids += sorted(pk for (pk,) in cursor.fetchall())
        created_at = moment(now, connection)
        ready = [
            [pk, *(getattr(job, name) for name in READY_COPIED_FIELDS), created_at]
            for job, pk in zip(jobs, ids, strict=True)
        ]
        if fair is not None:
            for row, job, order in zip(ready, jobs, fair, strict=True):
                row += [job.fairness_key, order]
        width = len(READY_COLUMNS if fair is None else FAIR_READY_COLUMNS)
        for chunk in chunks(ready, max_rows(connection, width)):
            _insert(cursor, _insert_ready_sql(len(chunk), fair is not None), chunk)
        labelled = [[label, pk] for job, pk in zip(jobs, ids, strict=True) for label in job.labels]
        for chunk in chunks(labelled, max_rows(connection, 2)):
            _insert(cursor, _insert_labels_sql(len(chunk)), chunk)
    for job, pk in zip(jobs, ids, strict=True):
        job.pk = pk
        job._state.adding, job._state.db = False, db.alias()


def _insert(cursor, sql: str, rows: list[list]) -> None:
    """One INSERT of ``rows``: a single row's with named parameters (see ``claim.named``:
    10 us less per enqueue); many rows' positional (naming 15,000 parameters costs more
    than the regular expression over their text saves)."""
    values = [value for row in rows for value in row]
    cursor.execute(sql, by_name(values) if len(rows) == 1 else values)


@functools.cache
def _job_fields() -> tuple[Field, ...]:
    """The jobs table's columns an insert writes: all but the id."""
    return tuple(field for field in Job._meta.concrete_fields if not field.primary_key)


@functools.cache
def _job_plan() -> tuple[tuple, ...]:
    return plan_for(_job_fields())


@functools.lru_cache(maxsize=32)  # by row count: one job, a full chunk, a few others
def _insert_jobs_sql(count: int) -> str:
    fields = _job_fields()
    row = f"({', '.join(['%s'] * len(fields))})"
    sql = f"INSERT INTO {table(Job)} ({columns(fields)}) VALUES {', '.join([row] * count)}"
    return _as_run(f"{sql} RETURNING id", count)


@functools.lru_cache(maxsize=32)
def _insert_ready_sql(count: int, fair: bool) -> str:
    names = FAIR_READY_COLUMNS if fair else READY_COLUMNS
    row = f"({', '.join(['%s'] * len(names))})"
    into = f"{table(ReadyExecution)} ({', '.join(names)})"
    return _as_run(f"INSERT INTO {into} VALUES {', '.join([row] * count)}", count)


@functools.lru_cache(maxsize=32)
def _insert_labels_sql(count: int) -> str:
    into = f"{table(JobLabel)} (label, job_id)"
    return _as_run(f"INSERT INTO {into} VALUES {', '.join(['(%s, %s)'] * count)}", count)


def _as_run(sql: str, count: int) -> str:
    return named(sql) if count == 1 else sql  # as _insert runs it
