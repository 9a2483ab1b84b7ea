"""A transaction of several statements in one round trip on MySQL/MariaDB.

Django's transactions cost MySQL three round trips of their own (``SET autocommit=0``,
``COMMIT``, ``SET autocommit=1``) besides one per statement. mysqlclient connects with
multiple statements allowed (its default, which Django keeps), so a whole transaction
(``START TRANSACTION; ...; COMMIT``) can be sent as one string and its results read
back one after the other. A project that turned them off
(``OPTIONS={"multi_statements": False}``) gets the same statements one at a time.

A script is run only where no transaction is open (Django in autocommit, outside
``atomic``): ``START TRANSACTION`` inside one would commit it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from typing import Any

from django.db.models import Field

from ... import db
from ...models import Job

START = ("START TRANSACTION", ())
COMMIT = ("COMMIT", ())

Statement = tuple[str, Sequence[Any]]


@dataclasses.dataclass(frozen=True)
class Result:
    """What one statement of a script returned: its rows (None: not a query) and rowcount."""

    rows: list[tuple] | None
    rowcount: int
    lastrowid: int | None


def usable() -> bool:
    """Whether a script may run now: the queue database is outside any transaction."""
    connection = db.connection()
    return not connection.in_atomic_block and connection.get_autocommit()


def run(statements: Sequence[Statement]) -> list[Result]:
    """Send ``statements`` (a whole transaction, START to COMMIT) and read every result.

    On any error the transaction is rolled back (unless the connection is gone) and the
    error raised as Django's (OperationalError for a deadlock or a lost connection).
    """
    connection = db.connection()
    try:
        with connection.wrap_database_errors, connection.cursor() as cursor:
            if not _multi_statements(connection):
                results = []
                for sql, params in statements:
                    cursor.execute(sql, params)
                    results.append(_result(cursor))
                return results
            cursor.execute(";\n".join(sql for sql, _ in statements), _flat(statements))
            results = [_result(cursor)]
            while cursor.nextset():
                results.append(_result(cursor))
            return results
    except BaseException:
        with contextlib.suppress(Exception):  # a lost connection rolled back by itself
            connection.rollback()
        raise


def _multi_statements(connection) -> bool:
    return connection.settings_dict.get("OPTIONS", {}).get("multi_statements", True)


def _flat(statements: Sequence[Statement]) -> list:
    return [param for _, params in statements for param in params]


def _result(cursor) -> Result:
    rows = list(cursor.fetchall()) if cursor.description else None
    return Result(rows, cursor.rowcount, cursor.lastrowid)


def job_fields() -> list[Field]:
    return Job._meta.concrete_fields


def jobs_from_rows(rows: Sequence[tuple]) -> dict[int, Job]:
    """Jobs from rows of ``job_fields()``, converted as the ORM would; by id."""
    connection, fields = db.connection(), job_fields()
    names = [field.attname for field in fields]
    converters = [
        (index, field, converter)
        for index, field in enumerate(fields)
        for converter in (
            connection.ops.get_db_converters(field.get_col(Job._meta.db_table))
            + field.get_db_converters(connection)
        )
    ]
    jobs = {}
    for row in rows:
        values = list(row)
        for index, field, converter in converters:
            values[index] = converter(values[index], field, connection)
        job = Job.from_db(db.alias(), names, values)
        jobs[job.pk] = job
    return jobs
