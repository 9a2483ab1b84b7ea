"""PostgreSQL: empty the tables between transactional tests with DELETE, not TRUNCATE.

A transactional test (``transactional_db``, the process tests) ends with Django's
``flush``, which on PostgreSQL is one ``TRUNCATE`` of every table: a new file for each
of some fifty tables and its fsync, about a second per test on CI's two loaded cores,
when the tables hold a few rows that ``DELETE`` removes in milliseconds. MySQL's flush
already deletes (Django's own choice for small tables). Django creates PostgreSQL's
foreign keys DEFERRABLE INITIALLY DEFERRED, so within the flush's one transaction the
order of the deletes does not matter. A flush that resets sequences or cascades (not
one this suite asks for) keeps Django's TRUNCATE.
"""

from __future__ import annotations

from django.db.backends.postgresql.operations import DatabaseOperations

_truncate = DatabaseOperations.sql_flush


def _delete_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    if reset_sequences or allow_cascade or not tables:
        return _truncate(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    deletes = [f"{style.SQL_KEYWORD('DELETE FROM')} {self.quote_name(t)};" for t in tables]
    return ["SET CONSTRAINTS ALL DEFERRED;", *deletes]


def install() -> None:
    DatabaseOperations.sql_flush = _delete_flush
