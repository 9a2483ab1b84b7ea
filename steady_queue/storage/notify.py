"""Wake idle processes and waiters at once on PostgreSQL (LISTEN/NOTIFY); others poll.

Notifications are sent inside the transaction that makes the jobs ready or scheduled,
so PostgreSQL delivers them when (and only if) it commits. Payloads let a listener
ignore what is not for it: the queue name of ready jobs (one notification per queue),
or the Unix time at which the earliest scheduled job becomes due.

The models announce such changes with signals (``steady_queue.models.signals``); the
receivers here hand them to the storage of the queue database, which sends NOTIFY
where the database has it. The fast enqueue sends its own, in its statement.

A job's end (``steady_queue.wait``) is told only to whoever waits for it: the waiter
holds a shared advisory lock on the job's key on its listening connection, and each
end tries to take that key's lock for its own transaction. Nobody waits: the lock is
taken (a few microseconds in PostgreSQL's lock table) and no NOTIFY is sent, so a
finish pays nothing for a feature it does not use. Someone waits: it cannot be taken,
and the end sends NOTIFY. A waiter that locks after the end took the lock blocks until
that end commits, then finds the job ended; keys are job ids modulo ``LOCK_KEYS``, so
two jobs may share one, which costs at most a needless notification. Each lock taken
holds a slot of PostgreSQL's shared lock table until commit, so a batch of more than
``MAX_LOCKS_PER_END`` ends (an operator's discard) takes none and sends one NOTIFY for
any job instead: every waiter checks its job once more.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import connections
from django.dispatch import receiver

import steady_queue

from .. import db
from ..models.signals import jobs_ended as jobs_have_ended
from ..models.signals import jobs_ready as jobs_became_ready
from ..models.signals import jobs_scheduled as job_was_scheduled

if TYPE_CHECKING:
    import psycopg

logger = logging.getLogger("steady_queue.processes")

READY_CHANNEL = "steady_queue_ready"
SCHEDULED_CHANNEL = "steady_queue_scheduled"
ENDED_CHANNEL = "steady_queue_ended"
# The advisory locks of waiters: (WAITING_LOCK, job id modulo LOCK_KEYS), an int4 pair.
WAITING_LOCK = 0x53515754  # "SQWT"
LOCK_KEYS = 2_147_483_647
# Ends in one transaction beyond this many notify ANY_JOB rather than lock each job's key.
MAX_LOCKS_PER_END = 32
ANY_JOB = "*"
# Keepalives let a connection that died silently (a dropped network) fail and reconnect.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 5}
# Any queue: sent instead of one notification per queue when a batch spans many queues.
ANY_QUEUE = "*"
MAX_QUEUES_PER_BATCH = 10


def jobs_ready(queue_names: Iterable[str]) -> None:
    """Tell listening workers that jobs of ``queue_names`` are ready (on commit)."""
    _send(*ready_calls(queue_names))


def jobs_scheduled(due_at: datetime) -> None:
    """Tell listening dispatchers that a job becomes due at ``due_at`` (on commit)."""
    _send("pg_notify(%s, %s)", [SCHEDULED_CHANNEL, f"{due_at.timestamp():.6f}"])


def jobs_ended(job_ids: Iterable[int]) -> None:
    """Tell the waiters of these jobs that they ended (on commit); no waiter, no NOTIFY."""
    ids = list(job_ids)
    if not ids or not is_available():
        return
    if len(ids) > MAX_LOCKS_PER_END:
        _send("pg_notify(%s, %s)", [ENDED_CHANNEL, ANY_JOB])
        return
    with db.connection().cursor() as cursor:
        ended = ended_call("ended.id")
        cursor.execute(f"SELECT {ended} FROM unnest(%s::bigint[]) AS ended(id)", [ids])


def ended_call(job_id: str) -> str:
    """SQL announcing that the job of column ``job_id`` ended, if someone waits for it."""
    return (
        f"CASE WHEN pg_try_advisory_xact_lock({WAITING_LOCK}, {_lock_key(job_id)}) THEN NULL "
        f"ELSE pg_notify('{ENDED_CHANNEL}', {job_id}::text) END"
    )


def wait_for_end(connection: psycopg.Connection, job_id: int) -> None:
    """Make ``connection`` (a listening one) hear of ``job_id``'s end from now on.

    LISTEN first, then the lock: an end between the two notifies (the lock is held by
    then) or commits before the lock is granted (and the caller's next check sees it).
    """
    connection.execute(f"LISTEN {ENDED_CHANNEL}")
    key = _lock_key("%s::bigint")
    connection.execute(f"SELECT pg_advisory_lock_shared({WAITING_LOCK}, {key})", [job_id])


def ready_calls(queue_names: Iterable[str]) -> tuple[str, list[str]]:
    """The ``pg_notify(...)`` calls (SQL and parameters) announcing ready jobs of these queues."""
    names = sorted(set(queue_names))
    if len(names) > MAX_QUEUES_PER_BATCH:
        names = [ANY_QUEUE]
    params = [value for name in names for value in (READY_CHANNEL, name)]
    return ", ".join(["pg_notify(%s, %s)"] * len(names)), params


def is_available() -> bool:
    """Whether the queue database delivers notifications (PostgreSQL)."""
    from . import for_alias

    return for_alias().wakes_listeners


def can_listen() -> bool:
    """Whether LISTEN works for the queue database: it notifies, psycopg 3 can listen."""
    try:
        import psycopg  # noqa: F401  (psycopg 3; with psycopg2, processes only poll)
    except ImportError:
        return False
    return is_available() and listen_alias() is not None


def listen_alias() -> str | None:
    """The database alias to LISTEN on (``steady_queue.listen_database``); None: poll."""
    chosen = steady_queue.listen_database
    if chosen is False:
        return None
    if chosen:
        return chosen
    options = db.connection().settings_dict.get("OPTIONS", {})
    if "prepare_threshold" in options and options["prepare_threshold"] is None:
        _say_once(
            "The queue database %r disables prepared statements, as behind a "
            "transaction-mode pooler (PgBouncer), where LISTEN misses notifications: "
            "processes poll. Set steady_queue.listen_database to the alias of a direct "
            "connection to wake them at once.",
            db.alias(),
        )
        return None
    return db.alias()


def listening_connection() -> psycopg.Connection:
    """A new connection of its own (autocommit) to LISTEN on, to the ``listen_alias()``."""
    import psycopg

    params = connections[listen_alias()].get_connection_params()
    params.pop("cursor_factory", None)
    return psycopg.Connection.connect(**KEEPALIVES, **params, autocommit=True)


def _lock_key(job_id: str) -> str:
    return f"mod({job_id}, {LOCK_KEYS})::int4"


@functools.cache
def _say_once(message: str, *args) -> None:
    logger.info(message, *args)


def _send(calls: str, params: list[str]) -> None:
    if calls and is_available():
        with db.connection().cursor() as cursor:
            cursor.execute(f"SELECT {calls}", params)


@receiver(jobs_became_ready, dispatch_uid="steady_queue.storage.notify.ready")
def _announce_ready(sender, queue_names, **kwargs) -> None:
    from . import for_alias

    for_alias().notify_ready(queue_names)


@receiver(job_was_scheduled, dispatch_uid="steady_queue.storage.notify.scheduled")
def _announce_scheduled(sender, due_at, **kwargs) -> None:
    from . import for_alias

    for_alias().notify_scheduled(due_at)


@receiver(jobs_have_ended, dispatch_uid="steady_queue.storage.notify.ended")
def _announce_ended(sender, job_ids, **kwargs) -> None:
    from . import for_alias

    for_alias().notify_ended(job_ids)
