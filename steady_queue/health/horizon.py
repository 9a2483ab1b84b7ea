"""PostgreSQL: the transactions old enough to hold back cleanup (the MVCC horizon).

VACUUM may remove a dead row only once no open transaction can still see it. One
transaction left open (a forgotten ``psql`` session, a report under ``REPEATABLE READ``,
a web request stuck ``idle in transaction``) keeps every row deleted since it began:
the finished jobs cleared, each claimed and released execution row. The claim's index
scans then step over ever more dead entries, and draining slows (bench/mvcc_horizon.py).
This module names those transactions, so the health command and the dashboard can say
which connection to end; ``idle_in_transaction_session_timeout`` prevents most of them.

One read of ``pg_stat_activity``, a row per server connection (bounded by
``max_connections``), whatever the size of the queue tables. A role sees only its own
sessions' transactions there unless it has ``pg_read_all_stats``. PostgreSQL keeps what a
transaction first read there until it ends: a health check or a dashboard request reads
it once, so it is fresh (a caller reading it twice in one transaction calls
``pg_stat_clear_snapshot()`` in between).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import steady_queue

from .. import db

# Transactions named per check: the oldest holds the horizon, the rest add little.
MAX_TRANSACTIONS = 5

# Only the transactions of the queue database: since PostgreSQL 14 the horizon of a
# table's VACUUM ignores the other databases' ones. A transaction holds rows back once it
# has a snapshot (backend_xmin) or wrote (backend_xid); BEGIN alone holds nothing.
_OLD_TRANSACTIONS = """
    SELECT pid, COALESCE(application_name, ''), COALESCE(state, ''),
           EXTRACT(EPOCH FROM (clock_timestamp() - xact_start))
      FROM pg_stat_activity
     WHERE datname = current_database()
       AND pid <> pg_backend_pid()
       AND xact_start < clock_timestamp() - make_interval(secs => %s)
       AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL)
     ORDER BY xact_start
     LIMIT %s
"""


@dataclass(frozen=True)
class OldTransaction:
    """A connection whose open transaction is older than the threshold."""

    pid: int
    application: str
    # pg_stat_activity's state: "idle in transaction", "active", ...
    state: str
    age: timedelta

    def __str__(self) -> str:
        application = f" ({self.application})" if self.application else ""
        return f"pid {self.pid}{application}, {self.state}, open {self.age.total_seconds():.0f}s"


def old_transactions(threshold: timedelta | None = None) -> list[OldTransaction]:
    """The oldest transactions open longer than ``threshold``, oldest first.

    ``threshold`` defaults to ``steady_queue.long_transaction_threshold``. Empty on
    MariaDB and SQLite (their purge works otherwise) and when the threshold is None.
    """
    threshold = steady_queue.long_transaction_threshold if threshold is None else threshold
    if threshold is None or not db.is_postgresql():
        return []
    with db.connection().cursor() as cursor:
        cursor.execute(_OLD_TRANSACTIONS, [threshold.total_seconds(), MAX_TRANSACTIONS])
        rows = cursor.fetchall()
    return [
        OldTransaction(pid, application, state, timedelta(seconds=float(seconds)))
        for pid, application, state, seconds in rows
    ]
