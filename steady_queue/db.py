"""Where the queue tables live: the alias, its connection and its transactions."""

from __future__ import annotations

from django.db import OperationalError, connections, transaction

import steady_queue


def alias() -> str:
    """Return the database alias that holds the queue tables."""
    return steady_queue.database


def connection():
    return connections[alias()]


def atomic(**kwargs):
    """Open a transaction on the queue database."""
    return transaction.atomic(using=alias(), **kwargs)


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
