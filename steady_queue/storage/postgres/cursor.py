"""PostgreSQL statements prepared once per connection: the cursor the fast paths run on."""

from __future__ import annotations

import functools

from ... import db

# psycopg's prepare_threshold: this high, it prepares only what asks with prepare=True.
ONLY_WHEN_ASKED = 2**31 - 1


def prepared_cursor():
    """A cursor whose statements PostgreSQL prepares once per connection, then only runs.

    Planning a claim costs more than running it. Django's own cursors bind parameters
    client-side, which cannot prepare; this one binds them server-side, for these few
    statements only, and is still Django's cursor wrapper (logged and counted).
    """
    connection = db.connection()
    if "prepare_threshold" in connection.settings_dict.get("OPTIONS", {}):
        # The project chose (None: behind PgBouncer in transaction mode, where prepared
        # statements break): respect it; the statements stay single, only unprepared.
        return connection.cursor()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # psycopg prepares nothing at all while this is None (Django's default); this high
        # a threshold still prepares nothing by itself, only what asks with prepare=True.
        raw.prepare_threshold = ONLY_WHEN_ASKED
    with connection.wrap_database_errors:
        return connection._prepare_cursor(_preparing_cursor_class()(raw))


@functools.cache
def _preparing_cursor_class():
    import psycopg

    class PreparingCursor(psycopg.Cursor):
        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor
