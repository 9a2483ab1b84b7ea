"""Enqueue on PostgreSQL: due, unlimited jobs with their ready executions, notified.

One job is one statement (a data-modifying CTE); many are copied with COPY in one
transaction. A job's labels go into the label index (``JobLabel``) in that same
statement, or copy. Scheduled, concurrency-limited and unique jobs take the ORM path.
While fair share is in use, the ready rows carry their fairness key and their place in
the fair order, read first (``fair_share.orders``: two reads) and written by the same
statement, or copy.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING

from django.db.models import Field

from ... import db
from ...models import Job, JobLabel, ReadyExecution, fair_share
from ...models.execution import READY_COPIED_FIELDS
from .. import notify
from ..sql import columns, table

if TYPE_CHECKING:
    from datetime import datetime


# The ready row of a job: its id, what it copies from the job, and when.
READY_COLUMNS = ", ".join(["job_id", *READY_COPIED_FIELDS, "created_at"])
# ... and, while fair share is in use, its key and place in the fair order.
FAIR_READY_COLUMNS = f"{READY_COLUMNS}, fairness_key, fair_order"


def enqueue_ready(job: Job, now: datetime) -> None:
    """Insert ``job`` (due, not concurrency-limited) with its ready execution, and notify."""
    connection = db.connection()
    fields = _job_fields()
    values = [field.get_db_prep_save(field.pre_save(job, True), connection) for field in fields]
    labels = [job.labels] if job.labels else []
    fair = fair_share.orders([job]) if fair_share.needed([job]) else []
    with connection.cursor() as cursor:
        params = [*values, now, *fair, *labels, notify.READY_CHANNEL]
        cursor.execute(_enqueue_sql(bool(labels), bool(fair)), params)
        job.pk = cursor.fetchone()[0]
    job._state.adding, job._state.db = False, db.alias()


@functools.cache
def _job_fields() -> tuple[Field, ...]:
    """The jobs table's columns an insert writes: all but the id."""

    return tuple(field for field in Job._meta.concrete_fields if not field.primary_key)


@functools.cache
def _enqueue_sql(labelled: bool, fair: bool) -> str:
    fields, copied = _job_fields(), ", ".join(READY_COPIED_FIELDS)
    # Fair: the key is the job's own, the place in the fair order a parameter.
    into, tagged = (FAIR_READY_COLUMNS, ", fairness_key, %s") if fair else (READY_COLUMNS, "")
    # A labelled job's rows in the label index: one per element of the array given.
    labels = (
        f", labels AS (INSERT INTO {table(JobLabel)} (label, job_id) "
        "SELECT unnest(%s::varchar[]), id FROM job)"
        if labelled
        else ""
    )
    return (
        f"WITH job AS (INSERT INTO {table(Job)} ({columns(fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"RETURNING id, {copied}{', fairness_key' if fair else ''}), "
        f"ready AS (INSERT INTO {table(ReadyExecution)} ({into}) "
        f"SELECT id, {copied}, %s{tagged} FROM job){labels} "
        "SELECT id, pg_notify(%s, queue_name) FROM job"
    )


def enqueue_all_ready(jobs: list[Job], now: datetime) -> None:
    """Insert many due, unlimited jobs and their ready executions with COPY, and notify.

    COPY skips building and parsing one huge INSERT. The ids come first from the jobs'
    sequence (in enqueue order), so that both tables can be copied; the statement that
    takes them also sends the notifications, delivered on commit.
    """
    calls, params = notify.ready_calls(job.queue_name for job in jobs)
    with db.atomic(), db.connection().cursor() as cursor:
        fair = fair_share.orders(jobs) if fair_share.needed(jobs) else None
        cursor.execute(
            f"WITH sent AS MATERIALIZED (SELECT {calls}) "
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s), sent",
            [*params, table(Job), len(jobs)],
        )
        for job, pk in zip(jobs, sorted(row[0] for row in cursor.fetchall()), strict=True):
            job.pk = pk
        columns = ["id", *(field.column for field in _job_fields())]
        _copy(cursor, Job, columns, _job_rows(jobs, now))
        copied = operator.attrgetter(*READY_COPIED_FIELDS)  # more than one: a tuple
        if fair is None:
            ready = ((job.pk, *copied(job), now) for job in jobs)
            _copy(cursor, ReadyExecution, READY_COLUMNS.split(", "), ready)
        else:
            ready = (
                (job.pk, *copied(job), now, job.fairness_key, order)
                for job, order in zip(jobs, fair, strict=True)
            )
            _copy(cursor, ReadyExecution, FAIR_READY_COLUMNS.split(", "), ready)
        if any(job.labels for job in jobs):
            labelled = ((label, pk) for pk, label in JobLabel.rows_for(jobs))
            _copy(cursor, JobLabel, ["label", "job_id"], labelled)
    for job in jobs:
        job._state.adding, job._state.db = False, db.alias()


def _job_rows(jobs: list[Job], now: datetime):
    # Read straight from the instances: the one field computed on save is updated_at
    # (auto_now). psycopg's binary dumpers take the values as they are, JSON included
    # (its jsonb dumper calls json.dumps: Job's JSON fields have no encoder of their own).
    values_of = operator.itemgetter(*[field.attname for field in _job_fields()])
    for job in jobs:
        job.updated_at = now
        yield (job.pk, *values_of(job.__dict__))


def _copy(cursor, model, columns: list[str], rows) -> None:
    """COPY ``rows`` into ``model``'s table, in PostgreSQL's binary format.

    Binary: psycopg's C dumpers write each value without formatting it as text, and the
    server reads it without parsing it (about 2 us a row less on the client).
    """
    quoted = ", ".join(db.connection().ops.quote_name(column) for column in columns)
    with cursor.copy(f"COPY {table(model)} ({quoted}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(_types(model, tuple(columns)))
        for row in rows:
            copy.write_row(row)


@functools.cache
def _types(model, columns: tuple[str, ...]) -> list[str]:
    """The database types of ``columns``, as psycopg names them ("varchar(255)": varchar)."""
    by_column = {field.column: field for field in model._meta.concrete_fields}
    connection = db.connection()
    return [by_column[column].db_type(connection).split("(")[0] for column in columns]
