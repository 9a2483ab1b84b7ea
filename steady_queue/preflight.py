"""What must be in place before anything is queued or run: a backend, and the tables.

Without them nothing fails loudly on its own: Django's default backend runs an
``.enqueue()`` inline, and a worker whose tables are missing retries its poll forever
while it looks alive. These checks say plainly what is missing and how to fix it.
"""

from __future__ import annotations

import re

from django.apps import apps
from django.conf import settings
from django.db import DatabaseError, OperationalError, ProgrammingError, connections
from django.utils.module_loading import import_string

from . import ours

BACKEND_PATH = "steady_queue.backend.SteadyQueueBackend"
MIGRATE_HINT = "run manage.py migrate"
TABLE_PREFIX = "steady_queue_"

# How each database says a table does not exist, naming it (SQLite, PostgreSQL, MySQL).
MISSING_TABLE = re.compile(
    r"no such table: (\S+)|relation \"([^\"]+)\" does not exist|Table '(?:[^'.]*\.)?([^']+)' "
    r"doesn't exist"
)


UNDEFINED_TABLE_SQLSTATE = "42P01"
MYSQL_NO_SUCH_TABLE = 1146


class TablesMissing(DatabaseError):
    """Steady Queue's tables are not in the queue database: its migrations were not run.

    Raised as ``TablesMissingProgrammingError`` or ``TablesMissingOperationalError``, so
    that an ``except`` of the error the database raised still catches it.
    """


class TablesMissingProgrammingError(TablesMissing, ProgrammingError):
    """PostgreSQL and MySQL say a missing table is a programming error."""


class TablesMissingOperationalError(TablesMissing, OperationalError):
    """SQLite says a missing table is an operational error."""


def backend_problem() -> str | None:
    """Say why no backend in TASKS is Steady Queue's, or return None when one is."""
    for config in getattr(settings, "TASKS", {}).values():
        try:
            backend_class = import_string(config.get("BACKEND", ""))
        except ImportError:
            continue  # the tasks framework reports it where the backend is used
        if ours.is_our_class(backend_class):
            return None
    return (
        f"No backend in the TASKS setting is {BACKEND_PATH}: .enqueue() does not store "
        f"jobs for Steady Queue (Django's default backend runs them inline), so there is "
        f'nothing to run. Add TASKS = {{"default": {{"BACKEND": "{BACKEND_PATH}"}}}} '
        "to your settings."
    )


JOBS_TABLE = "steady_queue_jobs"


def missing_tables(alias: str) -> list[str]:
    """The Steady Queue tables not in database ``alias``, sorted (one introspection query)."""
    expected = {
        model._meta.db_table
        for model in apps.get_app_config("steady_queue").get_models()
        if model._meta.managed and not model._meta.proxy
    }
    with connections[alias].cursor() as cursor:
        present = set(connections[alias].introspection.table_names(cursor))
    return sorted(expected - present)


def tables_problem(alias: str) -> str | None:
    """Say which tables database ``alias`` lacks and what to do, or None when it has all."""
    if not (missing := missing_tables(alias)):
        return None
    # The jobs table first: the one a reader knows, whatever sorts before it.
    missing.sort(key=lambda table: table != JOBS_TABLE)
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return (
        f"Steady Queue's tables are missing from database {alias!r} ({shown}): "
        f"{MIGRATE_HINT} (with --database {alias} if it is not the default database)."
    )


def missing_table_error(exc: DatabaseError, alias: str) -> TablesMissing | None:
    """The clearer error to raise for ``exc`` when it says a Steady Queue table is missing."""
    found = MISSING_TABLE.search(str(exc))
    table = found and next(name for name in found.groups() if name)
    if table and not table.startswith(TABLE_PREFIX):
        return None
    if not table and not _is_undefined_table(exc):
        return None
    what = f"Steady Queue's table {table} is" if table else "A Steady Queue table is"
    error_class = (
        TablesMissingOperationalError
        if isinstance(exc, OperationalError)
        else TablesMissingProgrammingError
    )
    return error_class(
        f"{what} not in database {alias!r}: {MIGRATE_HINT} (the database said: {exc})"
    )


def _is_undefined_table(exc: DatabaseError) -> bool:
    """By the error's code, where the server's messages are not in English."""
    if getattr(exc.__cause__, "sqlstate", None) == UNDEFINED_TABLE_SQLSTATE:  # PostgreSQL
        return True
    return bool(exc.args) and exc.args[0] == MYSQL_NO_SUCH_TABLE
