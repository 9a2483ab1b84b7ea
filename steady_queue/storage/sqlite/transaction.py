"""SQLite's write transactions: ``BEGIN IMMEDIATE``, whatever the project's transaction_mode.

Every transaction of this package takes SQLite's write lock at once, waiting for it up
to the busy timeout (the "timeout" OPTION), so a transaction that reads before it writes
(a wildcard's queue names) cannot fail with "database is locked" when it comes to write.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextvars import ContextVar

from ... import db

#: DELETE/INSERT ... RETURNING came with SQLite 3.35.
MIN_VERSION = (3, 35, 0)

# The connection whose write transaction of this module this thread is inside, if any.
_writing: ContextVar[object] = ContextVar("steady_queue_sqlite_writing", default=None)


def available() -> bool:
    """Whether the SQLite library Python runs has what the fast paths use."""
    return sqlite3.sqlite_version_info >= MIN_VERSION


@contextlib.contextmanager
def write_transaction(*, orm_writes: bool = False) -> Iterator[None]:
    """A transaction on the queue database that holds SQLite's write lock from its start.

    Inside a caller's transaction it is a savepoint of it (the caller chose how it
    began); inside one of this module's, nothing more: a failure rolls it all back.
    Begun here, it is ``BEGIN IMMEDIATE`` and ``COMMIT`` sent on a cursor: Django's
    ``atomic()`` around them costs four times the two statements (about 20 us of a
    single enqueue's 300), and the statements of this package, and the ORM's reads,
    need nothing of it. ``orm_writes``: the block writes through the ORM, whose own
    atomic blocks must know of the transaction (Django's ``atomic()``, begun IMMEDIATE).
    """
    connection = db.connection()
    if _writing.get() is connection:
        if orm_writes and not connection.in_atomic_block:
            # Django, unaware of the cursor's transaction, would send BEGIN inside it.
            raise RuntimeError("ORM writes inside a cursor transaction")
        yield
        return
    token = _writing.set(connection)
    try:
        if connection.in_atomic_block:
            with db.atomic():
                yield
        elif orm_writes:
            with _atomic_immediate(connection):
                yield
        else:
            with _immediate(connection):
                yield
    finally:
        _writing.reset(token)


@contextlib.contextmanager
def _immediate(connection) -> Iterator[None]:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("BEGIN IMMEDIATE")
        try:
            yield
            cursor.execute("COMMIT")
        except BaseException:
            if connection.connection.in_transaction:  # SQLite ends some on its own errors
                cursor.execute("ROLLBACK")
            raise


@contextlib.contextmanager
def _atomic_immediate(connection) -> Iterator[None]:
    connection.ensure_connection()  # connecting sets transaction_mode from the settings
    chosen, connection.transaction_mode = connection.transaction_mode, "IMMEDIATE"
    try:
        with db.atomic():
            connection.transaction_mode = chosen
            yield
    finally:
        connection.transaction_mode = chosen
