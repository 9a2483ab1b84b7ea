"""Queues as the command line sees them: the engine's ``Queue`` plus the configured names."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .. import configuration, db
from ..models.queue import Queue
from .backends import declared_in


def all_queues() -> list[Queue]:
    """Queues with ready jobs or a pause, and the configured ones (maybe idle), by name."""
    found = Queue.all()
    known = {queue.name for queue in found}
    idle = [Queue._loaded(name, None, False) for name in configured_queues() - known]
    return sorted(found + idle, key=lambda queue: queue.name)


def exists(name: str, config: str | None = None) -> bool:
    """Whether ``name`` is a queue: configured, paused, or used by any job.

    ``config``: the dotted path of the workers' Configuration.Options, if not the default.
    """
    from ..models import Job, Pause

    if name in configured_queues(config):
        return True
    if "\x00" in name:  # no database stores it, and PostgreSQL refuses to compare it
        return False
    return (
        Pause.objects.filter(queue_name=name).exists()
        or Job.objects.filter(queue_name=name).exists()
    )


def configured_queues(config: str | None = None) -> set[str]:
    """Queue names declared in the workers' configuration and in TASKS (QUEUES).

    Of TASKS, only the backends whose jobs are in the current queue database: another
    database's queue is no queue here (``manage.py steady_queue_queues --backend``).
    """
    names = declared_in(db.alias())
    try:
        workers = configuration.load(config).configured_workers
    except ImproperlyConfigured:  # reported by manage.py check
        workers = []
    for worker in workers:
        names.update(queue for queue in worker.queues if "*" not in queue)
    return names
