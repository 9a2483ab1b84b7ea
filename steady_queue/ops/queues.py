"""Queues as the command line sees them: the engine's ``Queue`` plus the configured names."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from .. import configuration
from ..compat import task_backends
from ..models.queue import Queue


def all_queues() -> list[Queue]:
    """Queues with ready jobs or a pause, and the configured ones (maybe idle), by name."""
    found = Queue.all()
    known = {queue.name for queue in found}
    idle = [Queue._loaded(name, None, False) for name in configured_queues() - known]
    return sorted(found + idle, key=lambda queue: queue.name)


def exists(name: str) -> bool:
    """Whether ``name`` is a queue: configured, paused, or used by any job."""
    from ..models import Job, Pause

    if name in configured_queues():
        return True
    if "\x00" in name:  # no database stores it, and PostgreSQL refuses to compare it
        return False
    return (
        Pause.objects.filter(queue_name=name).exists()
        or Job.objects.filter(queue_name=name).exists()
    )


def configured_queues() -> set[str]:
    """Queue names declared in TASKS (QUEUES) and in the workers' configuration."""
    names: set[str] = set()
    for backend in task_backends.all():
        names.update(getattr(backend, "queues", None) or [])
    try:
        workers = configuration.load().configured_workers
    except ImproperlyConfigured:  # reported by manage.py check
        workers = []
    for worker in workers:
        names.update(queue for queue in worker.queues if "*" not in queue)
    return names
