"""Surviving database outages: drop broken connections, log each outage once."""

from __future__ import annotations

import contextlib
import logging

from django.db import DatabaseError, connections

# How long a process waits before retrying after its database work failed.
RETRY_INTERVAL = 1.0


def recover_connections() -> None:
    """Close this thread's broken database connections so the next query reconnects.

    Healthy connections stay open: opening one per job or per poll is what caps
    throughput, so only a connection that raised an error and fails a ping is closed.
    """
    for connection in connections.all(initialized_only=True):
        if connection.connection is None or not connection.errors_occurred:
            continue
        if connection.in_atomic_block:
            continue  # the transaction's owner rolls back and closes it on its way out
        if connection.is_usable():
            connection.errors_occurred = False
            continue
        # Closing a dead connection may fail; Django forgets it either way.
        with contextlib.suppress(DatabaseError):
            connection.close()


def close_connections() -> None:
    """Close every database connection this thread opened (when the thread ends)."""
    for connection in connections.all(initialized_only=True):
        with contextlib.suppress(DatabaseError):
            connection.close()


class OutageLog:
    """Log when some database work starts failing and when it works again, once each."""

    def __init__(self, logger: logging.Logger, what: str):
        self.logger = logger
        self.what = what
        self.failing = False

    def failed(self, exc: BaseException) -> None:
        """Record a failure: a warning for the first, details only at DEBUG afterwards."""
        recover_connections()
        if self.failing:
            self.logger.debug("%s still failing: %s", self.what, exc)
            return
        self.failing = True
        if isinstance(exc, DatabaseError):
            self.logger.warning("%s failed, retrying: %s: %s", self.what, type(exc).__name__, exc)
        else:
            self.logger.exception("%s failed, retrying", self.what)

    def succeeded(self) -> None:
        if self.failing:
            self.failing = False
            self.logger.info("%s works again", self.what)
