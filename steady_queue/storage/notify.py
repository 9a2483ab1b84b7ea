"""Wake idle processes at once on PostgreSQL (LISTEN/NOTIFY); polling covers other databases.

Notifications are sent inside the transaction that makes the jobs ready or scheduled,
so PostgreSQL delivers them when (and only if) it commits. Payloads let a listener
ignore what is not for it: the queue name of ready jobs (one notification per queue),
or the Unix time at which the earliest scheduled job becomes due.

The models announce such changes with signals (``steady_queue.models.signals``); the
receivers here hand them to the storage of the queue database, which sends NOTIFY
where the database has it. The fast enqueue sends its own, in its statement.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.dispatch import receiver

from .. import db
from ..models.signals import jobs_ready as jobs_became_ready
from ..models.signals import jobs_scheduled as job_was_scheduled

READY_CHANNEL = "steady_queue_ready"
SCHEDULED_CHANNEL = "steady_queue_scheduled"
# Any queue: sent instead of one notification per queue when a batch spans many queues.
ANY_QUEUE = "*"
MAX_QUEUES_PER_BATCH = 10


def jobs_ready(queue_names: Iterable[str]) -> None:
    """Tell listening workers that jobs of ``queue_names`` are ready (on commit)."""
    _send(*ready_calls(queue_names))


def jobs_scheduled(due_at: datetime) -> None:
    """Tell listening dispatchers that a job becomes due at ``due_at`` (on commit)."""
    _send("pg_notify(%s, %s)", [SCHEDULED_CHANNEL, f"{due_at.timestamp():.6f}"])


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
