"""PostgreSQL: empty the tables between transactional tests with DELETE, not TRUNCATE.

A transactional test (``transactional_db``, the process tests) ends with Django's
``flush``, which on PostgreSQL is one ``TRUNCATE`` of every table: a new file for each
of some fifty tables and its fsync, about a second per test on CI's two loaded cores,
when the tables hold a few rows that ``DELETE`` removes in milliseconds. MySQL's flush
already deletes (Django's own choice for small tables).

The deletes run with ``session_replication_role = replica`` for their transaction only
(``SET LOCAL``): it turns off the foreign keys' triggers, which would otherwise check
every deleted row at COMMIT (minutes after a test that left 100,000 jobs). Every table
is emptied, so nothing is left dangling. That setting needs a superuser (the suite's
default role, ``postgres``); as another role, and for a flush that resets sequences or
cascades (not one this suite asks for), Django's TRUNCATE stays.
"""

from __future__ import annotations

from django.db.backends.postgresql.operations import DatabaseOperations

_truncate = DatabaseOperations.sql_flush


def _delete_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    if reset_sequences or allow_cascade or not tables or not _superuser(self.connection):
        return _truncate(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    deletes = [f"{style.SQL_KEYWORD('DELETE FROM')} {self.quote_name(t)};" for t in tables]
    return ["SET LOCAL session_replication_role = replica;", *deletes]


def _superuser(connection) -> bool:
    known = getattr(connection, "_sq_superuser", None)
    if known is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
            known = connection._sq_superuser = bool(cursor.fetchone()[0])
    return known


def install() -> None:
    DatabaseOperations.sql_flush = _delete_flush
