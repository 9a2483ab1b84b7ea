"""Where the queue tables live: the alias, its connection and its transactions."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from django.db import OperationalError, connections, transaction

import steady_queue

# Set by ``using_alias``: the alias the current thread (or task) reads and writes instead.
_override: ContextVar[str | None] = ContextVar("steady_queue_database", default=None)


def alias() -> str:
    """Return the database alias that holds the queue tables (here and now)."""
    return _override.get() or steady_queue.database


@contextlib.contextmanager
def using_alias(name: str | None) -> Iterator[str]:
    """Send the queue models' queries to ``name`` inside the block (None: no change).

    For one thread (or asyncio task) only: the dashboard reads a replica this way
    while the workers of the same process keep the queue database.
    """
    token = _override.set(name) if name else None
    try:
        yield alias()
    finally:
        if token is not None:
            _override.reset(token)


def queue_aliases() -> set[str]:
    """Every alias holding queue tables: ``steady_queue.database`` and the backends' own.

    A Steady Queue backend in TASKS with ``OPTIONS["database"]`` keeps its jobs there.
    """
    from .compat import task_backends

    aliases = {steady_queue.database}
    for backend in task_backends.all():
        if database := getattr(backend, "database", None):
            aliases.add(database)
    return aliases


def connection():
    return connections[alias()]


def atomic(**kwargs):
    """Open a transaction on the queue database."""
    return transaction.atomic(using=alias(), **kwargs)


def background_transaction(name: str) -> None:
    """Mark the current transaction as background work (pruning), on PostgreSQL.

    Its session shows as ``name`` in ``pg_stat_activity.application_name`` while it lasts
    (an operator, and the tests, can tell whose locks a session waits on), and its commit
    does not wait for the WAL flush (``synchronous_commit = off``): a crash may undo its
    last batches, which the next pass does again, and the workers' own commits do not
    queue behind its flushes. Both revert when the transaction ends. Nothing elsewhere.
    """
    queue = connection()
    if queue.vendor == "postgresql" and queue.in_atomic_block:
        with queue.cursor() as cursor:
            cursor.execute(
                "SELECT set_config('application_name', %s, true), "
                "set_config('synchronous_commit', 'off', true)",
                [name],
            )


def is_deadlock(exc: BaseException) -> bool:
    """True for MySQL/MariaDB's "deadlock found" (1213): InnoDB rolled back the transaction."""
    cause = exc.__cause__ or exc
    return connection().vendor == "mysql" and getattr(cause, "args", (None,))[0] == 1213


def retry_deadlocks(work, attempts: int = 5):
    """Run ``work()`` again when InnoDB picked it as a deadlock victim.

    Only a transaction of our own can be retried: inside a caller's transaction
    the rollback already undid the caller's work, so the error must reach them.
    """
    for attempt in range(attempts):
        outermost = not connection().in_atomic_block
        try:
            return work()
        except OperationalError as exc:
            if not (outermost and is_deadlock(exc)) or attempt == attempts - 1:
                raise


def exact_collation(connection) -> str | None:
    """The collation that compares text byte for byte on ``connection``'s database, where
    its default does not (None elsewhere: PostgreSQL and SQLite compare exactly).

    MySQL's and MariaDB's defaults ignore case and trailing spaces; their binary
    collations without padding do not.
    """
    if connection.vendor != "mysql":
        return None
    return "utf8mb4_nopad_bin" if connection.mysql_is_mariadb else "utf8mb4_0900_bin"
